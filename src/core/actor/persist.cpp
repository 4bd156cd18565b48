#include "core/actor/persist.hpp"

#include <fmt/format.h>

#include "bare/codec.hpp"
#include "proto/persist_alarm_v1.hpp"
#include "proto/persist_v1.hpp"
#include "proto/persist_v2.hpp"
#include "proto/persist_v3.hpp"

namespace rivetkit::core {
namespace {

namespace v1 = proto::persist_v1;
namespace v2 = proto::persist_v2;
namespace v3 = proto::persist_v3;
namespace v4 = proto::persist_v4;

Error invalid(std::string_view label, std::string_view cause) {
    return errors::protocol_invalid_persisted_data(
        fmt::format("decode {} versioned bare payload: {}", label, cause));
}

template <typename T>
Result<T> decode_body(std::string_view label, const bare::VersionedView& view) {
    auto decoded = bare::decode_versioned_body<T>(view);
    if (!decoded.ok())
        return invalid(label, decoded.error().message());
    return decoded;
}

Result<bare::VersionedView> split(std::string_view label, BytesView payload) {
    auto view = bare::split_versioned(payload);
    if (!view.ok())
        return invalid(label, view.error().message());
    return view;
}

// v1 → v2 only widens timestamps (u64 → i64, saturating) and drops nothing the core reads; v2 → v3
// moved connections out of the actor record, so they are dropped here as upstream does.
v4::ScheduleEvent upgrade_event(std::string event_id, std::int64_t timestamp, std::string action,
                                std::optional<Bytes> args) {
    return v4::ScheduleEvent{std::move(event_id), timestamp, std::move(action), std::move(args)};
}

PersistedActor upgrade_v1(v1::PersistedActor in) {
    PersistedActor out{std::move(in.input), in.has_initialized, std::move(in.state), {}};
    for (auto& ev : in.scheduled_events) {
        auto& kind = std::get<v1::GenericPersistedScheduleEvent>(ev.kind.value);
        const auto max = static_cast<std::uint64_t>(INT64_MAX);
        out.scheduled_events.push_back(upgrade_event(
            std::move(ev.event_id), static_cast<std::int64_t>(std::min(ev.timestamp, max)),
            std::move(kind.action), std::move(kind.args)));
    }
    return out;
}

PersistedActor upgrade_v2(v2::PersistedActor in) {
    PersistedActor out{std::move(in.input), in.has_initialized, std::move(in.state), {}};
    for (auto& ev : in.scheduled_events) {
        auto& kind = std::get<v2::GenericPersistedScheduleEvent>(ev.kind.value);
        out.scheduled_events.push_back(upgrade_event(std::move(ev.event_id), ev.timestamp,
                                                     std::move(kind.action), std::move(kind.args)));
    }
    return out;
}

PersistedActor upgrade_v3(v3::Actor in) {
    PersistedActor out{std::move(in.input), in.has_initialized, std::move(in.state), {}};
    for (auto& ev : in.scheduled_events) {
        out.scheduled_events.push_back(upgrade_event(std::move(ev.event_id), ev.timestamp,
                                                     std::move(ev.action), std::move(ev.args)));
    }
    return out;
}

// The legacy v4 writer's schedule event: `args` was plain `data`.
struct LegacyV4Event {
    std::string event_id;
    std::int64_t timestamp = 0;
    std::string action;
    Bytes args;
};
struct LegacyV4Actor {
    std::optional<Bytes> input;
    bool has_initialized = false;
    Bytes state;
    std::vector<LegacyV4Event> scheduled_events;
};

void decode(bare::Reader& r, LegacyV4Event& v) {
    v.event_id = r.read_str();
    v.timestamp = r.read_i64();
    v.action = r.read_str();
    v.args = r.read_data();
}
void decode(bare::Reader& r, LegacyV4Actor& v) {
    if (r.read_optional_tag())
        v.input = r.read_data();
    v.has_initialized = r.read_bool();
    v.state = r.read_data();
    const std::size_t n = r.read_length();
    for (std::size_t i = 0; i < n && !r.failed(); ++i) {
        LegacyV4Event ev;
        decode(r, ev);
        v.scheduled_events.push_back(std::move(ev));
    }
}
constexpr std::string_view bare_type_name(const LegacyV4Actor*) noexcept {
    return "Actor";
}

// Current v4 wins only when its encoding reproduces the input: a lenient decoder can read legacy
// bytes as current v4 by accident, so canonical bytes are the proof.
Result<PersistedActor> decode_actor_v4(const bare::VersionedView& view) {
    PersistedActor current{};
    auto current_err = bare::decode_into(view.body, current, bare::kVersionPrefixSize);
    if (!current_err) {
        Bytes again = bare::encode_to_bytes(current);
        if (std::equal(again.begin(), again.end(), view.body.begin(), view.body.end())) {
            return current;
        }
    }
    LegacyV4Actor legacy{};
    auto legacy_err = bare::decode_into(view.body, legacy, bare::kVersionPrefixSize);
    if (legacy_err) {
        return invalid("persisted actor", (current_err ? *current_err : *legacy_err).reason);
    }
    PersistedActor out{
        std::move(legacy.input), legacy.has_initialized, std::move(legacy.state), {}};
    for (auto& ev : legacy.scheduled_events) {
        out.scheduled_events.push_back(upgrade_event(std::move(ev.event_id), ev.timestamp,
                                                     std::move(ev.action),
                                                     schedule_args_from(std::move(ev.args))));
    }
    return out;
}

}  // namespace

Bytes encode_persisted_actor(const PersistedActor& actor) {
    return bare::encode_versioned(kCurrentPersistVersion, actor);
}

Result<PersistedActor> decode_persisted_actor(BytesView payload) {
    constexpr std::string_view label = "persisted actor";
    auto view = split(label, payload);
    if (!view.ok())
        return std::move(view).error();
    switch (view->version) {
        case 1: {
            auto r = decode_body<v1::PersistedActor>(label, *view);
            if (!r.ok())
                return std::move(r).error();
            return upgrade_v1(std::move(r).value());
        }
        case 2: {
            auto r = decode_body<v2::PersistedActor>(label, *view);
            if (!r.ok())
                return std::move(r).error();
            return upgrade_v2(std::move(r).value());
        }
        case 3: {
            auto r = decode_body<v3::Actor>(label, *view);
            if (!r.ok())
                return std::move(r).error();
            return upgrade_v3(std::move(r).value());
        }
        case 4:
            return decode_actor_v4(*view);
        default:
            return invalid(label, fmt::format("invalid actor persist version: {}", view->version));
    }
}

Bytes encode_persisted_connection(const PersistedConnection& conn) {
    return bare::encode_versioned(kCurrentPersistVersion, conn);
}

Result<PersistedConnection> decode_persisted_connection(BytesView payload) {
    constexpr std::string_view label = "persisted connection";
    auto view = split(label, payload);
    if (!view.ok())
        return std::move(view).error();
    if (view->version == 4)
        return decode_body<PersistedConnection>(label, *view);
    if (view->version != 3) {
        return invalid(label, fmt::format("connection only exists in actor persist v3+, got {}",
                                          view->version));
    }
    auto r = decode_body<v3::Conn>(label, *view);
    if (!r.ok())
        return std::move(r).error();
    v3::Conn in = std::move(r).value();
    PersistedConnection out;
    out.id = std::move(in.id);
    out.parameters = std::move(in.parameters);
    out.state = std::move(in.state);
    for (auto& sub : in.subscriptions)
        out.subscriptions.push_back({std::move(sub.event_name)});
    out.gateway_id = in.gateway_id;
    out.request_id = in.request_id;
    out.server_message_index = in.server_message_index;
    out.client_message_index = in.client_message_index;
    out.request_path = std::move(in.request_path);
    out.request_headers = std::move(in.request_headers);
    return out;
}

namespace {
template <typename T>
Result<T> decode_v4_only(std::string_view label, BytesView payload) {
    auto view = split(label, payload);
    if (!view.ok())
        return std::move(view).error();
    if (view->version != 4) {
        return invalid(
            label, fmt::format("{} only exists in actor persist v4, got {}", label, view->version));
    }
    return decode_body<T>(label, *view);
}
}  // namespace

Bytes encode_queue_metadata(const PersistedQueueMetadata& meta) {
    return bare::encode_versioned(kCurrentPersistVersion, meta);
}
Result<PersistedQueueMetadata> decode_queue_metadata(BytesView payload) {
    return decode_v4_only<PersistedQueueMetadata>("queue metadata", payload);
}
Bytes encode_queue_message(const PersistedQueueMessage& message) {
    return bare::encode_versioned(kCurrentPersistVersion, message);
}
Result<PersistedQueueMessage> decode_queue_message(BytesView payload) {
    return decode_v4_only<PersistedQueueMessage>("queue message", payload);
}

Bytes encode_last_pushed_alarm(std::optional<std::int64_t> alarm_ts) {
    return bare::encode_versioned(kLastPushedAlarmVersion,
                                  proto::persist_alarm_v1::LastPushedAlarm{alarm_ts});
}

Result<std::optional<std::int64_t>> decode_last_pushed_alarm(BytesView payload) {
    constexpr std::string_view label = "last pushed alarm";
    auto view = split(label, payload);
    if (!view.ok())
        return std::move(view).error();
    if (view->version != kLastPushedAlarmVersion) {
        return invalid(label, fmt::format("invalid last pushed alarm version: {}", view->version));
    }
    auto r = decode_body<proto::persist_alarm_v1::LastPushedAlarm>(label, *view);
    if (!r.ok())
        return std::move(r).error();
    return r->value;
}

}  // namespace rivetkit::core

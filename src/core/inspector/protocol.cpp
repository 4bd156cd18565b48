// Inspector protocol framing: the socket's wire mode, the v1–v5 → v6 request upgrade, and the
// v6 → v1–v5 downgrade of server messages.

#include "core/inspector/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "bare/codec.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v2.hpp"
#include "proto/inspector_v3.hpp"
#include "proto/inspector_v4.hpp"
#include "proto/inspector_v5.hpp"

namespace rivetkit::core::inspector {

namespace {

Error invalid_request(std::string message) {
    return Error("inspector", "invalid_request", std::move(message));
}

Error invalid_protocol_version(std::string message) {
    return Error("inspector", "invalid_protocol_version", std::move(message));
}

template <typename T>
constexpr std::string_view name_of() {
    return bare_type_name(static_cast<const T*>(nullptr));
}

// MARK: Client messages, upgraded to v6

// Request structs keep their names and fields from version to version, so each older request
// maps onto the v6 struct of the same name. v1's events requests have no successor.
template <typename Request>
Result<wire::ToServerBody> upgrade(Request&& req) {
    using R = std::remove_cvref_t<Request>;
    constexpr std::string_view name = name_of<R>();
    wire::ToServerBody out;
    if constexpr (name == "PatchStateRequest") {
        out.value = wire::PatchStateRequest{std::move(req.state)};
    } else if constexpr (name == "StateRequest") {
        out.value = wire::StateRequest{req.id};
    } else if constexpr (name == "ConnectionsRequest") {
        out.value = wire::ConnectionsRequest{req.id};
    } else if constexpr (name == "ActionRequest") {
        out.value = wire::ActionRequest{req.id, std::move(req.name), std::move(req.args)};
    } else if constexpr (name == "RpcsListRequest") {
        out.value = wire::RpcsListRequest{req.id};
    } else if constexpr (name == "TraceQueryRequest") {
        out.value = wire::TraceQueryRequest{req.id, req.start_ms, req.end_ms, req.limit};
    } else if constexpr (name == "QueueRequest") {
        out.value = wire::QueueRequest{req.id, req.limit};
    } else if constexpr (name == "WorkflowHistoryRequest") {
        out.value = wire::WorkflowHistoryRequest{req.id};
    } else if constexpr (name == "WorkflowReplayRequest") {
        out.value = wire::WorkflowReplayRequest{req.id, std::move(req.entry_id)};
    } else if constexpr (name == "DatabaseSchemaRequest") {
        out.value = wire::DatabaseSchemaRequest{req.id};
    } else if constexpr (name == "DatabaseTableRowsRequest") {
        out.value =
            wire::DatabaseTableRowsRequest{req.id, std::move(req.table), req.limit, req.offset};
    } else {
        static_assert(name == "EventsRequest" || name == "ClearEventsRequest",
                      "an inspector request without a v6 mapping");
        return invalid_request("cannot convert inspector v1 events requests to v2");
    }
    return out;
}

template <typename ToServer>
Result<wire::ToServerBody> decode_and_upgrade(BytesView body, std::size_t offset) {
    ToServer message{};
    if (auto err = bare::decode_into(body, message, offset))
        return invalid_request(err->to_error().message());
    if constexpr (std::is_same_v<ToServer, wire::ToServer>) {
        return std::move(message.body);
    } else {
        return std::visit([](auto&& req) { return upgrade(std::move(req)); },
                          std::move(message.body.value));
    }
}

Result<wire::ToServerBody> decode_version(BytesView body, std::uint16_t version,
                                          std::size_t offset) {
    switch (version) {
        case 1:
            return decode_and_upgrade<proto::inspector_v1::ToServer>(body, offset);
        case 2:
            return decode_and_upgrade<proto::inspector_v2::ToServer>(body, offset);
        case 3:
            return decode_and_upgrade<proto::inspector_v3::ToServer>(body, offset);
        case 4:
            return decode_and_upgrade<proto::inspector_v4::ToServer>(body, offset);
        case 5:
            return decode_and_upgrade<proto::inspector_v5::ToServer>(body, offset);
        case 6:
            return decode_and_upgrade<wire::ToServer>(body, offset);
        default:
            return invalid_request(
                fmt::format("invalid inspector protocol version for ToServer: {}", version));
    }
}

// MARK: Server messages, written down to the socket's version

// Every ToClient message other than Init has the same fields in each version that has it (checked
// against schemas v1..v6), so a v6 message is written under the tag its name has in the target
// union. Absent names are upstream's "dropped" errors, named after the feature that added them.
template <typename Body, std::size_t... I>
constexpr std::optional<std::uint64_t> tag_named(std::string_view name, std::index_sequence<I...>) {
    std::optional<std::uint64_t> tag;
    ((name_of<std::variant_alternative_t<I, decltype(Body::value)>>() == name
          ? void(tag = Body::kTags[I])
          : void()),
     ...);
    return tag;
}

template <typename Body>
constexpr std::optional<std::uint64_t> tag_named(std::string_view name) {
    return tag_named<Body>(name,
                           std::make_index_sequence<std::variant_size_v<decltype(Body::value)>>{});
}

std::optional<std::uint64_t> tag_in_version(std::string_view name, std::uint16_t version) {
    switch (version) {
        case 1:
            return tag_named<proto::inspector_v1::ToClientBody>(name);
        case 2:
            return tag_named<proto::inspector_v2::ToClientBody>(name);
        case 3:
            return tag_named<proto::inspector_v3::ToClientBody>(name);
        case 4:
            return tag_named<proto::inspector_v4::ToClientBody>(name);
        case 5:
            return tag_named<proto::inspector_v5::ToClientBody>(name);
        default:
            return tag_named<wire::ToClientBody>(name);
    }
}

std::string_view dropped_error(std::string_view name) {
    if (name.starts_with("Schedule"))
        return "inspector.schedules_dropped";
    if (name.starts_with("Database"))
        return "inspector.database_dropped";
    if (name.starts_with("Queue"))
        return "inspector.queue_dropped";
    if (name.starts_with("TraceQuery"))
        return "inspector.trace_dropped";
    // WorkflowHistory*, WorkflowReplayResponse.
    return "inspector.workflow_history_dropped";
}

// Init grew fields at the end (v2: queue and workflow, v5: tab config, v6: schedules); v1 had an
// events list after the connections.
template <typename Init>
Init older_init(const wire::Init& in) {
    Init out;
    for (const auto& c : in.connections)
        out.connections.push_back({c.id, c.details});
    out.state = in.state;
    out.is_state_enabled = in.is_state_enabled;
    out.rpcs = in.rpcs;
    out.is_database_enabled = in.is_database_enabled;
    if constexpr (requires { out.queue_size; }) {
        out.queue_size = in.queue_size;
        out.workflow_history = in.workflow_history;
        out.is_workflow_enabled = in.is_workflow_enabled;
    }
    if constexpr (requires { out.tab_config; }) {
        for (const auto& t : in.tab_config)
            out.tab_config.push_back({t.id, t.label, t.icon, t.hidden});
    }
    return out;
}

void write_init(bare::Writer& w, const wire::Init& init, std::uint16_t version) {
    w.write_tag(*tag_in_version("Init", version));
    switch (version) {
        case 1:
            encode(w, older_init<proto::inspector_v1::Init>(init));
            return;
        case 2:
            encode(w, older_init<proto::inspector_v2::Init>(init));
            return;
        case 3:
            encode(w, older_init<proto::inspector_v3::Init>(init));
            return;
        case 4:
            encode(w, older_init<proto::inspector_v4::Init>(init));
            return;
        default:
            encode(w, older_init<proto::inspector_v5::Init>(init));
            return;
    }
}

void write_body(bare::Writer& w, const wire::ToClientBody& body, std::uint16_t version) {
    if (version >= kProtocolVersion) {
        encode(w, body);
        return;
    }
    std::visit(
        [&](const auto& message) {
            using M = std::remove_cvref_t<decltype(message)>;
            if constexpr (std::is_same_v<M, wire::Init>) {
                write_init(w, message, version);
            } else if (auto tag = tag_in_version(name_of<M>(), version)) {
                w.write_tag(*tag);
                encode(w, message);
            } else {
                w.write_tag(*tag_in_version("Error", version));
                encode(w, wire::Error{std::string(dropped_error(name_of<M>()))});
            }
        },
        body.value);
}

}  // namespace

Result<WireMode> wire_mode_from_path(std::string_view path) {
    const auto q = path.find('?');
    std::string_view query = q == std::string_view::npos ? std::string_view{} : path.substr(q + 1);
    while (!query.empty()) {
        const auto amp = query.find('&');
        const std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) != "protocol_version")
            continue;
        const std::string_view value =
            eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
        std::uint16_t version = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), version);
        if (value.empty() || ec != std::errc{} || end != value.data() + value.size())
            return invalid_protocol_version(fmt::format(
                "inspector protocol_version must be an unsigned integer, got '{}'", value));
        if (version == 0 || version > kProtocolVersion)
            return invalid_protocol_version(
                fmt::format("unsupported inspector protocol version {}; supported range is 1..={}",
                            version, kProtocolVersion));
        return WireMode{version, false};
    }
    return WireMode{};
}

Result<wire::ToServerBody> decode_client_message(BytesView payload, WireMode mode) {
    if (!mode.embedded)
        return decode_version(payload, mode.version, 0);
    bare::VersionedView view;
    if (auto err = bare::split_versioned(payload, view))
        return invalid_request(err->to_error().message());
    return decode_version(view.body, view.version, bare::kVersionPrefixSize);
}

Result<wire::ToServerBody> decode_client_message(BytesView payload) {
    return decode_client_message(payload, WireMode{});
}

Bytes encode_server_message(const wire::ToClientBody& body, WireMode mode) {
    bare::Writer w;
    if (mode.embedded)
        w.write_u16(mode.version);
    write_body(w, body, mode.version);
    return w.take();
}

std::uint32_t clamp_queue_limit(std::uint64_t limit) noexcept {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(limit, kMaxQueueStatusLimit));
}

std::string_view message_kind(const wire::ToServerBody& body) noexcept {
    return std::visit([](const auto& v) { return name_of<std::remove_cvref_t<decltype(v)>>(); },
                      body.value);
}

std::string_view message_kind(const wire::ToClientBody& body) noexcept {
    return std::visit([](const auto& v) { return name_of<std::remove_cvref_t<decltype(v)>>(); },
                      body.value);
}

}  // namespace rivetkit::core::inspector

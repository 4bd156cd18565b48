// EnvoyHandle: actor intents and alarms become events; KV calls are checked against upstream's
// limits locally (so an oversize key fails with a precise error and nothing is sent), then go
// through kv.cpp.

#include "envoy/handle.hpp"

#include <algorithm>
#include <map>

#include "base/log.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy {

namespace asio = boost::asio;
using detail::proto::KvRequestData;
using detail::proto::KvResponseData;
namespace proto = rivetkit::proto::envoy_v8;

namespace {

constexpr std::size_t kMaxKeys = kKvMaxKeys;
constexpr std::size_t kMaxKeySize = kKvMaxKeySize;
constexpr std::size_t kMaxValueSize = kKvMaxValueSize;
constexpr std::size_t kMaxPutPayload = kKvMaxPutPayload;

Status check_key(const Bytes& key) {
    if (key.size() + kKvKeyEncodingOverhead > kMaxKeySize) {
        return Error("kv", "key_too_large",
                     "key is " + std::to_string(key.size()) + " bytes, limit " +
                         std::to_string(kMaxKeySize - kKvKeyEncodingOverhead));
    }
    return {};
}

Status check_value(const Bytes& value) {
    if (value.size() > kMaxValueSize) {
        return Error("kv", "value_too_large",
                     "value is " + std::to_string(value.size()) + " bytes, limit " +
                         std::to_string(kMaxValueSize));
    }
    return {};
}

Status check_keys(const std::vector<Bytes>& keys) {
    if (keys.size() > kMaxKeys) {
        return Error("kv", "too_many_keys",
                     "a request may carry at most " + std::to_string(kMaxKeys) + " keys");
    }
    return check_kv_key_sizes(keys);
}

Status check_entries(const std::vector<KvEntry>& entries) {
    if (entries.size() > kMaxKeys) {
        return Error("kv", "too_many_keys",
                     "a request may carry at most " + std::to_string(kMaxKeys) + " keys");
    }
    if (auto s = check_kv_entry_sizes(entries); !s.ok())
        return s;
    std::size_t total = 0;
    for (const auto& [k, v] : entries)
        total += k.size() + kKvKeyEncodingOverhead + v.size();
    if (total > kMaxPutPayload) {
        return Error("kv", "payload_too_large",
                     "put payload is " + std::to_string(total) + " bytes, limit " +
                         std::to_string(kMaxPutPayload));
    }
    return {};
}

Error engine_error(const KvResponseData& data) {
    if (const auto* e = data.get_if<proto::KvErrorResponse>()) {
        return Error("kv", "engine_error", e->message);
    }
    return Error("kv", "unexpected_response",
                 "unexpected kv response tag " + std::to_string(data.tag()));
}

template <typename Expected>
Status expect(Result<KvResponseData>& r) {
    if (!r.ok())
        return r.error();
    if (r->is<Expected>())
        return {};
    return engine_error(*r);
}

Result<std::vector<KvEntry>> to_entries(Result<KvResponseData>& r) {
    if (!r.ok())
        return r.error();
    auto* list = r->get_if<proto::KvListResponse>();
    if (list == nullptr)
        return engine_error(*r);
    std::vector<KvEntry> out;
    out.reserve(list->keys.size());
    for (std::size_t i = 0; i < list->keys.size() && i < list->values.size(); ++i) {
        out.emplace_back(std::move(list->keys[i]), std::move(list->values[i]));
    }
    return out;
}

asio::awaitable<Result<std::vector<KvEntry>>> list(std::shared_ptr<detail::EnvoyState> st,
                                                   std::string actor_id, proto::KvListQuery query,
                                                   KvListOptions opts) {
    KvRequestData req{proto::KvListRequest{std::move(query), opts.reverse, opts.limit}};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    co_return to_entries(r);
}

void push_intent(detail::EnvoyState& st, const std::string& actor_id,
                 std::optional<std::uint32_t> generation, proto::ActorIntent intent) {
    auto key = st.find_actor(actor_id, generation);
    if (!key) {
        log::warn("intent for unknown actor ignored", {{"actor_id", actor_id}});
        return;
    }
    // The engine ignores intents unless the actor is running: one asked for while starting
    // waits for Running (destroy over sleep); one while stopping is moot.
    auto& entry = *st.actors.at(*key);
    if (entry.phase == detail::ActorPhase::starting) {
        const bool destroy = std::holds_alternative<proto::ActorIntentStop>(intent.value);
        if (destroy || !entry.deferred_intent)
            entry.deferred_intent = std::move(intent);
        return;
    }
    if (entry.phase != detail::ActorPhase::running)
        return;
    detail::push_event(st, *key, proto::Event{proto::EventActorIntent{std::move(intent)}});
}

}  // namespace

Status check_kv_key_sizes(const std::vector<Bytes>& keys) {
    for (const auto& k : keys) {
        if (auto s = check_key(k); !s.ok())
            return s;
    }
    return {};
}

Status check_kv_entry_sizes(const std::vector<KvEntry>& entries) {
    for (const auto& [k, v] : entries) {
        if (auto s = check_key(k); !s.ok())
            return s;
        if (auto s = check_value(v); !s.ok())
            return s;
    }
    return {};
}

const std::string& EnvoyHandle::envoy_key() const {
    return state_->config.envoy_key;
}
bool EnvoyHandle::is_connected() const {
    return state_->connected;
}
std::size_t EnvoyHandle::active_actor_count() const {
    return state_->actors.size();
}

std::size_t EnvoyHandle::active_http_request_count(const std::string& actor_id) const {
    std::size_t n = 0;
    for (const auto& [key, stream] : state_->http)
        n += stream->actor_id == actor_id ? 1u : 0u;
    return n;
}

bool EnvoyHandle::is_hibernating_request_live(const std::string& actor_id,
                                              const TunnelId& id) const {
    // A socket this process holds open is live. One it keeps from the actor's last generation
    // (hibernating) is live only if the engine still lists it for this start: the client may
    // have closed it while the actor slept, and the gateway then forgets it without telling
    // this process (it opens the request anew on the new generation to deliver the close).
    auto it = state_->websockets.find(id.key());
    if (it != state_->websockets.end() && it->second->actor_id == actor_id &&
        it->second->can_hibernate && !it->second->hibernating)
        return true;
    auto key = state_->find_actor(actor_id, std::nullopt);
    if (!key)
        return false;
    const auto& listed = state_->actors.at(*key)->listed_hibernating;
    return std::find(listed.begin(), listed.end(), id) != listed.end();
}

void EnvoyHandle::restore_hibernating_requests(const std::string& actor_id,
                                               std::vector<HibernatingWebSocketMeta> metas) const {
    state_->pending_restores.insert_or_assign(actor_id, std::move(metas));
}

std::optional<ProtocolLimits> EnvoyHandle::protocol_limits() const {
    if (!state_->metadata)
        return std::nullopt;
    const auto& m = *state_->metadata;
    return ProtocolLimits{m.envoy_lost_threshold, m.actor_stop_threshold,
                          m.max_response_payload_size};
}

void EnvoyHandle::sleep_actor(std::string actor_id, std::optional<std::uint32_t> generation) const {
    push_intent(*state_, actor_id, generation, proto::ActorIntent{proto::ActorIntentSleep{}});
}

void EnvoyHandle::stop_actor(std::string actor_id, std::optional<std::uint32_t> generation) const {
    push_intent(*state_, actor_id, generation, proto::ActorIntent{proto::ActorIntentStop{}});
}

void EnvoyHandle::destroy_actor(std::string actor_id,
                                std::optional<std::uint32_t> generation) const {
    stop_actor(std::move(actor_id), generation);
}

rt::OneshotReceiver<Status> EnvoyHandle::set_alarm(std::string actor_id,
                                                   std::optional<std::int64_t> alarm_ts,
                                                   std::optional<std::uint32_t> generation) const {
    auto [sent, rx] = rt::oneshot<Status>();
    auto key = state_->find_actor(actor_id, generation);
    if (!key) {
        log::warn("alarm for unknown actor ignored", {{"actor_id", actor_id}});
        sent.send(Error("actor", "not_found", "alarm for an actor this envoy does not hold"));
        return std::move(rx);
    }
    auto& entry = *state_->actors.at(*key);
    if (entry.phase == detail::ActorPhase::starting) {
        using Deferred = std::vector<detail::ActorEntry::DeferredAlarm>;
        if (!entry.deferred_alarms)
            entry.deferred_alarms = std::make_unique<Deferred>();
        entry.deferred_alarms->push_back({alarm_ts, std::move(sent)});
        return std::move(rx);
    }
    detail::push_event(*state_, *key, proto::Event{proto::EventActorSetAlarm{alarm_ts}});
    sent.send(Status{});
    return std::move(rx);
}

asio::awaitable<Result<std::vector<std::optional<Bytes>>>> EnvoyHandle::kv_get(
    std::string actor_id, std::vector<Bytes> keys) const {
    if (auto s = check_keys(keys); !s.ok())
        co_return s.error();
    auto st = state_;
    KvRequestData req{proto::KvGetRequest{keys}};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return r.error();
    auto* got = r->get_if<proto::KvGetResponse>();
    if (got == nullptr)
        co_return engine_error(*r);
    // The engine returns only the keys it found, in its own order.
    std::map<Bytes, Bytes*> found;
    for (std::size_t i = 0; i < got->keys.size() && i < got->values.size(); ++i) {
        found.emplace(got->keys[i], &got->values[i]);
    }
    std::vector<std::optional<Bytes>> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
        auto it = found.find(k);
        if (it == found.end()) {
            out.emplace_back(std::nullopt);
        } else {
            out.emplace_back(*it->second);
        }
    }
    co_return out;
}

asio::awaitable<Result<std::vector<KvEntry>>> EnvoyHandle::kv_list_all(std::string actor_id,
                                                                       KvListOptions opts) const {
    return list(state_, std::move(actor_id), proto::KvListQuery{proto::KvListAllQuery{}}, opts);
}

asio::awaitable<Result<std::vector<KvEntry>>> EnvoyHandle::kv_list_prefix(
    std::string actor_id, Bytes prefix, KvListOptions opts) const {
    if (auto s = check_key(prefix); !s.ok())
        co_return s.error();
    auto st = state_;
    proto::KvListQuery query{proto::KvListPrefixQuery{std::move(prefix)}};
    auto op = list(st, std::move(actor_id), std::move(query), opts);
    co_return co_await std::move(op);
}

asio::awaitable<Result<std::vector<KvEntry>>> EnvoyHandle::kv_list_range(std::string actor_id,
                                                                         Bytes start, Bytes end,
                                                                         bool exclusive,
                                                                         KvListOptions opts) const {
    if (auto s = check_key(start); !s.ok())
        co_return s.error();
    if (auto s = check_key(end); !s.ok())
        co_return s.error();
    auto st = state_;
    proto::KvListQuery query{proto::KvListRangeQuery{std::move(start), std::move(end), exclusive}};
    auto op = list(st, std::move(actor_id), std::move(query), opts);
    co_return co_await std::move(op);
}

asio::awaitable<Status> EnvoyHandle::kv_put(std::string actor_id,
                                            std::vector<KvEntry> entries) const {
    if (auto s = check_entries(entries); !s.ok())
        co_return s;
    proto::KvPutRequest put;
    for (auto& [k, v] : entries) {
        put.keys.push_back(std::move(k));
        put.values.push_back(std::move(v));
    }
    auto st = state_;
    KvRequestData req{std::move(put)};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    co_return expect<proto::KvPutResponse>(r);
}

asio::awaitable<Status> EnvoyHandle::kv_delete(std::string actor_id,
                                               std::vector<Bytes> keys) const {
    if (auto s = check_keys(keys); !s.ok())
        co_return s;
    auto st = state_;
    KvRequestData req{proto::KvDeleteRequest{std::move(keys)}};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    co_return expect<proto::KvDeleteResponse>(r);
}

asio::awaitable<Status> EnvoyHandle::kv_delete_range(std::string actor_id, Bytes start,
                                                     Bytes end) const {
    if (auto s = check_key(start); !s.ok())
        co_return s;
    if (auto s = check_key(end); !s.ok())
        co_return s;
    auto st = state_;
    KvRequestData req{proto::KvDeleteRangeRequest{std::move(start), std::move(end)}};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    // There is no DeleteRange response: the engine answers with KvDeleteResponse.
    co_return expect<proto::KvDeleteResponse>(r);
}

asio::awaitable<Status> EnvoyHandle::kv_drop(std::string actor_id) const {
    auto st = state_;
    KvRequestData req{proto::KvDropRequest{}};
    auto op = detail::kv_request(st, std::move(actor_id), std::move(req));
    auto r = co_await std::move(op);
    co_return expect<proto::KvDropResponse>(r);
}

void EnvoyHandle::shutdown(bool immediate) const {
    detail::request_shutdown(*state_, immediate);
}
bool EnvoyHandle::is_stopped() const {
    return state_->stopped;
}

asio::awaitable<void> EnvoyHandle::wait_stopped() const {
    auto st = state_;
    while (!st->stopped)
        co_await st->stopped_notify.notified();
}

void WebSocketSender::send(Bytes data, bool binary) const {
    if (auto st = state_.lock())
        detail::send_websocket_frame(*st, id_, std::move(data), binary);
}

void WebSocketSender::ack(std::uint16_t index) const {
    if (auto st = state_.lock())
        detail::ack_websocket_message(*st, id_, index);
}

void WebSocketSender::close(CloseFrame frame) const {
    if (auto st = state_.lock())
        detail::close_websocket_locally(*st, id_, std::move(frame));
}

}  // namespace rivetkit::envoy

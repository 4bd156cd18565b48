// The actor-connect connection: one run loop per Connection on the client's executor
// (connect → read frames → on loss back off and reconnect), a writer that keeps one
// WebSocket write outstanding, and the pending-action table.

#include <fmt/format.h>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <random>

#include "base/log.hpp"
#include "client/state.hpp"
#include "envoy/backoff.hpp"
#include "runtime/oneshot.hpp"

namespace rivetkit::client {

namespace asio = boost::asio;

namespace detail {

struct EventQueue {
    using Waiter = asio::any_completion_handler<void(std::optional<Json>)>;

    mutable std::mutex mutex;
    std::condition_variable cv;
    std::deque<Json> events;
    std::size_t capacity = 1024;
    std::size_t dropped = 0;
    bool closed = false;
    std::optional<Waiter> waiter;

    // The waiting coroutine's executor, where its completion is posted (never run inline).
    asio::any_io_executor waiter_executor;

    static void complete(asio::any_io_executor ex, Waiter waiter, std::optional<Json> value) {
        asio::post(ex, [waiter = std::move(waiter), value = std::move(value)]() mutable {
            std::move(waiter)(std::move(value));
        });
    }

    // On the client's executor (the event listener).
    void push(const Json& args) {
        std::unique_lock lock(mutex);
        if (closed)
            return;
        if (waiter) {
            Waiter w = std::move(*waiter);
            waiter.reset();
            lock.unlock();
            complete(waiter_executor, std::move(w), args);
            return;
        }
        if (events.size() >= capacity) {
            events.pop_front();
            ++dropped;
        }
        events.push_back(args);
        cv.notify_one();
    }

    void close() {
        std::unique_lock lock(mutex);
        if (closed)
            return;
        closed = true;
        std::optional<Waiter> w = std::move(waiter);
        waiter.reset();
        cv.notify_all();
        lock.unlock();
        if (w)
            complete(waiter_executor, std::move(*w), std::nullopt);
    }
};

struct PendingAction {
    rt::OneshotSender<Result<Json>> reply;
    Bytes frame;
    bool sent = false;
};

struct ConnectionState : std::enable_shared_from_this<ConnectionState> {
    ConnectionState(std::shared_ptr<ClientState> c, asio::any_io_executor ex)
        : client(std::move(c)), executor(std::move(ex)), timer(executor) {}

    std::shared_ptr<ClientState> client;
    asio::any_io_executor executor;
    ActorHandle::Method method = ActorHandle::Method::GetOrCreate;
    std::string name;
    Key key;
    std::string target_actor_id;
    std::optional<Json> input;
    std::optional<std::string> region;
    Json params;
    wire::Encoding encoding = wire::Encoding::bare;

    // Executor-thread state.
    asio::steady_timer timer;
    std::shared_ptr<WsStream> ws;
    bool open = false;
    // Whether any socket of this connection reached Init.
    bool ever_opened = false;
    // The current socket's server already reported a connection-level error (its Error frame);
    // the close that follows is not reported again.
    bool socket_error_reported = false;
    bool disposed = false;
    bool writing = false;
    bool close_requested = false;
    std::deque<Bytes> outbox;
    std::uint64_t next_action = 0;
    std::map<std::uint64_t, PendingAction> pending;
    std::map<std::uint64_t, std::pair<std::string, Connection::EventHandler>> listeners;
    std::vector<Connection::ErrorHandler> error_handlers;
    std::vector<Connection::OpenHandler> open_handlers;
    std::vector<Connection::CloseHandler> close_handlers;
    // Event streams to end when the connection is disposed.
    std::vector<std::weak_ptr<EventQueue>> streams;
    std::minstd_rand rng{std::random_device{}()};

    // Shared with user threads.
    // Set by dispose() (and the client's destruction) before anything else: no handler of this
    // connection starts after it, on whichever thread dispose() was called.
    std::atomic<bool> handlers_off{false};
    mutable std::mutex mutex;
    mutable std::condition_variable cv;
    bool open_flag = false;
    std::optional<std::string> actor_id;
    std::optional<std::string> connection_id;
    std::atomic<std::uint64_t> next_listener{1};

    bool frames_binary() const { return encoding != wire::Encoding::json; }
    std::size_t listener_count(const std::string& event) const {
        std::size_t n = 0;
        for (const auto& [id, l] : listeners)
            if (l.first == event)
                ++n;
        return n;
    }
};

namespace {

asio::awaitable<void> write_loop(std::shared_ptr<ConnectionState> st,
                                 std::shared_ptr<WsStream> ws);

void start_writer(const std::shared_ptr<ConnectionState>& st) {
    if (st->writing || !st->ws)
        return;
    if (st->outbox.empty() && !st->close_requested)
        return;
    st->writing = true;
    asio::co_spawn(st->executor, write_loop(st, st->ws), asio::detached);
}

asio::awaitable<void> write_loop(std::shared_ptr<ConnectionState> st,
                                 std::shared_ptr<WsStream> ws) {
    while (!st->outbox.empty() && st->ws == ws) {
        Bytes frame = std::move(st->outbox.front());
        st->outbox.pop_front();
        Status written = co_await ws->write(std::move(frame), st->frames_binary());
        if (!written.ok()) {
            log::debug("client connection write failed",
                       {{"actor", st->name}, {"error", written.error().to_string()}});
            ws->abort();
            break;
        }
    }
    if (st->close_requested && st->ws == ws) {
        std::string reason = "Disposed";
        co_await ws->close(1000, std::move(reason));
    }
    st->writing = false;
    if (st->ws != ws)
        start_writer(st);
}

void send_frame(const std::shared_ptr<ConnectionState>& st, Bytes frame) {
    st->outbox.push_back(std::move(frame));
    start_writer(st);
}

void report_error(ConnectionState& st, const Error& error) {
    auto handlers = st.error_handlers;
    for (auto& h : handlers) {
        if (st.handlers_off.load())
            return;
        try {
            h(error);
        } catch (const std::exception& e) {
            log::warn("client connection error handler threw", {{"error", e.what()}});
        }
    }
}

void set_open(ConnectionState& st, bool open, const std::string* actor_id,
              const std::string* connection_id) {
    std::lock_guard lock(st.mutex);
    st.open_flag = open;
    if (actor_id != nullptr)
        st.actor_id = *actor_id;
    if (connection_id != nullptr)
        st.connection_id = *connection_id;
    st.cv.notify_all();
}

void on_init(const std::shared_ptr<ConnectionState>& st, const wire::InitFrame& init) {
    st->open = true;
    st->ever_opened = true;
    set_open(*st, true, &init.actor_id, &init.connection_id);
    log::debug("client connection open", {{"actor", st->name},
                                          {"actor_id", init.actor_id},
                                          {"connection_id", init.connection_id}});
    // Subscriptions first, then the actions queued while it was not open.
    std::vector<std::string> events;
    for (const auto& [id, l] : st->listeners) {
        if (std::find(events.begin(), events.end(), l.first) == events.end())
            events.push_back(l.first);
    }
    for (const auto& e : events)
        send_frame(st, wire::encode_subscription_request(st->encoding, e, true));
    for (auto& [id, p] : st->pending) {
        if (!p.sent) {
            p.sent = true;
            send_frame(st, p.frame);
        }
    }
    auto handlers = st->open_handlers;
    for (auto& h : handlers) {
        if (st->handlers_off.load())
            return;
        try {
            h(init.actor_id, init.connection_id);
        } catch (const std::exception& e) {
            log::warn("client connection open handler threw", {{"error", e.what()}});
        }
    }
}

void on_event(ConnectionState& st, const wire::EventFrame& event) {
    std::vector<Connection::EventHandler> handlers;
    for (const auto& [id, l] : st.listeners) {
        if (l.first == event.name)
            handlers.push_back(l.second);
    }
    for (auto& h : handlers) {
        if (st.handlers_off.load())
            return;
        try {
            h(event.args);
        } catch (const std::exception& e) {
            log::warn("client event handler threw",
                      {{"actor", st.name}, {"event", event.name}, {"error", e.what()}});
        }
    }
}

void complete(ConnectionState& st, std::uint64_t id, Result<Json> result) {
    auto it = st.pending.find(id);
    if (it == st.pending.end() || !it->second.sent) {
        log::warn("client connection: reply for an unknown action ignored",
                  {{"actor", st.name}, {"action_id", id}});
        return;
    }
    auto reply = std::move(it->second.reply);
    st.pending.erase(it);
    reply.send(std::move(result));
}

// Handles one decoded frame; false when the connection must be dropped.
void handle_frame(const std::shared_ptr<ConnectionState>& st, wire::ToClientFrame frame) {
    if (auto* init = std::get_if<wire::InitFrame>(&frame)) {
        on_init(st, *init);
    } else if (auto* resp = std::get_if<wire::ActionResponseFrame>(&frame)) {
        complete(*st, resp->id, std::move(resp->output));
    } else if (auto* event = std::get_if<wire::EventFrame>(&frame)) {
        on_event(*st, *event);
    } else {
        auto& err = std::get<wire::ErrorFrame>(frame);
        if (err.action_id) {
            complete(*st, *err.action_id, std::move(err.error));
        } else {
            log::warn("client connection error from actor",
                      {{"actor", st->name}, {"error", err.error.to_string()}});
            st->socket_error_reported = true;
            report_error(*st, err.error);
        }
    }
}

Error close_error(const WsRead& read) {
    if (read.kind == WsRead::Kind::closed) {
        // "group.code" optionally followed by "#rayId".
        std::string reason = read.reason.substr(0, read.reason.find('#'));
        auto dot = reason.find('.');
        if (read.close_code != 1000 && dot != std::string::npos && dot > 0 &&
            dot + 1 < reason.size() && reason.find(' ') == std::string::npos)
            return Error(reason.substr(0, dot), reason.substr(dot + 1),
                         fmt::format("connection closed ({} {})", read.close_code, read.reason));
        return Error("client", "connection_lost",
                     fmt::format("connection closed ({} {})", read.close_code, read.reason));
    }
    return Error("client", "connection_lost", "connection lost: " + read.reason);
}

// Whether a failed attempt's error may go away by itself: transport trouble (client/*) and the
// actor lifecycle boundaries upstream's client reconnects through (restarting, starting,
// stopping, stopped, the gateway's retryable codes). Anything else — actor/not_found, an
// authorization error, a rejected connection — is the server's answer to the queued actions.
bool is_transient(const Error& e) {
    const std::string& g = e.group();
    const std::string& c = e.code();
    if (g == "client")
        return true;
    if (g == "actor")
        return c == "restarting" || c == "starting" || c == "stopping" || c == "stopped" ||
               (c == "internal_error" && e.message() == "Actor is stopping");
    if (g == "ws")
        return c == "going_away";
    if (g == "guard")
        return c == "service_unavailable" || c == "actor_wake_retries_exceeded" ||
               c == "actor_stopped_while_waiting" || c == "tunnel_request_aborted" ||
               c == "tunnel_message_timeout" || c == "tunnel_response_closed" ||
               c == "gateway_response_start_timeout";
    return false;
}

// Fails every pending action with `error` (those sent on the socket that just ended, and with a
// definitive error also those still queued for the next socket).
void fail_pending(ConnectionState& st, bool include_queued, const Error& error) {
    std::vector<std::uint64_t> ids;
    for (auto& [id, p] : st.pending) {
        if (p.sent || include_queued)
            ids.push_back(id);
    }
    for (auto id : ids) {
        auto found = st.pending.find(id);
        auto reply = std::move(found->second.reply);
        st.pending.erase(found);
        reply.send(error);
    }
}

asio::awaitable<void> run_connection(std::shared_ptr<ConnectionState> st) {
    std::uint32_t attempt = 0;
    const auto endpoint = st->client->endpoint;
    while (!st->disposed) {
        auto target = st->client->gateway_target(st->method, st->name, st->key,
                                                 st->target_actor_id, st->input, st->region,
                                                 "/connect");
        if (!endpoint.ok() || !target.ok()) {
            Error e = !endpoint.ok() ? endpoint.error() : target.error();
            report_error(*st, e);
            break;
        }
        std::vector<std::string> protocols{
            "rivet", "rivet_encoding." + std::string(wire::encoding_name(st->encoding))};
        if (!st->params.is_null())
            protocols.push_back("rivet_conn_params." + percent_encode(st->params.dump()));
        auto ws = std::make_shared<WsStream>(st->executor);
        st->ws = ws;
        st->socket_error_reported = false;
        Endpoint ep = *endpoint;
        std::string path = std::move(target).value();
        Headers headers = st->client->gateway_headers();
        Status connected =
            co_await ws->connect(std::move(ep), std::move(path), std::move(protocols),
                                 std::move(headers));
        std::optional<Error> lost;
        if (!connected.ok()) {
            lost = connected.error();
            if (!st->disposed) {
                log::debug("client connection attempt failed",
                           {{"actor", st->name}, {"error", lost->to_string()}});
                report_error(*st, *lost);
            }
        } else {
            if (st->close_requested)
                start_writer(st);
            while (true) {
                WsRead read = co_await ws->read();
                if (read.kind != WsRead::Kind::message) {
                    lost = close_error(read);
                    break;
                }
                auto frame = wire::decode_to_client(st->encoding, read.data);
                if (!frame.ok()) {
                    // Never trust the rest of this socket: drop it and reconnect.
                    log::warn("client connection: malformed frame from server, reconnecting",
                              {{"actor", st->name},
                               {"actor_id", st->actor_id.value_or("")},
                               {"error", frame.error().to_string()}});
                    Error e("client", "malformed_frame",
                            "malformed frame from server: " + frame.error().message());
                    report_error(*st, e);
                    lost = std::move(e);
                    ws->abort();
                    break;
                }
                handle_frame(st, std::move(frame).value());
            }
        }
        // The socket is gone: fail what was sent on it, keep what was queued.
        const bool was_open = st->open;
        if (connected.ok() && !st->disposed) {
            log::debug("client connection lost",
                       {{"actor", st->name}, {"was_open", was_open}, {"error", lost->to_string()}});
            // A socket that ended before its Init is a failed connect to the caller.
            if (!was_open && !st->socket_error_reported)
                report_error(*st, *lost);
        }
        st->open = false;
        st->ws.reset();
        st->outbox.clear();
        set_open(*st, false, nullptr, nullptr);
        fail_pending(*st, false,
                     Error("client", "connection_lost",
                           "the connection dropped before the action's reply: " +
                               lost->message()));
        // The actions queued for the next socket wait for it while a connection that was open
        // reconnects through transient trouble (an engine restart). They get this attempt's
        // error instead when it is definitive (the actor does not exist, the connection was
        // refused) or when the connection never opened at all — as upstream's client fails the
        // actions of a connection whose opening failed. The connection itself keeps retrying (a
        // get target may be created later) and queues whatever is called next.
        if (!st->disposed && (!is_transient(*lost) || !st->ever_opened) &&
            !st->pending.empty()) {
            log::info("client connection: queued actions failed",
                      {{"actor", st->name},
                       {"count", static_cast<unsigned long long>(st->pending.size())},
                       {"error", lost->to_string()}});
            fail_pending(*st, true, *lost);
        }
        if (was_open) {
            auto handlers = st->close_handlers;
            for (auto& h : handlers) {
                if (st->handlers_off.load())
                    break;
                try {
                    h(*lost);
                } catch (const std::exception& e) {
                    log::warn("client connection close handler threw", {{"error", e.what()}});
                }
            }
            attempt = 0;
        }
        if (st->disposed)
            break;
        envoy::BackoffOptions backoff;
        backoff.initial = st->client->config.reconnect_initial;
        backoff.max = st->client->config.reconnect_max;
        const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(st->rng);
        const auto delay = envoy::backoff_delay(attempt, jitter, backoff);
        ++attempt;
        log::debug("client connection reconnecting",
                   {{"actor", st->name}, {"delay_ms", static_cast<long long>(delay.count())}});
        st->timer.expires_after(delay);
        auto [ec] = co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
        (void)ec;
    }
    // Disposed (or unusable): event streams end, everything still pending fails.
    for (auto& weak : st->streams) {
        if (auto queue = weak.lock())
            queue->close();
    }
    st->streams.clear();
    auto pending = std::move(st->pending);
    st->pending.clear();
    for (auto& [id, p] : pending)
        p.reply.send(Error("client", "disposed", "the connection was disposed"));
    set_open(*st, false, nullptr, nullptr);
}

asio::awaitable<Result<Json>> connection_action(std::shared_ptr<ConnectionState> st,
                                                std::string name, Json args) {
    if (st->disposed)
        co_return Error("client", "disposed", "the connection was disposed");
    const std::uint64_t id = st->next_action++;
    auto frame = wire::encode_action_request(st->encoding, id, name, args);
    if (!frame.ok())
        co_return std::move(frame).error();
    auto [tx, rx] = rt::oneshot<Result<Json>>();
    auto& p = st->pending.emplace(id, PendingAction{std::move(tx), std::move(frame).value(), false})
                  .first->second;
    if (st->open) {
        p.sent = true;
        send_frame(st, p.frame);
    }
    auto out = co_await rx.recv();
    if (!out)
        co_return Error("client", "disposed", "the connection was disposed");
    co_return std::move(*out);
}

}  // namespace

void dispose_connection(ConnectionState& state, bool immediate) {
    if (immediate)
        state.handlers_off = true;  // the client is going: none of the handlers runs any more
    asio::post(state.executor, [st = state.shared_from_this(), immediate] {
        if (st->disposed && !immediate)
            return;
        st->disposed = true;
        st->timer.cancel();
        if (st->ws) {
            if (st->open && !immediate) {
                st->close_requested = true;
                start_writer(st);
            } else {
                st->ws->abort();
            }
        }
    });
}

std::shared_ptr<ConnectionState> start_connection(std::shared_ptr<ClientState> client,
                                                  ActorHandle::Method method, std::string name,
                                                  Key key, std::string actor_id,
                                                  std::optional<Json> input,
                                                  std::optional<std::string> region,
                                                  Json params) {
    auto st = std::make_shared<ConnectionState>(client, client->executor);
    st->method = method;
    st->name = std::move(name);
    st->key = std::move(key);
    st->target_actor_id = std::move(actor_id);
    st->input = std::move(input);
    st->region = std::move(region);
    st->params = std::move(params);
    st->encoding = to_wire(client->config.encoding);
    {
        std::lock_guard lock(client->mutex);
        auto& list = client->connections;
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [](const auto& w) { return w.expired(); }),
                   list.end());
        list.push_back(st);
    }
    if (!client->closed.load())
        asio::co_spawn(st->executor, run_connection(st), asio::detached);
    return st;
}

}  // namespace detail

// MARK: Connection

Connection::Connection(std::shared_ptr<detail::ConnectionState> state) : state_(std::move(state)) {}

Connection::~Connection() { dispose(); }

namespace {
template <typename F>
void on_executor(const std::shared_ptr<detail::ConnectionState>& st, F f) {
    if (st->client->closed.load())
        return;
    asio::post(st->executor, [st, f = std::move(f)]() mutable { f(*st); });
}
}  // namespace

std::uint64_t Connection::on(std::string event, EventHandler handler) {
    const std::uint64_t id = state_->next_listener++;
    on_executor(state_, [id, event = std::move(event),
                         handler = std::move(handler)](detail::ConnectionState& st) mutable {
        const bool first = st.listener_count(event) == 0;
        st.listeners.emplace(id, std::make_pair(event, std::move(handler)));
        if (first && st.open)
            detail::send_frame(st.shared_from_this(),
                               wire::encode_subscription_request(st.encoding, event, true));
    });
    return id;
}

namespace {
void remove_listener(const std::shared_ptr<detail::ConnectionState>& state,
                     std::uint64_t listener) {
    on_executor(state, [listener](detail::ConnectionState& st) {
        auto it = st.listeners.find(listener);
        if (it == st.listeners.end())
            return;
        std::string event = it->second.first;
        st.listeners.erase(it);
        if (st.listener_count(event) == 0 && st.open)
            detail::send_frame(st.shared_from_this(),
                               wire::encode_subscription_request(st.encoding, event, false));
    });
}
}  // namespace

void Connection::off(std::uint64_t listener) {
    remove_listener(state_, listener);
}

std::unique_ptr<EventStream> Connection::subscribe(std::string event, std::size_t capacity) {
    auto queue = std::make_shared<detail::EventQueue>();
    queue->capacity = std::max<std::size_t>(capacity, 1);
    std::weak_ptr<detail::EventQueue> weak = queue;
    const std::uint64_t id =
        on(std::move(event), [weak](const Json& args) {
            if (auto q = weak.lock())
                q->push(args);
        });
    on_executor(state_, [weak](detail::ConnectionState& st) {
        if (st.disposed) {
            if (auto q = weak.lock())
                q->close();
            return;
        }
        st.streams.push_back(weak);
    });
    return std::unique_ptr<EventStream>(new EventStream(state_, id, std::move(queue)));
}

// MARK: EventStream

EventStream::EventStream(std::shared_ptr<detail::ConnectionState> connection,
                         std::uint64_t listener, std::shared_ptr<detail::EventQueue> queue)
    : connection_(std::move(connection)), listener_(listener), queue_(std::move(queue)) {}

EventStream::~EventStream() { close(); }

void EventStream::close() {
    queue_->close();
    if (connection_) {
        remove_listener(connection_, listener_);
        connection_.reset();
    }
}

std::size_t EventStream::dropped() const {
    std::lock_guard lock(queue_->mutex);
    return queue_->dropped;
}

std::optional<Json> EventStream::next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(queue_->mutex);
    queue_->cv.wait_for(lock, timeout,
                        [&] { return !queue_->events.empty() || queue_->closed; });
    if (queue_->events.empty())
        return std::nullopt;
    Json out = std::move(queue_->events.front());
    queue_->events.pop_front();
    return out;
}

boost::asio::awaitable<std::optional<Json>> EventStream::next_async() {
    auto queue = queue_;
    auto initiate = [queue](auto handler) {
        asio::any_io_executor ex = asio::get_associated_executor(handler);
        std::unique_lock lock(queue->mutex);
        if (!queue->events.empty()) {
            std::optional<Json> value(std::move(queue->events.front()));
            queue->events.pop_front();
            lock.unlock();
            detail::EventQueue::complete(ex, std::move(handler), std::move(value));
            return;
        }
        if (queue->closed || queue->waiter) {
            lock.unlock();
            detail::EventQueue::complete(ex, std::move(handler), std::nullopt);
            return;
        }
        queue->waiter.emplace(std::move(handler));
        queue->waiter_executor = std::move(ex);
    };
    auto op = asio::async_initiate<const asio::use_awaitable_t<>&, void(std::optional<Json>)>(
        std::move(initiate), asio::use_awaitable);
    std::optional<Json> value = co_await std::move(op);
    co_return value;
}

void Connection::on_error(ErrorHandler handler) {
    on_executor(state_, [h = std::move(handler)](detail::ConnectionState& st) mutable {
        st.error_handlers.push_back(std::move(h));
    });
}

void Connection::on_open(OpenHandler handler) {
    on_executor(state_, [h = std::move(handler)](detail::ConnectionState& st) mutable {
        st.open_handlers.push_back(std::move(h));
    });
}

void Connection::on_close(CloseHandler handler) {
    on_executor(state_, [h = std::move(handler)](detail::ConnectionState& st) mutable {
        st.close_handlers.push_back(std::move(h));
    });
}

Result<Json> Connection::action(std::string name, Json args) {
    return detail::block_on(*state_->client, action_async(std::move(name), std::move(args)));
}

asio::awaitable<Result<Json>> Connection::action_async(std::string name, Json args) {
    auto st = state_;
    auto out = co_await detail::connection_action(std::move(st), std::move(name), std::move(args));
    co_return out;
}

bool Connection::is_open() const {
    std::lock_guard lock(state_->mutex);
    return state_->open_flag;
}

std::optional<std::string> Connection::actor_id() const {
    std::lock_guard lock(state_->mutex);
    return state_->actor_id;
}

std::optional<std::string> Connection::connection_id() const {
    std::lock_guard lock(state_->mutex);
    return state_->connection_id;
}

bool Connection::wait_open(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(state_->mutex);
    return state_->cv.wait_for(lock, timeout, [&] { return state_->open_flag; });
}

void Connection::dispose() {
    state_->handlers_off = true;
    detail::ClientState& client = *state_->client;
    if (client.closed.load())
        return;
    detail::dispose_connection(*state_, /*immediate=*/false);
    // On the client's own thread, a handler may be running right now: wait for it, so that what
    // the handlers capture may go once dispose() returns. (Called from a handler, the flag is
    // enough; on a caller's executor, which may be this thread's between runs, waiting could
    // deadlock: there only the flag holds, a handler already running elsewhere may finish.)
    if (client.own_io && !client.on_executor_thread()) {
        auto drained = std::make_shared<std::promise<void>>();
        auto done = drained->get_future();
        asio::post(client.executor, [drained] { drained->set_value(); });
        done.wait();
    }
}

std::shared_ptr<Connection> ActorHandle::connect(Json params) const {
    Json p = params.is_null() ? params_ : std::move(params);
    auto st = detail::start_connection(client_, method_, name_, key_, actor_id_, input_, region_,
                                       std::move(p));
    return std::shared_ptr<Connection>(new Connection(std::move(st)));
}

}  // namespace rivetkit::client

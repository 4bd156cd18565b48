#pragma once
// The C++ client for Rivet actors (upstream's `createClient` from rivetkit/client): find actors
// through the engine's gateway, call their actions over HTTP, hold an actor-connect WebSocket
// with events and automatic reconnect, and reach an actor's raw `on_request` / `on_websocket`.
//
//   rivetkit::client::ClientConfig config;     // or ClientConfig::from_env()
//   config.endpoint = "http://127.0.0.1:6420";
//   rivetkit::client::Client client(config);
//   auto counter = client.get_or_create("counter", {"demo"});
//   rivetkit::Result<std::int64_t> n = counter.call<std::int64_t>("increment", 1);
//   auto conn = counter.connect();
//   conn->on("newCount", [](const rivetkit::Json& args) { ... });   // args is the event's array
//
// Threading: a Client made with a config alone runs its own io thread; one made with an executor
// (e.g. inside an actor) runs on it. The blocking calls (`action`, `call`, `resolve`, ...) must not
// be made on the client's own executor thread (they return client/blocking_on_executor there);
// use the `_async` forms, which run on that executor. Callbacks run on the client's executor.
//
// Errors are structured: a failed call returns the actor's Error (group, code, message,
// metadata JSON, actor specifier), the engine's (e.g. actor/not_found), or the client's own
// (group "client": connection_lost, malformed_frame, malformed_response, http_error,
// connect_failed, disposed, ...).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/result.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {
using Json = nlohmann::json;
}

namespace rivetkit::client {

enum class Encoding : std::uint8_t { bare, json, cbor };
std::string_view encoding_name(Encoding encoding) noexcept;
std::optional<Encoding> parse_encoding(std::string_view name) noexcept;

struct ClientConfig {
    // http://host[:port][/base]; https is not supported by this build.
    std::string endpoint = "http://127.0.0.1:6420";
    std::string ns = "default";
    std::optional<std::string> token;
    // The pool new actors are placed in (`rvt-runner` / `runner_name_selector`).
    std::string pool = "default";
    Encoding encoding = Encoding::bare;
    // Added to every gateway and engine API request.
    std::vector<std::pair<std::string, std::string>> headers;
    // Connection reconnect backoff: initial × 2^attempt capped at max, plus 0–25 % jitter.
    std::chrono::milliseconds reconnect_initial{250};
    std::chrono::milliseconds reconnect_max{30'000};

    // RIVET_ENDPOINT (or RIVET_ENGINE), RIVET_NAMESPACE, RIVET_TOKEN, RIVET_POOL,
    // RIVET_ENCODING over the defaults above.
    static ClientConfig from_env();
};

using Key = std::vector<std::string>;

struct GetOptions {
    // Connection params (upstream's `params`), sent as `x-rivet-conn-params` /
    // `rivet_conn_params.*`; null = none.
    Json params = nullptr;
};
struct GetOrCreateOptions {
    std::optional<Json> input;
    std::optional<std::string> region;
    Json params = nullptr;
};
struct CreateOptions {
    std::optional<Json> input;
    std::optional<std::string> region;
    Json params = nullptr;
};

struct HttpRequest {
    std::string method = "GET";
    // Path relative to the actor's raw handler, e.g. "/foo?x=1" (on_request sees "/foo?x=1").
    std::string path = "/";
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
};
struct HttpResponse {
    unsigned status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::optional<std::string> header(std::string_view name) const;
};

// ActorHandle::send: `wait` waits until the actor completes the message (a completable receive
// answered it) or `timeout` passes (the actor's default when unset).
struct QueueSendOptions {
    bool wait = false;
    std::optional<std::chrono::milliseconds> timeout;
};
struct QueueSendResult {
    // "completed" (also for a send without wait, once enqueued) or "timedOut".
    std::string status;
    // What the actor completed the message with, when it did with a value.
    std::optional<Json> response;
    bool completed() const noexcept { return status == "completed"; }
};

struct WebSocketMessage {
    std::string data;
    bool binary = false;
};

namespace detail {
struct ClientState;
struct ConnectionState;
struct RawSocketState;
}  // namespace detail

class ActorHandle;
class Connection;

namespace detail {
struct EventQueue;
}

// The events of one name on a connection as a stream, for coroutines (`co_await next_async()`)
// and blocking code (`next(timeout)`). Events are buffered from Connection::subscribe() on, up to
// `capacity`; when it is full the oldest is dropped (dropped() counts them). The stream ends when
// closed, destroyed (which unsubscribes) or when its connection is disposed.
class EventStream {
  public:
    ~EventStream();
    EventStream(const EventStream&) = delete;
    EventStream& operator=(const EventStream&) = delete;

    // The next event's args; nullopt after `timeout` or once the stream ended.
    std::optional<Json> next(std::chrono::milliseconds timeout);
    // Waits for the next event (resuming on the awaiting coroutine's executor); nullopt once the
    // stream ended. One waiter at a time: a second concurrent call returns nullopt at once.
    boost::asio::awaitable<std::optional<Json>> next_async();
    std::size_t dropped() const;
    void close();

  private:
    friend class Connection;
    EventStream(std::shared_ptr<detail::ConnectionState> connection, std::uint64_t listener,
                std::shared_ptr<detail::EventQueue> queue);
    std::shared_ptr<detail::ConnectionState> connection_;
    std::uint64_t listener_;
    std::shared_ptr<detail::EventQueue> queue_;
};

// An actor-connect WebSocket (upstream's ActorConn). Opens at once and reconnects forever with
// backoff until dispose(); every event with a listener is re-subscribed after each (re)connect.
// Actions made while it is not open are queued and sent after the next Init; actions in flight
// when it drops fail with client/connection_lost.
class Connection {
  public:
    using EventHandler = std::function<void(const Json& args)>;
    using ErrorHandler = std::function<void(const Error& error)>;
    using OpenHandler = std::function<void(const std::string& actor_id,
                                           const std::string& connection_id)>;
    using CloseHandler = std::function<void(const Error& reason)>;

    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // Adds a listener (subscribing on the server for the first listener of `event`); returns
    // its id for off().
    std::uint64_t on(std::string event, EventHandler handler);
    void off(std::uint64_t listener);
    // The events named `event` as an EventStream (a listener like on()'s).
    std::unique_ptr<EventStream> subscribe(std::string event, std::size_t capacity = 1024);
    // Connection-level errors: Error frames without an action id, malformed frames, failed
    // (re)connects.
    void on_error(ErrorHandler handler);
    // After each Init (first open and every reconnect).
    void on_open(OpenHandler handler);
    // Each time an open socket goes away (with why).
    void on_close(CloseHandler handler);

    // Sent at once when open, otherwise queued for the next socket. An action sent on a socket
    // that drops fails with client/connection_lost. A queued action waits while a connection
    // that was open reconnects through transient trouble; it fails with the attempt's error
    // when the connection never opened, or when the server's answer is definitive (e.g.
    // actor/not_found). The connection keeps retrying either way until dispose().
    Result<Json> action(std::string name, Json args = Json::array());
    template <typename T, typename... Args>
    Result<T> call(std::string name, const Args&... args) {
        return convert<T>(action(std::move(name), Json::array({Json(args)...})));
    }
    boost::asio::awaitable<Result<Json>> action_async(std::string name,
                                                      Json args = Json::array());

    bool is_open() const;
    std::optional<std::string> actor_id() const;
    std::optional<std::string> connection_id() const;

    // Blocks until the connection is open (Init received) or `timeout` passes.
    bool wait_open(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;

    // Closes (1000 "Disposed"), stops reconnecting and fails whatever is pending. Idempotent.
    // No handler of this connection (on, on_open, on_close, on_error) starts after it returns,
    // so what they capture may go then; with the client's own thread, one already running is
    // waited for (called from a handler: none runs after that one). On a caller's executor
    // (Client(config, executor)) it does not wait: run it there. The destructor disposes.
    void dispose();

    template <typename T>
    static Result<T> convert(Result<Json> r) {
        return result_as<T>(std::move(r));
    }

  private:
    friend class ActorHandle;
    explicit Connection(std::shared_ptr<detail::ConnectionState> state);
    std::shared_ptr<detail::ConnectionState> state_;
};

// A raw WebSocket to an actor's on_websocket (path "/websocket/...").
class RawWebSocket {
  public:
    ~RawWebSocket();
    RawWebSocket(const RawWebSocket&) = delete;
    RawWebSocket& operator=(const RawWebSocket&) = delete;

    Status send(std::string data, bool binary = false);
    // The next message; nullopt once closed.
    std::optional<WebSocketMessage> recv(
        std::chrono::milliseconds timeout = std::chrono::seconds(30));
    void close(std::uint16_t code = 1000, std::string reason = {});

  private:
    friend class ActorHandle;
    explicit RawWebSocket(std::shared_ptr<detail::RawSocketState> state);
    std::shared_ptr<detail::RawSocketState> state_;
};

// Addresses one actor: by name + key (get / getOrCreate, routed by the gateway's query form)
// or by id (getForId / create, routed directly).
class ActorHandle {
  public:
    enum class Method : std::uint8_t { Get, GetOrCreate, ForId };

    const std::string& name() const noexcept { return name_; }
    const Key& key() const noexcept { return key_; }
    Method method() const noexcept { return method_; }

    // The actor id (engine API: PUT /actors for getOrCreate, GET /actors for get).
    Result<std::string> resolve() const;
    // A stateless action over HTTP; args is the argument array (a non-array is one argument).
    Result<Json> action(std::string name, Json args = Json::array()) const;
    template <typename T, typename... Args>
    Result<T> call(std::string name, const Args&... args) const {
        return Connection::convert<T>(action(std::move(name), Json::array({Json(args)...})));
    }
    // Sends `body` to the actor's queue `name` over HTTP (upstream's `handle.send`). Errors as an
    // action's: the actor's can_publish refusal is auth/forbidden, a full queue
    // queue/full, and so on.
    Result<QueueSendResult> send(std::string name, Json body,
                                 QueueSendOptions options = {}) const;
    // Raw HTTP to the actor's on_request.
    Result<HttpResponse> fetch(HttpRequest request) const;
    // A raw WebSocket to the actor's on_websocket (`path` below /websocket, e.g. "/chat?x=1").
    Result<std::unique_ptr<RawWebSocket>> websocket(std::string path = "/",
                                                    std::vector<std::string> protocols = {}) const;
    // An actor-connect connection (already connecting when returned).
    std::shared_ptr<Connection> connect(Json params = nullptr) const;

    boost::asio::awaitable<Result<std::string>> resolve_async() const;
    boost::asio::awaitable<Result<Json>> action_async(std::string name,
                                                      Json args = Json::array()) const;
    boost::asio::awaitable<Result<QueueSendResult>> send_async(std::string name, Json body,
                                                               QueueSendOptions options = {}) const;
    boost::asio::awaitable<Result<HttpResponse>> fetch_async(HttpRequest request) const;

  private:
    friend class Client;
    ActorHandle(std::shared_ptr<detail::ClientState> client, Method method, std::string name,
                Key key, std::string actor_id, std::optional<Json> input,
                std::optional<std::string> region, Json params);

    std::shared_ptr<detail::ClientState> client_;
    Method method_;
    std::string name_;
    Key key_;
    std::string actor_id_;
    std::optional<Json> input_;
    std::optional<std::string> region_;
    Json params_;
};

class Client {
  public:
    // Runs its own io thread.
    explicit Client(ClientConfig config = ClientConfig::from_env());
    // Runs on `executor` (which must be single-threaded, e.g. an io_context run by one thread).
    Client(ClientConfig config, boost::asio::any_io_executor executor);
    // Disposes every connection; with its own thread, stops and joins it.
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    const ClientConfig& config() const;
    boost::asio::any_io_executor executor() const;

    ActorHandle get(std::string name, Key key = {}, GetOptions options = {}) const;
    ActorHandle get_or_create(std::string name, Key key = {},
                              GetOrCreateOptions options = {}) const;
    ActorHandle get_for_id(std::string name, std::string actor_id,
                           GetOptions options = {}) const;
    // Creates the actor through the engine API (POST /actors; actor/duplicate_key when the key is
    // taken) and returns a handle by id.
    Result<ActorHandle> create(std::string name, Key key = {}, CreateOptions options = {}) const;
    boost::asio::awaitable<Result<ActorHandle>> create_async(std::string name, Key key,
                                                             CreateOptions options) const;

  private:
    std::shared_ptr<detail::ClientState> state_;
};

// MARK: actor-to-actor

// The engine settings of this host process (endpoint, namespace, token, pool). The host sets
// them when it joins the engine (rivetkit-host does); until then ClientConfig::from_env(), which
// reads the same RIVET_* variables the host honours.
void set_host_config(ClientConfig config);
ClientConfig host_config();

// Inside an actor's coroutine (an awaitable action, hook or run handler): a client on the
// actor's own executor with the host's settings. Call its handles' `_async` forms:
//
//   auto peers = co_await rivetkit::client::actor_client();
//   auto out = co_await peers->get_or_create("counter", {"k"}).action_async("increment", {1});
boost::asio::awaitable<std::unique_ptr<Client>> actor_client();

}  // namespace rivetkit::client

// A raw WebSocket to an actor's on_websocket: a reader coroutine fills a queue the user thread
// drains; writes are serialised through one writer.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <deque>

#include "client/state.hpp"

namespace rivetkit::client {

namespace asio = boost::asio;

namespace detail {

struct RawSocketState : std::enable_shared_from_this<RawSocketState> {
    std::shared_ptr<ClientState> client;
    std::shared_ptr<WsStream> ws;
    // Executor thread.
    std::deque<std::pair<Bytes, bool>> outbox;
    bool writing = false;
    bool close_requested = false;
    std::uint16_t close_code = 1000;
    std::string close_reason;
    // Shared.
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<WebSocketMessage> inbox;
    bool ended = false;
};

namespace {

asio::awaitable<void> raw_read_loop(std::shared_ptr<RawSocketState> st) {
    while (true) {
        WsRead read = co_await st->ws->read();
        std::lock_guard lock(st->mutex);
        if (read.kind != WsRead::Kind::message) {
            st->ended = true;
            st->cv.notify_all();
            break;
        }
        st->inbox.push_back(WebSocketMessage{std::string(as_chars(read.data)),
                                             read.binary});
        st->cv.notify_all();
    }
}

asio::awaitable<void> raw_write_loop(std::shared_ptr<RawSocketState> st) {
    while (!st->outbox.empty()) {
        auto [data, binary] = std::move(st->outbox.front());
        st->outbox.pop_front();
        Status written = co_await st->ws->write(std::move(data), binary);
        if (!written.ok()) {
            st->ws->abort();
            st->outbox.clear();
            break;
        }
    }
    if (st->close_requested) {
        st->close_requested = false;
        std::string reason = st->close_reason;
        co_await st->ws->close(st->close_code, std::move(reason));
    }
    st->writing = false;
}

void raw_start_writer(const std::shared_ptr<RawSocketState>& st) {
    if (st->writing)
        return;
    st->writing = true;
    asio::co_spawn(st->client->executor, raw_write_loop(st), asio::detached);
}

asio::awaitable<Result<std::shared_ptr<RawSocketState>>> raw_open(
    std::shared_ptr<ClientState> client, std::string target, std::vector<std::string> protocols) {
    auto st = std::make_shared<RawSocketState>();
    st->client = client;
    st->ws = std::make_shared<WsStream>(client->executor);
    Endpoint ep = *client->endpoint;
    Headers headers = client->gateway_headers();
    Status s = co_await st->ws->connect(std::move(ep), std::move(target), std::move(protocols),
                                        std::move(headers));
    if (!s.ok())
        co_return s.error();
    {
        std::lock_guard lock(client->mutex);
        auto& list = client->raw_sockets;
        list.erase(std::remove_if(list.begin(), list.end(),
                                  [](const auto& w) { return w.expired(); }),
                   list.end());
        list.push_back(st);
    }
    asio::co_spawn(client->executor, raw_read_loop(st), asio::detached);
    co_return st;
}

}  // namespace

void abort_raw_sockets(ClientState& state) {
    std::vector<std::shared_ptr<RawSocketState>> live;
    {
        std::lock_guard lock(state.mutex);
        for (auto& w : state.raw_sockets) {
            if (auto s = w.lock())
                live.push_back(std::move(s));
        }
        state.raw_sockets.clear();
    }
    for (auto& s : live)
        asio::post(state.executor, [s] { s->ws->abort(); });
}

}  // namespace detail

RawWebSocket::RawWebSocket(std::shared_ptr<detail::RawSocketState> state)
    : state_(std::move(state)) {}

RawWebSocket::~RawWebSocket() { close(); }

Status RawWebSocket::send(std::string data, bool binary) {
    if (state_->client->closed.load())
        return Error("client", "closed", "the client was destroyed");
    {
        std::lock_guard lock(state_->mutex);
        if (state_->ended)
            return Error("client", "connection_lost", "the WebSocket is closed");
    }
    asio::post(state_->client->executor, [st = state_, data = std::move(data), binary]() mutable {
        st->outbox.emplace_back(Bytes(data.begin(), data.end()), binary);
        detail::raw_start_writer(st);
    });
    return Status{};
}

std::optional<WebSocketMessage> RawWebSocket::recv(std::chrono::milliseconds timeout) {
    std::unique_lock lock(state_->mutex);
    state_->cv.wait_for(lock, timeout, [&] { return !state_->inbox.empty() || state_->ended; });
    if (state_->inbox.empty())
        return std::nullopt;
    auto out = std::move(state_->inbox.front());
    state_->inbox.pop_front();
    return out;
}

void RawWebSocket::close(std::uint16_t code, std::string reason) {
    if (state_->client->closed.load())
        return;
    {
        std::lock_guard lock(state_->mutex);
        if (state_->ended)
            return;
    }
    asio::post(state_->client->executor,
               [st = state_, code, reason = std::move(reason)]() mutable {
                   if (st->close_code == 0)
                       return;
                   st->close_requested = true;
                   st->close_code = code;
                   st->close_reason = std::move(reason);
                   detail::raw_start_writer(st);
               });
}

Result<std::unique_ptr<RawWebSocket>> ActorHandle::websocket(
    std::string path, std::vector<std::string> protocols) const {
    if (path.empty() || path.front() != '/')
        path.insert(path.begin(), '/');
    auto target = client_->gateway_target(method_, name_, key_, actor_id_, input_, region_,
                                          "/websocket" + path);
    if (!target.ok())
        return std::move(target).error();
    std::vector<std::string> offered{"rivet"};
    for (auto& p : protocols)
        offered.push_back(std::move(p));
    auto st = detail::block_on(*client_, detail::raw_open(client_, std::move(target).value(),
                                                          std::move(offered)));
    if (!st.ok())
        return std::move(st).error();
    return std::unique_ptr<RawWebSocket>(new RawWebSocket(std::move(st).value()));
}

}  // namespace rivetkit::client

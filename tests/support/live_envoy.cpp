#include "live_envoy.hpp"


#include "envoy/body_stream.hpp"
#include "recording_callbacks.hpp"

namespace rivetkit::envoy::testing {

namespace asio = boost::asio;

std::size_t LiveCallbacks::State::starts_of(const std::string& actor_id) const {
    std::size_t n = 0;
    for (const auto& s : starts)
        n += s.actor_id == actor_id ? 1 : 0;
    return n;
}

std::size_t LiveCallbacks::State::stops_of(const std::string& actor_id) const {
    std::size_t n = 0;
    for (const auto& s : stops)
        n += s.actor_id == actor_id ? 1 : 0;
    return n;
}

namespace {

class LiveEchoListener final : public WebSocketListener {
  public:
    LiveEchoListener(WebSocketSender sender, LiveCallbacks* owner)
        : sender_(std::move(sender)), owner_(owner) {}
    void on_message(WebSocketMessage message) override {
        std::string text(message.data.begin(), message.data.end());
        owner_->update([&](LiveCallbacks::State& s) { s.ws_received.push_back(text); });
        sender_.send(to_bytes("echo:" + text), message.binary);
    }
    void on_close(CloseFrame) override {}
    void on_hibernate() override {
        owner_->update([](LiveCallbacks::State& s) { ++s.ws_hibernations; });
    }

  private:
    WebSocketSender sender_;
    LiveCallbacks* owner_;
};

}  // namespace

void LiveCallbacks::on_connect(EnvoyHandle) {
    update([](State& s) { ++s.connects; });
}

void LiveCallbacks::on_disconnect(EnvoyHandle) {
    update([](State& s) { ++s.disconnects; });
}

void LiveCallbacks::on_connect_failed(EnvoyHandle, const Error& error) {
    update([&](State& s) { s.connect_errors.push_back(error); });
}

asio::awaitable<Status> LiveCallbacks::on_actor_start(EnvoyHandle, ActorStart start) {
    update([&](State& s) { s.starts.push_back(std::move(start)); });
    co_return Status{};
}

asio::awaitable<Status> LiveCallbacks::on_actor_stop(EnvoyHandle, ActorStop stop) {
    update([&](State& s) { s.stops.push_back(std::move(stop)); });
    co_return Status{};
}

bool LiveCallbacks::stream_request_body(const HttpRequest& head) {
    return head.path.find("/stream/") != std::string::npos;
}

asio::awaitable<HttpResponse> LiveCallbacks::fetch(EnvoyHandle, HttpRequest request) {
    HttpResponse response;
    std::size_t pieces = 0;
    if (auto body = request.body_stream) {
        for (;;) {
            auto piece = co_await body->next();
            if (!piece.ok()) {
                response.status = 400;
                response.headers = {{"x-error", piece.error().to_string()}};
                co_return response;
            }
            if (!*piece)
                break;
            ++pieces;
            request.body.insert(request.body.end(), (*piece)->begin(), (*piece)->end());
        }
    }
    response = echo_response(request);
    response.headers.insert(response.headers.begin(), {"x-pieces", std::to_string(pieces)});
    update([&](State& s) { s.requests.emplace_back(request.path, request.body.size()); });
    co_return response;
}

asio::awaitable<Result<std::shared_ptr<WebSocketListener>>> LiveCallbacks::websocket(
    EnvoyHandle, WebSocketOpen open, WebSocketSender sender) {
    update([&](State& s) { open.restoring ? ++s.ws_restores : ++s.ws_opens; });
    std::shared_ptr<WebSocketListener> listener = std::make_shared<LiveEchoListener>(sender, this);
    co_return listener;
}

LiveEnvoy::LiveEnvoy(EnvoyConfig config, std::shared_ptr<EnvoyCallbacks> callbacks)
    : work_(io_.get_executor()), clock_(io_.get_executor()) {
    handle_.emplace(
        start_envoy(io_.get_executor(), clock_, std::move(config), std::move(callbacks)));
    thread_ = std::thread([this] { io_.run(); });
    pthread_getcpuclockid(thread_.native_handle(), &thread_clock_);
}

double LiveEnvoy::thread_cpu_seconds() const {
    timespec ts{};
    clock_gettime(thread_clock_, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

LiveEnvoy::~LiveEnvoy() {
    EnvoyHandle h = *handle_;
    run([h]() -> asio::awaitable<bool> {
        h.shutdown(true);
        co_await h.wait_stopped();
        co_return true;
    });
    work_.reset();
    io_.stop();
    thread_.join();
}

}  // namespace rivetkit::envoy::testing

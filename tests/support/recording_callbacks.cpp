#include "recording_callbacks.hpp"

#include <charconv>

#include "envoy/body_stream.hpp"
#include "runtime/select.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::envoy::testing {

namespace asio = boost::asio;

namespace {

class EchoListener final : public WebSocketListener {
  public:
    EchoListener(WebSocketSender sender, std::shared_ptr<WsLog> log,
                 std::shared_ptr<rt::Notify> changed, bool acks)
        : sender_(std::move(sender)),
          log_(std::move(log)),
          changed_(std::move(changed)),
          acks_(acks) {}

    void on_message(WebSocketMessage message) override {
        std::string text(message.data.begin(), message.data.end());
        log_->received.push_back(text);
        sender_.send(to_bytes("echo:" + text), message.binary);
        if (acks_ && text.rfind("defer:", 0) != 0)
            sender_.ack(message.index);
        changed_->notify_one();
    }
    bool acks_messages() const override { return acks_; }
    void on_close(CloseFrame frame) override {
        log_->closes.push_back(std::move(frame));
        changed_->notify_one();
    }
    void on_hibernate() override {
        ++log_->hibernations;
        changed_->notify_one();
    }

  private:
    WebSocketSender sender_;
    std::shared_ptr<WsLog> log_;
    std::shared_ptr<rt::Notify> changed_;
    bool acks_ = false;
};

}  // namespace

Bytes pattern_bytes(std::size_t n) {
    Bytes out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::uint8_t>((i * 31 + 7) & 0xff);
    return out;
}

HttpResponse echo_response(const HttpRequest& request) {
    HttpResponse response;
    response.status = 200;
    response.headers = {{"x-path", request.path},
                        {"x-method", request.method},
                        {"x-body-len", std::to_string(request.body.size())}};
    std::string_view path = request.path;
    if (path.ends_with("/repeated-headers")) {
        response.headers.insert(response.headers.end(), {{"Vary", "accept"},
                                                         {"set-cookie", "a=1"},
                                                         {"vary", "origin"},
                                                         {"set-cookie", "b=2"},
                                                         {"VARY", "cookie"}});
    }
    if (auto pos = path.find("/big/"); pos != std::string_view::npos) {
        std::size_t n = 0;
        auto digits = path.substr(pos + 5);
        std::from_chars(digits.data(), digits.data() + digits.size(), n);
        response.body = pattern_bytes(n);
    } else {
        response.body = request.body;
    }
    return response;
}

void RecordingCallbacks::on_connect(EnvoyHandle) {
    ++connects;
    changed->notify_one();
}

void RecordingCallbacks::on_disconnect(EnvoyHandle) {
    ++disconnects;
    changed->notify_one();
}

asio::awaitable<Status> RecordingCallbacks::on_actor_start(EnvoyHandle handle, ActorStart start) {
    for (const auto& id : start.hibernating_requests)
        listed_live.push_back(handle.is_hibernating_request_live(start.actor_id, id));
    for (const auto& id : probe_live)
        probed_live.push_back(handle.is_hibernating_request_live(start.actor_id, id));
    if (!persisted_sockets.empty())
        handle.restore_hibernating_requests(start.actor_id, persisted_sockets);
    if (alarm_during_start) {
        auto ack = handle.set_alarm(start.actor_id, alarm_during_start, start.generation);
        alarm_acked_during_start = !ack.try_recv().is_empty();
        auto record = [](rt::OneshotReceiver<Status> rx,
                         std::shared_ptr<std::vector<std::optional<Status>>> out,
                         std::shared_ptr<rt::Notify> note) -> asio::awaitable<void> {
            auto got = co_await rx.recv();
            out->push_back(std::move(got));
            note->notify_one();
        };
        rt::spawn(co_await asio::this_coro::executor, record(std::move(ack), alarm_acks, changed));
    }
    if (intent_during_start == "sleep")
        handle.sleep_actor(start.actor_id, start.generation);
    else if (intent_during_start == "destroy")
        handle.destroy_actor(start.actor_id, start.generation);
    starts.push_back(std::move(start));
    changed->notify_one();
    co_return start_result;
}

asio::awaitable<Status> RecordingCallbacks::on_actor_stop(EnvoyHandle, ActorStop stop) {
    stops.push_back(std::move(stop));
    changed->notify_one();
    co_return Status{};
}

asio::awaitable<HttpResponse> RecordingCallbacks::fetch(EnvoyHandle, HttpRequest request) {
    ++fetches_started;
    changed->notify_one();
    if (auto body = request.body_stream) {
        // Keep what the notify/gate objects are while this coroutine waits.
        std::shared_ptr<rt::Notify> gate = read_gate;
        std::shared_ptr<rt::Notify> changed_now = changed;
        for (;;) {
            if (gate)
                co_await gate->notified();
            auto piece = co_await body->next();
            if (!piece.ok()) {
                body_errors.push_back(piece.error());
                changed_now->notify_one();
                break;
            }
            if (!*piece)
                break;
            request.body.insert(request.body.end(), (*piece)->begin(), (*piece)->end());
            body_pieces.push_back(std::move(**piece));
            changed_now->notify_one();
        }
    }
    HttpResponse response = echo_response(request);
    requests.push_back(std::move(request));
    changed->notify_one();
    co_return response;
}

asio::awaitable<Result<std::shared_ptr<WebSocketListener>>> RecordingCallbacks::websocket(
    EnvoyHandle, WebSocketOpen open, WebSocketSender sender) {
    if (open.restoring) {
        ++ws->restores;
        ws->restored_paths.push_back(open.path);
    } else {
        ++ws->opens;
    }
    changed->notify_one();
    if (!welcome.empty() && !open.restoring)
        sender.send(to_bytes(welcome), false);
    std::shared_ptr<WebSocketListener> listener =
        std::make_shared<EchoListener>(sender, ws, changed, listener_acks);
    co_return listener;
}

void RecordingCallbacks::on_shutdown() {
    ++shutdowns;
    changed->notify_one();
}

std::size_t RecordingCallbacks::starts_of(const std::string& actor_id) const {
    std::size_t n = 0;
    for (const auto& s : starts)
        n += s.actor_id == actor_id ? 1 : 0;
    return n;
}

asio::awaitable<bool> wait_until(rt::Clock& clock, rt::Notify& changed,
                                 std::chrono::milliseconds timeout, std::function<bool()> pred) {
    auto deadline = clock.now() + timeout;
    while (!pred()) {
        std::size_t woke = co_await rt::select(changed, rt::deadline(clock, deadline));
        if (woke == 1)
            co_return pred();
    }
    co_return true;
}

}  // namespace rivetkit::envoy::testing

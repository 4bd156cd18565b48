#pragma once
// Running an envoy against the real engine from a test: the envoy lives on its own io_context
// thread; the test thread drives the engine (REST, gateway requests) with blocking calls and
// waits on LiveCallbacks' condition variable — bounded waits on events, never sleeps.

#include <pthread.h>
#include <time.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "envoy/envoy.hpp"
#include "runtime/steady_clock.hpp"

namespace rivetkit::envoy::testing {

// Thread-safe recording callbacks: echo HTTP ("/big/<n>" answers n bytes; bodies of paths with
// "/stream/" are read as a stream) and an echoing WebSocket listener ("echo:<text>").
class LiveCallbacks final : public EnvoyCallbacks {
  public:
    struct State {
        std::vector<ActorStart> starts;
        std::vector<ActorStop> stops;
        std::vector<std::pair<std::string, std::size_t>> requests;  // path, body size
        std::vector<std::string> ws_received;
        int ws_opens = 0;
        int ws_restores = 0;
        int ws_hibernations = 0;
        int connects = 0;
        int disconnects = 0;
        std::vector<Error> connect_errors;
        std::size_t starts_of(const std::string& actor_id) const;
        std::size_t stops_of(const std::string& actor_id) const;
    };

    bool hibernate = false;

    // Waits until pred(state) holds; false on timeout.
    template <typename Pred>
    bool wait(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, timeout, [&] { return pred(state_); });
    }
    template <typename F>
    auto read(F f) {
        std::lock_guard lock(mutex_);
        return f(state_);
    }

    void on_connect(EnvoyHandle) override;
    void on_disconnect(EnvoyHandle) override;
    void on_connect_failed(EnvoyHandle, const Error& error) override;
    boost::asio::awaitable<Status> on_actor_start(EnvoyHandle handle, ActorStart start) override;
    boost::asio::awaitable<Status> on_actor_stop(EnvoyHandle handle, ActorStop stop) override;
    boost::asio::awaitable<HttpResponse> fetch(EnvoyHandle handle, HttpRequest request) override;
    boost::asio::awaitable<Result<std::shared_ptr<WebSocketListener>>> websocket(
        EnvoyHandle handle, WebSocketOpen open, WebSocketSender sender) override;
    bool can_hibernate(const WebSocketOpen&) override { return hibernate; }
    // Paths containing "/stream/" read their body as it arrives (answer header x-pieces).
    bool stream_request_body(const HttpRequest& head) override;

    template <typename F>
    void update(F f) {
        {
            std::lock_guard lock(mutex_);
            f(state_);
        }
        cv_.notify_all();
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    State state_;
};

class LiveEnvoy {
  public:
    LiveEnvoy(EnvoyConfig config, std::shared_ptr<EnvoyCallbacks> callbacks);
    ~LiveEnvoy();
    LiveEnvoy(const LiveEnvoy&) = delete;
    LiveEnvoy& operator=(const LiveEnvoy&) = delete;

    // Runs make() (returning awaitable<T>) on the envoy thread and blocks for its result.
    template <typename F>
    auto run(F make, std::chrono::milliseconds timeout = std::chrono::seconds(60))
        -> std::optional<typename decltype(make())::value_type> {
        using T = typename decltype(make())::value_type;
        auto promise = std::make_shared<std::promise<std::optional<T>>>();
        auto future = promise->get_future();
        boost::asio::co_spawn(io_, wrap<T>(std::move(make)),
                              [promise](std::exception_ptr e, std::optional<T> v) {
                                  if (e) {
                                      promise->set_value(std::nullopt);
                                  } else {
                                      promise->set_value(std::move(v));
                                  }
                              });
        if (future.wait_for(timeout) != std::future_status::ready)
            return std::nullopt;
        return future.get();
    }

    EnvoyHandle& handle() { return *handle_; }
    // CPU time (user + system) consumed so far by the envoy's io thread.
    double thread_cpu_seconds() const;

  private:
    template <typename T, typename F>
    static boost::asio::awaitable<std::optional<T>> wrap(F make) {
        T value = co_await make();
        co_return std::optional<T>(std::move(value));
    }

    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    rt::SteadyClock clock_;
    std::optional<EnvoyHandle> handle_;
    std::thread thread_;
    clockid_t thread_clock_{};
};

}  // namespace rivetkit::envoy::testing

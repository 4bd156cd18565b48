#pragma once
// A CoreRegistry behind a real envoy, on its own io thread, for tests against the real engine.
// The test thread drives the engine and the gateway with blocking calls.

#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "core/registry/registry.hpp"
#include "envoy/envoy.hpp"
#include "runtime/steady_clock.hpp"

namespace rivetkit::testing {

class LiveHost {
  public:
    // Registers actors through `setup`, then connects to `endpoint` in `pool`.
    LiveHost(std::string endpoint, std::string pool,
             std::function<void(core::registry::CoreRegistry&)> setup);
    ~LiveHost();
    LiveHost(const LiveHost&) = delete;
    LiveHost& operator=(const LiveHost&) = delete;

    // Runs f() on the io thread and returns its value.
    template <typename F>
    auto call(F f) -> decltype(f()) {
        using T = decltype(f());
        std::promise<T> promise;
        auto future = promise.get_future();
        boost::asio::post(io_, [&] { promise.set_value(f()); });
        return future.get();
    }

    // Blocks until the envoy's connection is up (bounded).
    bool wait_connected(std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // Blocks until `actor_id` has started (running) or stopped (!running) `count` times in all.
    bool wait_actor(const std::string& actor_id, bool running, std::size_t count = 1,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));
    std::size_t actor_events(const std::string& actor_id, bool running);
    core::registry::CoreRegistry& registry() { return *registry_; }
    envoy::EnvoyHandle handle() { return *handle_; }
    // Graceful: the engine stops every actor (sleep), then the envoy closes.
    void shutdown();

  private:
    // Shuts the envoy down (once) and waits for it, bounded.
    void stop_envoy(bool immediate, std::chrono::seconds limit);

    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    rt::SteadyClock clock_;
    std::shared_ptr<core::registry::CoreRegistry> registry_;
    std::optional<envoy::EnvoyHandle> handle_;
    std::thread thread_;
    bool stopped_ = false;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool connected_ = false;
    std::map<std::pair<std::string, bool>, std::size_t> actor_events_;
};

}  // namespace rivetkit::testing

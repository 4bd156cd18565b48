#include "live_host.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/log.hpp"
#include "sqlite/database.hpp"

namespace rivetkit::testing {

namespace asio = boost::asio;

LiveHost::LiveHost(std::string endpoint, std::string pool,
                   std::function<void(core::registry::CoreRegistry&)> setup)
    : work_(io_.get_executor()), clock_(io_.get_executor()) {
    log::init_from_env();  // RIVET_LOG_LEVEL=debug shows the host's side of a failing test
    registry_ = std::make_shared<core::registry::CoreRegistry>(io_.get_executor(), clock_);
    setup(*registry_);
    registry_->set_actor_observer([this](const std::string& actor_id, bool running) {
        {
            std::lock_guard lock(mutex_);
            ++actor_events_[{actor_id, running}];
        }
        cv_.notify_all();
    });
    registry_->set_connection_observer([this](bool connected) {
        {
            std::lock_guard lock(mutex_);
            connected_ = connected;
        }
        cv_.notify_all();
    });
    envoy::EnvoyConfig config;
    config.endpoint = std::move(endpoint);
    config.pool_name = std::move(pool);
    config.prepopulate_actor_names = registry_->actor_names_metadata();
    handle_.emplace(envoy::start_envoy(io_.get_executor(), clock_, std::move(config), registry_));
    thread_ = std::thread([this] { io_.run(); });
}

bool LiveHost::wait_connected(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return connected_; });
}

bool LiveHost::wait_actor(const std::string& actor_id, bool running, std::size_t count,
                          std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout,
                        [&] { return actor_events_[{actor_id, running}] >= count; });
}

std::size_t LiveHost::actor_events(const std::string& actor_id, bool running) {
    std::lock_guard lock(mutex_);
    return actor_events_[{actor_id, running}];
}

void LiveHost::stop_envoy(bool immediate, std::chrono::seconds limit) {
    if (stopped_)
        return;
    stopped_ = true;
    std::promise<void> done;
    auto future = done.get_future();
    envoy::EnvoyHandle h = *handle_;
    asio::co_spawn(
        io_,
        [h, immediate, registry = registry_]() -> asio::awaitable<void> {
            h.shutdown(immediate);
            co_await h.wait_stopped();
            co_await registry->wait_idle(std::chrono::seconds(10));
        },
        [&](std::exception_ptr) { done.set_value(); });
    future.wait_for(limit);
}

void LiveHost::shutdown() {
    stop_envoy(false, std::chrono::seconds(60));
}

LiveHost::~LiveHost() {
    stop_envoy(true, std::chrono::seconds(30));
    work_.reset();
    io_.stop();
    thread_.join();
    if (!sqlite::wait_for_workers(std::chrono::seconds(10)))
        log::warn("database workers still busy at host teardown", {});
}

}  // namespace rivetkit::testing

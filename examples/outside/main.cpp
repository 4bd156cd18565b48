// A counter actor hosted by a program built outside rivetkit-cpp against the installed package
// (find_package(rivetkit)). It joins the engine at RIVET_ENDPOINT (default
// http://127.0.0.1:6420), namespace "default", pool "default", until SIGINT/SIGTERM.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/registry/registry.hpp"
#include "envoy/envoy.hpp"
#include "rivetkit/rivetkit.hpp"
#include "runtime/steady_clock.hpp"

namespace {

struct CounterState {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CounterState, count)

using Ctx = rivetkit::ActorContext<CounterState>;
using Action = rivetkit::ActionContext<CounterState>;

rivetkit::Actor<CounterState> counter() {
    return rivetkit::Actor<CounterState>()
        .action("increment",
                [](Action& c, std::int64_t amount) {
                    c.state().count += amount;
                    c.broadcast("newCount", c.state().count);
                    return c.state().count;
                })
        .action("getCount", [](Action& c) { return std::as_const(c).state().count; })
        .on_request([](Ctx& c, const rivetkit::Request&) {
            return rivetkit::Response::json({{"count", c.state().count}});
        });
}

}  // namespace

int main() {
    namespace asio = boost::asio;
    using namespace rivetkit;
    const char* endpoint = std::getenv("RIVET_ENDPOINT");

    asio::io_context io;
    rt::SteadyClock clock(io.get_executor());
    auto registry = std::make_shared<core::registry::CoreRegistry>(io.get_executor(), clock);
    registry->register_actor("counter", counter().factory());

    envoy::EnvoyConfig config;
    config.endpoint = endpoint ? endpoint : "http://127.0.0.1:6420";
    config.namespace_name = "default";
    config.pool_name = "default";
    config.prepopulate_actor_names = registry->actor_names_metadata();
    envoy::EnvoyHandle handle = envoy::start_envoy(io.get_executor(), clock, config, registry);

    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec)
            handle.shutdown(false);
    });
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await handle.wait_stopped();
            signals.cancel();
            io.stop();
        },
        asio::detached);
    io.run();
    return 0;
}

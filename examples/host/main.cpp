// rivetkit-host: serves the example actors (counter, chatRoom, reminder, rateLimiter, ledger) on a
// Rivet Engine.
//
// With no endpoint it uses the embedded default: a local engine on http://127.0.0.1:6420 — the
// one already running there, or the pinned binary started with its data under the user's data
// directory. With RIVET_ENDPOINT / RIVET_TOKEN / RIVET_NAMESPACE / RIVET_POOL (or the same as
// flags) it joins that engine instead. SIGINT/SIGTERM drain: the engine stops every actor (sleep,
// state saved), then the process exits 0; a second signal stops at once.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "rivetkit/client.hpp"
#include "base/log.hpp"
#include "base/version.hpp"
#include "core/registry/registry.hpp"
#include "engine_process.hpp"
#include "envoy/envoy.hpp"
#include "examples.hpp"
#include "runtime/steady_clock.hpp"

namespace asio = boost::asio;
using namespace rivetkit;

namespace {

struct Options {
    std::optional<std::string> endpoint;
    std::optional<std::string> token;
    std::string ns = "default";
    std::string pool = "default";
};

std::optional<std::string> env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
        return std::nullopt;
    return std::string(v);
}

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: rivetkit-host [--endpoint URL] [--token T] [--namespace NS] [--pool P]\n"
                 "                     [--version] [--help]\n"
                 "\n"
                 "Serves the example actors counter, chatRoom, reminder, rateLimiter and ledger.\n"
                 "Without an endpoint it starts (or reuses) a local Rivet Engine on\n"
                 "http://127.0.0.1:6420 with its data in $XDG_DATA_HOME/rivetkit-cpp/engine.\n"
                 "Environment: RIVET_ENDPOINT, RIVET_TOKEN, RIVET_NAMESPACE, RIVET_POOL,\n"
                 "RIVET_ENGINE_BIN (engine binary), RIVET_LOG_LEVEL, RIVET_LOG_FORMAT.\n");
}

}  // namespace

int main(int argc, char** argv) {
    log::init_from_env();
    Options opts;
    opts.endpoint = env("RIVET_ENDPOINT");
    opts.token = env("RIVET_TOKEN");
    if (auto v = env("RIVET_NAMESPACE"))
        opts.ns = *v;
    if (auto v = env("RIVET_POOL"))
        opts.pool = *v;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg(argv[i]);
        auto value = [&](const char* flag) -> std::optional<std::string> {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "rivetkit-host: %s needs a value\n", flag);
                return std::nullopt;
            }
            return std::string(argv[++i]);
        };
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            return 0;
        }
        if (arg == "--version") {
            std::printf("rivetkit-host %s (engine %s, envoy protocol v%u)\n", kVersion,
                        kEngineVersion, kEnvoyProtocolVersion);
            return 0;
        }
        std::optional<std::string>* target = nullptr;
        std::optional<std::string> scratch;
        if (arg == "--endpoint")
            target = &opts.endpoint;
        else if (arg == "--token")
            target = &opts.token;
        else if (arg == "--namespace" || arg == "--pool")
            target = &scratch;
        if (target == nullptr) {
            std::fprintf(stderr, "rivetkit-host: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        auto v = value(argv[i]);
        if (!v)
            return 2;
        *target = std::move(v);
        if (arg == "--namespace")
            opts.ns = *scratch;
        else if (arg == "--pool")
            opts.pool = *scratch;
    }

    // The engine: the given one, or the local default (reused if already up).
    const bool joined = opts.endpoint.has_value();
    auto endpoint = host::parse_endpoint(opts.endpoint.value_or("http://127.0.0.1:6420"));
    if (!endpoint.ok()) {
        log::error("invalid endpoint", {{"error", endpoint.error().to_string()}});
        return 2;
    }
    std::optional<host::LocalEngine> local_engine;
    if (!joined && !host::engine_healthy(*endpoint)) {
        const std::string binary = env("RIVET_ENGINE_BIN").value_or(RIVETKIT_DEFAULT_ENGINE_BIN);
        const auto data_dir = host::default_engine_data_dir();
        log::info("starting local engine", {{"binary", binary}, {"data_dir", data_dir.string()}});
        auto started = host::LocalEngine::start(binary, data_dir, *endpoint);
        if (!started.ok()) {
            log::error("local engine failed to start", {{"error", started.error().to_string()}});
            return 1;
        }
        local_engine.emplace(std::move(started).value());
    } else if (!joined) {
        log::info("reusing the engine already running", {{"endpoint", endpoint->text}});
    }
    if (Status pool = host::ensure_pool(*endpoint, opts.ns, opts.pool, opts.token); !pool.ok()) {
        log::error("could not create the pool", {{"pool", opts.pool},
                                                  {"error", pool.error().to_string()}});
        return 1;
    }

    // Actors calling other actors (rivetkit::client::actor_client) use this host's settings.
    rivetkit::client::ClientConfig peers;
    peers.endpoint = endpoint->text;
    peers.ns = opts.ns;
    peers.token = opts.token;
    peers.pool = opts.pool;
    rivetkit::client::set_host_config(std::move(peers));

    asio::io_context io;
    rt::SteadyClock clock(io.get_executor());
    auto registry = std::make_shared<core::registry::CoreRegistry>(io.get_executor(), clock);
    examples::register_examples(*registry);
    const std::string curl =
        "curl -X POST '" + endpoint->text +
        "/gateway/counter/action/increment?rvt-namespace=" + opts.ns +
        "&rvt-method=getOrCreate&rvt-runner=" + opts.pool +
        "&rvt-key=demo&rvt-crash-policy=sleep' -H 'content-type: application/json' "
        "-d '{\"args\":[1]}'";
    bool announced = false;
    registry->set_connection_observer([&](bool connected) {
        if (connected && !announced) {
            announced = true;
            std::printf("rivetkit-host %s serving counter, chatRoom, reminder, rateLimiter, "
                        "ledger\n"
                        "  endpoint:  %s  (namespace %s, pool %s)\n"
                        "  try:       %s\n",
                        kVersion, endpoint->text.c_str(), opts.ns.c_str(), opts.pool.c_str(),
                        curl.c_str());
            std::fflush(stdout);
        }
    });

    envoy::EnvoyConfig config;
    config.endpoint = endpoint->text;
    config.token = opts.token;
    config.namespace_name = opts.ns;
    config.pool_name = opts.pool;
    config.prepopulate_actor_names = registry->actor_names_metadata();
    envoy::EnvoyHandle handle = envoy::start_envoy(io.get_executor(), clock, config, registry);

    asio::signal_set signals(io, SIGINT, SIGTERM);
    int signals_seen = 0;
    std::function<void(const boost::system::error_code&, int)> on_signal =
        [&](const boost::system::error_code& ec, int signo) {
            if (ec)
                return;
            ++signals_seen;
            const bool immediate = signals_seen > 1;
            log::info("signal received, draining", {{"signal", signo}, {"immediate", immediate}});
            handle.shutdown(immediate);
            signals.async_wait(on_signal);
        };
    signals.async_wait(on_signal);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await handle.wait_stopped();
            signals.cancel();
            io.stop();
        },
        asio::detached);
    io.run();

    if (local_engine) {
        log::info("stopping local engine", {{"log", local_engine->log_path().string()}});
        local_engine->stop();
    }
    log::info("rivetkit host exiting", {{"reason", signals_seen > 0 ? "signal" : "envoy stopped"}});
    return signals_seen > 0 ? 0 : 1;
}

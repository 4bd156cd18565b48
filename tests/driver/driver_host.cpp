// rivetkit-driver-host: serves the fixture actors of upstream's driver test suite
// (fixtures.hpp) under the suite's host contract (tests/driver/README.md), so the suite's own
// tests (rivetkit-typescript/packages/rivetkit/tests/driver/*.test.ts) can run against
// rivetkit-cpp.
//
// The harness starts one host per test with
//   RIVETKIT_TEST_ENDPOINT   the engine (API and gateway)
//   RIVET_NAMESPACE          a fresh namespace, already created
//   RIVET_TOKEN              the engine's token
//   RIVETKIT_TEST_POOL_NAME  the pool (its runner config already exists)
// waits until the pool lists an envoy, and ends the host with SIGTERM, then SIGKILL one second
// later. Test mode, as the TypeScript host's (registry/native.ts): every actor's inspector token
// is "token" unless _RIVET_TEST_INSPECTOR_TOKEN says otherwise.

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "base/log.hpp"
#include "fixtures.hpp"
#include "rivetkit/error.hpp"
#include "rivetkit/registry.hpp"

namespace {

std::string env_or(const char* name, std::string fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

int main() {
    using namespace rivetkit;
    log::init_from_env();

    HostConfig config = HostConfig::from_env();
    config.endpoint = env_or("RIVETKIT_TEST_ENDPOINT", config.endpoint.value_or(""));
    if (config.endpoint->empty()) {
        std::fprintf(stderr, "rivetkit-driver-host: RIVETKIT_TEST_ENDPOINT is not set\n");
        return 2;
    }
    config.pool = env_or("RIVETKIT_TEST_POOL_NAME", config.pool);
    config.token = env_or("RIVET_TOKEN", config.token.value_or("dev"));
    // One engine connection: registered at once, and every actor of a test on one thread.
    if (std::getenv("RIVET_THREADS") == nullptr)
        config.threads = 1;
    if (std::getenv("_RIVET_TEST_INSPECTOR_TOKEN") == nullptr)
        ::setenv("_RIVET_TEST_INSPECTOR_TOKEN", "token", 1);

    Registry registry;
    driver::use_basic_fixtures(registry);
    driver::use_action_fixtures(registry);
    driver::use_hook_fixtures(registry);
    driver::use_http_fixtures(registry);
    driver::use_conn_fixtures(registry);
    driver::use_queue_fixtures(registry);
    driver::use_sleep_fixtures(registry);
    driver::use_lifecycle_fixtures(registry);
    driver::use_raw_ws_fixtures(registry);
    driver::use_hibernation_fixtures(registry);
    driver::use_access_fixtures(registry);
    driver::use_db_fixtures(registry);
    driver::use_sleep_db_fixtures(registry);

    // Signals are taken by this thread only (the host's threads inherit the mask).
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::optional<RunningHost> host;
    try {
        host.emplace(registry.start(config));
    } catch (const ErrorException& e) {
        log::error("driver host could not start", {{"error", e.error().to_string()}});
        return 1;
    }
    static std::atomic<bool> stopping{false};
    std::thread ended([&] {
        const int code = host->wait();
        if (stopping)
            ::_exit(0);
        log::info("driver host ended without a signal", {{"code", code}});
        ::_exit(code != 0 ? code : 1);
    });
    ended.detach();

    int signo = 0;
    sigwait(&stop_signals, &signo);
    // The harness kills the process one second after SIGTERM and starts the next test on a new
    // namespace and pool: stop at once rather than drain.
    log::info("driver host stopping", {{"signal", signo}});
    stopping = true;
    host->stop(true);
    std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(800));
        ::_exit(0);
    }).detach();
    std::this_thread::sleep_for(std::chrono::hours(1));
    return 0;
}

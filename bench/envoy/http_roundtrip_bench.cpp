// Round trip of a tunneled HTTP request: client → engine gateway → this envoy → trivial handler
// → back, with 16 concurrent callers. Prints p50/p99 latency, the envoy thread's CPU time per
// 1,000 requests, and — as the same-run baseline — the latency of the engine's own /health
// endpoint (same client, same TCP set-up, no tunnel), so the ratio shows what the tunnel adds.
//
//   envoy_http_bench [requests_per_caller=200] [callers=16]

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "engine_harness.hpp"
#include "live_envoy.hpp"

using namespace std::chrono_literals;
using rivetkit::testing::EngineHarness;
using rivetkit::testing::http_request;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

struct Stats {
    double p50_us = 0;
    double p99_us = 0;
    double seconds = 0;
    std::size_t failures = 0;
};

Stats run_load(std::uint16_t port, const std::string& target, int callers, int per_caller) {
    std::vector<std::vector<double>> latencies(static_cast<std::size_t>(callers));
    std::atomic<std::size_t> failures{0};
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < callers; ++c) {
        threads.emplace_back([&, c] {
            auto& mine = latencies[static_cast<std::size_t>(c)];
            for (int i = 0; i < per_caller; ++i) {
                auto t0 = std::chrono::steady_clock::now();
                auto r = http_request(port, "GET", target);
                auto t1 = std::chrono::steady_clock::now();
                if (!r.ok() || r->status != 200) {
                    ++failures;
                    continue;
                }
                mine.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            }
        });
    }
    for (auto& t : threads)
        t.join();
    Stats s;
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> all;
    for (auto& v : latencies)
        all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    if (!all.empty()) {
        s.p50_us = all[all.size() / 2];
        s.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    }
    s.failures = failures.load();
    return s;
}

double process_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
    int per_caller = argc > 1 ? std::atoi(argv[1]) : 200;
    int callers = argc > 2 ? std::atoi(argv[2]) : 16;
    auto engine = EngineHarness::start();
    if (!engine.ok()) {
        std::fprintf(stderr, "engine: %s\n", engine.error().to_string().c_str());
        return 1;
    }
    if (auto s = (*engine)->create_pool("cpp-pool"); !s.ok()) {
        std::fprintf(stderr, "pool: %s\n", s.error().to_string().c_str());
        return 1;
    }
    EnvoyConfig config;
    config.endpoint = (*engine)->endpoint();
    config.pool_name = "cpp-pool";
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(config, cb);
    if (!cb->wait([](const auto& s) { return s.connects >= 1; }))
        return 1;
    auto actor = (*engine)->create_actor("bench", "bench-1", "cpp-pool");
    if (!actor.ok())
        return 1;
    std::string id = *actor;
    if (!cb->wait([&](const auto& s) { return s.starts_of(id) >= 1; }))
        return 1;
    std::uint16_t port = (*engine)->guard_port();
    std::string target = "/gateway/" + id + "/ping";

    run_load(port, target, callers, 20);  // warm-up: routes cached, connections primed
    Stats baseline = run_load(port, "/health", callers, per_caller);

    double envoy_cpu_before = envoy.thread_cpu_seconds();
    double process_cpu_before = process_cpu_seconds();
    Stats tunneled = run_load(port, target, callers, per_caller);
    double envoy_cpu = envoy.thread_cpu_seconds() - envoy_cpu_before;
    double process_cpu = process_cpu_seconds() - process_cpu_before;
    double requests = static_cast<double>(callers * per_caller);

    std::printf("callers=%d requests=%d\n", callers, callers * per_caller);
    std::printf("baseline  GET /health (engine only):  p50 %8.0f us  p99 %8.0f us  (%zu failed)\n",
                baseline.p50_us, baseline.p99_us, baseline.failures);
    std::printf(
        "tunneled  GET via gateway+envoy:      p50 %8.0f us  p99 %8.0f us  (%zu failed)  %.0f "
        "req/s\n",
        tunneled.p50_us, tunneled.p99_us, tunneled.failures, requests / tunneled.seconds);
    std::printf("ratio tunneled/baseline:              p50 %8.2fx    p99 %8.2fx\n",
                tunneled.p50_us / baseline.p50_us, tunneled.p99_us / baseline.p99_us);
    std::printf("envoy thread CPU per 1,000 requests:  %.1f ms\n",
                envoy_cpu / requests * 1000.0 * 1000.0);
    std::printf("whole process CPU per 1,000 requests: %.1f ms (includes the 16 client threads)\n",
                process_cpu / requests * 1000.0 * 1000.0);
    return 0;
}

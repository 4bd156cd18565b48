// Runtime primitive costs, each reported per item and as a ratio ("x_post") to the cost of one
// plain asio::post of a lambda measured first in the same run, so numbers compare across machines.

#include <chrono>
#include <cstdint>

#include <benchmark/benchmark.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/yield.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;

namespace {

constexpr int kBatch = 1000;
double g_post_ns = 0;

// Runs `batch` once per benchmark iteration; reports ns per item and the ratio to the baseline.
template <typename Batch>
void measure(benchmark::State& state, Batch&& batch, bool is_baseline = false) {
    auto start = std::chrono::steady_clock::now();
    for (auto _ : state) batch();
    auto elapsed = std::chrono::steady_clock::now() - start;
    double items = static_cast<double>(state.iterations()) * kBatch;
    double ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) / items;
    if (is_baseline) g_post_ns = ns;
    state.SetItemsProcessed(static_cast<std::int64_t>(items));
    state.counters["ns_per_item"] = ns;
    if (g_post_ns > 0) state.counters["x_post"] = ns / g_post_ns;
}

void BM_Baseline_AsioPostLambda(benchmark::State& state) {
    asio::io_context io(1);
    std::int64_t n = 0;
    measure(state, [&] {
        for (int i = 0; i < kBatch; ++i) asio::post(io, [&n] { ++n; });
        io.restart();
        io.run();
    }, true);
    benchmark::DoNotOptimize(n);
}

asio::awaitable<void> yield_loop(int count) {
    for (int i = 0; i < count; ++i) co_await rt::yield_now();
}

// One coroutine suspend/resume through the scheduler: the floor for any wake-up.
void BM_Baseline_CoroutineYield(benchmark::State& state) {
    asio::io_context io(1);
    measure(state, [&] {
        asio::co_spawn(io, yield_loop(kBatch), asio::detached);
        io.restart();
        io.run();
    });
}

asio::awaitable<void> drain(rt::Receiver<int>& rx, int count, std::int64_t& sum) {
    for (int i = 0; i < count; ++i) sum += *co_await rx.recv();
}

// Queue already full: send + recv without suspending.
void BM_Channel_SendThenRecv(benchmark::State& state) {
    asio::io_context io(1);
    auto [tx, rx] = rt::unbounded_channel<int>();
    std::int64_t sum = 0;
    measure(state, [&] {
        for (int i = 0; i < kBatch; ++i) tx.send(i);
        asio::co_spawn(io, drain(rx, kBatch, sum), asio::detached);
        io.restart();
        io.run();
    });
    benchmark::DoNotOptimize(sum);
}

asio::awaitable<void> produce_one_at_a_time(rt::Sender<int> tx, int count) {
    for (int i = 0; i < count; ++i) {
        tx.send(i);
        co_await rt::yield_now();
    }
}

// Receiver waits for every message: send + wake + suspend/resume per item (and the producer's yield).
void BM_Channel_PingPong(benchmark::State& state) {
    asio::io_context io(1);
    auto [tx, rx] = rt::unbounded_channel<int>();
    std::int64_t sum = 0;
    measure(state, [&] {
        asio::co_spawn(io, drain(rx, kBatch, sum), asio::detached);
        asio::co_spawn(io, produce_one_at_a_time(tx, kBatch), asio::detached);
        io.restart();
        io.run();
    });
    benchmark::DoNotOptimize(sum);
}

asio::awaitable<void> oneshot_round_trips(int count, std::int64_t& sum) {
    auto executor = co_await asio::this_coro::executor;
    for (int i = 0; i < count; ++i) {
        auto [tx, rx] = rt::oneshot<int>();
        asio::post(executor, [reply = std::move(tx), i]() mutable { reply.send(i); });
        sum += *co_await rx.recv();
    }
}

// Request/reply shape: create a oneshot, hand the sender to posted work, await the reply.
void BM_Oneshot_RoundTrip(benchmark::State& state) {
    asio::io_context io(1);
    std::int64_t sum = 0;
    measure(state, [&] {
        asio::co_spawn(io, oneshot_round_trips(kBatch, sum), asio::detached);
        io.restart();
        io.run();
    });
    benchmark::DoNotOptimize(sum);
}

}  // namespace

// Registration order is run order: the baseline must come first.
BENCHMARK(BM_Baseline_AsioPostLambda);
BENCHMARK(BM_Baseline_CoroutineYield);
BENCHMARK(BM_Channel_SendThenRecv);
BENCHMARK(BM_Channel_PingPong);
BENCHMARK(BM_Oneshot_RoundTrip);

BENCHMARK_MAIN();

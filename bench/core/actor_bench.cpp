// ActorTask costs on one core: actions through a started task (dispatch → runtime → reply), delta
// saves, start→stop cycles, and heap bytes per idle started actor. Each throughput benchmark also
// reports its ratio ("x_post") to one plain asio::post measured first in the same run, so numbers
// compare across machines. Heap is counted by replacing global operator new/delete in this binary.

#include <benchmark/benchmark.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/task.hpp"
#include "runtime/steady_clock.hpp"

// MARK: heap accounting (single-threaded benchmark; relaxed atomics keep it cheap)

namespace {
std::atomic<std::int64_t> g_live_bytes{0};
constexpr std::size_t kHeader = alignof(std::max_align_t);
}  // namespace

void* operator new(std::size_t size) {
    auto* raw = static_cast<unsigned char*>(std::malloc(size + kHeader));
    if (raw == nullptr)
        throw std::bad_alloc();
    *reinterpret_cast<std::size_t*>(raw) = size;
    g_live_bytes.fetch_add(static_cast<std::int64_t>(size), std::memory_order_relaxed);
    return raw + kHeader;
}
void operator delete(void* p) noexcept {
    if (p == nullptr)
        return;
    auto* raw = static_cast<unsigned char*>(p) - kHeader;
    g_live_bytes.fetch_sub(static_cast<std::int64_t>(*reinterpret_cast<std::size_t*>(raw)),
                           std::memory_order_relaxed);
    std::free(raw);
}
void operator delete(void* p, std::size_t) noexcept {
    operator delete(p);
}

namespace {

namespace rt = rivetkit::rt;
namespace core = rivetkit::core;
namespace asio = boost::asio;
using rivetkit::Bytes;
using rivetkit::Result;
using rivetkit::Status;
template <typename T>
using Task = asio::awaitable<T>;

constexpr int kBatch = 1000;
double g_post_ns = 0;

template <typename Batch>
void measure(benchmark::State& state, Batch&& batch, bool is_baseline = false) {
    auto start = std::chrono::steady_clock::now();
    for (auto _ : state)
        batch();
    auto elapsed = std::chrono::steady_clock::now() - start;
    double items = static_cast<double>(state.iterations()) * kBatch;
    double ns =
        static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()) /
        items;
    if (is_baseline)
        g_post_ns = ns;
    state.SetItemsProcessed(static_cast<std::int64_t>(items));
    state.counters["ns_per_item"] = ns;
    if (g_post_ns > 0)
        state.counters["x_post"] = ns / g_post_ns;
}

void BM_Baseline_AsioPostLambda(benchmark::State& state) {
    asio::io_context io(1);
    std::int64_t n = 0;
    measure(
        state,
        [&] {
            for (int i = 0; i < kBatch; ++i)
                asio::post(io, [&n] { ++n; });
            io.restart();
            io.run();
        },
        true);
    benchmark::DoNotOptimize(n);
}

// An echo runtime: answers actions with their args, acks saves and cleanup.
std::shared_ptr<core::ActorFactory> echo_factory() {
    return std::make_shared<core::ActorFactory>(
        core::ActorConfig{}, [](core::ActorStart start) -> Task<Status> {
            core::ActorEvents events = std::move(start.events);
            while (auto ev = co_await events.recv()) {
                if (auto* a = std::get_if<core::event::Action>(&*ev)) {
                    a->reply.send(std::move(a->args));
                } else if (auto* s = std::get_if<core::event::SerializeState>(&*ev)) {
                    s->reply.send(std::vector<core::StateDelta>{});
                } else if (auto* c = std::get_if<core::event::RunGracefulCleanup>(&*ev)) {
                    c->reply.send(Status{});
                }
            }
            co_return Status{};
        });
}

// One started actor on `io`, driven through its inboxes like the registry would.
struct Actor {
    core::ActorContext ctx;
    rt::Sender<core::LifecycleCommand> lifecycle_tx;
    rt::Sender<core::DispatchCommand> dispatch_tx;
    rt::JoinHandle<Status> run;
};

Actor start_actor(asio::io_context& io, rt::Clock& clock, std::string id,
                  std::shared_ptr<core::ActorFactory> factory) {
    auto kv = std::make_shared<core::InMemoryKv>();
    core::ActorContext ctx(io.get_executor(), clock, id, "bench", {}, "local", core::Kv(kv, id));
    auto [ltx, lrx] = rt::unbounded_channel<core::LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<core::DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<core::LifecycleEvent>();
    ctx.configure_lifecycle_events(std::move(etx));
    auto task =
        std::make_unique<core::ActorTask>(id, 1, std::move(lrx), std::move(drx), std::move(erx),
                                          std::move(factory), ctx, std::nullopt, std::nullopt);
    auto run = core::ActorTask::spawn(io.get_executor(), std::move(task));
    auto [stx, srx] = rt::oneshot<Status>();
    ltx.send(core::LifecycleCommand::start(std::move(stx)));
    while (!srx.try_recv().has_value())
        io.run_one();
    return Actor{std::move(ctx), std::move(ltx), std::move(dtx), std::move(run)};
}

void stop_actor(asio::io_context& io, Actor& actor, core::ShutdownKind reason) {
    auto [tx, rx] = rt::oneshot<Status>();
    actor.lifecycle_tx.send(core::LifecycleCommand::stop(reason, std::move(tx)));
    while (!actor.run.is_finished())
        io.run_one();
}

Task<void> send_actions(const Actor& actor, int count, std::int64_t& replies) {
    std::vector<rt::OneshotReceiver<Result<Bytes>>> pending;
    pending.reserve(static_cast<std::size_t>(count));
    core::ConnHandle conn("bench-conn", {}, {}, false);
    for (int i = 0; i < count; ++i) {
        auto [tx, rx] = rt::oneshot<Result<Bytes>>();
        core::DispatchCommand command =
            core::dispatch::Action{"echo", Bytes{1, 2, 3}, conn, std::move(tx)};
        actor.dispatch_tx.send(std::move(command));
        pending.push_back(std::move(rx));
    }
    for (auto& rx : pending) {
        auto reply = co_await rx.recv();
        if (reply && reply->ok())
            ++replies;
    }
}

// Pipelined: kBatch actions in flight, then all replies awaited.
void BM_ActorTask_ActionRoundTrip(benchmark::State& state) {
    asio::io_context io(1);
    rt::SteadyClock clock(io.get_executor());
    Actor actor = start_actor(io, clock, "bench-actions", echo_factory());
    std::int64_t replies = 0;
    measure(state, [&] {
        const std::int64_t target = replies + kBatch;
        asio::co_spawn(io, send_actions(actor, kBatch, replies), asio::detached);
        io.restart();
        while (replies < target)
            io.run_one();
    });
    if (replies != static_cast<std::int64_t>(state.iterations()) * kBatch)
        state.SkipWithError("lost replies");
    stop_actor(io, actor, core::ShutdownKind::Destroy);
}

Task<void> save_batch(core::ActorContext ctx, int count, bool& done) {
    for (int i = 0; i < count; ++i) {
        std::vector<core::StateDelta> deltas;
        deltas.push_back(core::StateDelta::actor_state(Bytes(64, static_cast<std::uint8_t>(i))));
        Status saved = co_await ctx.save_state(std::move(deltas));
        if (!saved.ok())
            break;
    }
    done = true;
}

void BM_ActorContext_StateSave(benchmark::State& state) {
    asio::io_context io(1);
    rt::SteadyClock clock(io.get_executor());
    auto kv = std::make_shared<core::InMemoryKv>();
    core::ActorContext ctx(io.get_executor(), clock, "bench-save", "bench", {}, "local",
                           core::Kv(kv, "bench-save"));
    measure(state, [&] {
        bool done = false;
        asio::co_spawn(io, save_batch(ctx, kBatch, done), asio::detached);
        io.restart();
        while (!done)
            io.run_one();
    });
}

void BM_ActorTask_StartStopCycle(benchmark::State& state) {
    asio::io_context io(1);
    rt::SteadyClock clock(io.get_executor());
    auto factory = echo_factory();
    auto start = std::chrono::steady_clock::now();
    std::int64_t cycles = 0;
    for (auto _ : state) {
        Actor actor = start_actor(io, clock, "bench-cycle", factory);
        stop_actor(io, actor, core::ShutdownKind::Sleep);
        ++cycles;
    }
    auto ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count()) /
              static_cast<double>(cycles);
    state.SetItemsProcessed(cycles);
    state.counters["ns_per_item"] = ns;
    if (g_post_ns > 0)
        state.counters["x_post"] = ns / g_post_ns;
}

// Heap held by N started, idle actors (task loop, run handler, context, channels, in-memory KV).
void BM_ActorTask_IdleActorHeap(benchmark::State& state) {
    const auto count = static_cast<int>(state.range(0));
    for (auto _ : state) {
        asio::io_context io(1);
        rt::SteadyClock clock(io.get_executor());
        auto factory = echo_factory();
        std::vector<Actor> actors;
        actors.reserve(static_cast<std::size_t>(count));
        const std::int64_t before = g_live_bytes.load();
        for (int i = 0; i < count; ++i) {
            actors.push_back(start_actor(io, clock, "idle-" + std::to_string(i), factory));
        }
        io.poll();
        const std::int64_t after = g_live_bytes.load();
        state.counters["actors"] = count;
        state.counters["bytes_per_actor"] =
            static_cast<double>(after - before) / static_cast<double>(count);
        for (auto& actor : actors)
            stop_actor(io, actor, core::ShutdownKind::Sleep);
    }
}

}  // namespace

BENCHMARK(BM_Baseline_AsioPostLambda);
BENCHMARK(BM_ActorTask_ActionRoundTrip);
BENCHMARK(BM_ActorContext_StateSave);
BENCHMARK(BM_ActorTask_StartStopCycle);
BENCHMARK(BM_ActorTask_IdleActorHeap)->Arg(10000)->Iterations(1)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
    rivetkit::log::set_level(rivetkit::log::Level::warn);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

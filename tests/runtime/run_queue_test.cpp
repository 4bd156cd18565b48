// Resumptions of woken coroutines run from one queue per io_context (src/runtime/suspension.cpp):
// wakes made while it drains run in the same pass of asio's handler queue, at most a batch per
// pass, and what is still queued when the context shuts down is destroyed, not run.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <optional>

#include "runtime/channel.hpp"
#include "runtime/spawn.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;

namespace {

// Receives from `in` and answers on `out`, `rounds` times; counts every message it handled.
asio::awaitable<void> relay(rt::Receiver<int> in, rt::Sender<int> out, int rounds, int& handled) {
    for (int i = 0; i < rounds; ++i) {
        auto got = co_await in.recv();
        if (!got)
            co_return;
        ++handled;
        out.send(*got + 1);
    }
}

struct PingPong {
    explicit PingPong(asio::io_context& io, int rounds) {
        auto [a_tx, a_rx] = rt::unbounded_channel<int>();
        auto [b_tx, b_rx] = rt::unbounded_channel<int>();
        kick.emplace(a_tx);
        ping = rt::spawn(io.get_executor(), relay(std::move(a_rx), std::move(b_tx), rounds, hops));
        pong = rt::spawn(io.get_executor(), relay(std::move(b_rx), std::move(a_tx), rounds, hops));
    }
    std::optional<rt::Sender<int>> kick;
    rt::JoinHandle<void> ping;
    rt::JoinHandle<void> pong;
    int hops = 0;
};

// asio handlers run until `done`, at most `limit`.
int handlers_until(asio::io_context& io, const std::function<bool()>& done, int limit) {
    int handlers = 0;
    io.restart();
    while (!done() && handlers < limit && io.run_one() > 0)
        ++handlers;
    return handlers;
}

TEST(RunQueue, WakesMadeWhileDrainingRunInTheSamePass) {
    asio::io_context io(1);
    PingPong game(io, 20);
    io.poll();  // both relays wait
    ASSERT_EQ(game.hops, 0);
    game.kick->send(0);
    // 40 hops, each a wake of the other relay. Posted one by one they were 40 passes of asio's
    // queue, each polling the reactor (an epoll_wait) first.
    const int handlers = handlers_until(io, [&] { return game.hops == 40; }, 1000);
    EXPECT_EQ(game.hops, 40);
    EXPECT_LE(handlers, 2);
}

TEST(RunQueue, ABatchEndsThePassSoPostedHandlersStillRun) {
    asio::io_context io(1);
    PingPong game(io, 100'000);
    io.poll();
    game.kick->send(0);
    ASSERT_EQ(io.run_one(), 1u);  // one batch of the endless exchange
    const int after_first_pass = game.hops;
    EXPECT_GT(after_first_pass, 1);
    EXPECT_LT(after_first_pass, 1'000);
    bool ran = false;
    asio::post(io, [&] { ran = true; });
    const int handlers = handlers_until(io, [&] { return ran; }, 10);
    EXPECT_TRUE(ran);
    EXPECT_LE(handlers, 2);
    EXPECT_LT(game.hops, 3 * after_first_pass) << "the posted handler waited behind one batch";
    game.ping.abort();
    game.pong.abort();
    io.restart();
    io.run();
}

// A safety net rather than a regression test: a posted resumption (the old way) was destroyed the
// same way. It fails if a queued resumption runs, or leaks, once its context is gone.
TEST(RunQueue, QueuedResumptionsAreDestroyedWithTheirContext) {
    struct Marker {
        bool* destroyed;
        ~Marker() { *destroyed = true; }
    };
    bool destroyed = false;
    bool resumed = false;
    {
        asio::io_context io(1);
        auto [tx, rx] = rt::unbounded_channel<int>();
        auto waiter = [](rt::Receiver<int> in, bool* gone, bool* woke) -> asio::awaitable<void> {
            Marker marker{gone};
            co_await in.recv();
            *woke = true;
        };
        auto task = rt::spawn(io.get_executor(), waiter(std::move(rx), &destroyed, &resumed));
        io.poll();
        tx.send(1);  // queued, never run
        EXPECT_FALSE(destroyed);
    }
    EXPECT_FALSE(resumed);
    EXPECT_TRUE(destroyed) << "the coroutine frame went with the context";
}

}  // namespace

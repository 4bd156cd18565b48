// Resumptions of woken coroutines run from one queue per io_context (src/runtime/suspension.cpp):
// wakes made while it drains run in the same pass of asio's handler queue, at most a batch per
// pass, and what is still queued when the context shuts down is destroyed, not run. A hold
// (RunQueueHold) keeps what is queued for its run(), which runs it inline.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <optional>
#include <vector>

#include "runtime/channel.hpp"
#include "runtime/defer.hpp"
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

// What a reader's handler queues while it holds the queue runs in run(), inside that handler:
// no drain is posted behind it, so asio runs one handler where it ran two (and polled its reactor
// between them).
TEST(RunQueueHold, WhatIsQueuedWhileHeldRunsInRunInsideTheSameHandler) {
    asio::io_context io(1);
    auto target = std::make_shared<int>(0);
    bool checked = false;
    asio::post(io, [&] {
        rt::RunQueueHold hold(io.get_executor());
        hold.hold();
        rt::defer(io.get_executor(), target, [](const std::shared_ptr<void>& t) {
            ++*std::static_pointer_cast<int>(t);
        });
        EXPECT_EQ(*target, 0) << "held, not run inline by defer";
        hold.run();
        EXPECT_EQ(*target, 1) << "run() ran it";
        EXPECT_FALSE(hold.held());
        checked = true;
    });
    EXPECT_EQ(io.run(), 1u) << "no drain was posted";
    EXPECT_TRUE(checked);
    EXPECT_EQ(*target, 1);
}

// Holds nest: the queue waits for the last one. A hold that is destroyed instead of run hands what
// it held to a posted drain: it is delayed, never stranded.
TEST(RunQueueHold, NestedHoldsWaitForTheLastAndADroppedHoldPostsWhatItHeld) {
    asio::io_context io(1);
    auto target = std::make_shared<int>(0);
    auto bump = [](const std::shared_ptr<void>& t) { ++*std::static_pointer_cast<int>(t); };
    asio::post(io, [&] {
        rt::RunQueueHold outer(io.get_executor());
        rt::RunQueueHold inner(io.get_executor());
        outer.hold();
        inner.hold();
        rt::defer(io.get_executor(), target, bump);
        inner.run();
        EXPECT_EQ(*target, 0) << "the outer hold still holds";
        outer.run();
        EXPECT_EQ(*target, 1);
        {
            rt::RunQueueHold dropped(io.get_executor());
            dropped.hold();
            rt::defer(io.get_executor(), target, bump);
        }
        EXPECT_EQ(*target, 1) << "a dropped hold does not run what it held inline";
    });
    EXPECT_EQ(io.run(), 2u) << "the dropped hold's work ran from one posted drain";
    EXPECT_EQ(*target, 2);
}

// A hold taken while the queue drains (a reader woken from the queue) changes nothing: the drain
// that is running takes what is queued, in order, and run() does not start a nested one.
TEST(RunQueueHold, AHoldInsideADrainLeavesItsWorkToThatDrain) {
    asio::io_context io(1);
    struct Log {
        asio::io_context* io;
        std::vector<int> order;
    };
    auto log = std::make_shared<Log>(Log{&io, {}});
    rt::defer(io.get_executor(), log, [](const std::shared_ptr<void>& t) {
        auto& l = *std::static_pointer_cast<Log>(t);
        rt::RunQueueHold hold(l.io->get_executor());
        hold.hold();
        rt::defer(l.io->get_executor(), t, [](const std::shared_ptr<void>& u) {
            std::static_pointer_cast<Log>(u)->order.push_back(2);
        });
        hold.run();
        l.order.push_back(1);  // the queued one has not run inside run()
    });
    EXPECT_EQ(io.run(), 1u);
    EXPECT_EQ(log->order, (std::vector<int>{1, 2}));
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

#include "runtime/spawn.hpp"

#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/channel.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/yield.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

struct Guard {
    int& dropped;
    ~Guard() { ++dropped; }
};

asio::awaitable<int> add_after_yield(int a, int b) {
    co_await rt::yield_now();
    co_return a + b;
}

asio::awaitable<void> fail() {
    co_await rt::yield_now();
    throw std::runtime_error("boom");
}

asio::awaitable<void> guarded_wait(rt::Receiver<int>& rx, int& started, int& dropped,
                                   int& resumed) {
    ++started;
    Guard guard{dropped};
    co_await rx.recv();
    ++resumed;
}

asio::awaitable<void> guarded_sleep(rt::Clock& clock, int& started, int& dropped) {
    ++started;
    Guard guard{dropped};
    co_await clock.sleep_for(1h);
}

asio::awaitable<void> swallow_abort_then_wait(rt::Clock& clock, int& second_wait_threw) {
    try {
        co_await clock.sleep_for(1h);
    } catch (const boost::system::system_error&) {
    }
    try {
        co_await clock.sleep_for(1h);
    } catch (const boost::system::system_error&) {
        ++second_wait_threw;
        throw;
    }
}

}  // namespace

TEST(Spawn, JoinReturnsTheValue) {
    rt::TestRuntime rt;
    auto handle = rt::spawn(rt.executor(), add_after_yield(2, 3));
    EXPECT_FALSE(handle.is_finished());
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_ok());
    EXPECT_EQ(joined.value(), 5);
    EXPECT_TRUE(handle.is_finished());
}

TEST(Spawn, FailureIsReportedNotThrownIntoTheRuntime) {
    rt::TestRuntime rt;
    auto handle = rt::spawn(rt.executor(), fail());
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_failed());
    EXPECT_THROW(std::rethrow_exception(joined.exception()), std::runtime_error);
    EXPECT_THROW(joined.value(), std::runtime_error);
}

TEST(Spawn, AbortRunsRaiiGuardsOfAWaitingTask) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    int started = 0, dropped = 0, resumed = 0;
    auto handle = rt::spawn(rt.executor(), guarded_wait(rx, started, dropped, resumed));
    rt.run_until_idle();
    EXPECT_EQ(started, 1);
    EXPECT_EQ(dropped, 0);
    handle.abort();
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_aborted());
    EXPECT_THROW(joined.value(), rt::JoinAborted);
    EXPECT_EQ(dropped, 1);
    EXPECT_EQ(resumed, 0);
    tx.send(1);
    EXPECT_EQ(rx.len(), 1u) << "the aborted recv did not take the later message";
}

TEST(Spawn, AbortCancelsAsioAndClockWaits) {
    rt::TestRuntime rt;
    int started = 0, dropped = 0;
    auto handle = rt::spawn(rt.executor(), guarded_sleep(rt.clock(), started, dropped));
    rt.run_until_idle();
    handle.abort();
    EXPECT_TRUE(rt.block_on(handle.join()).is_aborted());
    EXPECT_EQ(dropped, 1);
}

TEST(Spawn, AbortBeforeFirstRunNeverExecutesTheBody) {
    rt::TestRuntime rt;
    int started = 0, dropped = 0;
    auto handle = rt::spawn(rt.executor(), guarded_sleep(rt.clock(), started, dropped));
    handle.abort();
    EXPECT_TRUE(rt.block_on(handle.join()).is_aborted());
    EXPECT_EQ(started, 0);
    EXPECT_EQ(dropped, 0);
}

TEST(Spawn, AbortFromInsideAnotherTaskBeforeFirstRun) {
    rt::TestRuntime rt;
    int started = 0, dropped = 0;
    auto joined = rt.block_on([](rt::Clock& clock, int& s, int& d) -> asio::awaitable<bool> {
        auto executor = co_await asio::this_coro::executor;
        auto handle = rt::spawn(executor, guarded_sleep(clock, s, d));
        handle.abort();
        auto result = co_await handle.join();
        co_return result.is_aborted();
    }(rt.clock(), started, dropped));
    EXPECT_TRUE(joined);
    EXPECT_EQ(started, 0);
}

TEST(Spawn, AbortIsTerminalEvenIfTheTaskSwallowsTheFirstError) {
    rt::TestRuntime rt;
    int second_wait_threw = 0;
    auto handle = rt::spawn(rt.executor(), swallow_abort_then_wait(rt.clock(), second_wait_threw));
    rt.run_until_idle();
    handle.abort();
    EXPECT_TRUE(rt.block_on(handle.join()).is_aborted());
    EXPECT_EQ(second_wait_threw, 1);
}

TEST(Spawn, DroppedHandleDetaches) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    {
        auto handle = rt::spawn(rt.executor(), [](rt::Sender<int> out) -> asio::awaitable<void> {
            co_await rt::yield_now();
            out.send(1);
        }(tx));
    }
    EXPECT_EQ(rt.block_on(rx.recv()), 1);
}

TEST(Spawn, AbortAfterFinishIsANoOp) {
    rt::TestRuntime rt;
    auto handle = rt::spawn(rt.executor(), add_after_yield(1, 1));
    rt.run_until_idle();
    ASSERT_TRUE(handle.is_finished());
    handle.abort();
    EXPECT_EQ(rt.block_on(handle.join()).value(), 2);
}

namespace {

// Work a task leaves behind: counts its destruction; finishes the task when told to.
struct LeftWork {
    LeftWork(int& d, rt::Handoff<int> h) : destroyed(d), handoff(std::move(h)) {}
    int& destroyed;
    rt::Handoff<int> handoff;
    ~LeftWork() { ++destroyed; }
};

asio::awaitable<int> hand_off_then_return(rt::Handoff<int> handoff, int& destroyed,
                                          std::weak_ptr<LeftWork>& left, bool then_throw) {
    co_await rt::yield_now();
    auto work = std::make_shared<LeftWork>(destroyed, handoff);
    left = work;
    EXPECT_TRUE(handoff.hand_off(std::move(work)));
    if (then_throw)
        throw std::runtime_error("after the hand-off");
    co_return 0;  // not the task's value: the work's finish is
}

// A task whose body leaves a LeftWork behind (`left` sees it) and then returns or throws.
rt::JoinHandle<int> spawn_leaving_work(rt::TestRuntime& rt, int& destroyed,
                                       std::weak_ptr<LeftWork>& left, bool then_throw = false) {
    return rt::spawn_handing_off<int>(rt.executor(), [&](rt::Handoff<int> handoff) {
        return hand_off_then_return(std::move(handoff), destroyed, left, then_throw);
    });
}

}  // namespace

TEST(Spawn, AHandedOffTaskCompletesWhenItsWorkFinishesNotWhenItsBodyReturns) {
    rt::TestRuntime rt;
    int destroyed = 0;
    std::weak_ptr<LeftWork> left;
    auto handle = spawn_leaving_work(rt, destroyed, left);
    rt.run_until_idle();
    EXPECT_FALSE(handle.is_finished()) << "completed by its body's return";
    auto work = left.lock();
    ASSERT_TRUE(work);
    EXPECT_EQ(destroyed, 0);
    work->handoff.finish(rt::Joined<int>::ok(7));
    work.reset();
    EXPECT_EQ(destroyed, 1) << "the work outlived its finish";
    auto joined = rt.block_on(handle.join());
    ASSERT_TRUE(joined.is_ok());
    EXPECT_EQ(joined.value(), 7);
}

TEST(Spawn, AbortingAHandedOffTaskDestroysItsWorkAtOnceAndDroppingItsHandleToo) {
    rt::TestRuntime rt;
    int destroyed = 0;
    std::weak_ptr<LeftWork> left;
    auto settle = [&] { rt.run_until_idle(); };
    {
        auto handle = spawn_leaving_work(rt, destroyed, left);
        settle();
        ASSERT_FALSE(left.expired());
        handle.abort();
        EXPECT_TRUE(left.expired());
        EXPECT_EQ(destroyed, 1);
        auto joined = rt.block_on(handle.join());
        EXPECT_TRUE(joined.is_aborted());
    }
    {
        auto handle = spawn_leaving_work(rt, destroyed, left);
        settle();
        ASSERT_FALSE(left.expired());
    }
    EXPECT_TRUE(left.expired()) << "the work outlived its dropped handle";
    EXPECT_EQ(destroyed, 2);
}

TEST(Spawn, ABodyThatThrowsAfterHandingOffFailsTheTaskAndDestroysItsWork) {
    rt::TestRuntime rt;
    int destroyed = 0;
    std::weak_ptr<LeftWork> left;
    auto handle = spawn_leaving_work(rt, destroyed, left, true);
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_failed());
    EXPECT_EQ(destroyed, 1);
    EXPECT_TRUE(left.expired());
}

namespace {

// Swallows the abort of its first wait, then tries to hand off (and records whether it could).
asio::awaitable<int> hand_off_after_swallowed_abort(rt::Handoff<int> handoff, rt::Clock& clock,
                                                    int& destroyed, int& handed) {
    try {
        co_await clock.sleep_for(1h);
    } catch (const boost::system::system_error&) {
    }
    handed = handoff.hand_off(std::make_shared<LeftWork>(destroyed, handoff)) ? 1 : 0;
    co_return 0;
}

// Hands off, then goes on waiting (a body that has not returned yet).
asio::awaitable<int> hand_off_then_wait(rt::Handoff<int> handoff, rt::Clock& clock,
                                        int& destroyed, int& body_dropped) {
    Guard guard{body_dropped};
    EXPECT_TRUE(handoff.hand_off(std::make_shared<LeftWork>(destroyed, handoff)));
    co_await clock.sleep_for(1h);
    co_return 0;
}

}  // namespace

TEST(Spawn, AnAbortBeforeTheHandOffEndsTheTaskAbortedAndKeepsNoWork) {
    rt::TestRuntime rt;
    int destroyed = 0;
    int handed = -1;
    auto handle = rt::spawn_handing_off<int>(rt.executor(), [&](rt::Handoff<int> handoff) {
        return hand_off_after_swallowed_abort(std::move(handoff), rt.clock(), destroyed, handed);
    });
    rt.run_until_idle();
    handle.abort();
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_aborted());
    EXPECT_EQ(handed, 0) << "handed off after an abort";
    EXPECT_EQ(destroyed, 1);
}

TEST(Spawn, AbortingAHandedOffTaskStillCancelsItsRunningBody) {
    rt::TestRuntime rt;
    int destroyed = 0;
    int body_dropped = 0;
    auto handle = rt::spawn_handing_off<int>(rt.executor(), [&](rt::Handoff<int> handoff) {
        return hand_off_then_wait(std::move(handoff), rt.clock(), destroyed, body_dropped);
    });
    rt.run_until_idle();
    EXPECT_EQ(body_dropped, 0);
    handle.abort();
    EXPECT_EQ(destroyed, 1) << "the work outlived the abort";
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_aborted());
    rt.run_until_idle();
    EXPECT_EQ(body_dropped, 1) << "the body went on after the abort";
}

namespace {

// The body a handed-off task's work resumes: it owns the work while it runs, and either returns
// (finishing the task with its value) or waits until aborted.
asio::awaitable<int> resumed_body(std::shared_ptr<LeftWork> work, rt::Clock& clock,
                                  bool wait_forever, int& body_dropped) {
    Guard guard{body_dropped};
    std::shared_ptr<LeftWork> owned = std::move(work);  // let go of as the body ends
    co_await clock.sleep_for(wait_forever ? 1h : 1ms);
    co_return 5;
}

}  // namespace

TEST(Spawn, AHandedOffTaskResumedIntoABodyEndsWithThatBodyOrIsAbortedInIt) {
    for (bool abort : {false, true}) {
        SCOPED_TRACE(abort ? "aborted" : "returns");
        rt::TestRuntime rt;
        int destroyed = 0;
        int body_dropped = 0;
        std::weak_ptr<LeftWork> left;
        auto handle = spawn_leaving_work(rt, destroyed, left);
        rt.run_until_idle();
        auto work = left.lock();
        ASSERT_TRUE(work);
        rt::Handoff<int> handoff = work->handoff;
        EXPECT_TRUE(handoff.resume(resumed_body(std::move(work), rt.clock(), abort, body_dropped)));
        EXPECT_FALSE(handoff.resume(resumed_body(nullptr, rt.clock(), false, body_dropped)))
            << "resumed while a body runs";
        rt.run_until_idle();
        EXPECT_EQ(destroyed, 0) << "the resumed body owns the work";
        if (abort) {
            EXPECT_FALSE(handle.is_finished());
            handle.abort();
        }
        auto joined = rt.block_on(handle.join());
        if (abort) {
            EXPECT_TRUE(joined.is_aborted());
        } else {
            ASSERT_TRUE(joined.is_ok());
            EXPECT_EQ(joined.value(), 5);
        }
        rt.run_until_idle();
        EXPECT_EQ(body_dropped, 1) << "the resumed body ran to its end or its abort";
        EXPECT_EQ(destroyed, 1);
    }
}

namespace {

// Hands off and returns without having waited on anything, so its co_spawn completes from a
// handler of its own, queued behind the one posted here that resumes the task into another body.
asio::awaitable<int> hand_off_and_resume_behind_it(rt::Handoff<int> handoff, rt::Clock& clock,
                                                   int& destroyed, int& body_dropped,
                                                   bool& resumed) {
    auto work = std::make_shared<LeftWork>(destroyed, handoff);
    EXPECT_TRUE(handoff.hand_off(work));
    auto executor = co_await asio::this_coro::executor;
    asio::post(executor, [=, &clock, &body_dropped, &resumed] {
        resumed = handoff.resume(resumed_body(work, clock, true, body_dropped));
    });
    co_return 0;
}

}  // namespace

// The actor task resumes its parked task from the runtime's run queue, which may run before the
// last body's co_spawn has completed. The new body then starts from that completion, so it has
// the task's abort slot to itself: an abort still cancels it.
TEST(Spawn, AResumeBeforeTheLastBodyCompletedStartsTheNewBodyAfterIt) {
    rt::TestRuntime rt;
    int destroyed = 0;
    int body_dropped = 0;
    bool resumed = false;
    auto handle = rt::spawn_handing_off<int>(rt.executor(), [&](rt::Handoff<int> handoff) {
        return hand_off_and_resume_behind_it(std::move(handoff), rt.clock(), destroyed,
                                             body_dropped, resumed);
    });
    rt.run_until_idle();
    EXPECT_TRUE(resumed);
    EXPECT_FALSE(handle.is_finished()) << "ended by the first body's return";
    EXPECT_EQ(body_dropped, 0);
    handle.abort();
    auto joined = rt.block_on(handle.join());
    EXPECT_TRUE(joined.is_aborted()) << "the resumed body did not see the abort";
    rt.run_until_idle();
    EXPECT_EQ(body_dropped, 1);
    EXPECT_EQ(destroyed, 1);
}

namespace {

asio::awaitable<void> record(std::vector<std::string>& order, std::string what) {
    order.push_back(std::move(what));
    co_return;
}

// Woken through a channel (so resumed from the run queue), spawns a queued task and posts a
// handler: the task starts in the same drain, ahead of the handler.
asio::awaitable<void> spawn_queued_when_woken(rt::Receiver<int>& rx,
                                              std::vector<std::string>& order,
                                              rt::JoinHandle<void>& spawned) {
    (void)co_await rx.recv();
    auto executor = co_await asio::this_coro::executor;
    spawned = rt::spawn_queued(executor, record(order, "queued task"));
    asio::post(executor, [&order] { order.push_back("posted handler"); });
    order.push_back("spawner");
}

}  // namespace

TEST(Spawn, AQueuedTaskStartsFromTheRunQueueNeverInline) {
    rt::TestRuntime rt;
    std::vector<std::string> order;
    auto [tx, rx] = rt::unbounded_channel<int>();
    rt::JoinHandle<void> spawned;
    auto spawner = rt::spawn(rt.executor(), spawn_queued_when_woken(rx, order, spawned));
    rt.run_until_idle();
    ASSERT_TRUE(tx.send(1));
    rt.run_until_idle();
    EXPECT_EQ(order, (std::vector<std::string>{"spawner", "queued task", "posted handler"}));
    ASSERT_TRUE(spawned.valid());
    EXPECT_TRUE(rt.block_on(spawned.join()).is_ok());
}

TEST(Spawn, AQueuedTaskAbortedBeforeItStartsNeverRunsAndADroppedHandleStillRuns) {
    rt::TestRuntime rt;
    int ran = 0;
    auto count = [](int& n) -> asio::awaitable<void> {
        ++n;
        co_return;
    };
    auto aborted = rt::spawn_queued(rt.executor(), count(ran));
    aborted.abort();
    EXPECT_TRUE(rt.block_on(aborted.join()).is_aborted());
    EXPECT_EQ(ran, 0) << "an aborted task's body ran";
    { auto dropped = rt::spawn_queued(rt.executor(), count(ran)); }
    rt.run_until_idle();
    EXPECT_EQ(ran, 1) << "a detached queued task did not run";
    auto joined = rt::spawn_queued(rt.executor(), add_after_yield(2, 3));
    EXPECT_EQ(rt.block_on(joined.join()).value(), 5);
}

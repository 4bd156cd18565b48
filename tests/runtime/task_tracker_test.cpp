#include "runtime/task_tracker.hpp"

#include <memory>

#include <gtest/gtest.h>

#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> work_for(rt::Clock& clock, rt::Clock::duration d) {
    co_await clock.sleep_for(d);
}

}  // namespace

TEST(TaskTracker, WaitUntilIdleReturnsTrueWhenWorkFinishesInTime) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    rt::TaskTracker tracker;
    auto a = tracker.spawn(rt.executor(), work_for(clock, 10ms));
    auto b = tracker.spawn(rt.executor(), work_for(clock, 30ms));
    EXPECT_EQ(tracker.len(), 2u);
    auto start = clock.now();
    EXPECT_TRUE(rt.block_on(tracker.wait_until_idle(clock, start + 1s)));
    EXPECT_EQ(clock.now() - start, 30ms);
    EXPECT_TRUE(tracker.is_empty());
}

TEST(TaskTracker, WaitUntilIdleReturnsFalseAtTheDeadline) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    rt::TaskTracker tracker;
    auto slow = tracker.spawn(rt.executor(), work_for(clock, 1h));
    auto start = clock.now();
    EXPECT_FALSE(rt.block_on(tracker.wait_until_idle(clock, start + 50ms)));
    EXPECT_EQ(clock.now() - start, 50ms);
    EXPECT_EQ(tracker.len(), 1u);
    slow.abort();
    rt.run_until_idle();
    EXPECT_EQ(tracker.len(), 0u) << "an aborted task stops counting";
}

TEST(TaskTracker, TokensCountAsWork) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    rt::TaskTracker tracker;
    auto token = std::make_unique<rt::TrackToken>(tracker.track());
    EXPECT_EQ(tracker.len(), 1u);
    EXPECT_FALSE(rt.block_on(tracker.wait_until_idle(clock, clock.now())));
    token.reset();
    EXPECT_TRUE(rt.block_on(tracker.wait_until_idle(clock, clock.now())));
}

TEST(TaskTracker, WaitNeedsCloseAndEmpty) {
    rt::TestRuntime rt;
    rt::TaskTracker tracker;
    auto waiter = rt::spawn(rt.executor(), tracker.wait());
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished()) << "empty but open";
    tracker.close();
    EXPECT_TRUE(tracker.is_closed());
    rt.run_until_idle();
    EXPECT_TRUE(waiter.is_finished());
}

TEST(TaskTracker, AbortBeforeStartReleasesTheSlot) {
    rt::TestRuntime rt;
    rt::TaskTracker tracker;
    auto h = tracker.spawn(rt.executor(), work_for(rt.clock(), 1s));
    h.abort();
    EXPECT_TRUE(rt.block_on(h.join()).is_aborted());
    EXPECT_EQ(tracker.len(), 0u);
}

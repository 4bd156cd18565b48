#include "runtime/virtual_clock.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/channel.hpp"
#include "runtime/yield.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> sleep_then_log(rt::Clock& clock, rt::Clock::duration d, std::string name,
                                     std::vector<std::string>& log) {
    co_await clock.sleep_for(d);
    log.push_back(name);
}

// Wakes at `d`, then yields a few times: "everything made ready" includes its follow-up work.
asio::awaitable<void> sleep_then_chain(rt::Clock& clock, rt::Clock::duration d, int& steps) {
    co_await clock.sleep_for(d);
    for (int i = 0; i < 3; ++i) {
        co_await rt::yield_now();
        ++steps;
    }
}

asio::awaitable<rt::Clock::time_point> sleep_and_report(rt::Clock& clock, rt::Clock::duration d) {
    co_await clock.sleep_for(d);
    co_return clock.now();
}

}  // namespace

TEST(VirtualTime, TimersFireInDeadlineOrderTiesInCreationOrder) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    std::vector<std::string> log;
    auto c = rt::spawn(rt.executor(), sleep_then_log(clock, 30ms, "c", log));
    auto a1 = rt::spawn(rt.executor(), sleep_then_log(clock, 10ms, "a1", log));
    auto b = rt::spawn(rt.executor(), sleep_then_log(clock, 20ms, "b", log));
    auto a2 = rt::spawn(rt.executor(), sleep_then_log(clock, 10ms, "a2", log));
    rt.advance(30ms);
    EXPECT_EQ(log, (std::vector<std::string>{"a1", "a2", "b", "c"}));
}

TEST(VirtualTime, AdvanceStopsAtTargetAndRunsEverythingReady) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto start = clock.now();
    std::vector<std::string> log;
    int steps = 0;
    auto due = rt::spawn(rt.executor(), sleep_then_log(clock, 10ms, "due", log));
    auto later = rt::spawn(rt.executor(), sleep_then_log(clock, 11ms, "later", log));
    auto chain = rt::spawn(rt.executor(), sleep_then_chain(clock, 10ms, steps));

    rt.advance(10ms);
    EXPECT_EQ(clock.now() - start, 10ms);
    EXPECT_EQ(log, std::vector<std::string>{"due"});
    EXPECT_EQ(steps, 3) << "work made ready at the new time ran to completion";
    EXPECT_FALSE(later.is_finished());

    rt.advance(1ms);
    EXPECT_EQ(log, (std::vector<std::string>{"due", "later"}));
}

TEST(VirtualTime, AdvanceFromInsideACoroutine) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    std::vector<std::string> log;
    auto sleeper = rt::spawn(rt.executor(), sleep_then_log(clock, 5ms, "slept", log));
    auto start = clock.now();
    rt.block_on([](rt::VirtualClock& c, std::vector<std::string>& l) -> asio::awaitable<void> {
        co_await c.advance(4ms);
        EXPECT_TRUE(l.empty());
        co_await c.advance(1ms);
        EXPECT_EQ(l, std::vector<std::string>{"slept"});
    }(clock, log));
    EXPECT_EQ(clock.now() - start, 5ms);
}

TEST(VirtualTime, TimerSeesItsOwnDeadlineAsNow) {
    rt::TestRuntime rt;
    auto start = rt.clock().now();
    auto h = rt::spawn(rt.executor(), sleep_and_report(rt.clock(), 7ms));
    rt.advance(20ms);
    EXPECT_EQ(rt.block_on(h.join()).value() - start, 7ms);
}

TEST(VirtualTime, AutoAdvanceJumpsToTheNextTimer) {
    rt::TestRuntime rt;
    auto start = rt.clock().now();
    auto woke = rt.block_on(sleep_and_report(rt.clock(), 1h));
    EXPECT_EQ(woke - start, 1h);
    EXPECT_EQ(rt.clock().now() - start, 1h);
}

TEST(VirtualTime, WallClockMovesWithVirtualTime) {
    rt::TestRuntime rt;
    auto wall = rt.clock().wall_now_ms();
    EXPECT_EQ(wall, rt::VirtualClock::default_wall_start_ms);
    rt.advance(1500ms);
    EXPECT_EQ(rt.clock().wall_now_ms(), wall + 1500);
}

TEST(VirtualTime, DeadlockIsDetected) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    EXPECT_THROW(rt.block_on(rx.recv()), rt::DeadlockError);
}

TEST(VirtualTime, WithoutAutoAdvancePendingTimersAreADeadlock) {
    rt::TestRuntime rt(rt::TestRuntime::Options{.auto_advance = false});
    EXPECT_THROW(rt.block_on(rt.clock().sleep_for(1s)), rt::DeadlockError);
}

TEST(VirtualTime, ManualAdvanceWithoutAutoAdvance) {
    rt::TestRuntime rt(rt::TestRuntime::Options{.auto_advance = false});
    std::vector<std::string> log;
    auto h = rt::spawn(rt.executor(), sleep_then_log(rt.clock(), 1s, "done", log));
    rt.advance(999ms);
    EXPECT_TRUE(log.empty());
    rt.advance(1ms);
    EXPECT_EQ(log, std::vector<std::string>{"done"});
}

TEST(VirtualTime, SleepIsCancellable) {
    rt::TestRuntime rt;
    std::vector<std::string> log;
    auto h = rt::spawn(rt.executor(), sleep_then_log(rt.clock(), 1s, "never", log));
    rt.run_until_idle();
    EXPECT_EQ(rt.clock().pending_timers(), 1u);
    h.abort();
    EXPECT_TRUE(rt.block_on(h.join()).is_aborted());
    EXPECT_EQ(rt.clock().pending_timers(), 0u) << "an aborted sleep disarms its timer";
    EXPECT_TRUE(log.empty());
}

#include "runtime/select.hpp"

#include <optional>

#include <gtest/gtest.h>

#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/cancellation.hpp"
#include "runtime/notify.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> send_after(rt::Clock& clock, rt::Clock::duration d, rt::Sender<int> tx,
                                 int value) {
    co_await clock.sleep_for(d);
    tx.send(value);
}

asio::awaitable<int> finish_after(rt::Clock& clock, rt::Clock::duration d) {
    co_await clock.sleep_for(d);
    co_return 9;
}

}  // namespace

TEST(Select, LowerIndexWinsWhenSeveralAreReady) {
    rt::TestRuntime rt;
    auto [tx_a, rx_a] = rt::unbounded_channel<int>();
    auto [tx_b, rx_b] = rt::unbounded_channel<int>();
    tx_a.send(1);
    tx_b.send(2);
    EXPECT_EQ(rt.block_on(rt::select(rx_b, rx_a)), 0u);
    EXPECT_EQ(rt.block_on(rt::select(rx_a, rx_b)), 0u);
    EXPECT_EQ(rx_a.len(), 1u) << "select does not consume";
    EXPECT_EQ(rx_b.len(), 1u);
}

TEST(Select, DisabledArmsAreIgnored) {
    rt::TestRuntime rt;
    auto [tx_a, rx_a] = rt::unbounded_channel<int>();
    auto [tx_b, rx_b] = rt::unbounded_channel<int>();
    tx_a.send(1);
    tx_b.send(2);
    EXPECT_EQ(rt.block_on(rt::select(rt::when(false, rx_a), rx_b)), 1u);

    std::optional<rt::Clock::time_point> no_deadline;
    std::optional<rt::JoinHandle<int>> no_task;
    EXPECT_EQ(rt.block_on(rt::select(rt::deadline(rt.clock(), no_deadline), no_task, rx_b)), 2u);
}

TEST(Select, AllArmsDisabledIsAnError) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    EXPECT_THROW(rt.block_on(rt::select(rt::when(false, rx))), std::logic_error);
}

TEST(Select, DeadlineArmFiresAtTheRightVirtualTime) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto start = clock.now();
    auto idx = rt.block_on(rt::select(rx, rt::deadline(clock, start + 25ms),
                                      rt::deadline(clock, start + 50ms)));
    EXPECT_EQ(idx, 1u);
    EXPECT_EQ(clock.now() - start, 25ms);
    EXPECT_EQ(clock.pending_timers(), 0u) << "losing arms unsubscribe";
}

TEST(Select, WakesOnTheArmThatBecomesReady) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto start = clock.now();
    auto sender = rt::spawn(rt.executor(), send_after(clock, 10ms, tx, 5));
    auto idx = rt.block_on(rt::select(rt::deadline(clock, start + 1s), rx));
    EXPECT_EQ(idx, 1u);
    EXPECT_EQ(clock.now() - start, 10ms);
    EXPECT_EQ(*rx.try_recv(), 5);
}

TEST(Select, ClosedChannelIsReady) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    { auto doomed = std::move(tx); }
    EXPECT_EQ(rt.block_on(rt::select(rx, rt::deadline(rt.clock(), rt.clock().now() + 1s))), 0u);
    EXPECT_TRUE(rx.try_recv().is_disconnected());
}

TEST(Select, NotifyPermitIsConsumedOnlyWhenItsArmWins) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto [tx, rx] = rt::unbounded_channel<int>();
    tx.send(1);
    notify.notify_one();
    EXPECT_EQ(rt.block_on(rt::select(rx, notify)), 0u);
    EXPECT_TRUE(notify.try_acquire()) << "the losing Notify arm left the permit";
    notify.notify_one();
    EXPECT_EQ(rt.block_on(rt::select(notify, rx)), 0u);
    EXPECT_FALSE(notify.try_acquire()) << "the winning Notify arm took the permit";
}

TEST(Select, NotifyWaitersWakesASelect) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto [tx, rx] = rt::unbounded_channel<int>();
    rt::CancellationToken token;
    auto waiter = rt::spawn(rt.executor(), rt::select(rx, notify, token));
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished());
    notify.notify_waiters();
    EXPECT_EQ(rt.block_on(waiter.join()).value(), 1u);
}

TEST(Select, CancellationTokenAndJoinHandleArms) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    rt::CancellationToken token;
    auto task = rt::spawn(rt.executor(), finish_after(clock, 10ms));
    auto start = clock.now();
    EXPECT_EQ(rt.block_on(rt::select(token, task)), 1u);
    EXPECT_EQ(clock.now() - start, 10ms);
    EXPECT_EQ(rt.block_on(task.join()).value(), 9);
    token.cancel();
    std::optional<rt::JoinHandle<int>> none;
    EXPECT_EQ(rt.block_on(rt::select(none, token)), 1u);
}

TEST(Select, OneshotArm) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<int>();
    auto [ctx, crx] = rt::unbounded_channel<int>();
    tx.send(3);
    EXPECT_EQ(rt.block_on(rt::select(crx, rx)), 1u);
    EXPECT_EQ(*rx.try_recv(), 3);
}

TEST(Select, CancelledSelectUnsubscribes) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto waiter = rt::spawn(rt.executor(), rt::select(rx, rt::deadline(clock, clock.now() + 1h)));
    rt.run_until_idle();
    EXPECT_EQ(clock.pending_timers(), 1u);
    waiter.abort();
    EXPECT_TRUE(rt.block_on(waiter.join()).is_aborted());
    EXPECT_EQ(clock.pending_timers(), 0u);
    tx.send(1);
    EXPECT_EQ(rx.len(), 1u);
}

namespace {

// Counts its wakes; what an idle waiter without a coroutine (the actor loop) builds on.
class CountingParking final : public rt::Parking<2, 1> {
  public:
    int wakes = 0;

  private:
    void on_wake() noexcept override { ++wakes; }
};

}  // namespace

TEST(Parking, TheFirstWakeAfterParkCallsOnWakeOnceUntilParkedAgain) {
    rt::TestRuntime rt;
    rt.set_auto_advance(false);
    auto [tx, rx] = rt::unbounded_channel<int>();
    rt::Notify notify;
    CountingParking parking;
    parking.park(rx, notify, rt::deadline(rt.clock(), rt.clock().now() + 1s));
    EXPECT_TRUE(parking.parked());
    EXPECT_TRUE(tx.send(1));
    EXPECT_EQ(parking.wakes, 1) << "on_wake runs from the waker";
    EXPECT_FALSE(parking.parked());
    notify.notify_one();
    EXPECT_TRUE(tx.send(2));
    EXPECT_EQ(parking.wakes, 1) << "woken again before parking again";
    parking.unpark();

    // The ready check (ready_arm) comes before parking again: the queued values and the permit.
    EXPECT_EQ(rt::ready_arm(rx, notify), 0u);
    EXPECT_EQ(rx.try_recv().value(), 1);
    EXPECT_EQ(rx.try_recv().value(), 2);
    EXPECT_EQ(rt::ready_arm(rx, notify), 1u);
    EXPECT_EQ(rt::ready_arm(rx, notify), 2u) << "the permit was taken by its arm's win";

    // Only the deadline left to wake it: it fires at its time, on the virtual clock.
    parking.park(rt::when(false, rx), notify, rt::deadline(rt.clock(), rt.clock().now() + 1s));
    rt.advance(999ms);
    EXPECT_EQ(parking.wakes, 1);
    rt.advance(1ms);
    EXPECT_EQ(parking.wakes, 2);
    parking.unpark();

    // Unparked, nothing wakes it; parking with every arm disabled is an error, as for select.
    EXPECT_TRUE(tx.send(3));
    EXPECT_EQ(parking.wakes, 2);
    EXPECT_THROW(parking.park(rt::when(false, rx)), std::logic_error);
}

TEST(Select, WaitReadyWaitsForAnArmAndTakesNothing) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto waiting = rt::spawn(rt.executor(), rt::wait_ready(rx, notify));
    rt.run_until_idle();
    EXPECT_FALSE(waiting.is_finished()) << "nothing was ready";
    notify.notify_one();
    EXPECT_EQ(rt.block_on(waiting.join()).value(), 1u);
    EXPECT_TRUE(notify.try_acquire()) << "wait_ready took the permit";
    EXPECT_THROW(rt.block_on(rt::wait_ready(rt::when(false, rx))), std::logic_error);
}

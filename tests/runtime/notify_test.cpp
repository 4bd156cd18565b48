#include "runtime/notify.hpp"

#include <gtest/gtest.h>

#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;

TEST(Notify, NotifyOneStoresASinglePermit) {
    rt::TestRuntime rt;
    rt::Notify notify;
    notify.notify_one();
    notify.notify_one();
    rt.block_on(notify.notified());  // consumes the one stored permit
    EXPECT_FALSE(notify.try_acquire()) << "permits do not accumulate";
    auto waiter = rt::spawn(rt.executor(), notify.notified());
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished());
    notify.notify_one();
    rt.run_until_idle();
    EXPECT_TRUE(waiter.is_finished());
    EXPECT_FALSE(notify.try_acquire()) << "the waiter consumed the permit";
}

TEST(Notify, NotifyWaitersWakesAllCurrentWaitersWithoutStoringAPermit) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto a = rt::spawn(rt.executor(), notify.notified());
    auto b = rt::spawn(rt.executor(), notify.notified());
    rt.run_until_idle();
    notify.notify_waiters();
    rt.run_until_idle();
    EXPECT_TRUE(a.is_finished());
    EXPECT_TRUE(b.is_finished());
    EXPECT_FALSE(notify.try_acquire());

    // Nobody waiting: nothing is stored for a later waiter.
    notify.notify_waiters();
    auto late = rt::spawn(rt.executor(), notify.notified());
    rt.run_until_idle();
    EXPECT_FALSE(late.is_finished());
    late.abort();
    rt.run_until_idle();
}

TEST(Notify, NotifiedCountsFromTheCallNotTheFirstResume) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto wait = notify.notified();  // the wait starts here, as tokio's Notified does
    notify.notify_waiters();
    rt.block_on(std::move(wait));
    SUCCEED();
}

TEST(Notify, NotifyOneWithTwoWaitersWakesExactlyOne) {
    rt::TestRuntime rt;
    rt::Notify notify;
    auto a = rt::spawn(rt.executor(), notify.notified());
    auto b = rt::spawn(rt.executor(), notify.notified());
    rt.run_until_idle();
    notify.notify_one();
    rt.run_until_idle();
    EXPECT_EQ(int(a.is_finished()) + int(b.is_finished()), 1);
    notify.notify_one();
    rt.run_until_idle();
    EXPECT_TRUE(a.is_finished() && b.is_finished());
}

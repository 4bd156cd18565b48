#include "runtime/cancellation.hpp"

#include <gtest/gtest.h>

#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;

TEST(CancellationToken, CancelWakesWaitersAndSticks) {
    rt::TestRuntime rt;
    rt::CancellationToken token;
    auto copy = token;
    auto waiter = rt::spawn(rt.executor(), copy.cancelled());
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished());
    token.cancel();
    EXPECT_TRUE(copy.is_cancelled()) << "copies share state";
    rt.run_until_idle();
    EXPECT_TRUE(waiter.is_finished());
    rt.block_on(token.cancelled());  // already cancelled: completes at once
    token.cancel();                  // idempotent
}

TEST(CancellationToken, ParentCancelsChildrenNotTheReverse) {
    rt::CancellationToken parent;
    auto child = parent.child_token();
    auto grandchild = child.child_token();
    auto sibling = parent.child_token();

    sibling.cancel();
    EXPECT_FALSE(parent.is_cancelled());
    EXPECT_FALSE(child.is_cancelled());

    parent.cancel();
    EXPECT_TRUE(child.is_cancelled());
    EXPECT_TRUE(grandchild.is_cancelled());

    EXPECT_TRUE(parent.child_token().is_cancelled()) << "children of a cancelled token start cancelled";
}

TEST(CancellationToken, ChildCancelWakesChildWaiters) {
    rt::TestRuntime rt;
    rt::CancellationToken parent;
    auto child = parent.child_token();
    auto waiter = rt::spawn(rt.executor(), child.cancelled());
    rt.run_until_idle();
    parent.cancel();
    rt.run_until_idle();
    EXPECT_TRUE(waiter.is_finished());
}

#include "runtime/oneshot.hpp"

#include <memory>

#include <gtest/gtest.h>

#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;

TEST(Oneshot, SendThenRecv) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<int>();
    EXPECT_TRUE(tx.send(42));
    EXPECT_EQ(rt.block_on(rx.recv()), 42);
}

TEST(Oneshot, RecvWaitsForSend) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<int>();
    auto waiter = rt::spawn(rt.executor(), rx.recv());
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished());
    tx.send(5);
    EXPECT_EQ(rt.block_on(waiter.join()).value(), 5);
}

TEST(Oneshot, DroppingSenderUnsentClosesReceiver) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<int>();
    auto waiter = rt::spawn(rt.executor(), rx.recv());
    rt.run_until_idle();
    { auto doomed = std::move(tx); }
    EXPECT_EQ(rt.block_on(waiter.join()).value(), std::nullopt);
    EXPECT_TRUE(rx.try_recv().is_disconnected());
}

TEST(Oneshot, SendFailsOnceReceiverIsGone) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<std::shared_ptr<int>>();
    EXPECT_FALSE(tx.is_closed());
    { auto doomed = std::move(rx); }
    EXPECT_TRUE(tx.is_closed());
    auto value = std::make_shared<int>(1);
    EXPECT_FALSE(tx.send(value));
    EXPECT_EQ(value.use_count(), 1);
}

TEST(Oneshot, TryRecv) {
    auto [tx, rx] = rt::oneshot<int>();
    EXPECT_TRUE(rx.try_recv().is_empty());
    tx.send(3);
    auto got = rx.try_recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, 3);
    EXPECT_TRUE(rx.try_recv().is_disconnected());
}

TEST(Oneshot, SenderClosedCompletesWhenReceiverDrops) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::oneshot<int>();
    auto watcher = rt::spawn(rt.executor(), tx.closed());
    rt.run_until_idle();
    EXPECT_FALSE(watcher.is_finished());
    { auto doomed = std::move(rx); }
    EXPECT_TRUE(rt.block_on(watcher.join()).is_ok());
}

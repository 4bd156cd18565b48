#include "runtime/channel.hpp"

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <gtest/gtest.h>

#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/yield.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<std::vector<int>> drain(rt::Receiver<int>& rx) {
    std::vector<int> out;
    while (auto v = co_await rx.recv()) out.push_back(*v);
    co_return out;
}

asio::awaitable<void> send_later(rt::Clock& clock, rt::Sender<int> tx, rt::Clock::duration d,
                                 int value) {
    co_await clock.sleep_for(d);
    tx.send(value);
}

}  // namespace

TEST(Channel, DeliversInSendOrder) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    for (int i = 0; i < 100; ++i) EXPECT_TRUE(tx.send(i));
    EXPECT_EQ(rx.len(), 100u);
    { auto doomed = std::move(tx); }
    auto got = rt.block_on(drain(rx));
    ASSERT_EQ(got.size(), 100u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i);
}

TEST(Channel, RecvWaitsForASend) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto sender = rt::spawn(rt.executor(), send_later(rt.clock(), tx, 5ms, 7));
    auto start = rt.clock().now();
    auto v = rt.block_on(rx.recv());
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 7);
    EXPECT_EQ(rt.clock().now() - start, 5ms);
}

TEST(Channel, ReceiverDropMakesSendFailAndDestroysValue) {
    auto [tx, rx] = rt::unbounded_channel<std::shared_ptr<int>>();
    auto queued = std::make_shared<int>(1);
    ASSERT_TRUE(tx.send(queued));
    EXPECT_FALSE(tx.is_closed());
    { auto doomed = std::move(rx); }
    EXPECT_TRUE(tx.is_closed());
    EXPECT_EQ(queued.use_count(), 1) << "queued values are destroyed with the receiver";
    auto late = std::make_shared<int>(2);
    EXPECT_FALSE(tx.send(late));
    EXPECT_EQ(late.use_count(), 1) << "a refused value is destroyed, not kept";
}

TEST(Channel, DroppedReplyInsideRefusedMessageClosesTheReply) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<rt::OneshotSender<int>>();
    auto [reply_tx, reply_rx] = rt::oneshot<int>();
    { auto doomed = std::move(rx); }
    EXPECT_FALSE(tx.send(std::move(reply_tx)));
    EXPECT_EQ(rt.block_on(reply_rx.recv()), std::nullopt);
}

TEST(Channel, LastSenderDropEndsRecvAfterDrain) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto tx2 = tx;
    tx.send(1);
    tx2.send(2);
    { auto doomed = std::move(tx); }
    EXPECT_TRUE(rx.try_recv().has_value());
    { auto doomed = std::move(tx2); }
    auto second = rx.try_recv();
    ASSERT_TRUE(second);
    EXPECT_EQ(*second, 2);
    EXPECT_TRUE(rx.try_recv().is_disconnected());
    EXPECT_EQ(rt.block_on(rx.recv()), std::nullopt);
}

TEST(Channel, TryRecvDistinguishesEmptyFromDisconnected) {
    auto [tx, rx] = rt::unbounded_channel<std::string>();
    EXPECT_TRUE(rx.try_recv().is_empty());
    tx.send("a");
    auto got = rx.try_recv();
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, "a");
    { auto doomed = std::move(tx); }
    EXPECT_TRUE(rx.try_recv().is_disconnected());
}

TEST(Channel, WakesWaitingReceiverWhenLastSenderDrops) {
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto waiter = rt::spawn(rt.executor(), rx.recv());
    rt.run_until_idle();
    EXPECT_FALSE(waiter.is_finished());
    { auto doomed = std::move(tx); }
    auto joined = rt.block_on(waiter.join());
    EXPECT_EQ(joined.value(), std::nullopt);
}

TEST(Channel, RingBufferKeepsOrderAcrossGrowthAndWrap) {
    auto [tx, rx] = rt::unbounded_channel<int>();
    int next_in = 0, next_out = 0;
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < round + 3; ++i) tx.send(next_in++);
        for (int i = 0; i < round + 1; ++i) {
            auto v = rx.try_recv();
            ASSERT_TRUE(v);
            EXPECT_EQ(*v, next_out++);
        }
    }
    while (auto v = rx.try_recv()) EXPECT_EQ(*v, next_out++);
    EXPECT_EQ(next_in, next_out);
}

// A quiet channel gives its queue's storage back on request, from either end, only while nothing
// is queued; the next send allocates again and order is kept.
TEST(Channel, AnEmptyQueueGivesItsStorageBackAndGrowsAgain) {
    auto [tx, rx] = rt::unbounded_channel<std::string>();
    EXPECT_EQ(tx.queue_capacity(), 0u);
    rx.release_idle_storage();  // nothing allocated yet
    tx.send("a");
    tx.send("b");
    ASSERT_GE(tx.queue_capacity(), 2u);
    tx.release_idle_storage();  // two queued: kept
    rx.release_idle_storage();
    ASSERT_GE(tx.queue_capacity(), 2u);
    EXPECT_EQ(*rx.try_recv(), "a");
    EXPECT_EQ(*rx.try_recv(), "b");
    EXPECT_GT(tx.queue_capacity(), 0u) << "a ring keeps its slots until asked";
    rx.release_idle_storage();
    EXPECT_EQ(tx.queue_capacity(), 0u);
    tx.send("c");
    tx.send("d");
    EXPECT_EQ(*rx.try_recv(), "c");
    tx.release_idle_storage();  // "d" queued: kept
    EXPECT_EQ(*rx.try_recv(), "d");
    tx.release_idle_storage();
    EXPECT_EQ(rx.is_empty(), true);
    EXPECT_EQ(tx.queue_capacity(), 0u);
}

// A recv that loses a race inside `||` must leave the message in the channel.
TEST(Channel, RecvCancelledByOrKeepsTheMessage) {
    using asio::experimental::awaitable_operators::operator||;
    rt::TestRuntime rt;
    auto [tx, rx] = rt::unbounded_channel<int>();
    auto& clock = rt.clock();

    // The timer wins while recv is suspended; the message arrives afterwards.
    auto raced = rt.block_on(rx.recv() || clock.sleep_for(10ms));
    EXPECT_EQ(raced.index(), 1u);
    tx.send(1);
    EXPECT_EQ(rx.len(), 1u);
    EXPECT_EQ(*rx.try_recv(), 1);

    // The message is sent in the same virtual instant the timer fires (the timer is older, so
    // it fires first): recv is woken but cancelled before it resumes, and must not consume.
    auto sender = rt::spawn(rt.executor(), send_later(clock, tx, 10ms, 2));
    auto raced2 = rt.block_on(rx.recv() || clock.sleep_for(10ms));
    rt.run_until_idle();
    EXPECT_EQ(raced2.index(), 1u);
    ASSERT_EQ(rx.len(), 1u);
    EXPECT_EQ(*rx.try_recv(), 2);

    // Same instant, but the sender's timer is older: recv is woken first and the cancellation
    // reaches it before it resumes. It must notice and leave the message.
    auto sender2 = rt::spawn(rt.executor(), send_later(clock, tx, 10ms, 3));
    rt.run_until_idle();
    auto raced3 = rt.block_on(rx.recv() || clock.sleep_for(10ms));
    rt.run_until_idle();
    EXPECT_EQ(raced3.index(), 1u);
    ASSERT_EQ(rx.len(), 1u);
    EXPECT_EQ(*rx.try_recv(), 3);
}

TEST(Channel, SendLossyKeepsTheNewestUpToCapacity) {
    auto [tx, rx] = rt::unbounded_channel<int>();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(tx.send_lossy(i, 4), std::optional<std::size_t>(0));
    EXPECT_EQ(tx.send_lossy(3, 4), std::optional<std::size_t>(0));
    EXPECT_EQ(tx.send_lossy(4, 4), std::optional<std::size_t>(1));
    EXPECT_EQ(rx.len(), 4u);
    for (int expected = 1; expected <= 4; ++expected) {
        auto v = rx.try_recv();
        ASSERT_TRUE(v.has_value());
        EXPECT_EQ(*v, expected);
    }
    { auto gone = std::move(rx); }
    EXPECT_FALSE(tx.send_lossy(5, 4).has_value());
}

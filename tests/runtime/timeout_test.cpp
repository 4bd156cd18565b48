#include "runtime/timeout.hpp"

#include <gtest/gtest.h>

#include "runtime/channel.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<int> value_after(rt::Clock& clock, rt::Clock::duration d, int v) {
    co_await clock.sleep_for(d);
    co_return v;
}

}  // namespace

TEST(Timeout, ValueInTime) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto start = clock.now();
    EXPECT_EQ(rt.block_on(rt::timeout(clock, 10ms, value_after(clock, 5ms, 1))), 1);
    EXPECT_EQ(clock.now() - start, 5ms);
}

TEST(Timeout, ExpiresAndCancelsTheOperation) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto start = clock.now();
    EXPECT_EQ(rt.block_on(rt::timeout(clock, 10ms, value_after(clock, 20ms, 1))), std::nullopt);
    EXPECT_EQ(clock.now() - start, 10ms);
    EXPECT_EQ(clock.pending_timers(), 0u) << "the cancelled operation's timer is gone";
}

TEST(Timeout, RecvTimeoutKeepsLaterMessage) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::unbounded_channel<int>();
    EXPECT_EQ(rt.block_on(rt::timeout(clock, 1s, rx.recv())), std::nullopt);
    tx.send(4);
    auto got = rt.block_on(rt::timeout(clock, 1s, rx.recv()));
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, std::optional<int>(4));
}

TEST(Timeout, VoidOperation) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    EXPECT_TRUE(rt.block_on(rt::timeout(clock, 2s, clock.sleep_for(1s))));
    EXPECT_FALSE(rt.block_on(rt::timeout(clock, 1s, clock.sleep_for(2s))));
}

TEST(RecvTimeout, AnswerInTime) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::oneshot<int>();
    auto start = clock.now();
    auto answer = rt::spawn(rt.executor(), [](rt::Clock& c, rt::OneshotSender<int> s)
                                               -> asio::awaitable<void> {
        co_await c.sleep_for(5ms);
        s.send(7);
    }(clock, std::move(tx)));
    auto got = rt.block_on(rt::recv_timeout(clock, 10ms, rx));
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, std::optional<int>(7));
    EXPECT_EQ(clock.now() - start, 5ms);
    EXPECT_EQ(clock.pending_timers(), 0u) << "the deadline's timer is gone";
}

TEST(RecvTimeout, ExpiresAndTheLateAnswerStaysReceivable) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::oneshot<int>();
    auto start = clock.now();
    EXPECT_EQ(rt.block_on(rt::recv_timeout(clock, 10ms, rx)), std::nullopt);
    EXPECT_EQ(clock.now() - start, 10ms);
    EXPECT_EQ(clock.pending_timers(), 0u);
    tx.send(3);
    auto got = rt.block_on(rt::recv_timeout(clock, 10ms, rx));
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, std::optional<int>(3));
}

TEST(RecvTimeout, ADroppedSenderIsAnEmptyAnswerNotATimeout) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::oneshot<int>();
    { auto gone = std::move(tx); }
    auto got = rt.block_on(rt::recv_timeout(clock, 10ms, rx));
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, std::nullopt);
}

TEST(RecvTimeout, AnAnswerAlreadyThereWinsOverAZeroDeadline) {
    rt::TestRuntime rt;
    auto& clock = rt.clock();
    auto [tx, rx] = rt::oneshot<int>();
    tx.send(1);
    auto got = rt.block_on(rt::recv_timeout(clock, 0ms, rx));
    ASSERT_TRUE(got);
    EXPECT_EQ(*got, std::optional<int>(1));
}

// DeferredQuickAck (src/runtime/tcp_quickack.hpp): an ACK owed after a read goes alone only when
// no answer is written within the run queue's turns and the io loop's passes that follow.

#include "runtime/tcp_quickack.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <memory>

#include "runtime/defer.hpp"

namespace rivetkit::rt {
namespace {

namespace asio = boost::asio;

struct Fixture {
    asio::io_context io;
    asio::ip::tcp::socket socket{io};
    Fixture() { socket.open(asio::ip::tcp::v4()); }
    void run() {
        io.restart();
        io.run();
    }
};

// Runs `then` after `left` waves of the run queue, each queued from the one before.
struct Hops {
    asio::any_io_executor executor;
    int left;
    std::function<void()> then;
};
void queue_hops(const std::shared_ptr<Hops>& hops) {
    defer_owned(hops->executor, hops, [](const std::shared_ptr<void>& target) {
        auto h = std::static_pointer_cast<Hops>(target);
        if (--h->left > 0)
            return queue_hops(h);
        h->then();
    });
}

TEST(DeferredQuickAck, AReadNothingAnswersIsAcknowledgedAloneOnce) {
    Fixture f;
    DeferredQuickAck ack(f.socket);
    ack.after_read();
    ack.after_read();  // a second read before the check ran: still one check, one ACK
    f.run();
    EXPECT_EQ(ack.acks_sent(), 1u);
}

TEST(DeferredQuickAck, AnAnswerWrittenFromTheRunQueueCarriesTheAck) {
    Fixture f;
    DeferredQuickAck ack(f.socket);
    ack.after_read();
    // Four hops of the run queue, as a WebSocket action's way to its answer.
    queue_hops(std::make_shared<Hops>(Hops{f.io.get_executor(), 4, [&ack] { ack.wrote(); }}));
    f.run();
    EXPECT_EQ(ack.acks_sent(), 0u) << "an ACK went alone ahead of the answer";
}

TEST(DeferredQuickAck, AnAnswerAFewPassesOfTheIoLoopLaterCarriesTheAckToo) {
    Fixture f;
    DeferredQuickAck ack(f.socket);
    ack.after_read();
    // The answer waits on three posted handlers in a row (a worker's completion, a timer).
    asio::post(f.io, [&] { asio::post(f.io, [&] { asio::post(f.io, [&] { ack.wrote(); }); }); });
    f.run();
    EXPECT_EQ(ack.acks_sent(), 0u);
}

}  // namespace
}  // namespace rivetkit::rt

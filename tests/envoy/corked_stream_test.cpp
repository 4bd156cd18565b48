// CorkedStream (src/envoy/corked_stream.hpp) over a stream that records each socket write and
// completes it when the test says: what leaves together, what waits, and what fails.

#include "envoy/corked_stream.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <string>
#include <vector>

namespace rivetkit::envoy {
namespace {

namespace asio = boost::asio;
using Handler = asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;

// The socket: every write_some is one "socket write", held until complete_next() (or completed
// at once with `immediate`).
struct Wire {
    std::vector<std::string> writes;
    std::vector<std::pair<Handler, std::size_t>> held;
    bool immediate = true;
    boost::system::error_code fail_with;
};

class RecordingStream {
  public:
    using executor_type = asio::io_context::executor_type;
    RecordingStream(asio::io_context& io, Wire& wire) : io_(&io), wire_(&wire) {}
    executor_type get_executor() noexcept { return io_->get_executor(); }

    template <class Buffers, class Token>
    auto async_write_some(const Buffers& buffers, Token&& token) {
        return asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler, const Buffers& data) {
                std::string bytes(asio::buffer_size(data), '\0');
                asio::buffer_copy(asio::buffer(bytes), data);
                const std::size_t n = bytes.size();
                wire_->writes.push_back(std::move(bytes));
                Handler h(std::move(handler));
                if (wire_->immediate)
                    asio::post(*io_, asio::append(std::move(h), wire_->fail_with, n));
                else
                    wire_->held.emplace_back(std::move(h), n);
            },
            token, buffers);
    }
    template <class Buffers, class Token>
    auto async_read_some(const Buffers&, Token&& token) {
        return asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler) {
                asio::post(*io_, asio::append(std::move(handler), asio::error::eof, 0));
            },
            token);
    }

    void record_teardown() { wire_->writes.push_back("<teardown>"); }

  private:
    asio::io_context* io_;
    Wire* wire_;
};

// Runs what is ready (poll() stops the context once it runs out of work: restart it first).
void poll(asio::io_context& io) {
    io.restart();
    io.poll();
}

// The stream's teardown (what Beast calls after its close reply): recorded as a write.
template <class Handler>
void async_teardown(boost::beast::role_type, RecordingStream& stream, Handler&& handler) {
    stream.record_teardown();
    asio::post(stream.get_executor(), asio::append(std::forward<Handler>(handler),
                                                    boost::system::error_code{}));
}

void complete_next(asio::io_context& io, Wire& wire, boost::system::error_code ec = {}) {
    ASSERT_FALSE(wire.held.empty());
    auto [h, n] = std::move(wire.held.front());
    wire.held.erase(wire.held.begin());
    asio::post(io, asio::append(std::move(h), ec, n));
    poll(io);
}

// Writes `s` as Beast does (async_write over write_some); records how it ended.
struct Outcome {
    bool done = false;
    boost::system::error_code ec;
};
void write(CorkedStream<RecordingStream>& stream, const std::string& s, Outcome& out) {
    asio::async_write(stream, asio::buffer(s), [&out](boost::system::error_code ec, std::size_t) {
        out.done = true;
        out.ec = ec;
    });
}
void flush(CorkedStream<RecordingStream>& stream, Outcome& out) {
    stream.async_flush([&out](boost::system::error_code ec, std::size_t) {
        out.done = true;
        out.ec = ec;
    });
}

TEST(CorkedStream, CorkedWritesCompleteAtOnceAndLeaveTogetherOnFlush) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    stream.cork(true);
    Outcome a, b, c, f;
    write(stream, "one", a);
    poll(io);
    write(stream, "two", b);
    poll(io);
    write(stream, "three", c);
    poll(io);
    EXPECT_TRUE(a.done && b.done && c.done);
    EXPECT_TRUE(wire.writes.empty()) << "corked writes went to the socket";
    EXPECT_TRUE(stream.buffered());
    stream.cork(false);
    flush(stream, f);
    poll(io);
    EXPECT_TRUE(f.done);
    EXPECT_EQ(wire.writes, std::vector<std::string>{"onetwothree"});
    EXPECT_FALSE(stream.buffered());
}

TEST(CorkedStream, AnUncorkedWriteCarriesWhatWasBufferedAndAnEmptyFlushWritesNothing) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome f0, a, b;
    flush(stream, f0);
    poll(io);
    EXPECT_TRUE(f0.done);
    EXPECT_TRUE(wire.writes.empty());
    stream.cork(true);
    write(stream, "frame", a);
    poll(io);
    stream.cork(false);
    write(stream, "pong", b);  // Beast's own write: never corked
    poll(io);
    EXPECT_TRUE(a.done && b.done);
    EXPECT_EQ(wire.writes, std::vector<std::string>{"framepong"});
}

TEST(CorkedStream, PastTheCorkLimitTheBufferGoesOut) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    stream.cork(true);
    const std::size_t limit = CorkedStream<RecordingStream>::kCorkLimit;
    const std::string big(2 * limit + 10, 'x');
    Outcome a;
    write(stream, big, a);
    poll(io);
    EXPECT_TRUE(a.done);
    std::size_t out = 0;
    for (const auto& w : wire.writes)
        out += w.size();
    EXPECT_GE(out, 2 * limit) << "a corked buffer past its limit stayed in memory";
    EXPECT_LT(out, big.size()) << "the rest waits for the next write or flush";
}

// A burst grows the buffers; once it is written they keep at most kKeptCapacity each, so an idle
// envoy does not hold the largest burst it ever wrote.
TEST(CorkedStream, BuffersDoNotKeepWhatABurstGrewThemTo) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    using Stream = CorkedStream<RecordingStream>;
    stream.cork(true);
    std::vector<Outcome> outcomes(40);
    const std::string frame(3000, 'p');  // a page commit's frames, corked one after another
    for (auto& out : outcomes) {
        write(stream, frame, out);
        poll(io);
    }
    Outcome f;
    stream.cork(false);
    flush(stream, f);
    poll(io);
    ASSERT_TRUE(f.done);
    std::size_t out = 0;
    for (const auto& w : wire.writes)
        out += w.size();
    EXPECT_EQ(out, 40u * frame.size());
    EXPECT_GT(wire.writes.size(), 1u) << "the burst passed the cork limit";
    EXPECT_LE(stream.capacity(), 2 * Stream::kKeptCapacity);
    // Small writes keep their buffer: no allocation per write once it is warm.
    Outcome small;
    write(stream, "pong", small);
    poll(io);
    EXPECT_TRUE(small.done);
    EXPECT_GT(stream.capacity(), 0u);
}

TEST(CorkedStream, AWriterBehindAWriteInFlightWaitsForItThenGoesInTheNextWrite) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome pong, frame, f;
    write(stream, "pong", pong);  // uncorked: in flight, held
    poll(io);
    ASSERT_EQ(wire.writes.size(), 1u);
    stream.cork(true);
    write(stream, "frame", frame);  // corked: buffered, completes at once
    poll(io);
    stream.cork(false);
    EXPECT_TRUE(frame.done);
    flush(stream, f);  // a write is in flight: waits behind it
    poll(io);
    EXPECT_FALSE(f.done);
    EXPECT_EQ(wire.writes.size(), 1u) << "two socket writes at once";
    complete_next(io, wire);
    EXPECT_TRUE(pong.done);
    EXPECT_FALSE(f.done) << "the flush completed before its bytes were written";
    ASSERT_EQ(wire.writes.size(), 2u);
    EXPECT_EQ(wire.writes[1], "frame");
    complete_next(io, wire);
    EXPECT_TRUE(f.done);
    EXPECT_FALSE(f.ec);
}

TEST(CorkedStream, EveryWriterBehindAWriteInFlightGoesInTheNextWrite) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome first, second, third, f;
    write(stream, "1", first);
    poll(io);
    write(stream, "2", second);
    write(stream, "3", third);
    flush(stream, f);
    poll(io);
    ASSERT_EQ(wire.writes.size(), 1u);
    complete_next(io, wire);
    EXPECT_TRUE(first.done);
    EXPECT_FALSE(second.done || third.done || f.done);
    ASSERT_EQ(wire.writes.size(), 2u);
    EXPECT_EQ(wire.writes[1], "23");
    complete_next(io, wire);
    EXPECT_TRUE(second.done && third.done && f.done);
}

// Found in review: Beast may write its close reply while the envoy's writer has the stream
// corked (the reply waits for the writer's message, and the writer corks again for its next
// one before the reply runs); teardown then closed the socket with the reply still buffered.
TEST(CorkedStream, TeardownSendsWhatIsBufferedFirst) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    stream.cork(true);
    Outcome reply;
    write(stream, "close-reply", reply);
    poll(io);
    ASSERT_TRUE(wire.writes.empty());
    bool torn_down = false;
    async_teardown(boost::beast::role_type::client, stream,
                   [&](boost::system::error_code) { torn_down = true; });
    poll(io);
    EXPECT_TRUE(torn_down);
    EXPECT_EQ(wire.writes, (std::vector<std::string>{"close-reply", "<teardown>"}));
}

TEST(CorkedStream, AFailedSocketWriteFailsTheWaiterAndEveryLaterWrite) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome a, b, c;
    write(stream, "a", a);
    poll(io);
    stream.cork(true);
    write(stream, "b", b);
    poll(io);
    stream.cork(false);
    Outcome f;
    flush(stream, f);
    poll(io);
    complete_next(io, wire, asio::error::connection_reset);
    EXPECT_TRUE(a.done && f.done);
    EXPECT_EQ(a.ec, asio::error::connection_reset);
    EXPECT_EQ(f.ec, asio::error::connection_reset);
    write(stream, "c", c);
    poll(io);
    EXPECT_EQ(c.ec, asio::error::connection_reset);
    EXPECT_EQ(wire.writes.size(), 1u) << "wrote after the connection failed";
}

TEST(CorkedStream, DestroyingTheStreamWithAWriteInFlightFailsItsWaiterSafely) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    Outcome a, f;
    {
        CorkedStream<RecordingStream> stream(io, wire);
        write(stream, "a", a);
        poll(io);
        stream.cork(true);
        Outcome b;
        write(stream, "b", b);
        poll(io);
        stream.cork(false);
        flush(stream, f);
        poll(io);
    }
    // The socket reports success after the stream is gone: nothing may touch it.
    complete_next(io, wire);
    EXPECT_TRUE(a.done && f.done);
    EXPECT_EQ(a.ec, asio::error::operation_aborted);
    EXPECT_EQ(f.ec, asio::error::operation_aborted);
    EXPECT_EQ(wire.writes.size(), 1u);
}

}  // namespace
}  // namespace rivetkit::envoy

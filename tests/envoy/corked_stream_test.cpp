// CorkedStream (src/envoy/corked_stream.hpp) over a stream that records each socket write and
// completes it when the test says: what leaves together, what waits, and what fails.

#include "envoy/corked_stream.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
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
    // SocketStream's writes that did not wait, what each takes at most, and its error.
    std::vector<std::string> sync_writes;
    std::size_t takes = std::numeric_limits<std::size_t>::max();
    boost::system::error_code sync_error;
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

  protected:
    asio::io_context* io_;
    Wire* wire_;
};

// A stream that can also write without waiting, as a non-blocking TCP socket does: what it takes
// now is recorded in `sync_writes` (at most wire.takes bytes), or it fails with wire.sync_error.
class SocketStream : public RecordingStream {
  public:
    using RecordingStream::RecordingStream;
    bool non_blocking() const noexcept { return non_blocking_; }
    void non_blocking(bool on, boost::system::error_code& ec) {
        non_blocking_ = on;
        ec.clear();
    }
    std::size_t write_some(asio::const_buffer data, boost::system::error_code& ec) {
        EXPECT_TRUE(non_blocking_) << "a write that could wait on the io thread";
        ec = wire_->sync_error;
        if (ec)
            return 0;
        const std::size_t n = std::min(data.size(), wire_->takes);
        if (n == 0) {
            ec = asio::error::would_block;
            return 0;
        }
        wire_->sync_writes.emplace_back(static_cast<const char*>(data.data()), n);
        return n;
    }

  private:
    bool non_blocking_ = false;
};

// Runs what is ready (poll() stops the context once it runs out of work: restart it first).
void poll(asio::io_context& io) {
    io.restart();
    io.poll();
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
template <class Stream>
void write(CorkedStream<Stream>& stream, const std::string& s, Outcome& out) {
    asio::async_write(stream, asio::buffer(s), [&out](boost::system::error_code ec, std::size_t) {
        out.done = true;
        out.ec = ec;
    });
}
// Appends `s` as the envoy's transport does with a message it framed.
template <class Stream>
void put(CorkedStream<Stream>& stream, const std::string& s) {
    char* room = stream.append(s.size());
    ASSERT_NE(room, nullptr);
    std::copy(s.begin(), s.end(), room);
}
template <class Stream>
void flush(CorkedStream<Stream>& stream, Outcome& out) {
    stream.async_flush([&out](boost::system::error_code ec, std::size_t) {
        out.done = true;
        out.ec = ec;
    });
}

TEST(CorkedStream, AppendedBytesLeaveTogetherOnFlush) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome f;
    put(stream, "one");
    poll(io);
    put(stream, "two");
    poll(io);
    put(stream, "three");
    poll(io);
    EXPECT_TRUE(wire.writes.empty()) << "appended bytes went to the socket";
    EXPECT_TRUE(stream.buffered());
    EXPECT_EQ(stream.buffered_size(), 11u);
    flush(stream, f);
    poll(io);
    EXPECT_TRUE(f.done);
    EXPECT_EQ(wire.writes, std::vector<std::string>{"onetwothree"});
    EXPECT_FALSE(stream.buffered());
}

TEST(CorkedStream, AWriteCarriesWhatWasAppendedAndAnEmptyFlushWritesNothing) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome f0, b;
    flush(stream, f0);
    poll(io);
    EXPECT_TRUE(f0.done);
    EXPECT_TRUE(wire.writes.empty());
    put(stream, "frame");
    poll(io);
    write(stream, "pong", b);  // Beast's own write
    poll(io);
    EXPECT_TRUE(b.done);
    EXPECT_EQ(wire.writes, std::vector<std::string>{"framepong"});
}

// A burst grows the buffers; once it is written they keep at most kKeptCapacity each, so an idle
// envoy does not hold the largest burst it ever wrote.
TEST(CorkedStream, BuffersDoNotKeepWhatABurstGrewThemTo) {
    asio::io_context io;
    Wire wire;
    CorkedStream<RecordingStream> stream(io, wire);
    using Stream = CorkedStream<RecordingStream>;
    std::vector<Outcome> outcomes(40);
    const std::string frame(3000, 'p');  // a page commit's frames, appended one after another
    for (auto& out : outcomes) {
        put(stream, frame);
        if (stream.buffered_size() >= Stream::kCorkLimit)  // as the transport does
            flush(stream, out);
        poll(io);
    }
    Outcome f;
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
    Outcome pong, f;
    write(stream, "pong", pong);  // in flight, held
    poll(io);
    ASSERT_EQ(wire.writes.size(), 1u);
    put(stream, "frame");  // buffered
    poll(io);
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

// Found in review (when Beast's writes could be buffered too): teardown closed the socket with
// bytes still buffered. What the writer appended before Beast's close goes out first.
TEST(CorkedStream, AFailedSocketWriteFailsTheWaiterAndEveryLaterWrite) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    CorkedStream<RecordingStream> stream(io, wire);
    Outcome a, c;
    write(stream, "a", a);
    poll(io);
    put(stream, "b");
    poll(io);
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
    EXPECT_EQ(stream.append(1), nullptr) << "appended after the connection failed";
    EXPECT_EQ(stream.failure(), asio::error::connection_reset);
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
        put(stream, "b");
        poll(io);
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

// flush_now: the envoy's writer hands its buffer to a socket that takes it without waiting, and
// nothing completes later (no handler: no pass of the io loop for the write's completion).
TEST(CorkedStream, FlushNowWritesWhatTheSocketTakesWithoutAnOperation) {
    asio::io_context io;
    Wire wire;
    CorkedStream<SocketStream> stream(io, wire);
    put(stream, "one");
    put(stream, "two");
    EXPECT_TRUE(stream.flush_now());
    EXPECT_EQ(wire.sync_writes, std::vector<std::string>{"onetwo"});
    EXPECT_FALSE(stream.buffered());
    EXPECT_TRUE(wire.writes.empty()) << "an asynchronous write as well";
    io.restart();
    EXPECT_EQ(io.poll(), 0u) << "the write left a handler behind";
    EXPECT_TRUE(stream.flush_now()) << "nothing buffered is nothing left";
    EXPECT_EQ(wire.sync_writes.size(), 1u);
}

TEST(CorkedStream, FlushNowLeavesWhatTheSocketDidNotTakeForTheNextWrite) {
    asio::io_context io;
    Wire wire;
    wire.takes = 3;
    CorkedStream<SocketStream> stream(io, wire);
    put(stream, "abcdefg");
    EXPECT_FALSE(stream.flush_now());
    EXPECT_EQ(wire.sync_writes, std::vector<std::string>{"abc"});
    EXPECT_EQ(stream.buffered_size(), 4u);
    EXPECT_FALSE(stream.failure());
    wire.takes = 0;  // full: would block
    EXPECT_FALSE(stream.flush_now());
    EXPECT_EQ(stream.buffered_size(), 4u);
    Outcome f;
    flush(stream, f);
    poll(io);
    EXPECT_TRUE(f.done);
    EXPECT_FALSE(f.ec);
    EXPECT_EQ(wire.writes, std::vector<std::string>{"defg"});
}

TEST(CorkedStream, FlushNowWaitsBehindAWriteInFlight) {
    asio::io_context io;
    Wire wire;
    wire.immediate = false;
    CorkedStream<SocketStream> stream(io, wire);
    Outcome pong, f;
    write(stream, "pong", pong);  // in flight, held
    poll(io);
    put(stream, "frame");
    EXPECT_FALSE(stream.flush_now());
    EXPECT_TRUE(wire.sync_writes.empty()) << "written ahead of the write in flight";
    flush(stream, f);
    complete_next(io, wire);
    complete_next(io, wire);
    EXPECT_TRUE(pong.done && f.done);
    EXPECT_EQ(wire.writes, (std::vector<std::string>{"pong", "frame"}));
}

TEST(CorkedStream, FlushNowKeepsASocketErrorForEveryLaterWrite) {
    asio::io_context io;
    Wire wire;
    wire.sync_error = asio::error::broken_pipe;
    CorkedStream<SocketStream> stream(io, wire);
    put(stream, "frame");
    EXPECT_FALSE(stream.flush_now());
    EXPECT_EQ(stream.failure(), asio::error::broken_pipe);
    EXPECT_EQ(stream.append(1), nullptr) << "appended after the connection failed";
    Outcome f;
    write(stream, "late", f);
    poll(io);
    EXPECT_TRUE(f.done);
    EXPECT_EQ(f.ec, asio::error::broken_pipe);
    EXPECT_TRUE(wire.writes.empty());
}

}  // namespace
}  // namespace rivetkit::envoy

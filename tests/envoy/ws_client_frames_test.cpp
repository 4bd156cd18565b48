// The envoy's own client framing (src/envoy/ws_client_frames.hpp): header layouts and masking
// byte for byte, then whole messages written by the WebSocket transport and read back by a Beast
// server on loopback, across every length form and past the single-frame limit.

#include "envoy/ws_client_frames.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "envoy/transport.hpp"

namespace rivetkit::envoy {
namespace {

namespace asio = boost::asio;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;

Bytes pattern(std::size_t n) {
    Bytes out(n);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = static_cast<std::uint8_t>((i * 31u + 7u) & 0xffu);
    return out;
}

// Frames `message` with append_client_message into one buffer.
std::vector<std::uint8_t> frame(const Bytes& message, std::size_t max_frame, std::uint64_t seed) {
    std::vector<char> buffer;
    MaskKeys keys(seed);
    const bool ok = append_client_message(message, max_frame, keys, [&](std::size_t n) {
        const std::size_t at = buffer.size();
        buffer.resize(at + n);
        return buffer.data() + at;
    });
    EXPECT_TRUE(ok);
    return {buffer.begin(), buffer.end()};
}

TEST(WsClientFrames, HeadersUseTheShortestLengthFormAndAlwaysMask) {
    struct Case {
        std::size_t size;
        std::size_t header;  // bytes before the payload, masking key included
        std::uint8_t second;
    };
    for (const Case c : {Case{0, 6, 0x80}, Case{125, 6, 0x80 | 125}, Case{126, 8, 0x80 | 126},
                         Case{65535, 8, 0x80 | 126}, Case{65536, 14, 0x80 | 127}}) {
        const Bytes message = pattern(c.size);
        const auto out = frame(message, 1 << 20, 42);
        ASSERT_EQ(out.size(), c.header + c.size) << c.size;
        EXPECT_EQ(out[0], 0x82) << "FIN + binary, size " << c.size;
        EXPECT_EQ(out[1], c.second) << c.size;
        std::uint64_t length = c.size < 126 ? (out[1] & 0x7fu) : 0;
        for (std::size_t i = 2; i < c.header - 4; ++i)
            length = (length << 8) | out[i];
        EXPECT_EQ(length, c.size);
        const std::uint8_t* key = out.data() + c.header - 4;
        for (std::size_t i = 0; i < c.size; ++i)
            ASSERT_EQ(out[c.header + i] ^ key[i % 4], message[i]) << "byte " << i;
    }
}

TEST(WsClientFrames, AMessagePastTheFrameLimitGoesAsContinuationFrames) {
    const Bytes message = pattern(250);
    const auto out = frame(message, 100, 7);
    // 100 + 100 + 50 bytes: binary without FIN, continuation without FIN, continuation with FIN.
    ASSERT_EQ(out.size(), 3 * 6 + 250);
    EXPECT_EQ(out[0], 0x02);
    EXPECT_EQ(out[106], 0x00);
    EXPECT_EQ(out[212], 0x80);
    EXPECT_EQ(out[213], 0x80 | 50);
}

TEST(WsClientFrames, AGivenUpAppendFailsTheMessage) {
    MaskKeys keys(1);
    const Bytes message = pattern(10);
    EXPECT_FALSE(append_client_message(message, 100, keys, [](std::size_t) -> char* {
        return nullptr;
    }));
}

// What a Beast server (the engine's side of the connection) reads of `sizes.size()` messages the
// transport writes, flushed at the end when `flush` says so.
struct ServerRead {
    Status written;
    std::string server_error;
    std::vector<Bytes> received;
};
ServerRead write_to_beast_server(const std::vector<std::size_t>& sizes, bool flush) {
    ServerRead out;
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = std::to_string(acceptor.local_endpoint().port());
    std::vector<Bytes>& received = out.received;
    std::string& server_error = out.server_error;

    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
            websocket::stream<tcp::socket> ws(std::move(socket));
            ws.read_message_max(0);
            co_await ws.async_accept(asio::use_awaitable);
            while (received.size() < sizes.size()) {
                boost::beast::flat_buffer buffer;
                auto [ec, n] = co_await ws.async_read(buffer, asio::as_tuple(asio::use_awaitable));
                if (ec) {
                    server_error = ec.message();
                    co_return;
                }
                if (!ws.got_binary())
                    server_error = "a text message";
                const auto* p = static_cast<const std::uint8_t*>(buffer.cdata().data());
                received.emplace_back(p, p + n);
            }
        },
        asio::detached);

    Status& written = out.written;
    auto transport = make_websocket_transport_factory()->create(io.get_executor());
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            ConnectTarget target;
            target.host = "127.0.0.1";
            target.port = port;
            target.target = "/";
            target.subprotocols.emplace_back("rivet");
            asio::awaitable<Status> connecting = transport->connect(std::move(target));
            Status connected = co_await std::move(connecting);
            if (!connected.ok()) {
                written = connected;
                co_return;
            }
            for (std::size_t size : sizes) {
                const Bytes message = pattern(size);
                Status one = co_await transport->write(message);
                if (!one.ok()) {
                    written = one;
                    co_return;
                }
            }
            if (flush)
                written = co_await transport->flush();
        },
        asio::detached);
    // Returns once both sides are done: nothing is left pending.
    io.run_for(std::chrono::seconds(30));
    return out;
}

TEST(WsClientFrames, ATransportsMessagesReachABeastServerWhole) {
    const std::vector<std::size_t> sizes = {0, 1, 125, 126, 4096, 65535, 65536, (1u << 20) + 3};
    const ServerRead read = write_to_beast_server(sizes, /*flush=*/true);
    ASSERT_TRUE(read.written.ok()) << read.written.error().to_string();
    ASSERT_EQ(read.server_error, "");
    ASSERT_EQ(read.received.size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i)
        EXPECT_EQ(read.received[i], pattern(sizes[i]))
            << "message " << i << ", " << sizes[i] << " bytes";
}

// The write buffer does not hold a burst until the writer flushes: past the cork limit the
// transport sends it on its own.
TEST(WsClientFrames, PastTheCorkLimitTheBufferGoesOutWithoutAFlush) {
    const std::vector<std::size_t> sizes = {40 * 1024, 40 * 1024};
    const ServerRead read = write_to_beast_server(sizes, /*flush=*/false);
    ASSERT_TRUE(read.written.ok()) << read.written.error().to_string();
    ASSERT_EQ(read.server_error, "");
    ASSERT_EQ(read.received.size(), sizes.size()) << "a buffer past its limit stayed in memory";
    EXPECT_EQ(read.received[1], pattern(sizes[1]));
}

}  // namespace
}  // namespace rivetkit::envoy

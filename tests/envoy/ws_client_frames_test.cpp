// The envoy's own WebSocket client side (src/envoy/ws_client_frames.hpp, ws_transport.cpp): header
// layouts and masking byte for byte; server frame headers parsed and refused; whole messages
// written by the transport and read back by a Beast server on loopback, across every length form
// and past the single-frame limit; and what a Beast server sends read back by the transport:
// fragments, pings, text, the close handshake, a malformed frame, a refused upgrade.

#include "envoy/ws_client_frames.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <functional>
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

// A listener on loopback for one connection: `accept` spawns `serve` on it; the test's client
// runs on the same io_context.
struct Loopback {
    using Serve = std::function<asio::awaitable<void>(tcp::socket)>;
    asio::io_context io;
    tcp::acceptor acceptor{io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)};
    std::string port = std::to_string(acceptor.local_endpoint().port());

    void accept(Serve serve) {
        asio::co_spawn(
            io,
            [this, serve = std::move(serve)]() -> asio::awaitable<void> {
                tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
                co_await serve(std::move(socket));
            },
            asio::detached);
    }
};

// What a Beast server (the engine's side of the connection) reads of `sizes.size()` messages the
// transport writes, flushed at the end when `flush` says so.
struct ServerRead {
    Status written;
    std::string server_error;
    std::vector<Bytes> received;
};
ServerRead write_to_beast_server(const std::vector<std::size_t>& sizes, bool flush) {
    ServerRead out;
    Loopback loop;
    asio::io_context& io = loop.io;
    const std::string& port = loop.port;
    std::vector<Bytes>& received = out.received;
    std::string& server_error = out.server_error;

    loop.accept([&](tcp::socket socket) -> asio::awaitable<void> {
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
    });

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

TEST(WsClientFrames, ServerFrameHeadersAreReadInEveryLengthFormAndNeverPastTheInput) {
    const std::vector<std::pair<Bytes, std::uint64_t>> good = {
        {{0x82, 0x05}, 5},
        {{0x02, 0x7e, 0x01, 0x00}, 256},
        {{0x80, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}, 65536},
        {{0x89, 0x00}, 0},
    };
    for (const auto& [bytes, length] : good) {
        ServerFrameHeader h;
        const char* why = nullptr;
        for (std::size_t cut = 0; cut < bytes.size(); ++cut)
            EXPECT_EQ(parse_server_frame_header(BytesView(bytes.data(), cut), h, why),
                      FrameHeaderParse::need_more);
        ASSERT_EQ(parse_server_frame_header(bytes, h, why), FrameHeaderParse::ok);
        EXPECT_EQ(h.payload_size, length);
        EXPECT_EQ(h.header_size, bytes.size());
        EXPECT_EQ(h.fin, (bytes[0] & 0x80) != 0);
        EXPECT_EQ(h.opcode, bytes[0] & 0x0f);
    }
    const std::vector<Bytes> bad = {
        {0xc2, 0x00},                                  // reserved bit (no extension)
        {0x82, 0x81, 1, 2, 3, 4},                      // masked by the server
        {0x83, 0x00},                                  // unknown opcode
        {0x09, 0x00},                                  // fragmented ping
        {0x88, 0x7e, 0x00, 0x7e},                      // close longer than 125
        {0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0},       // length's top bit
    };
    for (const auto& bytes : bad) {
        ServerFrameHeader h;
        const char* why = nullptr;
        EXPECT_EQ(parse_server_frame_header(bytes, h, why), FrameHeaderParse::bad);
        EXPECT_NE(why, nullptr);
    }
}

// A Beast server runs `serve` on its accepted stream while the transport connects and reads
// until the connection ends; returns what it read.
struct ClientRead {
    Status connected;
    std::vector<TransportRead> reads;
};
using Serve = std::function<asio::awaitable<void>(websocket::stream<tcp::socket>&)>;
ClientRead read_from_beast_server(Serve serve) {
    ClientRead out;
    Loopback loop;
    asio::io_context& io = loop.io;
    const std::string& port = loop.port;
    loop.accept([&](tcp::socket socket) -> asio::awaitable<void> {
        websocket::stream<tcp::socket> ws(std::move(socket));
        ws.read_message_max(0);
        co_await ws.async_accept(asio::use_awaitable);
        co_await serve(ws);
    });
    auto transport = make_websocket_transport_factory()->create(io.get_executor());
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            ConnectTarget target{false, "127.0.0.1", port, "/", {"rivet"}};
            asio::awaitable<Status> connecting = transport->connect(std::move(target));
            out.connected = co_await std::move(connecting);
            if (!out.connected.ok())
                co_return;
            for (;;) {
                asio::awaitable<TransportRead> reading = transport->read(nullptr);
                TransportRead r = co_await std::move(reading);
                const bool last = r.kind == TransportRead::Kind::closed ||
                                  r.kind == TransportRead::Kind::failed;
                if (r.kind == TransportRead::Kind::binary && r.data == to_bytes("echo")) {
                    asio::awaitable<Status> writing = transport->write(r.data);
                    (void)co_await std::move(writing);
                    asio::awaitable<Status> flushing = transport->flush();
                    (void)co_await std::move(flushing);
                }
                out.reads.push_back(std::move(r));
                if (last)
                    break;
            }
            transport->abort();
        },
        asio::detached);
    io.run_for(std::chrono::seconds(30));
    return out;
}

TEST(WsClientFrames, TheTransportReadsFragmentsPingsTextAndTheCloseHandshake) {
    const std::vector<std::size_t> sizes = {0, 125, 126, 65536, (1u << 20) + 3};
    std::string pong;
    std::string server_error = "not run";
    const ClientRead read = read_from_beast_server(
        [&](websocket::stream<tcp::socket>& ws) -> asio::awaitable<void> {
            ws.control_callback([&](websocket::frame_type kind, boost::beast::string_view payload) {
                if (kind == websocket::frame_type::pong)
                    pong = std::string(payload);
            });
            ws.binary(true);
            co_await ws.async_ping("are you there", asio::use_awaitable);
            // The client echoes this; reading the echo reads the pong before it.
            co_await ws.async_write(asio::buffer(std::string("echo")), asio::use_awaitable);
            boost::beast::flat_buffer echoed;
            co_await ws.async_read(echoed, asio::use_awaitable);
            // One message in three frames.
            const Bytes whole = pattern(300);
            co_await ws.async_write_some(false, asio::buffer(whole.data(), 100), asio::use_awaitable);
            co_await ws.async_write_some(false, asio::buffer(whole.data() + 100, 100),
                                         asio::use_awaitable);
            co_await ws.async_write_some(true, asio::buffer(whole.data() + 200, 100),
                                         asio::use_awaitable);
            for (std::size_t size : sizes) {
                const Bytes message = pattern(size);
                co_await ws.async_write(asio::buffer(message), asio::use_awaitable);
            }
            ws.text(true);
            co_await ws.async_write(asio::buffer(std::string("hello")), asio::use_awaitable);
            // Completes once the transport's close reply arrived.
            auto [ec] = co_await ws.async_close(websocket::close_reason(static_cast<websocket::close_code>(4000), "bye"),
                                                asio::as_tuple(asio::use_awaitable));
            server_error = ec ? ec.message() : "";
        });
    ASSERT_TRUE(read.connected.ok()) << read.connected.error().to_string();
    std::string shape;
    for (const auto& r : read.reads)
        shape += std::to_string(static_cast<int>(r.kind)) + ":" + std::to_string(r.data.size()) + " ";
    ASSERT_EQ(read.reads.size(), sizes.size() + 4) << shape;
    EXPECT_TRUE(read.reads[0].data == to_bytes("echo")) << shape;
    EXPECT_EQ(read.reads[1].kind, TransportRead::Kind::binary);
    EXPECT_TRUE(read.reads[1].data == pattern(300)) << shape;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(read.reads[2 + i].kind, TransportRead::Kind::binary);
        EXPECT_TRUE(read.reads[2 + i].data == pattern(sizes[i])) << sizes[i] << " bytes; " << shape;
    }
    const TransportRead& text = read.reads[sizes.size() + 2];
    EXPECT_EQ(text.kind, TransportRead::Kind::text);
    EXPECT_EQ(std::string(text.data.begin(), text.data.end()), "hello");
    const TransportRead& closed = read.reads.back();
    EXPECT_EQ(closed.kind, TransportRead::Kind::closed);
    EXPECT_EQ(closed.close_code, 4000);
    EXPECT_EQ(closed.reason, "bye");
    EXPECT_EQ(pong, "are you there");
    EXPECT_EQ(server_error, "");
}

// The server writes `frame` raw; the transport must fail the connection with `why` in its reason
// after a close 1002, read raw here: the transport drops the socket right after it, before a
// Beast close handshake could finish.
void expect_refused_server_frame(std::vector<std::uint8_t> frame, const std::string& why) {
    std::uint16_t server_saw = 0;
    const ClientRead read = read_from_beast_server(
        [&](websocket::stream<tcp::socket>& ws) -> asio::awaitable<void> {
            co_await asio::async_write(ws.next_layer(), asio::buffer(frame), asio::use_awaitable);
            std::uint8_t head[8];
            auto [ec, n] = co_await asio::async_read(ws.next_layer(), asio::buffer(head),
                                                     asio::as_tuple(asio::use_awaitable));
            if (ec || n != sizeof head) {
                ADD_FAILURE() << "server read: " << ec.message();
                co_return;
            }
            EXPECT_EQ(head[0], 0x88);         // FIN, close
            EXPECT_EQ(head[1] & 0x80, 0x80);  // masked, as a client's frames are
            server_saw = static_cast<std::uint16_t>(((head[6] ^ head[2]) << 8) | (head[7] ^ head[3]));
        });
    ASSERT_TRUE(read.connected.ok());
    ASSERT_EQ(read.reads.size(), 1u);
    EXPECT_EQ(read.reads[0].kind, TransportRead::Kind::failed);
    EXPECT_NE(read.reads[0].reason.find(why), std::string::npos) << read.reads[0].reason;
    EXPECT_EQ(server_saw, 1002);
}

TEST(WsClientFrames, AMaskedFrameFromTheServerFailsTheConnectionWithClose1002) {
    expect_refused_server_frame({0x82, 0x81, 1, 2, 3, 4, 0x55}, "masked frame");
}

TEST(WsClientFrames, ACloseWithAReservedCodeOrANonUtf8ReasonFailsTheConnection) {
    expect_refused_server_frame({0x88, 0x02, 0x03, 0xed}, "reserved code");        // 1005
    expect_refused_server_frame({0x88, 0x03, 0x03, 0xe8, 0xff}, "not in UTF-8");  // 1000, 0xff
}

TEST(WsClientFrames, CloseCodesAndReasonsAsRfc6455AllowsThem) {
    for (std::uint16_t code : {1000, 1001, 1003, 1007, 1011, 1013, 3000, 4999})
        EXPECT_TRUE(valid_close_code(code)) << code;
    for (std::uint16_t code : {0, 999, 1004, 1005, 1006, 1014, 1015, 2999, 5000})
        EXPECT_FALSE(valid_close_code(code)) << code;
    // A reason past 123 bytes is cut before the character that would not fit whole.
    const std::string reason = std::string(122, 'x') + "\xc3\xa9";  // 122 + a 2-byte é
    const Bytes payload = close_payload(1000, reason);
    EXPECT_EQ(payload.size(), 2u + 122u);
    EXPECT_TRUE(close_payload(0, "ignored").empty());
}

TEST(WsClientFrames, ARefusedUpgradeFailsTheConnectWithTheStatus) {
    Loopback loop;
    asio::io_context& io = loop.io;
    const std::string& port = loop.port;
    loop.accept([](tcp::socket socket) -> asio::awaitable<void> {
        asio::streambuf request;
        co_await asio::async_read_until(socket, request, "\r\n\r\n", asio::use_awaitable);
        const std::string reply =
            "HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\nConnection: close\r\n\r\nno token.";
        co_await asio::async_write(socket, asio::buffer(reply), asio::use_awaitable);
    });
    auto transport = make_websocket_transport_factory()->create(io.get_executor());
    Status connected;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            ConnectTarget target{false, "127.0.0.1", port, "/", {}};
            asio::awaitable<Status> connecting = transport->connect(std::move(target));
            connected = co_await std::move(connecting);
        },
        asio::detached);
    io.run_for(std::chrono::seconds(30));
    ASSERT_FALSE(connected.ok());
    EXPECT_NE(connected.error().message().find("HTTP 403: no token."), std::string::npos)
        << connected.error().to_string();
}

}  // namespace
}  // namespace rivetkit::envoy

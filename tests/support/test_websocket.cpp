#include "test_websocket.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

namespace rivetkit::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;

// Every operation is asynchronous and bounded by the tcp_stream deadline, then driven to
// completion on the private io_context: a silent peer fails the test instead of hanging it.
struct TestWebSocket::Impl {
    asio::io_context io;
    websocket::stream<beast::tcp_stream> ws{io};
    std::chrono::milliseconds timeout{30'000};
    beast::error_code ec;

    Status finish(const char* what) {
        io.run();
        io.restart();
        if (ec)
            return Error("test_websocket", "failed", std::string(what) + ": " + ec.message());
        return {};
    }
    void arm() { beast::get_lowest_layer(ws).expires_after(timeout); }
};

TestWebSocket::TestWebSocket(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TestWebSocket::~TestWebSocket() {
    close();
}

Result<std::unique_ptr<TestWebSocket>> TestWebSocket::connect(
    std::uint16_t port, std::string target, std::vector<std::string> subprotocols,
    std::chrono::milliseconds timeout, std::vector<std::pair<std::string, std::string>> headers) {
    auto impl = std::make_unique<Impl>();
    impl->timeout = timeout;
    auto& t = *impl;
    t.arm();
    beast::get_lowest_layer(t.ws).async_connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
        [&t](beast::error_code e) { t.ec = e; });
    if (auto s = t.finish("connect"); !s.ok())
        return s.error();
    beast::get_lowest_layer(t.ws).socket().set_option(tcp::no_delay(true));
    std::string protocols;
    for (const auto& p : subprotocols)
        protocols += (protocols.empty() ? "" : ", ") + p;
    t.ws.set_option(
        websocket::stream_base::decorator([protocols, headers](websocket::request_type& req) {
            if (!protocols.empty())
                req.set(beast::http::field::sec_websocket_protocol, protocols);
            for (const auto& [name, value] : headers)
                req.set(name, value);
        }));
    t.arm();
    t.ws.async_handshake("127.0.0.1:" + std::to_string(port), target,
                         [&t](beast::error_code e) { t.ec = e; });
    if (auto s = t.finish("handshake"); !s.ok())
        return s.error();
    t.ws.text(true);
    return std::unique_ptr<TestWebSocket>(new TestWebSocket(std::move(impl)));
}

Status TestWebSocket::send_text(const std::string& text) {
    auto& t = *impl_;
    t.arm();
    t.ws.async_write(asio::buffer(text), [&t](beast::error_code e, std::size_t) { t.ec = e; });
    return t.finish("send");
}

Result<std::string> TestWebSocket::read_text() {
    auto& t = *impl_;
    beast::flat_buffer buffer;
    t.arm();
    t.ws.async_read(buffer, [&t](beast::error_code e, std::size_t) { t.ec = e; });
    if (auto s = t.finish("read"); !s.ok())
        return s.error();
    return beast::buffers_to_string(buffer.cdata());
}

Status TestWebSocket::send_binary(const Bytes& data) {
    auto& t = *impl_;
    t.ws.binary(true);
    t.arm();
    t.ws.async_write(asio::buffer(data), [&t](beast::error_code e, std::size_t) { t.ec = e; });
    Status sent = t.finish("send");
    t.ws.text(true);
    return sent;
}

Result<Bytes> TestWebSocket::read_bytes() {
    auto& t = *impl_;
    beast::flat_buffer buffer;
    t.arm();
    t.ws.async_read(buffer, [&t](beast::error_code e, std::size_t) { t.ec = e; });
    if (auto s = t.finish("read"); !s.ok())
        return s.error();
    const auto* data = static_cast<const std::uint8_t*>(buffer.cdata().data());
    return Bytes(data, data + buffer.size());
}

std::optional<std::pair<std::uint16_t, std::string>> TestWebSocket::close_frame() const {
    // Kept once the frame arrived, even when the peer then reset the connection before beast's
    // close reply went out (the engine's gateway does).
    const auto& reason = impl_->ws.reason();
    if (reason.code == websocket::close_code::none)
        return std::nullopt;
    return std::make_pair(static_cast<std::uint16_t>(reason.code),
                          std::string(reason.reason.data(), reason.reason.size()));
}

void TestWebSocket::close() {
    if (!impl_ || !impl_->ws.is_open())
        return;
    auto& t = *impl_;
    beast::get_lowest_layer(t.ws).expires_after(std::chrono::seconds(2));
    t.ws.async_close(websocket::close_code::normal, [&t](beast::error_code e) { t.ec = e; });
    t.io.run();
    t.io.restart();
}

}  // namespace rivetkit::testing

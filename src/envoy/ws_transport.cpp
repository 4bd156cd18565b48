// The engine connection over Boost.Beast: WebSocket over plain TCP, TCP_NODELAY on (without it
// small frames wait ~40 ms on Nagle + delayed ACK), no message size limit (tunnel payloads go up
// to the engine's 20 MiB).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "envoy/transport.hpp"

namespace rivetkit::envoy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

class WebSocketTransport final : public Transport {
  public:
    explicit WebSocketTransport(asio::any_io_executor executor)
        : resolver_(executor), ws_(executor) {}

    asio::awaitable<Status> connect(ConnectTarget target) override {
        if (target.tls) {
            co_return Error("envoy", "tls_unsupported", "wss:// is not supported by this build");
        }
        auto [rerr, endpoints] =
            co_await resolver_.async_resolve(target.host, target.port, use_tuple);
        if (rerr)
            co_return Error("envoy", "connect_failed", "resolve: " + rerr.message());
        auto [cerr, ep] = co_await beast::get_lowest_layer(ws_).async_connect(endpoints, use_tuple);
        if (cerr)
            co_return Error("envoy", "connect_failed", "connect: " + cerr.message());
        (void)ep;
        beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true));
        // Timeouts and liveness are the envoy's (on its rt::Clock), not Beast's.
        beast::get_lowest_layer(ws_).expires_never();
        websocket::stream_base::timeout timeouts{};
        timeouts.handshake_timeout = websocket::stream_base::none();
        timeouts.idle_timeout = websocket::stream_base::none();
        timeouts.keep_alive_pings = false;
        ws_.set_option(timeouts);
        ws_.read_message_max(0);
        std::string protocols;
        for (const auto& p : target.subprotocols) {
            if (!protocols.empty())
                protocols += ", ";
            protocols += p;
        }
        ws_.set_option(websocket::stream_base::decorator([protocols](websocket::request_type& req) {
            req.set(beast::http::field::sec_websocket_protocol, protocols);
        }));
        std::string host = target.host + ":" + target.port;
        websocket::response_type response;
        auto [herr] = co_await ws_.async_handshake(response, host, target.target, use_tuple);
        if (herr)
            co_return Error("envoy", "connect_failed", "handshake: " + herr.message());
        ws_.binary(true);
        co_return Status{};
    }

    asio::awaitable<TransportRead> read() override {
        buffer_.clear();
        auto [err, n] = co_await ws_.async_read(buffer_, use_tuple);
        (void)n;
        TransportRead out;
        if (err == websocket::error::closed) {
            out.kind = TransportRead::Kind::closed;
            out.close_code = static_cast<std::uint16_t>(ws_.reason().code);
            out.reason = std::string(ws_.reason().reason.c_str());
            co_return out;
        }
        if (err) {
            out.kind = TransportRead::Kind::failed;
            out.reason = err.message();
            co_return out;
        }
        out.kind = ws_.got_binary() ? TransportRead::Kind::binary : TransportRead::Kind::text;
        auto data = buffer_.cdata();
        const auto* p = static_cast<const std::uint8_t*>(data.data());
        out.data.assign(p, p + data.size());
        co_return out;
    }

    asio::awaitable<Status> write(BytesView frame) override {
        auto [err, n] =
            co_await ws_.async_write(asio::buffer(frame.data(), frame.size()), use_tuple);
        (void)n;
        if (err)
            co_return Error("envoy", "write_failed", err.message());
        co_return Status{};
    }

    asio::awaitable<void> close(std::uint16_t code, std::string reason) override {
        if (!ws_.is_open())
            co_return;
        websocket::close_reason cr(static_cast<websocket::close_code>(code), reason);
        auto [err] = co_await ws_.async_close(cr, use_tuple);
        (void)err;
    }

    void abort() noexcept override {
        beast::error_code ignored;
        auto& socket = beast::get_lowest_layer(ws_).socket();
        socket.shutdown(tcp::socket::shutdown_both, ignored);
        socket.close(ignored);
    }

  private:
    tcp::resolver resolver_;
    websocket::stream<beast::tcp_stream> ws_;
    beast::flat_buffer buffer_;
};

class WebSocketTransportFactory final : public TransportFactory {
  public:
    std::unique_ptr<Transport> create(asio::any_io_executor executor) override {
        return std::make_unique<WebSocketTransport>(executor);
    }
};

}  // namespace

std::shared_ptr<TransportFactory> make_websocket_transport_factory() {
    return std::make_shared<WebSocketTransportFactory>();
}

}  // namespace rivetkit::envoy

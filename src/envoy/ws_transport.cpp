// The engine connection over Boost.Beast: WebSocket over plain TCP or over TLS (OpenSSL),
// TCP_NODELAY on (without it small frames wait ~40 ms on Nagle + delayed ACK), no message size
// limit (tunnel payloads go up to the engine's 20 MiB), and frames written together leave in one
// socket write (envoy/corked_stream.hpp). Beast connects, reads and answers control frames; the
// envoy's messages are framed here (envoy/ws_client_frames.hpp).

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <memory>
#include <mutex>
#include <type_traits>

#include "envoy/corked_stream.hpp"
#include "envoy/transport.hpp"
#include "envoy/ws_client_frames.hpp"
#include "runtime/tcp_quickack.hpp"

namespace rivetkit::envoy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

Error connect_error(std::string message) {
    return Error("envoy", "connect_failed", std::move(message));
}

bool is_ip_literal(const std::string& host) {
    boost::system::error_code ec;
    (void)asio::ip::make_address(host, ec);
    return !ec;
}

// The client TLS context shared by every connection of one factory, or why it could not be made.
struct TlsContext {
    std::shared_ptr<ssl::context> context;
    std::string error;
    bool verify = true;
};

TlsContext make_tls_context(const TlsOptions& options) {
    TlsContext out;
    out.verify = !options.insecure_skip_verify;
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    if (!options.ca_file.empty()) {
        ctx->load_verify_file(options.ca_file, ec);
        if (ec) {
            out.error = "cannot load CA file " + options.ca_file + ": " + ec.message();
            return out;
        }
    } else {
        ctx->set_default_verify_paths(ec);
        if (ec) {
            out.error = "cannot load the system CA paths: " + ec.message();
            return out;
        }
    }
    ctx->set_verify_mode(out.verify ? ssl::verify_peer : ssl::verify_none);
    out.context = std::move(ctx);
    return out;
}

// Messages up to this size leave as one WebSocket frame; larger ones in Beast's 4 KiB frames.
constexpr std::size_t kSingleFrameMax = 1024 * 1024;

template <bool Tls>
class WebSocketTransport final : public Transport {
    using Inner = std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;
    using Next = CorkedStream<Inner>;

  public:
    explicit WebSocketTransport(asio::any_io_executor executor)
        requires(!Tls)
        : resolver_(executor), ws_(executor) {}

    WebSocketTransport(asio::any_io_executor executor, std::shared_ptr<TlsContext> tls)
        requires Tls
        : resolver_(executor), ws_(executor, *tls->context), tls_(std::move(tls)) {}

    asio::awaitable<Status> connect(ConnectTarget target) override {
        auto [rerr, endpoints] =
            co_await resolver_.async_resolve(target.host, target.port, use_tuple);
        if (rerr)
            co_return connect_error("resolve " + target.host + ": " + rerr.message());
        auto [cerr, ep] = co_await beast::get_lowest_layer(ws_).async_connect(endpoints, use_tuple);
        if (cerr)
            co_return connect_error("connect: " + cerr.message());
        (void)ep;
        beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true));
        // Timeouts and liveness are the envoy's (on its rt::Clock), not Beast's.
        beast::get_lowest_layer(ws_).expires_never();
        if constexpr (Tls) {
            Status handshake = co_await tls_handshake(target.host);
            if (!handshake.ok())
                co_return handshake;
        }
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
            co_return connect_error("handshake: " + herr.message());
        ws_.binary(true);
        co_return Status{};
    }

    asio::awaitable<TransportRead> read() override {
        buffer_.clear();
        auto [err, n] = co_await ws_.async_read(buffer_, use_tuple);
        (void)n;
        ack_now();
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

    // The message is framed here, straight into the cork buffer, not by a Beast write operation:
    // that cost a composed operation and a posted completion per message. Beast still writes its
    // own control frames (pongs, the close handshake) through the same buffer, each whole.
    // One frame per message, so the engine reassembles nothing, up to kSingleFrameMax: the
    // engine's WebSocket refuses frames over 16 MiB (tungstenite's default), and tunnel payloads
    // go up to 20 MiB.
    asio::awaitable<Status> write(BytesView frame) override {
        auto& cork = ws_.next_layer();
        if (!ws_.is_open())
            co_return Error("envoy", "write_failed", "the WebSocket is closed");
        if (!append_client_message(frame, kSingleFrameMax, mask_keys_,
                                   [&cork](std::size_t n) { return cork.append(n); }))
            co_return Error("envoy", "write_failed", cork.failure().message());
        if (cork.buffered_size() >= Next::kCorkLimit)
            co_return co_await flush();
        co_return Status{};
    }

    asio::awaitable<Status> flush() override {
        if (!ws_.next_layer().buffered())
            co_return Status{};
        quick_ack_.wrote();  // the write carries the ACK of what was read
        auto [err, n] = co_await ws_.next_layer().async_flush(use_tuple);
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
    void ack_now() { quick_ack_.after_read(); }

    // SNI and peer verification (chain + host name by OpenSSL itself, so a mismatch has its own
    // verify result), then the TLS handshake.
    asio::awaitable<Status> tls_handshake(const std::string& host)
        requires Tls
    {
        auto& stream = ws_.next_layer().next_layer();
        SSL* ssl_handle = stream.native_handle();
        const bool ip = is_ip_literal(host);
        // RFC 6066: SNI carries DNS names only.
        // SSL_set_tlsext_host_name without its C cast.
        if (!ip && SSL_ctrl(ssl_handle, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                            const_cast<char*>(host.c_str())) != 1)
            co_return connect_error("tls: cannot set SNI host name " + host);
        if (tls_->verify) {
            X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
            int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
            if (set != 1)
                co_return connect_error("tls: cannot verify against host " + host);
        }
        auto [err] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
        if (!err)
            co_return Status{};
        long verify = SSL_get_verify_result(ssl_handle);
        if (tls_->verify && verify != X509_V_OK) {
            co_return Error("envoy", "tls_verify_failed",
                            "tls: certificate of " + host +
                                " failed verification: " + X509_verify_cert_error_string(verify));
        }
        co_return connect_error("tls handshake with " + host + ": " + err.message());
    }

    tcp::resolver resolver_;
    websocket::stream<Next> ws_;
    std::shared_ptr<TlsContext> tls_;
    beast::flat_buffer buffer_;
    // After ws_, whose socket it refers to.
    rt::DeferredQuickAck quick_ack_{beast::get_lowest_layer(ws_).socket()};
    MaskKeys mask_keys_;
};

// Stands in for a TLS transport when the TLS context could not be built (bad CA file): every
// connect fails with the reason.
class FailingTransport final : public Transport {
  public:
    explicit FailingTransport(std::string why) : why_(std::move(why)) {}
    asio::awaitable<Status> connect(ConnectTarget) override {
        co_return Error("envoy", "tls_config", why_);
    }
    asio::awaitable<TransportRead> read() override {
        TransportRead out;
        out.reason = why_;
        co_return out;
    }
    asio::awaitable<Status> write(BytesView) override {
        co_return Error("envoy", "write_failed", why_);
    }
    asio::awaitable<Status> flush() override { co_return Status{}; }
    asio::awaitable<void> close(std::uint16_t, std::string) override { co_return; }
    void abort() noexcept override {}

  private:
    std::string why_;
};

// The TLS context of one factory, built on first TLS connect (loading the system CA paths reads
// the disk), so plain ws:// envoys never pay for it.
class LazyTlsContext {
  public:
    explicit LazyTlsContext(TlsOptions options) : options_(std::move(options)) {}
    std::shared_ptr<TlsContext> get() {
        std::call_once(once_, [this] { context_ = std::make_shared<TlsContext>(make_tls_context(options_)); });
        return context_;
    }

  private:
    TlsOptions options_;
    std::once_flag once_;
    std::shared_ptr<TlsContext> context_;
};

// Picks the plain or the TLS transport at connect time from the target's scheme.
class DispatchingTransport final : public Transport {
  public:
    DispatchingTransport(asio::any_io_executor executor, std::shared_ptr<LazyTlsContext> tls)
        : executor_(std::move(executor)), tls_(std::move(tls)) {}

    asio::awaitable<Status> connect(ConnectTarget target) override {
        if (!target.tls) {
            inner_ = std::make_unique<WebSocketTransport<false>>(executor_);
        } else if (auto ctx = tls_->get(); !ctx->context) {
            inner_ = std::make_unique<FailingTransport>(ctx->error);
        } else {
            inner_ = std::make_unique<WebSocketTransport<true>>(executor_, std::move(ctx));
        }
        if (aborted_)
            inner_->abort();
        co_return co_await inner_->connect(std::move(target));
    }
    asio::awaitable<TransportRead> read() override { co_return co_await inner_->read(); }
    asio::awaitable<Status> write(BytesView frame) override {
        co_return co_await inner_->write(frame);
    }
    asio::awaitable<Status> flush() override { co_return co_await inner_->flush(); }
    asio::awaitable<void> close(std::uint16_t code, std::string reason) override {
        if (inner_)
            co_await inner_->close(code, std::move(reason));
    }
    void abort() noexcept override {
        aborted_ = true;
        if (inner_)
            inner_->abort();
    }

  private:
    asio::any_io_executor executor_;
    std::shared_ptr<LazyTlsContext> tls_;
    std::unique_ptr<Transport> inner_;
    bool aborted_ = false;
};

class WebSocketTransportFactory final : public TransportFactory {
  public:
    explicit WebSocketTransportFactory(TlsOptions options)
        : tls_(std::make_shared<LazyTlsContext>(std::move(options))) {}

    std::unique_ptr<Transport> create(asio::any_io_executor executor) override {
        return std::make_unique<DispatchingTransport>(std::move(executor), tls_);
    }

  private:
    std::shared_ptr<LazyTlsContext> tls_;
};

}  // namespace

std::shared_ptr<TransportFactory> make_websocket_transport_factory(TlsOptions tls) {
    return std::make_shared<WebSocketTransportFactory>(std::move(tls));
}

}  // namespace rivetkit::envoy

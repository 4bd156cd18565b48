// The engine connection: WebSocket over plain TCP or over TLS (OpenSSL), TCP_NODELAY on (without
// it small frames wait ~40 ms on Nagle + delayed ACK), messages up to 64 MiB (tunnel payloads go
// up to the engine's 20 MiB), and frames written together leave in one socket write
// (envoy/corked_stream.hpp). Beast's TCP and TLS streams carry it and its HTTP parser reads the
// upgrade response; the frames both ways are this file's and envoy/ws_client_frames.hpp's.

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "bare/utf8.hpp"
#include "base/base64.hpp"
#include "envoy/corked_stream.hpp"
#include "envoy/transport.hpp"
#include "envoy/ws_client_frames.hpp"
#include "runtime/tcp_quickack.hpp"

namespace rivetkit::envoy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
namespace http = boost::beast::http;
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

// Messages up to this size leave as one WebSocket frame; larger ones as continuation frames.
constexpr std::size_t kSingleFrameMax = 1024 * 1024;
// The largest message taken from the engine (its tunnel payloads go up to 20 MiB); a larger one
// fails the connection (close 1009) instead of growing the buffer without bound.
constexpr std::uint64_t kMaxMessage = 64ull * 1024 * 1024;
// What one socket read asks for at least.
constexpr std::size_t kReadChunk = 16 * 1024;

// Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2).
std::string websocket_accept(std::string_view key) {
    std::string text(key);
    text += "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
    return base64::encode(BytesView(digest, len));
}

bool header_has_token(std::string_view value, std::string_view token) {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        std::string_view item = value.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
            item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
            item.remove_suffix(1);
        if (beast::iequals(item, token))
            return true;
        if (comma == std::string_view::npos)
            break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

// The engine connection: a TCP (or TLS) stream under the write buffer, with the WebSocket client
// side done here. Beast's HTTP parser reads the upgrade response; after it, frames are read from
// the same buffer and messages framed straight into the write buffer (envoy/ws_client_frames.hpp):
// no library operation per message. Pings are answered, a close from the engine is answered and
// reported, anything malformed fails the connection with close 1002.
template <bool Tls>
class WebSocketTransport final : public Transport {
    // Plain TCP is the socket itself: Beast's tcp_stream only adds per-operation timer
    // bookkeeping to every write, and the envoy keeps its own deadlines (on its rt::Clock).
    using Inner = std::conditional_t<Tls, beast::ssl_stream<beast::tcp_stream>, tcp::socket>;
    using Next = CorkedStream<Inner>;

  public:
    explicit WebSocketTransport(asio::any_io_executor executor)
        requires(!Tls)
        : resolver_(executor), stream_(executor) {}

    WebSocketTransport(asio::any_io_executor executor, std::shared_ptr<TlsContext> tls)
        requires Tls
        : resolver_(executor), stream_(executor, *tls->context), tls_(std::move(tls)) {}

    asio::awaitable<Status> connect(ConnectTarget target) override {
        auto [rerr, endpoints] =
            co_await resolver_.async_resolve(target.host, target.port, use_tuple);
        if (rerr)
            co_return connect_error("resolve " + target.host + ": " + rerr.message());
        auto [cerr, ep] = co_await asio::async_connect(socket(), endpoints, use_tuple);
        if (cerr)
            co_return connect_error("connect: " + cerr.message());
        (void)ep;
        socket().set_option(tcp::no_delay(true));
        if constexpr (Tls) {
            // Timeouts and liveness are the envoy's (on its rt::Clock), not Beast's.
            beast::get_lowest_layer(stream_).expires_never();
            Status handshake = co_await tls_handshake(target.host);
            if (!handshake.ok())
                co_return handshake;
        }
        co_return co_await upgrade(target);
    }

    // The hold (Transport::read) is released before every suspension here: failing, flushing,
    // a close, and the socket read; it is taken again once the socket has given bytes.
    asio::awaitable<TransportRead> read(rt::RunQueueHold* hold) override {
        auto run_held = [hold] {
            if (hold != nullptr)
                hold->run();
        };
        for (;;) {
            std::optional<TransportRead> out;
            if (!next_frame(out)) {
                run_held();
                co_return co_await fail_protocol();
            }
            if (std::exchange(control_buffered_, false)) {
                run_held();
                // Pongs: awaited here, so no write outlives the transport. A failed write shows
                // as a failed read next.
                (void)co_await flush();
            }
            if (out) {
                if (out->kind == TransportRead::Kind::closed) {
                    run_held();
                    // The close reply leaves before the caller drops the socket (which is
                    // closing either way).
                    (void)co_await flush();
                }
                co_return std::move(*out);
            }
            run_held();
            const std::size_t want = std::max(kReadChunk, wanted_);
            auto [err, n] = co_await stream_.async_read_some(buffer_.prepare(want), use_tuple);
            if (err) {
                open_ = false;
                TransportRead failed;
                failed.reason = err.message();
                co_return failed;
            }
            buffer_.commit(n);
            if (hold != nullptr)
                hold->hold();  // before the ACK check queues itself: that waits for run() too
            quick_ack_.after_read();
        }
    }

    asio::awaitable<Status> write(BytesView frame) override {
        if (!open_)
            co_return Error("envoy", "write_failed", "the WebSocket is closed");
        if (!append_client_message(frame, kSingleFrameMax, mask_keys_, appender()))
            co_return Error("envoy", "write_failed", stream_.failure().message());
        if (stream_.buffered_size() >= Next::kCorkLimit)
            co_return co_await flush();
        co_return Status{};
    }

    asio::awaitable<Status> flush() override {
        if (!stream_.buffered())
            co_return Status{};
        quick_ack_.wrote();  // the write carries the ACK of what was read
        if (stream_.flush_now())
            co_return Status{};
        auto [err, n] = co_await stream_.async_flush(use_tuple);
        (void)n;
        if (err)
            co_return Error("envoy", "write_failed", err.message());
        co_return Status{};
    }

    // Sends the close frame; the engine's reply arrives through read(), which reports it.
    asio::awaitable<void> close(std::uint16_t code, std::string reason) override {
        if (!open_ || close_sent_)
            co_return;
        close_sent_ = true;
        (void)append_client_control(0x8, close_payload(code, reason), mask_keys_, appender());
        (void)co_await flush();
    }

    void abort() noexcept override {
        open_ = false;
        beast::error_code ignored;
        socket().shutdown(tcp::socket::shutdown_both, ignored);
        socket().close(ignored);
    }

  private:
    tcp::socket& socket() {
        if constexpr (Tls)
            return beast::get_lowest_layer(stream_).socket();
        else
            return stream_.next_layer();
    }

    auto appender() {
        return [this](std::size_t n) { return stream_.append(n); };
    }

    // The upgrade request and the engine's 101 (section 4.1); what follows the response in the
    // buffer is the first frames.
    asio::awaitable<Status> upgrade(const ConnectTarget& target) {
        std::uint8_t nonce[16];
        for (std::size_t i = 0; i < sizeof nonce; i += 4) {
            const std::uint32_t word = mask_keys_.next();
            std::memcpy(nonce + i, &word, 4);
        }
        const std::string key = base64::encode(BytesView(nonce, sizeof nonce));
        http::request<http::empty_body> req{http::verb::get, target.target, 11};
        req.set(http::field::host, target.host + ":" + target.port);
        req.set(http::field::upgrade, "websocket");
        req.set(http::field::connection, "Upgrade");
        req.set(http::field::sec_websocket_key, key);
        req.set(http::field::sec_websocket_version, "13");
        req.set(http::field::user_agent, "rivetkit-cpp");
        std::string protocols;
        for (const auto& p : target.subprotocols) {
            if (!protocols.empty())
                protocols += ", ";
            protocols += p;
        }
        if (!protocols.empty())
            req.set(http::field::sec_websocket_protocol, protocols);
        // Through the write buffer, which writes it out at once (nothing else is buffered).
        auto [werr, wn] = co_await http::async_write(stream_, req, use_tuple);
        (void)wn;
        if (werr)
            co_return connect_error("handshake: " + werr.message());
        http::response_parser<http::string_body> parser;
        parser.body_limit(64 * 1024);
        auto [rerr, rn] = co_await http::async_read(stream_, buffer_, parser, use_tuple);
        (void)rn;
        if (rerr)
            co_return connect_error("handshake: " + rerr.message());
        const auto& res = parser.get();
        if (res.result() != http::status::switching_protocols) {
            std::string body = res.body().substr(0, 200);
            co_return connect_error("handshake: the engine answered HTTP " +
                                    std::to_string(res.result_int()) +
                                    (body.empty() ? std::string() : ": " + body));
        }
        if (!beast::iequals(res[http::field::upgrade], "websocket") ||
            !header_has_token(res[http::field::connection], "upgrade"))
            co_return connect_error("handshake: the 101 response does not upgrade to websocket");
        if (res[http::field::sec_websocket_accept] != websocket_accept(key))
            co_return connect_error("handshake: wrong Sec-WebSocket-Accept");
        open_ = true;
        co_return Status{};
    }

    // Takes the frames the buffer holds: false on a protocol error (`error_` says which); `out`
    // set once a message, or the close, is complete. Otherwise `wanted_` is what the next frame
    // needs in the buffer.
    bool next_frame(std::optional<TransportRead>& out) {
        for (;;) {
            auto data = buffer_.cdata();
            const BytesView in(static_cast<const std::uint8_t*>(data.data()), data.size());
            ServerFrameHeader frame;
            const char* why = nullptr;
            const FrameHeaderParse parsed = parse_server_frame_header(in, frame, why);
            if (parsed == FrameHeaderParse::bad) {
                error_ = why;
                error_code_ = 1002;
                return false;
            }
            if (parsed == FrameHeaderParse::need_more) {
                wanted_ = 14;
                return true;
            }
            if (frame.payload_size > kMaxMessage - message_.size()) {
                error_ = "message too big";
                error_code_ = 1009;
                return false;
            }
            const std::size_t total = frame.header_size + static_cast<std::size_t>(frame.payload_size);
            if (in.size() < total) {
                wanted_ = total - in.size();
                return true;
            }
            const BytesView payload = in.subspan(frame.header_size, total - frame.header_size);
            const bool done = take_frame(frame, payload, out);
            buffer_.consume(total);
            if (!error_.empty())
                return false;
            if (done)
                return true;
        }
    }

    // One whole frame; true once `out` is set.
    bool take_frame(const ServerFrameHeader& frame, BytesView payload,
                    std::optional<TransportRead>& out) {
        switch (frame.opcode) {
            case 0x9:  // ping: the pong carries its payload
                (void)append_client_control(0xA, payload, mask_keys_, appender());
                control_buffered_ = true;
                return false;
            case 0xA:
                return false;
            case 0x8: {
                TransportRead closed;
                closed.kind = TransportRead::Kind::closed;
                if (payload.size() == 1) {
                    error_ = "close frame of one byte";
                    error_code_ = 1002;
                    return false;
                }
                if (payload.size() >= 2) {
                    closed.close_code = static_cast<std::uint16_t>((payload[0] << 8) | payload[1]);
                    if (!valid_close_code(closed.close_code) ||
                        !bare::is_valid_utf8(payload.subspan(2))) {
                        error_ = "close frame with a reserved code or a reason not in UTF-8";
                        error_code_ = 1002;
                        return false;
                    }
                    closed.reason.assign(payload.begin() + 2, payload.end());
                }
                if (!close_sent_) {
                    close_sent_ = true;
                    (void)append_client_control(0x8, close_payload(closed.close_code, closed.reason),
                                                mask_keys_, appender());
                }
                open_ = false;
                out = std::move(closed);
                return true;
            }
            default:
                break;
        }
        if (frame.opcode != 0x0) {  // a text or binary frame starts a message
            if (in_message_) {
                error_ = "a new message inside a fragmented one";
                error_code_ = 1002;
                return false;
            }
            in_message_ = true;
            message_text_ = frame.opcode == 0x1;
        } else if (!in_message_) {
            error_ = "a continuation frame outside a message";
            error_code_ = 1002;
            return false;
        }
        if (!frame.fin) {
            message_.insert(message_.end(), payload.begin(), payload.end());
            return false;
        }
        in_message_ = false;
        TransportRead message;
        message.kind = message_text_ ? TransportRead::Kind::text : TransportRead::Kind::binary;
        if (message_.empty()) {
            message.data.assign(payload.begin(), payload.end());
        } else {
            message_.insert(message_.end(), payload.begin(), payload.end());
            message.data = std::move(message_);
            message_ = Bytes();
        }
        out = std::move(message);
        return true;
    }

    // A malformed frame: close with the reason, report the connection failed.
    asio::awaitable<TransportRead> fail_protocol() {
        if (open_ && !close_sent_) {
            close_sent_ = true;
            (void)append_client_control(0x8, close_payload(error_code_, error_), mask_keys_,
                                        appender());
            (void)co_await flush();
        }
        open_ = false;
        TransportRead failed;
        failed.reason = "websocket protocol error: " + error_;
        co_return failed;
    }

    // SNI and peer verification (chain + host name by OpenSSL itself, so a mismatch has its own
    // verify result), then the TLS handshake.
    asio::awaitable<Status> tls_handshake(const std::string& host)
        requires Tls
    {
        auto& stream = stream_.next_layer();
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
    Next stream_;
    std::shared_ptr<TlsContext> tls_;
    beast::flat_buffer buffer_;
    std::size_t wanted_ = 0;
    Bytes message_;  // the frames so far of a fragmented message
    bool in_message_ = false;
    bool message_text_ = false;
    bool open_ = false;
    bool close_sent_ = false;
    bool control_buffered_ = false;  // a pong waits in the write buffer
    std::string error_;
    std::uint16_t error_code_ = 1002;
    // After stream_, whose socket it refers to.
    rt::DeferredQuickAck quick_ack_{socket()};
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
    asio::awaitable<TransportRead> read(rt::RunQueueHold* hold) override {
        if (hold != nullptr)
            hold->run();
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
    asio::awaitable<TransportRead> read(rt::RunQueueHold* hold) override {
        co_return co_await inner_->read(hold);
    }
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

#include "client/transport.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <boost/url/parse.hpp>

#include "base/ascii.hpp"
#include "client/wire.hpp"
#include "runtime/tcp_quickack.hpp"

namespace rivetkit::client::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

Error connect_failed(std::string_view what, std::string_view detail) {
    return Error("client", "connect_failed", fmt::format("{}: {}", what, detail));
}
}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed)
        return Error("client", "invalid_endpoint", fmt::format("`{}` is not a URL", url));
    const auto scheme = parsed->scheme();
    if (scheme != "http" && scheme != "ws")
        return Error("client", "invalid_endpoint",
                     fmt::format("scheme `{}` is not supported (http only)", scheme));
    Endpoint out;
    out.host = parsed->host();
    if (out.host.empty())
        return Error("client", "invalid_endpoint", fmt::format("`{}` has no host", url));
    out.port = parsed->has_port() ? std::string(parsed->port()) : std::string("80");
    out.base_path = parsed->path();
    while (!out.base_path.empty() && out.base_path.back() == '/')
        out.base_path.pop_back();
    return out;
}

std::string percent_encode(std::string_view s) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out += ch;
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

}  // namespace rivetkit::client::detail

namespace rivetkit::client {
std::optional<std::string> HttpResponse::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (ascii_iequals(k, name))
            return v;
    }
    return std::nullopt;
}
}  // namespace rivetkit::client

namespace rivetkit::client::detail {

asio::awaitable<Result<HttpResponse>> http_exchange(asio::any_io_executor executor,
                                                    Endpoint endpoint, std::string method,
                                                    std::string target, Headers headers,
                                                    std::string body) {
    tcp::resolver resolver(executor);
    auto [rerr, endpoints] = co_await resolver.async_resolve(endpoint.host, endpoint.port, use_tuple);
    if (rerr)
        co_return connect_failed("resolve", rerr.message());
    beast::tcp_stream stream(executor);
    auto [cerr, ep] = co_await stream.async_connect(endpoints, use_tuple);
    (void)ep;
    if (cerr)
        co_return connect_failed(fmt::format("connect {}:{}", endpoint.host, endpoint.port),
                                 cerr.message());
    stream.socket().set_option(tcp::no_delay(true));

    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, endpoint.host + ":" + endpoint.port);
    req.set(http::field::user_agent, "RivetKit/2.3.19 (C++)");
    req.set(http::field::connection, "close");
    for (const auto& [k, v] : headers)
        req.set(k, v);
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
        req.body() = std::move(body);
        req.prepare_payload();
    }
    auto [werr, wn] = co_await http::async_write(stream, req, use_tuple);
    (void)wn;
    if (werr)
        co_return Error("client", "http_failed", "write: " + werr.message());

    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64ULL * 1024 * 1024);
    auto [herr, hn] = co_await http::async_read(stream, buffer, parser, use_tuple);
    (void)hn;
    if (herr)
        co_return Error("client", "http_failed", "read: " + herr.message());
    auto res = parser.release();
    HttpResponse out;
    out.status = res.result_int();
    for (const auto& field : res)
        out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    out.body = std::move(res.body());
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    co_return out;
}

struct WsStream::Impl {
    explicit Impl(asio::any_io_executor executor) : resolver(executor), ws(executor) {}
    tcp::resolver resolver;
    websocket::stream<beast::tcp_stream> ws;
    beast::flat_buffer buffer;
    rt::QuickAck quick_ack;
};

WsStream::WsStream(asio::any_io_executor executor) : impl_(std::make_unique<Impl>(executor)) {}
WsStream::~WsStream() = default;

asio::awaitable<Status> WsStream::connect(Endpoint endpoint, std::string target,
                                          std::vector<std::string> protocols, Headers headers) {
    auto& ws = impl_->ws;
    auto [rerr, endpoints] =
        co_await impl_->resolver.async_resolve(endpoint.host, endpoint.port, use_tuple);
    if (rerr)
        co_return connect_failed("resolve", rerr.message());
    auto [cerr, ep] = co_await beast::get_lowest_layer(ws).async_connect(endpoints, use_tuple);
    (void)ep;
    if (cerr)
        co_return connect_failed(fmt::format("connect {}:{}", endpoint.host, endpoint.port),
                                 cerr.message());
    beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
    beast::get_lowest_layer(ws).expires_never();
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = websocket::stream_base::none();
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws.set_option(timeouts);
    ws.read_message_max(64ULL * 1024 * 1024);
    std::string joined;
    for (const auto& p : protocols) {
        if (!joined.empty())
            joined += ", ";
        joined += p;
    }
    ws.set_option(websocket::stream_base::decorator(
        [joined, headers = std::move(headers)](websocket::request_type& req) {
            req.set(http::field::user_agent, "RivetKit/2.3.19 (C++)");
            if (!joined.empty())
                req.set(http::field::sec_websocket_protocol, joined);
            for (const auto& [k, v] : headers)
                req.set(k, v);
        }));
    websocket::response_type response;
    const std::string host = endpoint.host + ":" + endpoint.port;
    auto [herr] = co_await ws.async_handshake(response, host, target, use_tuple);
    if (herr) {
        if (response.result_int() != 0 && response.result_int() != 101) {
            const auto& b = response.body();
            co_return wire::decode_http_error(
                wire::Encoding::json, response.result_int(),
                BytesView(reinterpret_cast<const std::uint8_t*>(b.data()), b.size()));
        }
        co_return connect_failed("websocket handshake", herr.message());
    }
    co_return Status{};
}

asio::awaitable<WsRead> WsStream::read() {
    auto& ws = impl_->ws;
    impl_->buffer.clear();
    auto [err, n] = co_await ws.async_read(impl_->buffer, use_tuple);
    (void)n;
    impl_->quick_ack.after_read(beast::get_lowest_layer(ws).socket());
    WsRead out;
    if (err == websocket::error::closed) {
        out.kind = WsRead::Kind::closed;
        out.close_code = static_cast<std::uint16_t>(ws.reason().code);
        out.reason = std::string(ws.reason().reason.c_str());
        co_return out;
    }
    if (err) {
        out.kind = WsRead::Kind::failed;
        out.reason = err.message();
        co_return out;
    }
    out.kind = WsRead::Kind::message;
    out.binary = ws.got_binary();
    auto data = impl_->buffer.cdata();
    const auto* p = static_cast<const std::uint8_t*>(data.data());
    out.data.assign(p, p + data.size());
    co_return out;
}

asio::awaitable<Status> WsStream::write(Bytes data, bool binary) {
    auto& ws = impl_->ws;
    ws.binary(binary);
    auto [err, n] = co_await ws.async_write(asio::buffer(data.data(), data.size()), use_tuple);
    (void)n;
    if (err)
        co_return Error("client", "write_failed", err.message());
    co_return Status{};
}

asio::awaitable<void> WsStream::close(std::uint16_t code, std::string reason) {
    auto& ws = impl_->ws;
    if (!ws.is_open())
        co_return;
    websocket::close_reason cr(static_cast<websocket::close_code>(code), reason);
    auto [err] = co_await ws.async_close(cr, use_tuple);
    (void)err;
}

void WsStream::abort() noexcept {
    beast::error_code ignored;
    auto& socket = beast::get_lowest_layer(impl_->ws).socket();
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
}

}  // namespace rivetkit::client::detail

#pragma once
// Raw HTTP and raw WebSockets (upstream's `onRequest` and `onWebSocket`): what Actor::on_request
// and Actor::on_websocket receive, for requests to `/request/...` and sockets on
// `/websocket/...` of the actor's gateway URL.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/bytes.hpp"
#include "core/actor/messages.hpp"
#include "rivetkit/context.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

// A raw HTTP request. `path` is what followed `/request` (e.g. "/hello?x=1"); header names are
// as the transport delivered them.
struct Request {
    std::string method = "GET";
    std::string path = "/";
    std::map<std::string, std::string> headers;
    Bytes body;

    std::string_view body_text() const { return as_chars(body); }
    // The header's value, case-insensitive name; nullopt when absent.
    std::optional<std::string> header(std::string_view name) const;
};

// A raw HTTP response.
struct Response {
    std::uint16_t status = 200;
    std::map<std::string, std::string> headers;
    Bytes body;

    static Response text(std::string_view body, std::uint16_t status = 200) {
        Response r;
        r.status = status;
        r.headers["content-type"] = "text/plain; charset=utf-8";
        r.body = Bytes(body.begin(), body.end());
        return r;
    }
    static Response json(const Json& body, std::uint16_t status = 200) {
        Response r = text(body.dump(), status);
        r.headers["content-type"] = "application/json";
        return r;
    }
};

// One inbound WebSocket message.
struct WebSocketMessage {
    Bytes data;
    bool binary = false;
    // On a hibernatable socket, the gateway's index of this message (upstream's
    // `event.rivetMessageIndex`); none on a socket that cannot hibernate.
    std::optional<std::uint16_t> index;

    std::string_view text() const { return as_chars(data); }
};

// A raw WebSocket. Cheap to copy (all copies are the same socket); keep one in vars to send from
// actions. Sends and closes after the close are ignored.
class WebSocket {
  public:
    explicit WebSocket(std::shared_ptr<core::RawWebSocket> socket,
                       std::optional<core::ConnHandle> conn = std::nullopt)
        : socket_(std::move(socket)), conn_(std::move(conn)) {}

    // The connection this socket is (upstream's `c.conn` in onWebSocket): its id, and state that
    // a hibernatable socket keeps across a sleep.
    std::optional<Conn> conn() const {
        return conn_ ? std::optional<Conn>(Conn(*conn_)) : std::nullopt;
    }

    void send_text(std::string_view text) const { socket_->send_text(text); }
    void send_binary(BytesView data) const { socket_->send(Bytes(data.begin(), data.end()), true); }
    void close(std::uint16_t code = 1000, std::string reason = {}) const {
        socket_->close(code, std::move(reason));
    }
    // The next inbound message; nullopt once the peer closed (close_code() then tells how).
    // One reader at a time.
    boost::asio::awaitable<std::optional<WebSocketMessage>> recv() const {
        std::shared_ptr<core::RawWebSocket> socket = socket_;  // alive across the suspension
        auto message = co_await socket->recv();
        if (!message)
            co_return std::nullopt;
        co_return WebSocketMessage{std::move(message->data), message->binary, message->index};
    }
    bool closed() const noexcept { return socket_->closed(); }
    // The peer's close frame, once recv() returned nullopt (none when the transport just ended).
    std::optional<std::uint16_t> close_code() const {
        const auto& frame = socket_->close_frame();
        return frame ? frame->code : std::nullopt;
    }
    std::string close_reason() const {
        const auto& frame = socket_->close_frame();
        return frame ? frame->reason : std::string();
    }

  private:
    std::shared_ptr<core::RawWebSocket> socket_;
    std::optional<core::ConnHandle> conn_;
};

}  // namespace rivetkit

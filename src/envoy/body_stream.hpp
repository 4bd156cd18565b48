#pragma once
// A tunneled request body read as it arrives (streaming gateway, EnvoyCallbacks::
// stream_request_body). Flow control follows the reader: the gateway is credited with the bytes
// the handler has taken, not the bytes that arrived, so a slow handler holds the client back
// instead of the envoy buffering the body (the gateway sends about 1 MiB ahead of the credit).
//
// Used on the envoy's io thread only. The holder (the HttpRequest) keeps it alive while a next()
// is pending.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "envoy/types.hpp"
#include "runtime/notify.hpp"

namespace rivetkit::envoy {

namespace detail {
struct EnvoyState;
}

class HttpBodyStream {
  public:
    HttpBodyStream(std::weak_ptr<detail::EnvoyState> state, TunnelId id);
    HttpBodyStream(const HttpBodyStream&) = delete;
    HttpBodyStream& operator=(const HttpBodyStream&) = delete;

    // The next piece of the body, in order; nullopt once the body is complete. Errors:
    // envoy/request_aborted (the client went away; the response is discarded),
    // envoy/request_body_cancelled (the body stopped early; a response is still expected),
    // envoy/shutdown. Pieces that arrived before an error are returned first.
    boost::asio::awaitable<Result<std::optional<Bytes>>> next();
    // The rest of the body in one piece.
    boost::asio::awaitable<Result<Bytes>> read_all();
    std::uint64_t bytes_read() const noexcept { return read_; }

    // Envoy side.
    void push(Bytes chunk);
    void finish();
    void fail(Error error);
    bool complete() const noexcept { return finished_ || error_.has_value(); }

  private:
    std::weak_ptr<detail::EnvoyState> state_;
    TunnelId id_;
    std::deque<Bytes> chunks_;
    bool finished_ = false;
    std::optional<Error> error_;
    std::uint64_t read_ = 0;
    rt::Notify ready_;
};

}  // namespace rivetkit::envoy

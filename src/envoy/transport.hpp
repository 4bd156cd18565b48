#pragma once
// The engine connection as a small interface: the envoy's protocol logic runs the same over the
// Beast WebSocket (ws_transport.hpp) and over the in-memory fake the unit tests use.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "envoy/config.hpp"
#include "runtime/defer.hpp"

namespace rivetkit::envoy {

struct ConnectTarget {
    bool tls = false;
    std::string host;
    std::string port;
    std::string target;  // path and query
    std::vector<std::string> subprotocols;
};

struct TransportRead {
    enum class Kind : std::uint8_t { binary, text, closed, failed };
    Kind kind = Kind::failed;
    Bytes data;                    // binary / text payload
    std::uint16_t close_code = 0;  // closed
    std::string reason;            // close reason, or the failure text
};

class Transport {
  public:
    virtual ~Transport() = default;
    virtual boost::asio::awaitable<Status> connect(ConnectTarget target) = 0;
    // One whole message. Only one read is outstanding at a time.
    //
    // With `hold` (rt::RunQueueHold, defer.hpp), the run queue is held from each socket read to
    // just before read() next suspends: the caller promises to handle what read() returns
    // without suspending and to call read() again (or hold->run()) before it waits on anything.
    // Then what a message's handling queues runs in the same io handler (no extra reactor poll).
    virtual boost::asio::awaitable<TransportRead> read(rt::RunQueueHold* hold) = 0;
    // One binary message. Only one write is outstanding at a time; may run beside a read. The
    // message may wait in a buffer (to leave with the next ones in one socket write) until
    // flush(): call it before waiting for anything else.
    virtual boost::asio::awaitable<Status> write(BytesView frame) = 0;
    // Sends what write() buffered. Not beside a write.
    virtual boost::asio::awaitable<Status> flush() = 0;
    virtual boost::asio::awaitable<void> close(std::uint16_t code, std::string reason) = 0;
    // Drops the connection at once; outstanding operations fail.
    virtual void abort() noexcept = 0;
};

class TransportFactory {
  public:
    virtual ~TransportFactory() = default;
    virtual std::unique_ptr<Transport> create(boost::asio::any_io_executor executor) = 0;
};

// Boost.Beast WebSocket over TCP (TCP_NODELAY on), and over TLS (OpenSSL) for targets with
// `tls` set, configured by `tls`. A TLS peer that fails verification is reported as
// envoy/tls_verify_failed with OpenSSL's reason (e.g. "self-signed certificate").
std::shared_ptr<TransportFactory> make_websocket_transport_factory(TlsOptions tls = {});

}  // namespace rivetkit::envoy

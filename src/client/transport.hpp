#pragma once
// HTTP/1.1 exchanges and WebSocket streams for the client (Boost.Beast lives in transport.cpp).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "rivetkit/client.hpp"

namespace rivetkit::client::detail {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct Endpoint {
    std::string host;
    std::string port;
    std::string base_path;  // without trailing '/', may be empty
};
Result<Endpoint> parse_endpoint(std::string_view url);

// RFC 3986 unreserved characters kept, everything else %XX.
std::string percent_encode(std::string_view s);

// One request on a fresh connection.
boost::asio::awaitable<Result<HttpResponse>> http_exchange(boost::asio::any_io_executor executor,
                                                           Endpoint endpoint, std::string method,
                                                           std::string target, Headers headers,
                                                           std::string body);

struct WsRead {
    enum class Kind : std::uint8_t { message, closed, failed };
    Kind kind = Kind::failed;
    Bytes data;
    bool binary = false;
    std::uint16_t close_code = 0;
    std::string reason;
};

class WsStream {
  public:
    explicit WsStream(boost::asio::any_io_executor executor);
    ~WsStream();
    WsStream(const WsStream&) = delete;
    WsStream& operator=(const WsStream&) = delete;

    // Fails with the server's structured error when the upgrade is declined with an error body.
    boost::asio::awaitable<Status> connect(Endpoint endpoint, std::string target,
                                           std::vector<std::string> protocols, Headers headers);
    boost::asio::awaitable<WsRead> read();
    boost::asio::awaitable<Status> write(Bytes data, bool binary);
    boost::asio::awaitable<void> close(std::uint16_t code, std::string reason);
    // Drops the TCP connection at once (pending reads/writes complete with errors).
    void abort() noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rivetkit::client::detail

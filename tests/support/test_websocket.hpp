#pragma once
// A blocking WebSocket client for integration tests (the "browser" side of a tunneled socket).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"

namespace rivetkit::testing {

class TestWebSocket {
  public:
    static Result<std::unique_ptr<TestWebSocket>> connect(
        std::uint16_t port, std::string target, std::vector<std::string> subprotocols,
        std::chrono::milliseconds timeout = std::chrono::seconds(30),
        std::vector<std::pair<std::string, std::string>> headers = {});
    ~TestWebSocket();

    Status send_text(const std::string& text);
    Status send_binary(const Bytes& data);
    // The next text message; fails on timeout or close.
    Result<std::string> read_text();
    // The next message of either kind, as bytes; fails on timeout or close.
    Result<Bytes> read_bytes();
    // The peer's close frame (code and reason) once one arrived.
    std::optional<std::pair<std::uint16_t, std::string>> close_frame() const;
    void close();

  private:
    struct Impl;
    explicit TestWebSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace rivetkit::testing

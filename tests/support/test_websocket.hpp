#pragma once
// A blocking WebSocket client for integration tests (the "browser" side of a tunneled socket).

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace rivetkit::testing {

class TestWebSocket {
  public:
    static Result<std::unique_ptr<TestWebSocket>> connect(
        std::uint16_t port, std::string target, std::vector<std::string> subprotocols,
        std::chrono::milliseconds timeout = std::chrono::seconds(30));
    ~TestWebSocket();

    Status send_text(const std::string& text);
    // The next text message; fails on timeout or close.
    Result<std::string> read_text();
    void close();

  private:
    struct Impl;
    explicit TestWebSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace rivetkit::testing

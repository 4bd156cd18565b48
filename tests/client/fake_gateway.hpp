#pragma once
// A one-port WebSocket server standing in for the gateway in client tests that need a server
// misbehaving on purpose. Each accepted socket is handed to `serve` on the server's own thread
// with a blocking send/receive interface.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/bytes.hpp"

namespace rivetkit::testing {

class FakeSocket {
  public:
    virtual ~FakeSocket() = default;
    virtual std::string target() const = 0;
    virtual std::string protocols() const = 0;
    virtual bool send(const Bytes& data, bool binary) = 0;
    // The next message; nullopt once closed.
    virtual std::optional<Bytes> recv() = 0;
};

class FakeGateway {
  public:
    // `serve(socket, index)` runs per accepted connection (index counts from 0); returning
    // closes the socket.
    explicit FakeGateway(std::function<void(FakeSocket&, int)> serve);
    ~FakeGateway();
    std::uint16_t port() const;
    std::string endpoint() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rivetkit::testing

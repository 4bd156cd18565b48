#pragma once
// ack_now(socket): acknowledge what the socket received at once (Linux TCP_QUICKACK).
//
// The engine writes small WebSocket frames back to back without TCP_NODELAY. After a frame that
// needs no answer (a KV response), a delayed ACK from this side held the engine's next frame for
// the ~40 ms delayed-ACK timer — one stall per actor state save (bench/README.md). Linux leaves
// quick-ACK mode again as it likes, so readers call this after every read; `QuickAck` skips the
// call within 200 us of the last one (the frames of one recv come out of the read buffer back to
// back and need no second ACK).

#include <boost/asio/ip/tcp.hpp>
#include <chrono>

#include <netinet/tcp.h>

namespace rivetkit::rt {

class QuickAck {
  public:
    void after_read(boost::asio::ip::tcp::socket& socket) noexcept {
#ifdef TCP_QUICKACK
        const auto now = std::chrono::steady_clock::now();
        if (now - last_ < std::chrono::microseconds(200))
            return;
        last_ = now;
        boost::system::error_code ignored;
        socket.set_option(
            boost::asio::detail::socket_option::boolean<IPPROTO_TCP, TCP_QUICKACK>(true), ignored);
#else
        (void)socket;
#endif
    }

  private:
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace rivetkit::rt

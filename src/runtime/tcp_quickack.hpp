#pragma once
// QuickAck: acknowledge what the socket received at once (Linux TCP_QUICKACK); DeferredQuickAck:
// the same, unless an answer written soon after carries the ACK.
//
// The engine writes small WebSocket frames back to back without TCP_NODELAY. After a frame that
// needs no answer (a KV response), a delayed ACK from this side held the engine's next frame for
// the ~40 ms delayed-ACK timer — one stall per actor state save (bench/README.md). Linux leaves
// quick-ACK mode again as it likes, so readers call this after every read; `QuickAck` skips the
// call within 200 us of the last one (the frames of one recv come out of the read buffer back to
// back and need no second ACK).

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

#include <netinet/tcp.h>

#include "runtime/defer.hpp"

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

// QuickAck for a connection whose reads are mostly answered at once (the envoy's: a tunneled
// request gets its response within the same few turns of the io loop). An ACK that can ride on
// that answer needs no segment of its own, and the engine's Nagle meanwhile gathers its next
// frames into one segment; only a read that nothing answers (a KV response, an event) needs
// the ACK alone. So after a read the ACK is owed, wrote() settles it, and a check looks again
// later and sends it alone if it is still owed.
//
// The check first waits in the runtime's run queue (rt::defer), where the way from a read to its
// answer runs: a WebSocket action's is four hops there (the connect socket's read loop, the
// actor's serve, the typed runtime's serve, the envoy's writer), each a wave of the queue that
// the check goes behind again. Only an answer that waits on something else (a SQLite worker, a
// timer) outlasts kQueueTurns of those; the check then goes to asio's queue, whose every pass
// costs a poll of its reactor, for kTurns passes before it sends the ACK.
class DeferredQuickAck {
  public:
    static constexpr int kQueueTurns = 8;
    static constexpr int kTurns = 6;

    explicit DeferredQuickAck(boost::asio::ip::tcp::socket& socket)
        : state_(std::make_shared<State>(socket)) {}
    ~DeferredQuickAck() { state_->socket = nullptr; }
    DeferredQuickAck(const DeferredQuickAck&) = delete;
    DeferredQuickAck& operator=(const DeferredQuickAck&) = delete;

    // Only on a thread running the socket's context (the run queue's rule).
    void after_read() {
        State& s = *state_;
        s.owed = true;
        s.turns = 0;
        if (s.check_queued)
            return;
        s.check_queued = true;
        queue_check(state_);
    }
    void wrote() noexcept { state_->owed = false; }
    // ACKs this has sent alone (no answer carried them): a diagnostic.
    std::uint64_t acks_sent() const noexcept { return state_->acks_sent; }

  private:
    struct State {
        explicit State(boost::asio::ip::tcp::socket& s) : socket(&s) {}
        boost::asio::ip::tcp::socket* socket;  // null once the owner is gone
        QuickAck ack;
        bool owed = false;
        bool check_queued = false;
        int turns = 0;
        std::uint64_t acks_sent = 0;
    };

    static void check(const std::shared_ptr<State>& state) {
        State& s = *state;
        if (s.socket == nullptr || !s.owed) {
            s.check_queued = false;
            return;
        }
        ++s.turns;
        if (s.turns < kQueueTurns)
            return queue_check(state);
        if (s.turns < kQueueTurns + kTurns) {
            boost::asio::post(s.socket->get_executor(), [state] { check(state); });
            return;
        }
        s.check_queued = false;
        s.owed = false;
        ++s.acks_sent;
        s.ack.after_read(*s.socket);
    }
    static void queue_check(const std::shared_ptr<State>& state) {
        defer(state->socket->get_executor(), state, [](const std::shared_ptr<void>& target) {
            check(std::static_pointer_cast<State>(target));
        });
    }

    std::shared_ptr<State> state_;
};

}  // namespace rivetkit::rt

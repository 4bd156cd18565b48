#pragma once
// Unbounded MPSC channel (tokio::sync::mpsc::unbounded_channel).
//
//   auto [tx, rx] = rt::unbounded_channel<Command>();
//
// Sender is copyable; send() never blocks and returns false once the receiver is gone (the value
// is then destroyed at once, so a reply sender inside it is dropped and its caller sees "closed").
// Receiver is move-only; recv() yields std::nullopt once every sender is gone and the queue is
// drained; dropping the receiver destroys anything still queued.
//
// Single-threaded (see wait_list.hpp). recv() is cancel-safe: a recv cancelled while waiting
// (awaitable_operators, task abort) leaves the message queued. One caveat from asio's `||`: when
// a message is already queued as the `||` starts, recv completes without suspending and co_spawn
// defers that completion by one post, so an arm listed *before* recv that is also ready at once
// wins and the message is discarded. rt::select has no such window.

#include <cstddef>
#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "runtime/ring_buffer.hpp"
#include "runtime/suspension.hpp"
#include "runtime/try_recv.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

template <typename T>
class Receiver;
template <typename T>
class Sender;

namespace detail {

// Lives while any handle does: senders are counted, the receiver is a flag.
template <typename T>
struct ChannelState {
    RingBuffer<T> queue;
    std::size_t senders = 1;
    bool receiver_alive = true;
    WaitList recv_waiters;

    bool recv_ready() const noexcept { return !queue.empty() || senders == 0; }
    void release_if_unused() {
        if (senders == 0 && !receiver_alive) delete this;
    }
};

template <typename T>
boost::asio::awaitable<std::optional<T>> recv_from(ChannelState<T>* st) {
    for (;;) {
        if (!st->queue.empty()) co_return std::optional<T>(st->queue.pop_front());
        if (st->senders == 0) co_return std::nullopt;
        co_await wait_on(st->recv_waiters);
    }
}

}  // namespace detail

template <typename T>
class Sender {
public:
    Sender(const Sender& other) noexcept : st_(other.st_) {
        if (st_ != nullptr) ++st_->senders;
    }
    Sender(Sender&& other) noexcept : st_(std::exchange(other.st_, nullptr)) {}
    Sender& operator=(Sender other) noexcept {
        std::swap(st_, other.st_);
        return *this;
    }
    ~Sender() { reset(); }

    // False (and `value` destroyed) when the receiver is gone.
    bool send(T value) const {
        if (st_ == nullptr || !st_->receiver_alive) return false;
        st_->queue.push_back(std::move(value));
        st_->recv_waiters.wake_all();
        return true;
    }

    // Like send(), but keeps at most `capacity` messages queued by dropping the oldest first, as
    // a lagging tokio broadcast receiver does. Returns how many were dropped, or nullopt (value
    // destroyed) when the receiver is gone.
    std::optional<std::size_t> send_lossy(T value, std::size_t capacity) const {
        if (st_ == nullptr || !st_->receiver_alive) return std::nullopt;
        std::size_t dropped = 0;
        for (; capacity > 0 && st_->queue.size() >= capacity; ++dropped) st_->queue.pop_front();
        st_->queue.push_back(std::move(value));
        st_->recv_waiters.wake_all();
        return dropped;
    }

    bool is_closed() const noexcept { return st_ == nullptr || !st_->receiver_alive; }

    // Lets go of the queue's storage while it is empty (the next send allocates it again): for a
    // channel gone quiet. Either end may ask.
    void release_idle_storage() const noexcept {
        if (st_ != nullptr) st_->queue.release_if_empty();
    }
    // Slots the queue holds allocated, queued or not (what release_idle_storage gives back).
    std::size_t queue_capacity() const noexcept { return st_ != nullptr ? st_->queue.capacity() : 0; }

    // This handle stops sending, as if destroyed; the receiver sees the end once every sender
    // has done so.
    void release() noexcept { reset(); }

private:
    template <typename U>
    friend std::pair<Sender<U>, Receiver<U>> unbounded_channel();
    explicit Sender(detail::ChannelState<T>* st) noexcept : st_(st) {}

    void reset() noexcept {
        if (st_ == nullptr) return;
        auto* st = std::exchange(st_, nullptr);
        if (--st->senders == 0) {
            st->recv_waiters.wake_all();
            st->release_if_unused();
        }
    }

    detail::ChannelState<T>* st_;
};

template <typename T>
class Receiver {
public:
    Receiver() = default;
    Receiver(const Receiver&) = delete;
    Receiver& operator=(const Receiver&) = delete;
    Receiver(Receiver&& other) noexcept : st_(std::exchange(other.st_, nullptr)) {}
    Receiver& operator=(Receiver&& other) noexcept {
        if (this != &other) {
            reset();
            st_ = std::exchange(other.st_, nullptr);
        }
        return *this;
    }
    ~Receiver() { reset(); }

    // The next message, or std::nullopt once all senders are gone and the queue is drained.
    // The receiver must outlive the returned awaitable.
    boost::asio::awaitable<std::optional<T>> recv() { return detail::recv_from(st_); }

    TryRecvResult<T> try_recv() {
        if (!st_->queue.empty()) return TryRecvResult<T>(st_->queue.pop_front());
        return st_->senders == 0 ? TryRecvError::disconnected : TryRecvError::empty;
    }

    std::size_t len() const noexcept { return st_->queue.size(); }
    bool is_empty() const noexcept { return st_->queue.empty(); }
    // As Sender::release_idle_storage.
    void release_idle_storage() const noexcept {
        if (st_ != nullptr) st_->queue.release_if_empty();
    }

    // Readiness for rt::select: a message is queued, or no sender is left.
    bool ready() const noexcept { return st_->recv_ready(); }
    detail::WaitList& waiters() noexcept { return st_->recv_waiters; }

private:
    template <typename U>
    friend std::pair<Sender<U>, Receiver<U>> unbounded_channel();
    explicit Receiver(detail::ChannelState<T>* st) noexcept : st_(st) {}

    void reset() noexcept {
        if (st_ == nullptr) return;
        auto* st = std::exchange(st_, nullptr);
        st->receiver_alive = false;
        // Queued values may own senders of this very channel; hold a count so the state
        // cannot be freed from inside clear().
        ++st->senders;
        st->queue.clear();
        --st->senders;
        st->release_if_unused();
    }

    detail::ChannelState<T>* st_ = nullptr;
};

template <typename T>
std::pair<Sender<T>, Receiver<T>> unbounded_channel() {
    auto* st = new detail::ChannelState<T>();
    return {Sender<T>(st), Receiver<T>(st)};
}

}  // namespace rivetkit::rt

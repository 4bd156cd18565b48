#pragma once
// Oneshot channel (tokio::sync::oneshot): one value, one sender, one receiver.
//
//   auto [tx, rx] = rt::oneshot<Reply>();
//
// send() returns false (value destroyed) when the receiver is gone. Dropping the sender unsent
// makes recv() yield std::nullopt, which is how a dropped reply is observed. asio awaitables
// only co_await awaitables and async operations, so the receiver is awaited as `rx.recv()`
// (there is no `co_await rx`). Single-threaded (see wait_list.hpp); recv() is cancel-safe.

#include <optional>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "runtime/suspension.hpp"
#include "runtime/try_recv.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

template <typename T>
class OneshotSender;
template <typename T>
class OneshotReceiver;

namespace detail {

template <typename T>
struct OneshotState {
    std::optional<T> value;
    bool sender_alive = true;
    bool receiver_alive = true;
    WaitList recv_waiters;
    WaitList close_waiters;

    bool recv_ready() const noexcept { return value.has_value() || !sender_alive; }
    void release_if_unused() {
        if (!sender_alive && !receiver_alive) delete this;
    }
};

template <typename T>
boost::asio::awaitable<std::optional<T>> oneshot_recv(OneshotState<T>* st) {
    for (;;) {
        if (st->value) {
            std::optional<T> out = std::move(st->value);
            st->value.reset();
            co_return out;
        }
        if (!st->sender_alive) co_return std::nullopt;
        co_await wait_on(st->recv_waiters);
    }
}

template <typename T>
boost::asio::awaitable<void> oneshot_closed(OneshotState<T>* st) {
    while (st->receiver_alive) co_await wait_on(st->close_waiters);
}

}  // namespace detail

template <typename T>
class OneshotSender {
public:
    OneshotSender() noexcept = default;  // empty: like a spent sender
    OneshotSender(const OneshotSender&) = delete;
    OneshotSender& operator=(const OneshotSender&) = delete;
    OneshotSender(OneshotSender&& other) noexcept : st_(std::exchange(other.st_, nullptr)) {}
    OneshotSender& operator=(OneshotSender&& other) noexcept {
        if (this != &other) {
            reset();
            st_ = std::exchange(other.st_, nullptr);
        }
        return *this;
    }
    ~OneshotSender() { reset(); }

    // Spends the sender. False (value destroyed) when the receiver is gone or already sent.
    bool send(T value) {
        if (st_ == nullptr) return false;
        bool delivered = st_->receiver_alive;
        if (delivered) st_->value.emplace(std::move(value));
        reset();
        return delivered;
    }

    bool is_closed() const noexcept { return st_ == nullptr || !st_->receiver_alive; }
    // False once sent, dropped, moved from, or default-constructed.
    bool valid() const noexcept { return st_ != nullptr; }

    // Completes once the receiver is gone (tokio's Sender::closed).
    boost::asio::awaitable<void> closed() { return detail::oneshot_closed(st_); }

private:
    template <typename U>
    friend std::pair<OneshotSender<U>, OneshotReceiver<U>> oneshot();
    explicit OneshotSender(detail::OneshotState<T>* st) noexcept : st_(st) {}

    void reset() noexcept {
        if (st_ == nullptr) return;
        auto* st = std::exchange(st_, nullptr);
        st->sender_alive = false;
        st->recv_waiters.wake_all();
        st->release_if_unused();
    }

    detail::OneshotState<T>* st_ = nullptr;
};

template <typename T>
class OneshotReceiver {
public:
    OneshotReceiver() = default;
    OneshotReceiver(const OneshotReceiver&) = delete;
    OneshotReceiver& operator=(const OneshotReceiver&) = delete;
    OneshotReceiver(OneshotReceiver&& other) noexcept : st_(std::exchange(other.st_, nullptr)) {}
    OneshotReceiver& operator=(OneshotReceiver&& other) noexcept {
        if (this != &other) {
            reset();
            st_ = std::exchange(other.st_, nullptr);
        }
        return *this;
    }
    ~OneshotReceiver() { reset(); }

    // The value, or std::nullopt when the sender was dropped unsent. The receiver must outlive
    // the returned awaitable.
    boost::asio::awaitable<std::optional<T>> recv() { return detail::oneshot_recv(st_); }

    TryRecvResult<T> try_recv() {
        if (st_->value) {
            TryRecvResult<T> out(std::move(*st_->value));
            st_->value.reset();
            return out;
        }
        return st_->sender_alive ? TryRecvError::empty : TryRecvError::disconnected;
    }

    // Readiness for rt::select: a value is there, or the sender is gone.
    bool ready() const noexcept { return st_->recv_ready(); }
    detail::WaitList& waiters() noexcept { return st_->recv_waiters; }

private:
    template <typename U>
    friend std::pair<OneshotSender<U>, OneshotReceiver<U>> oneshot();
    explicit OneshotReceiver(detail::OneshotState<T>* st) noexcept : st_(st) {}

    void reset() noexcept {
        if (st_ == nullptr) return;
        auto* st = std::exchange(st_, nullptr);
        st->receiver_alive = false;
        st->close_waiters.wake_all();
        st->value.reset();
        st->release_if_unused();
    }

    detail::OneshotState<T>* st_ = nullptr;
};

template <typename T>
std::pair<OneshotSender<T>, OneshotReceiver<T>> oneshot() {
    auto* st = new detail::OneshotState<T>();
    return {OneshotSender<T>(st), OneshotReceiver<T>(st)};
}

}  // namespace rivetkit::rt

#pragma once
// Notify (tokio::sync::Notify): a wake-up signal with at most one stored permit.
//
// notify_one() stores the permit (if one is already stored, nothing changes) and wakes the
// waiters; whoever runs first takes it. notify_waiters() wakes every wait that has already
// started (see notified()) and stores nothing. Waking is readiness-based: with several waiters a
// notify_one wakes all of them and the losers go back to sleep, so a permit is never lost to a
// waiter that decides not to take it (e.g. a select whose other arm won).
//
// Single-threaded (see wait_list.hpp). The Notify must outlive every wait on it.

#include <cstdint>

#include <boost/asio/awaitable.hpp>

#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

class Notify {
public:
    Notify() = default;
    Notify(const Notify&) = delete;
    Notify& operator=(const Notify&) = delete;

    void notify_one() noexcept;
    void notify_waiters() noexcept;

    // Takes the stored permit if there is one.
    bool try_acquire() noexcept;

    // Completes on a permit (consuming it) or on a notify_waiters() issued after this call —
    // the call, not the first resumption, is when the wait starts, as with tokio's Notified.
    boost::asio::awaitable<void> notified();

    // For rt::select: a wait that started at `epoch` is ready if a permit is stored or
    // notify_waiters() has run since.
    std::uint64_t epoch() const noexcept { return epoch_; }
    bool ready_since(std::uint64_t epoch) const noexcept { return permit_ || epoch_ != epoch; }
    detail::WaitList& waiters() noexcept { return waiters_; }

private:
    bool permit_ = false;
    std::uint64_t epoch_ = 0;
    detail::WaitList waiters_;
};

}  // namespace rivetkit::rt

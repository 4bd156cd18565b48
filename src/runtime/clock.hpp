#pragma once
// Clock: the one source of time for the runtime and everything above it, so every timing rule
// can run on virtual time in tests (Envoy's TimeSource / SimulatedTimeSystem).
//
// Implementations: SteadyClock (real, asio::steady_timer) and VirtualClock (moves only when a
// test moves it). Timers are TimerEntry registrations; fire() is called on the clock's io thread
// at or after the deadline, never inline from arm(). Entries with equal deadlines fire in the
// order they were armed. Single-threaded (see wait_list.hpp).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <boost/asio/awaitable.hpp>

namespace rivetkit::rt {

class TimerQueue;

class Clock;

// One armed timer. Disarms itself when destroyed.
class TimerEntry {
public:
    using time_point = std::chrono::steady_clock::time_point;

    TimerEntry() = default;
    TimerEntry(const TimerEntry&) = delete;
    TimerEntry& operator=(const TimerEntry&) = delete;

    bool armed() const noexcept { return queue_ != nullptr; }
    time_point deadline() const noexcept { return deadline_; }
    void disarm() noexcept;

protected:
    virtual ~TimerEntry() { disarm(); }

private:
    friend class TimerQueue;
    virtual void fire() noexcept = 0;

    TimerQueue* queue_ = nullptr;
    time_point deadline_{};
    std::uint64_t seq_ = 0;
    std::size_t slot_ = 0;  // its index in the queue's heap while armed
};

class Clock {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    Clock() = default;
    Clock(const Clock&) = delete;
    Clock& operator=(const Clock&) = delete;
    virtual ~Clock() = default;

    // Monotonic.
    virtual time_point now() const = 0;
    // Milliseconds since the Unix epoch; virtual clocks move it together with now().
    virtual std::int64_t wall_now_ms() const = 0;

    // Arms (or re-arms) `entry` for `deadline`.
    virtual void arm(TimerEntry& entry, time_point deadline) = 0;

    // Cancellable (operation_aborted); returns at once when the deadline has passed.
    boost::asio::awaitable<void> sleep_until(time_point deadline);
    boost::asio::awaitable<void> sleep_for(duration d);
};

}  // namespace rivetkit::rt

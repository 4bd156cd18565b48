#pragma once
// Virtual time for tests (tokio's paused clock, Envoy's SimulatedTimeSystem): now() moves only
// when the test moves it, and timers fire in deadline order, ties in arming order.
//
// Time is moved by TestRuntime's driver, which owns the policy (advance, auto-advance, deadlock
// detection). `co_await clock.advance(d)` only registers the request; it completes once the
// driver has fired every timer due up to now + d, run everything that made ready, and set the
// time to now + d. Outside a TestRuntime an advance never completes.

#include <optional>

#include <boost/asio/awaitable.hpp>

#include "runtime/clock.hpp"
#include "runtime/timer_queue.hpp"

namespace rivetkit::rt {

namespace detail {
class Suspension;
}

class VirtualClock final : public Clock {
public:
    // Wall time at the start (2023-11-14T22:13:20Z); monotonic time starts one day past the
    // epoch so that a default time_point{} never looks like "now".
    static constexpr std::int64_t default_wall_start_ms = 1'700'000'000'000;

    explicit VirtualClock(std::int64_t wall_start_ms = default_wall_start_ms);

    time_point now() const override { return now_; }
    std::int64_t wall_now_ms() const override;
    void arm(TimerEntry& entry, time_point deadline) override;

    // One advance at a time; a second concurrent one throws std::logic_error.
    boost::asio::awaitable<void> advance(duration d);

    // Driver interface (TestRuntime).
    std::optional<time_point> next_deadline() const noexcept { return timers_.next_deadline(); }
    std::size_t pending_timers() const noexcept { return timers_.size(); }
    // Fires everything due at the current time; returns whether anything fired.
    bool fire_due() noexcept { return timers_.fire_due(now_) > 0; }
    // Moves time forward (never backward) to `t`.
    void set_now(time_point t) noexcept;
    const std::optional<time_point>& advance_target() const noexcept { return advance_target_; }
    // Sets now to the advance target and resumes the advancer.
    void finish_advance() noexcept;

private:
    time_point start_;
    time_point now_;
    std::int64_t wall_start_ms_;
    TimerQueue timers_;
    std::optional<time_point> advance_target_;
    detail::Suspension* advancer_ = nullptr;
};

}  // namespace rivetkit::rt

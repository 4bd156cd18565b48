#include "runtime/virtual_clock.hpp"

#include <stdexcept>


#include "runtime/suspension.hpp"

namespace rivetkit::rt {

VirtualClock::VirtualClock(std::int64_t wall_start_ms)
    : start_(time_point(std::chrono::hours(24))), now_(start_), wall_start_ms_(wall_start_ms) {}

std::int64_t VirtualClock::wall_now_ms() const {
    return wall_start_ms_ +
           std::chrono::duration_cast<std::chrono::milliseconds>(now_ - start_).count();
}

void VirtualClock::arm(TimerEntry& entry, time_point deadline) { timers_.arm(entry, deadline); }

void VirtualClock::set_now(time_point t) noexcept {
    if (t > now_) now_ = t;
}

void VirtualClock::finish_advance() noexcept {
    if (!advance_target_) return;
    set_now(*advance_target_);
    advance_target_.reset();
    if (advancer_ != nullptr) advancer_->wake();
}

boost::asio::awaitable<void> VirtualClock::advance(duration d) {
    if (advance_target_) throw std::logic_error("VirtualClock::advance: an advance is already pending");
    detail::Suspension suspension;
    advance_target_ = now_ + d;
    advancer_ = &suspension;
    // A cancelled advance withdraws its request so the driver stops working towards it.
    struct Withdraw {
        VirtualClock& clock;
        ~Withdraw() {
            clock.advancer_ = nullptr;
            clock.advance_target_.reset();
        }
    } withdraw{*this};
    co_await suspension.wait();
}

}  // namespace rivetkit::rt

#include "runtime/steady_clock.hpp"

#include <boost/asio/steady_timer.hpp>

#include "runtime/timer_queue.hpp"

namespace asio = boost::asio;

namespace rivetkit::rt {

struct SteadyClock::Impl : std::enable_shared_from_this<Impl> {
    explicit Impl(asio::any_io_executor executor) : timer(std::move(executor)) {}

    // Keeps exactly one timer wait outstanding while entries are armed, aimed at the earliest.
    void schedule() {
        auto next = queue.next_deadline();
        if (!next || (waiting && *next >= scheduled_for)) return;
        waiting = true;
        scheduled_for = *next;
        timer.expires_at(*next);  // cancels a later wait; its handler sees a stale generation
        timer.async_wait([self = shared_from_this(), gen = ++generation](
                             const boost::system::error_code&) {
            if (self->closed || gen != self->generation) return;
            self->waiting = false;
            self->queue.fire_due(std::chrono::steady_clock::now());
            self->schedule();
        });
    }

    asio::steady_timer timer;
    TimerQueue queue;
    time_point scheduled_for{};
    std::uint64_t generation = 0;
    bool waiting = false;
    bool closed = false;
};

SteadyClock::SteadyClock(asio::any_io_executor executor)
    : impl_(std::make_shared<Impl>(std::move(executor))) {}

SteadyClock::~SteadyClock() {
    impl_->closed = true;
    impl_->timer.cancel();
}

Clock::time_point SteadyClock::now() const { return std::chrono::steady_clock::now(); }

std::int64_t SteadyClock::wall_now_ms() const {
    auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
}

void SteadyClock::arm(TimerEntry& entry, time_point deadline) {
    impl_->queue.arm(entry, deadline);
    impl_->schedule();
}

}  // namespace rivetkit::rt

#include "runtime/clock.hpp"

#include "runtime/suspension.hpp"
#include "runtime/timer_node.hpp"
#include "runtime/timer_queue.hpp"

namespace rivetkit::rt {

void TimerEntry::disarm() noexcept {
    if (queue_ != nullptr) queue_->remove(*this);
}

TimerQueue::~TimerQueue() {
    for (TimerEntry* entry : entries_) entry->queue_ = nullptr;
}

void TimerQueue::arm(TimerEntry& entry, time_point deadline) {
    entry.disarm();
    entry.deadline_ = deadline;
    entry.seq_ = next_seq_++;
    entries_.insert(&entry);
    entry.queue_ = this;
}

void TimerQueue::remove(TimerEntry& entry) noexcept {
    if (entry.queue_ != this) return;
    entries_.erase(&entry);
    entry.queue_ = nullptr;
}

std::optional<TimerQueue::time_point> TimerQueue::next_deadline() const noexcept {
    if (entries_.empty()) return std::nullopt;
    return (*entries_.begin())->deadline_;
}

std::size_t TimerQueue::fire_due(time_point now) noexcept {
    std::size_t fired = 0;
    // fire() only schedules work, so it cannot arm or remove entries under our feet.
    while (!entries_.empty() && (*entries_.begin())->deadline_ <= now) {
        TimerEntry* entry = *entries_.begin();
        entries_.erase(entries_.begin());
        entry->queue_ = nullptr;
        entry->fire();
        ++fired;
    }
    return fired;
}

boost::asio::awaitable<void> Clock::sleep_until(time_point deadline) {
    while (now() < deadline) {
        detail::Suspension suspension;
        detail::TimerNode timer(suspension);
        arm(timer, deadline);
        co_await suspension.wait();
    }
}

boost::asio::awaitable<void> Clock::sleep_for(duration d) { return sleep_until(now() + d); }

}  // namespace rivetkit::rt

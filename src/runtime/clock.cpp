#include "runtime/clock.hpp"

#include "runtime/suspension.hpp"
#include "runtime/timer_node.hpp"
#include "runtime/timer_queue.hpp"

namespace rivetkit::rt {

void TimerEntry::disarm() noexcept {
    if (queue_ != nullptr) queue_->remove(*this);
}

TimerQueue::~TimerQueue() {
    for (TimerEntry* entry : heap_) entry->queue_ = nullptr;
}

void TimerQueue::place(std::size_t at, TimerEntry* entry) noexcept {
    heap_[at] = entry;
    entry->slot_ = at;
}

void TimerQueue::sift_up(std::size_t at) noexcept {
    TimerEntry* entry = heap_[at];
    while (at > 0) {
        const std::size_t parent = (at - 1) / 2;
        if (!earlier(entry, heap_[parent])) break;
        place(at, heap_[parent]);
        at = parent;
    }
    place(at, entry);
}

void TimerQueue::sift_down(std::size_t at) noexcept {
    TimerEntry* entry = heap_[at];
    const std::size_t n = heap_.size();
    for (;;) {
        std::size_t child = 2 * at + 1;
        if (child >= n) break;
        if (child + 1 < n && earlier(heap_[child + 1], heap_[child])) ++child;
        if (!earlier(heap_[child], entry)) break;
        place(at, heap_[child]);
        at = child;
    }
    place(at, entry);
}

// Removes the entry in slot `at`: the last entry takes its place and moves up or down.
void TimerQueue::take(std::size_t at) noexcept {
    heap_[at]->queue_ = nullptr;
    TimerEntry* last = heap_.back();
    heap_.pop_back();
    if (at == heap_.size()) return;
    place(at, last);
    if (at > 0 && earlier(last, heap_[(at - 1) / 2]))
        sift_up(at);
    else
        sift_down(at);
}

void TimerQueue::arm(TimerEntry& entry, time_point deadline) {
    entry.disarm();
    entry.deadline_ = deadline;
    entry.seq_ = next_seq_++;
    heap_.push_back(&entry);
    entry.queue_ = this;
    sift_up(heap_.size() - 1);
}

void TimerQueue::remove(TimerEntry& entry) noexcept {
    if (entry.queue_ != this) return;
    take(entry.slot_);
}

std::optional<TimerQueue::time_point> TimerQueue::next_deadline() const noexcept {
    if (heap_.empty()) return std::nullopt;
    return heap_.front()->deadline_;
}

std::size_t TimerQueue::fire_due(time_point now) noexcept {
    std::size_t fired = 0;
    // fire() only schedules work, so it cannot arm or remove entries under our feet.
    while (!heap_.empty() && heap_.front()->deadline_ <= now) {
        TimerEntry* entry = heap_.front();
        take(0);
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

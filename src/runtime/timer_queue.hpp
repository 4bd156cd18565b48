#pragma once
// The deadline-ordered set of armed TimerEntries that both clocks keep. Internal to clocks.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/clock.hpp"

namespace rivetkit::rt {

class TimerQueue {
public:
    using time_point = TimerEntry::time_point;

    TimerQueue() = default;
    TimerQueue(const TimerQueue&) = delete;
    TimerQueue& operator=(const TimerQueue&) = delete;
    // Entries still armed are detached; they will never fire.
    ~TimerQueue();

    void arm(TimerEntry& entry, time_point deadline);
    void remove(TimerEntry& entry) noexcept;

    std::optional<time_point> next_deadline() const noexcept;
    bool empty() const noexcept { return heap_.empty(); }
    std::size_t size() const noexcept { return heap_.size(); }
    // Fires, in (deadline, arming order), every entry due at `now`. Returns how many fired.
    std::size_t fire_due(time_point now) noexcept;

private:
    static bool earlier(const TimerEntry* a, const TimerEntry* b) noexcept {
        if (a->deadline_ != b->deadline_) return a->deadline_ < b->deadline_;
        return a->seq_ < b->seq_;
    }
    void place(std::size_t at, TimerEntry* entry) noexcept;
    void sift_up(std::size_t at) noexcept;
    void sift_down(std::size_t at) noexcept;
    void take(std::size_t at) noexcept;

    // A binary min-heap on (deadline, arming order); each entry knows its slot, so arming,
    // re-arming and removing cost no allocation once the vector has grown (timers are re-armed
    // on every request: an actor's sleep deadline, a request's timeout).
    std::vector<TimerEntry*> heap_;
    std::uint64_t next_seq_ = 0;
};

}  // namespace rivetkit::rt

#pragma once
// The deadline-ordered set of armed TimerEntries that both clocks keep. Internal to clocks.

#include <cstdint>
#include <optional>
#include <set>

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
    bool empty() const noexcept { return entries_.empty(); }
    std::size_t size() const noexcept { return entries_.size(); }
    // Fires, in (deadline, arming order), every entry due at `now`. Returns how many fired.
    std::size_t fire_due(time_point now) noexcept;

private:
    struct Earlier {
        bool operator()(const TimerEntry* a, const TimerEntry* b) const noexcept {
            if (a->deadline_ != b->deadline_) return a->deadline_ < b->deadline_;
            return a->seq_ < b->seq_;
        }
    };
    std::set<TimerEntry*, Earlier> entries_;
    std::uint64_t next_seq_ = 0;
};

}  // namespace rivetkit::rt

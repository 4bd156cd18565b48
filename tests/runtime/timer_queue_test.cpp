#include "runtime/timer_queue.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

namespace rt = rivetkit::rt;
using namespace std::chrono_literals;

namespace {

struct Recorder : rt::TimerEntry {
    Recorder(int id_, std::vector<int>& fired_) : id(id_), fired(fired_) {}
    ~Recorder() override = default;
    int id;
    std::vector<int>& fired;

  private:
    void fire() noexcept override { fired.push_back(id); }
};

}  // namespace

// Arming, re-arming, disarming and destroying entries in a random order, then firing in steps:
// every step fires exactly the armed entries now due, by deadline and, on a tie, in the order they
// were (last) armed; the queue's earliest deadline is always the earliest armed one.
TEST(TimerQueue, FiresDueEntriesInDeadlineThenArmingOrderWhateverWasReArmedOrRemoved) {
    rt::TimerQueue queue;
    std::vector<int> fired;
    constexpr int kEntries = 200;
    std::vector<std::unique_ptr<Recorder>> entries;
    for (int i = 0; i < kEntries; ++i)
        entries.push_back(std::make_unique<Recorder>(i, fired));
    const auto t0 = rt::TimerEntry::time_point{} + 1h;
    std::mt19937 rng(7);
    // The model: each armed entry's (deadline, arming order).
    std::vector<std::tuple<rt::TimerEntry::time_point, std::uint64_t, int>> model;
    std::uint64_t order = 0;
    auto forget = [&](int id) {
        std::erase_if(model, [id](const auto& m) { return std::get<2>(m) == id; });
    };
    for (int step = 0; step < 2'000; ++step) {
        const int id = static_cast<int>(rng() % kEntries);
        if (!entries[static_cast<std::size_t>(id)])
            continue;
        Recorder& e = *entries[static_cast<std::size_t>(id)];
        switch (rng() % 6) {
            case 0:
                e.disarm();
                forget(id);
                break;
            case 1:
                if (step % 7 == 0) {  // a destroyed entry leaves the queue
                    entries[static_cast<std::size_t>(id)].reset();
                    forget(id);
                    break;
                }
                [[fallthrough]];
            default: {
                // Few distinct deadlines, so ties are common.
                const auto deadline = t0 + std::chrono::milliseconds(rng() % 40);
                queue.arm(e, deadline);
                forget(id);
                model.emplace_back(deadline, order++, id);
            }
        }
        ASSERT_EQ(queue.size(), model.size());
        if (model.empty()) {
            EXPECT_FALSE(queue.next_deadline());
        } else {
            ASSERT_TRUE(queue.next_deadline());
            EXPECT_EQ(*queue.next_deadline(), std::get<0>(*std::min_element(model.begin(),
                                                                            model.end())));
        }
    }
    std::sort(model.begin(), model.end());
    for (auto now = t0; now <= t0 + 40ms; now += 5ms) {
        fired.clear();
        std::vector<int> due;
        while (!model.empty() && std::get<0>(model.front()) <= now) {
            due.push_back(std::get<2>(model.front()));
            model.erase(model.begin());
        }
        EXPECT_EQ(queue.fire_due(now), due.size());
        EXPECT_EQ(fired, due);
        EXPECT_EQ(queue.size(), model.size());
    }
    EXPECT_TRUE(queue.empty());
    for (const auto& e : entries) {
        if (e) {
            EXPECT_FALSE(e->armed());
        }
    }
}

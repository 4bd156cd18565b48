#include "runtime/outside_work.hpp"

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace rivetkit::rt {

namespace detail {
std::size_t*& outside_work_counter() noexcept {
    thread_local std::size_t* counter = nullptr;
    return counter;
}
}  // namespace detail

OutsideWork::OutsideWork() noexcept : counter_(detail::outside_work_counter()) {
    if (counter_ != nullptr)
        ++*counter_;
}

OutsideWork::~OutsideWork() {
    if (counter_ != nullptr)
        --*counter_;
}

namespace lockstep {

namespace {

struct Gate {
    std::atomic<bool> on{false};
    std::mutex mutex;
    std::condition_variable turn;
    std::uint64_t next_ticket = 1;  // the ticket the next hand-off takes
    std::uint64_t serving = 1;      // the ticket whose worker may act
};

// Never destroyed: worker threads may still use it while statics are torn down at exit.
Gate& gate() {
    static Gate* g = new Gate;
    return *g;
}

}  // namespace

void enable(bool on) noexcept {
    Gate& g = gate();
    std::lock_guard lock(g.mutex);
    g.next_ticket = 1;
    g.serving = 1;
    g.on.store(on, std::memory_order_release);
    g.turn.notify_all();  // nobody waits for a turn once lockstep is off
}

bool enabled() noexcept { return gate().on.load(std::memory_order_acquire); }

std::uint64_t hand_off() noexcept {
    Gate& g = gate();
    if (!g.on.load(std::memory_order_acquire))
        return 0;
    std::lock_guard lock(g.mutex);
    return g.next_ticket++;
}

void after_hand_off() noexcept {
    if (detail::outside_work_counter() != nullptr)
        settle();
}

void wait_turn(std::uint64_t ticket) noexcept {
    Gate& g = gate();
    if (ticket == 0 || !g.on.load(std::memory_order_acquire))
        return;
    std::unique_lock lock(g.mutex);
    g.turn.wait(lock, [&] { return !g.on.load(std::memory_order_relaxed) || g.serving >= ticket; });
}

void hand_back() noexcept {
    Gate& g = gate();
    if (!g.on.load(std::memory_order_acquire))
        return;
    std::lock_guard lock(g.mutex);
    ++g.serving;
    g.turn.notify_all();
}

void settle() noexcept {
    Gate& g = gate();
    if (!g.on.load(std::memory_order_acquire))
        return;
    std::unique_lock lock(g.mutex);
    g.turn.wait(lock, [&] {
        return !g.on.load(std::memory_order_relaxed) || g.serving >= g.next_ticket;
    });
}

}  // namespace lockstep

}  // namespace rivetkit::rt

#include "runtime/task_tracker.hpp"


#include "runtime/suspension.hpp"
#include "runtime/timer_node.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

namespace detail {

struct TrackerState {
    std::size_t live = 0;
    bool closed = false;
    // Woken whenever live drops to zero or the tracker closes.
    WaitList waiters;
};

}  // namespace detail

namespace {

boost::asio::awaitable<bool> idle_or_deadline(std::shared_ptr<detail::TrackerState> st,
                                              Clock& clock, Clock::time_point deadline) {
    for (;;) {
        if (st->live == 0) co_return true;
        if (clock.now() >= deadline) co_return false;
        detail::Suspension suspension;
        detail::WaitNode idle(suspension);
        detail::TimerNode timer(suspension);
        st->waiters.push(idle);
        clock.arm(timer, deadline);
        co_await suspension.wait();
    }
}

boost::asio::awaitable<void> closed_and_idle(std::shared_ptr<detail::TrackerState> st) {
    while (!(st->closed && st->live == 0)) co_await detail::wait_on(st->waiters);
}

}  // namespace

TrackToken::TrackToken(std::shared_ptr<detail::TrackerState> st) : st_(std::move(st)) {
    ++st_->live;
}

TrackToken& TrackToken::operator=(TrackToken&& other) noexcept {
    if (this != &other) {
        release();
        st_ = std::move(other.st_);
    }
    return *this;
}

TrackToken::~TrackToken() { release(); }

void TrackToken::release() noexcept {
    if (!st_) return;
    auto st = std::move(st_);
    if (--st->live == 0) st->waiters.wake_all();
}

TaskTracker::TaskTracker() : st_(std::make_shared<detail::TrackerState>()) {}

TrackToken TaskTracker::track() { return TrackToken(st_); }

std::size_t TaskTracker::len() const noexcept { return st_->live; }

void TaskTracker::close() noexcept {
    st_->closed = true;
    st_->waiters.wake_all();
}

void TaskTracker::reopen() noexcept { st_->closed = false; }

bool TaskTracker::is_closed() const noexcept { return st_->closed; }

boost::asio::awaitable<bool> TaskTracker::wait_until_idle(Clock& clock,
                                                          Clock::time_point deadline) const {
    return idle_or_deadline(st_, clock, deadline);
}

boost::asio::awaitable<void> TaskTracker::wait() const { return closed_and_idle(st_); }

}  // namespace rivetkit::rt

#pragma once
// TaskTracker (tokio_util::task::TaskTracker): counts live tracked work so shutdown can wait for
// it, with a deadline.
//
// Work is tracked by spawning through the tracker (the task counts until it finishes) or by
// holding a TrackToken. close() only records that no more work is expected (wait() needs it);
// tracking after close() still works, as in tokio. Single-threaded (see wait_list.hpp).

#include <cstddef>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "runtime/clock.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::rt {

namespace detail {
struct TrackerState;
}

// Keeps one unit of tracked work alive. Move-only.
class TrackToken {
public:
    TrackToken(TrackToken&& other) noexcept = default;
    TrackToken& operator=(TrackToken&& other) noexcept;
    TrackToken(const TrackToken&) = delete;
    TrackToken& operator=(const TrackToken&) = delete;
    ~TrackToken();

private:
    friend class TaskTracker;
    explicit TrackToken(std::shared_ptr<detail::TrackerState> st);
    void release() noexcept;
    std::shared_ptr<detail::TrackerState> st_;
};

class TaskTracker {
public:
    TaskTracker();

    TrackToken track();

    template <typename T>
    JoinHandle<T> spawn(boost::asio::any_io_executor executor, boost::asio::awaitable<T> body) {
        return rt::spawn(executor, tracked(track(), std::move(body)));
    }
    // rt::spawn_queued, tracked.
    template <typename T>
    JoinHandle<T> spawn_queued(boost::asio::any_io_executor executor,
                               boost::asio::awaitable<T> body) {
        return rt::spawn_queued(executor, tracked(track(), std::move(body)));
    }

    std::size_t len() const noexcept;
    bool is_empty() const noexcept { return len() == 0; }
    void close() noexcept;
    void reopen() noexcept;
    bool is_closed() const noexcept;

    // True once no tracked work is live; false if `deadline` passes first.
    boost::asio::awaitable<bool> wait_until_idle(Clock& clock, Clock::time_point deadline) const;
    // Completes once closed and empty (tokio's wait()).
    boost::asio::awaitable<void> wait() const;

private:
    template <typename T>
    static boost::asio::awaitable<T> tracked(TrackToken token, boost::asio::awaitable<T> body) {
        TrackToken held = std::move(token);
        co_return co_await std::move(body);
    }

    std::shared_ptr<detail::TrackerState> st_;
};

}  // namespace rivetkit::rt

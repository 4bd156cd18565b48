#pragma once
// The real clock: std::chrono::steady_clock for now(), system_clock for wall time, and one
// asio::steady_timer on the given executor that fires the earliest armed entry.

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "runtime/clock.hpp"

namespace rivetkit::rt {

class SteadyClock final : public Clock {
public:
    explicit SteadyClock(boost::asio::any_io_executor executor);
    // Armed entries are detached and never fire.
    ~SteadyClock() override;

    time_point now() const override;
    std::int64_t wall_now_ms() const override;
    void arm(TimerEntry& entry, time_point deadline) override;

private:
    struct Impl;
    // Shared with the pending timer wait, which may outlive the clock by one handler run.
    std::shared_ptr<Impl> impl_;
};

}  // namespace rivetkit::rt

#pragma once
// TestRuntime: a single-threaded io_context driven on a VirtualClock (tokio's
// `#[tokio::test(start_paused = true)]`).
//
// block_on(main) runs ready handlers until `main` completes. Whenever nothing is ready:
//  1. timers already due fire;
//  2. else, if an advance is pending (clock().advance(d) or advance(d)), the next timer due at or
//     before the target fires (time jumps to its deadline), everything it made ready runs, and
//     this repeats; then time is set to the target and the advancer resumes;
//  3. else, with auto-advance on (the default), time jumps to the next timer;
//  4. else, throws DeadlockError: nothing can ever make progress.
// So advance(d) returns only after every task made ready up to the new time has run. The driver
// assumes no outside event sources (sockets, other threads) feed this io_context, except waits
// marked rt::OutsideWork (runtime/outside_work.hpp): while one is pending and nothing is ready,
// the driver blocks for the posted completion before it considers moving time. In lockstep
// (rt::lockstep) it instead waits before every handler until no worker job runs; a worker still
// waiting then is blocked on this thread, and time may move for it.

#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "runtime/virtual_clock.hpp"

namespace boost::asio {
class io_context;
}

namespace rivetkit::rt {

class DeadlockError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class TestRuntime {
public:
    struct Options {
        bool auto_advance = true;
        std::int64_t wall_start_ms = VirtualClock::default_wall_start_ms;
    };

    TestRuntime();
    explicit TestRuntime(Options options);
    ~TestRuntime();
    TestRuntime(const TestRuntime&) = delete;
    TestRuntime& operator=(const TestRuntime&) = delete;

    boost::asio::any_io_executor executor() const;
    boost::asio::io_context& io() noexcept { return *io_; }
    VirtualClock& clock() noexcept { return clock_; }

    void set_auto_advance(bool on) noexcept { auto_advance_ = on; }

    template <typename T>
    T block_on(boost::asio::awaitable<T> main) {
        if constexpr (std::is_void_v<T>) {
            run_main(std::move(main));
        } else {
            std::optional<T> out;
            run_main(store_into(std::move(main), out));
            return std::move(*out);
        }
    }

    // From test code (outside block_on): moves virtual time by `d`, running everything due.
    void advance(VirtualClock::duration d);
    // Runs ready work until nothing is ready, without moving time.
    void run_until_idle();

private:
    template <typename T>
    static boost::asio::awaitable<void> store_into(boost::asio::awaitable<T> main,
                                                   std::optional<T>& out) {
        out.emplace(co_await std::move(main));
    }

    void run_main(boost::asio::awaitable<void> main);
    // Drives until `done`; throws DeadlockError when stuck.
    void drive(const bool& done);
    std::size_t poll_ready(const bool& done);

    // Declared before io_: outlives it, so waits abandoned at io shutdown can still disarm.
    VirtualClock clock_;
    std::unique_ptr<boost::asio::io_context> io_;
    bool auto_advance_;
    std::size_t outside_work_ = 0;
};

}  // namespace rivetkit::rt

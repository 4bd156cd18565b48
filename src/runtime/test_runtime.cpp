#include "runtime/test_runtime.hpp"

#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>

#include "runtime/outside_work.hpp"

namespace asio = boost::asio;

namespace rivetkit::rt {

TestRuntime::TestRuntime() : TestRuntime(Options{}) {}

TestRuntime::TestRuntime(Options options)
    : clock_(options.wall_start_ms),
      io_(std::make_unique<asio::io_context>(1)),
      auto_advance_(options.auto_advance) {}

TestRuntime::~TestRuntime() = default;

asio::any_io_executor TestRuntime::executor() const { return io_->get_executor(); }

void TestRuntime::run_main(asio::awaitable<void> main) {
    // Shared, not on this stack: after a DeadlockError the main task may still be resumed later
    // (by a later block_on) and must not complete into a dead frame.
    struct Outcome {
        bool done = false;
        std::exception_ptr failure;
    };
    auto outcome = std::make_shared<Outcome>();
    asio::co_spawn(*io_, std::move(main), [outcome](std::exception_ptr e) {
        outcome->done = true;
        outcome->failure = e;
    });
    drive(outcome->done);
    if (outcome->failure) std::rethrow_exception(outcome->failure);
}

void TestRuntime::advance(VirtualClock::duration d) { block_on(clock_.advance(d)); }

namespace {
// Marks this thread as the one driving `counter`'s runtime for a scope (OutsideWork, lockstep).
class Driving {
  public:
    explicit Driving(std::size_t* counter)
        : slot_(detail::outside_work_counter()), previous_(slot_) {
        slot_ = counter;
    }
    ~Driving() { slot_ = previous_; }
    Driving(const Driving&) = delete;
    Driving& operator=(const Driving&) = delete;

  private:
    std::size_t*& slot_;
    std::size_t* previous_;
};
}  // namespace

void TestRuntime::run_until_idle() {
    Driving driving(&outside_work_);
    const bool never = false;
    poll_ready(never);
}

std::size_t TestRuntime::poll_ready(const bool& done) {
    if (io_->stopped()) io_->restart();
    std::size_t ran = 0;
    // One asio handler at a time, so a task that yields forever cannot starve the done check. A
    // handler may be a drain of the run queue: up to PendingWaits::kDrainBatch resumptions.
    // In lockstep, no worker thread runs while a handler does (runtime/outside_work.hpp).
    for (;;) {
        if (done) break;
        lockstep::settle();
        if (io_->poll_one() == 0) break;
        ++ran;
    }
    return ran;
}

void TestRuntime::drive(const bool& done) {
    // Waits marked OutsideWork on this thread count here while this runtime drives it.
    Driving driving(&outside_work_);
    for (;;) {
        if (poll_ready(done) > 0 || done) {
            if (done) return;
            continue;
        }
        if (clock_.fire_due()) continue;
        // In lockstep every worker has settled: each one waiting is blocked on this thread (its
        // request already ran), so what it waits for may need time to pass.
        if (outside_work_ > 0 && !lockstep::enabled()) {
            // A worker thread will post the completion: wait for it (no virtual time passes).
            if (io_->stopped()) io_->restart();
            io_->run_one_for(std::chrono::milliseconds(100));
            continue;
        }
        if (const auto& target = clock_.advance_target()) {
            auto next = clock_.next_deadline();
            if (next && *next <= *target) {
                clock_.set_now(*next);
                clock_.fire_due();
            } else {
                clock_.finish_advance();
            }
            continue;
        }
        if (auto_advance_) {
            if (auto next = clock_.next_deadline()) {
                clock_.set_now(*next);
                clock_.fire_due();
                continue;
            }
        }
        throw DeadlockError(auto_advance_
                                ? "deadlock: no ready work, no pending advance and no timers"
                                : "deadlock: no ready work and no pending advance "
                                  "(auto-advance is off)");
    }
}

}  // namespace rivetkit::rt

#pragma once
// OutsideWork: marks a coroutine's wait on work done off the io thread (SQLite's worker pool),
// whose completion is posted back to the io_context. A TestRuntime driving this thread waits for
// that completion instead of moving virtual time or reporting a deadlock, so such work takes no
// virtual time. Outside a TestRuntime it does nothing (one thread-local read).
//
//   rt::OutsideWork outside;                 // before the co_await
//   auto out = co_await std::move(op);
//
// Lockstep (deterministic simulation with worker threads): while it is on, exactly one thread
// acts at a time — the thread driving a TestRuntime or one worker — so the order in which workers
// post back to the io_context follows from the seed. Each hand-off of work to a worker (a job, or
// the wake of a worker blocked on the io thread) takes a ticket; workers run in ticket order, each
// until it hands back (its job's last post to the io_context is made, or it blocks on the io
// thread). The driving thread waits for every ticket to be handed back before each handler, and
// right after each hand-off it makes. Off, every call is one atomic load.

#include <cstddef>
#include <cstdint>

namespace rivetkit::rt {

class OutsideWork {
  public:
    OutsideWork() noexcept;
    ~OutsideWork();
    OutsideWork(const OutsideWork&) = delete;
    OutsideWork& operator=(const OutsideWork&) = delete;

  private:
    std::size_t* counter_;
};

namespace lockstep {
// Turns lockstep on or off for the process; only while no worker job runs (a simulation's start
// and end).
void enable(bool on) noexcept;
bool enabled() noexcept;
// Work is about to be handed to a worker (a job posted, or a blocked worker woken): its ticket
// (0 when lockstep is off).
std::uint64_t hand_off() noexcept;
// After a hand-off: on the thread driving a TestRuntime, waits until the worker handed back.
void after_hand_off() noexcept;
// A worker, before it acts on the work of `ticket`: waits for its turn.
void wait_turn(std::uint64_t ticket) noexcept;
// The worker whose turn it is made its last post to the io_context, or is about to block on it.
void hand_back() noexcept;
// Blocks until every ticket was handed back (returns at once when lockstep is off).
void settle() noexcept;

// Lockstep on for a scope.
class Scope {
  public:
    Scope() noexcept { enable(true); }
    ~Scope() { enable(false); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
};
}  // namespace lockstep

namespace detail {
// The counter of the TestRuntime driving this thread (nullptr when none); set by TestRuntime.
std::size_t*& outside_work_counter() noexcept;
}  // namespace detail

}  // namespace rivetkit::rt

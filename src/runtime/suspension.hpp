#pragma once
// Suspension: one suspended wait of one coroutine, the building block of every wait in src/runtime.
//
// A waiting coroutine keeps a Suspension in its frame and subscribes nodes (WaitNode, TimerNode)
// to the sources it waits on; any node firing calls wake(). The wait is an asio async operation:
//  - it completes by queueing its handler on the context's run queue (one posted drain runs the
//    resumptions of many wakes), never inline from the waker;
//  - it honours the per-operation cancellation slot (awaitable_operators, task abort), completing
//    with operation_aborted;
//  - it is readiness-only: it carries no value, so a cancelled wait can never lose one. wait()
//    also throws operation_aborted when cancellation arrived after the wake but before the
//    coroutine resumed (checked as the resumption runs), so a consumer (recv) never takes a
//    value it can no longer deliver.
//  - it is not a coroutine of its own: wait() and wait_on() return asio's initiating awaitable,
//    so a suspended waiter holds no frame beyond asio's one for the operation (wait_on's node
//    and suspension live in that one).
// Pending waits are registered with a service of their execution context; when the context shuts
// down, still-pending waits are abandoned (their handler, and so the waiting coroutine frame, is
// destroyed without running), which breaks the frame -> suspension -> handler -> frame cycle.

#include <optional>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/system/error_code.hpp>

#include "runtime/wait_list.hpp"

namespace rivetkit::rt::detail {

class PendingWaits;

// Holds no executor of its own (an idle actor keeps a few of these suspended for its whole life):
// the waiting coroutine's comes with its handler, and the context's PendingWaits holds the one
// outstanding-work guard for all of its pending waits.
class Suspension {
public:
    Suspension() = default;
    ~Suspension();
    Suspension(const Suspension&) = delete;
    Suspension& operator=(const Suspension&) = delete;

    // Completes the pending wait (queued, run from a posted drain). Wakes before wait() starts
    // are remembered (the wait then completes through the run queue); later ones are ignored.
    void wake() noexcept;

    // Suspends until wake() or cancellation (then throws system_error(operation_aborted)).
    boost::asio::awaitable<void> wait();

private:
    friend class PendingWaits;
    friend struct ListWait;
    using Handler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

    // The initiation's half: `handler` is use_awaitable's, whose coroutine's cancellation
    // state is read again as the resumption runs.
    template <typename AwaitableHandler>
    void begin(AwaitableHandler handler);
    void start(Handler handler, const boost::asio::any_io_executor& executor,
               boost::asio::cancellation_state state);
    void complete(boost::system::error_code ec) noexcept;
    // Shutdown path: destroys the handler without running it. `this` may die with it.
    void abandon() noexcept;

    // optional, and only ever move-constructed: Boost 1.81's any_completion_handler move
    // assignment recurses forever (it forwards an lvalue into its own greedy constructor).
    std::optional<Handler> handler_;
    boost::asio::cancellation_state cancellation_;  // the waiting coroutine's, while pending
    bool woken_ = false;
    PendingWaits* registry_ = nullptr;  // set while pending
    Suspension* prev_ = nullptr;
    Suspension* next_ = nullptr;
};

// A wait-list subscription that wakes one Suspension.
class WaitNode final : public Waiter {
public:
    explicit WaitNode(Suspension& suspension) noexcept : suspension_(suspension) {}
    ~WaitNode() override = default;

private:
    void wake() noexcept override { suspension_.wake(); }
    Suspension& suspension_;
};

// Suspends the calling coroutine until `list` wakes it (or throws operation_aborted).
boost::asio::awaitable<void> wait_on(WaitList& list);

}  // namespace rivetkit::rt::detail

#pragma once
// Biased select over readiness sources (tokio's `select! { biased; ... }`).
//
//   switch (co_await rt::select(lifecycle_rx, events_rx, activity,
//                               rt::deadline(clock, grace_deadline),         // optional<tp>
//                               rt::when(dispatch_enabled, dispatch_rx),
//                               run_handle)) {                                // optional<JoinHandle>
//   case 0: { auto cmd = lifecycle_rx.try_recv(); ... }
//   ...
//   }
//
// Returns the index of the first ready arm in argument order. Arms are checked, not consumed:
// after select returns, the caller takes what is there (try_recv(), join()); with one consumer on
// one thread, readiness cannot vanish in between. The one exception is Notify: its permit is
// taken by select itself, and only when the Notify arm wins.
//
// Arms and when they are ready:
//   Receiver<T>, OneshotReceiver<T>  a value is queued, or no sender is left (try_recv tells which)
//   Notify                           a permit is stored, or notify_waiters() ran since the call
//   CancellationToken                cancelled
//   JoinHandle<T>                    the task finished (an invalid handle is a disabled arm)
//   rt::deadline(clock, tp)          clock.now() >= tp (nullopt tp = disabled)
// Disable an arm with rt::when(false, source), or pass a std::optional holding the source.
// If every arm is disabled, select throws std::logic_error (tokio panics likewise).
//
// When nothing is ready, select subscribes to every enabled arm, suspends (no polling), and on any
// wake re-checks all arms in order. Cancellable like any wait in src/runtime.

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "runtime/cancellation.hpp"
#include "runtime/clock.hpp"
#include "runtime/notify.hpp"
#include "runtime/suspension.hpp"
#include "runtime/timer_node.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

template <typename T>
class Receiver;
template <typename T>
class OneshotReceiver;
template <typename T>
class JoinHandle;

namespace detail {

// An arm over a source with ready() and waiters() (channels, oneshots, join handles).
template <typename Source>
struct ListArm {
    using Node = WaitNode;
    Source* source = nullptr;
    bool enabled = false;

    bool ready() const { return source->ready(); }
    void subscribe(WaitNode& node) { source->waiters().push(node); }
    void on_win() {}
};

struct NotifyArm {
    using Node = WaitNode;
    Notify* notify = nullptr;
    std::uint64_t epoch = 0;
    bool enabled = false;

    bool ready() const { return notify->ready_since(epoch); }
    void subscribe(WaitNode& node) { notify->waiters().push(node); }
    void on_win() { notify->try_acquire(); }
};

struct CancelArm {
    using Node = WaitNode;
    const CancellationToken* token = nullptr;
    bool enabled = false;

    bool ready() const { return token->is_cancelled(); }
    void subscribe(WaitNode& node) { token->waiters().push(node); }
    void on_win() {}
};

}  // namespace detail

struct DeadlineArm {
    using Node = detail::TimerNode;
    Clock* clock = nullptr;
    Clock::time_point at{};
    bool enabled = false;

    bool ready() const { return clock->now() >= at; }
    void subscribe(detail::TimerNode& node) { clock->arm(node, at); }
    void on_win() {}
};

inline DeadlineArm deadline(Clock& clock, Clock::time_point at) { return {&clock, at, true}; }
inline DeadlineArm deadline(Clock& clock, std::optional<Clock::time_point> at) {
    return {&clock, at.value_or(Clock::time_point{}), at.has_value()};
}

namespace detail {

template <typename A>
concept Arm = requires(A a) {
    typename A::Node;
    { a.enabled } -> std::convertible_to<bool>;
    a.ready();
};

template <Arm A>
A make_arm(A arm) {
    return arm;
}
template <typename T>
ListArm<Receiver<T>> make_arm(Receiver<T>& rx) {
    return {&rx, true};
}
template <typename T>
ListArm<OneshotReceiver<T>> make_arm(OneshotReceiver<T>& rx) {
    return {&rx, true};
}
template <typename T>
ListArm<JoinHandle<T>> make_arm(JoinHandle<T>& handle) {
    return {&handle, handle.valid()};
}
inline NotifyArm make_arm(Notify& notify) { return {&notify, notify.epoch(), true}; }
inline CancelArm make_arm(const CancellationToken& token) { return {&token, true}; }
template <typename S>
auto make_arm(std::optional<S>& source) -> decltype(make_arm(*source)) {
    if (!source) return {};
    return make_arm(*source);
}

template <typename A>
Suspension& same_suspension(Suspension& s) noexcept {
    return s;
}

template <typename Arms, std::size_t... I>
std::size_t first_ready(Arms& arms, std::index_sequence<I...>) {
    std::size_t winner = sizeof...(I);
    (void)((std::get<I>(arms).enabled && std::get<I>(arms).ready() ? (winner = I, true) : false) ||
           ...);
    return winner;
}

template <typename Arms, std::size_t... I>
bool any_enabled(const Arms& arms, std::index_sequence<I...>) {
    return (std::get<I>(arms).enabled || ...);
}

template <typename Arms, std::size_t... I>
void on_win(Arms& arms, std::size_t winner, std::index_sequence<I...>) {
    ((I == winner ? std::get<I>(arms).on_win() : void()), ...);
}

template <typename Arms, typename Nodes, std::size_t... I>
void subscribe_enabled(Arms& arms, Nodes& nodes, std::index_sequence<I...>) {
    ((std::get<I>(arms).enabled ? std::get<I>(arms).subscribe(std::get<I>(nodes)) : void()), ...);
}

template <typename... Arms>
boost::asio::awaitable<std::size_t> select_arms(std::tuple<Arms...> arms) {
    constexpr auto indices = std::index_sequence_for<Arms...>{};
    if (!any_enabled(arms, indices)) {
        throw std::logic_error("rt::select: every arm is disabled");
    }
    for (;;) {
        std::size_t winner = first_ready(arms, indices);
        if (winner < sizeof...(Arms)) {
            on_win(arms, winner, indices);
            co_return winner;
        }
        Suspension suspension;
        std::tuple<typename Arms::Node...> nodes(same_suspension<Arms>(suspension)...);
        subscribe_enabled(arms, nodes, indices);
        co_await suspension.wait();
    }
}

}  // namespace detail

// `source` as an arm that is enabled only when `enabled` is true.
template <typename S>
auto when(bool enabled, S&& source) {
    auto arm = detail::make_arm(std::forward<S>(source));
    arm.enabled = arm.enabled && enabled;
    return arm;
}

template <typename... Sources>
boost::asio::awaitable<std::size_t> select(Sources&&... sources) {
    return detail::select_arms(std::make_tuple(detail::make_arm(std::forward<Sources>(sources))...));
}

}  // namespace rivetkit::rt

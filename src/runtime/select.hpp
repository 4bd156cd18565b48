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

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
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
    void subscribe(Waiter& node) { source->waiters().push(node); }
    void on_win() {}
};

struct NotifyArm {
    using Node = WaitNode;
    Notify* notify = nullptr;
    std::uint64_t epoch = 0;
    bool enabled = false;

    bool ready() const { return notify->ready_since(epoch); }
    void subscribe(Waiter& node) { notify->waiters().push(node); }
    void on_win() { notify->try_acquire(); }
};

struct CancelArm {
    using Node = WaitNode;
    const CancellationToken* token = nullptr;
    bool enabled = false;

    bool ready() const { return token->is_cancelled(); }
    void subscribe(Waiter& node) { token->waiters().push(node); }
    void on_win() {}
};

}  // namespace detail

struct DeadlineArm {
    using Node = detail::TimerNode;
    Clock* clock = nullptr;
    Clock::time_point at{};
    bool enabled = false;

    bool ready() const { return clock->now() >= at; }
    void subscribe(TimerEntry& node) { clock->arm(node, at); }
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
void require_enabled(const std::tuple<Arms...>& arms) {
    if (!any_enabled(arms, std::index_sequence_for<Arms...>{}))
        throw std::logic_error("rt::select: every arm is disabled");
}

template <typename... Arms>
std::size_t take_ready(std::tuple<Arms...>& arms) {
    constexpr auto indices = std::index_sequence_for<Arms...>{};
    const std::size_t winner = first_ready(arms, indices);
    if (winner < sizeof...(Arms))
        on_win(arms, winner, indices);
    return winner;
}

// Waits until an arm is ready and returns the first ready one; `take` also takes it (a Notify
// arm's permit), as select does, where wait_ready leaves it.
template <bool take, typename... Arms>
boost::asio::awaitable<std::size_t> select_arms(std::tuple<Arms...> arms) {
    constexpr auto indices = std::index_sequence_for<Arms...>{};
    require_enabled(arms);
    for (;;) {
        std::size_t winner = first_ready(arms, indices);
        if (winner < sizeof...(Arms)) {
            if constexpr (take)
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
    return detail::select_arms<true>(
        std::make_tuple(detail::make_arm(std::forward<Sources>(sources))...));
}

// select without waiting: the index of the first ready arm (a winning Notify arm's permit is
// taken, as select takes it), or sizeof...(sources) when none is ready.
template <typename... Sources>
std::size_t ready_arm(Sources&&... sources) {
    auto arms = std::make_tuple(detail::make_arm(std::forward<Sources>(sources))...);
    detail::require_enabled(arms);
    return detail::take_ready(arms);
}

// select that takes nothing (a Notify's permit stays): the first ready arm, for a loop that asks
// ready_arm again after every wake.
template <typename... Sources>
boost::asio::awaitable<std::size_t> wait_ready(Sources&&... sources) {
    return detail::select_arms<false>(
        std::make_tuple(detail::make_arm(std::forward<Sources>(sources))...));
}

// The same wait without a coroutine, for a waiter that is idle most of its life (an awake actor
// with nothing to do) and should not keep a suspended coroutine's frames meanwhile. park()
// subscribes one node per enabled arm (Lists for wait-list arms, Timers for deadlines); the first
// wake after it calls on_wake(), inline from the waker, so on_wake() may only queue work (a
// post), never run the waiter's. unpark() takes every node back; call it before serving, then
// ready_arm, then park() again when nothing is ready.
template <std::size_t Lists, std::size_t Timers>
class Parking {
public:
    Parking() noexcept {
        for (auto& node : lists_) node.owner = this;
        for (auto& node : timers_) node.owner = this;
    }
    Parking(const Parking&) = delete;
    Parking& operator=(const Parking&) = delete;

    template <typename... Sources>
    void park(Sources&&... sources) {
        auto arms = std::make_tuple(detail::make_arm(std::forward<Sources>(sources))...);
        constexpr std::size_t deadlines =
            (std::size_t{0} + ... +
             std::is_same_v<decltype(detail::make_arm(std::declval<Sources>())), DeadlineArm>);
        static_assert(deadlines <= Timers, "more deadline arms than timer nodes");
        static_assert(sizeof...(Sources) - deadlines <= Lists, "more wait-list arms than nodes");
        detail::require_enabled(arms);
        unpark();
        std::size_t list = 0;
        std::size_t timer = 0;
        std::apply(
            [&](auto&... arm) {
                (subscribe(arm, list, timer), ...);
            },
            arms);
        parked_ = true;
    }

    void unpark() noexcept {
        parked_ = false;
        for (auto& node : lists_) node.unlink();
        for (auto& node : timers_) node.disarm();
    }

    bool parked() const noexcept { return parked_; }

protected:
    ~Parking() = default;
    virtual void on_wake() noexcept = 0;

private:
    struct ListNode final : detail::Waiter {
        Parking* owner = nullptr;
        void wake() noexcept override { owner->woken(); }
    };
    struct TimerNode final : TimerEntry {
        Parking* owner = nullptr;
        void fire() noexcept override { owner->woken(); }
    };

    template <typename A>
    void subscribe(A& arm, std::size_t& list, std::size_t& timer) {
        if (!arm.enabled)
            return;
        if constexpr (std::is_same_v<A, DeadlineArm>)
            arm.subscribe(timers_[timer++]);
        else
            arm.subscribe(lists_[list++]);
    }

    void woken() noexcept {
        if (!parked_)
            return;
        parked_ = false;
        on_wake();
    }

    std::array<ListNode, Lists> lists_;
    std::array<TimerNode, Timers> timers_;
    bool parked_ = false;
};

}  // namespace rivetkit::rt

#pragma once
// timeout (tokio::time::timeout): `op`'s result, or std::nullopt when `d` passes first (then `op`
// is cancelled). For awaitable<void>, true = completed in time. If `op` completes in the same
// instant the deadline passes, the value wins when `op` did not have to suspend.
//
// recv_timeout: the same for a oneshot's answer, without racing two coroutines — one select over
// the receiver and a deadline. timeout() spawns both operands and cancels the loser, whose wait
// then unwinds by exception; on a request path (every action, KV and SQLite request) that cost
// more than the request's own work (bench/README.md).

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "runtime/clock.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/select.hpp"

namespace rivetkit::rt {

template <typename T>
boost::asio::awaitable<std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>> timeout(
    Clock& clock, Clock::duration d, boost::asio::awaitable<T> op) {
    using boost::asio::experimental::awaitable_operators::operator||;
    auto expiry = clock.sleep_for(d);
    auto raced = co_await (std::move(op) || std::move(expiry));
    if constexpr (std::is_void_v<T>) {
        co_return raced.index() == 0;
    } else {
        if (raced.index() == 1) co_return std::nullopt;
        co_return std::optional<T>(std::move(std::get<0>(raced)));
    }
}

// The answer (nullopt inside: the sender was dropped unsent), or nullopt when `d` passed first.
// An answer already there wins over a deadline that has passed too.
template <typename T>
boost::asio::awaitable<std::optional<std::optional<T>>> recv_timeout(Clock& clock,
                                                                     Clock::duration d,
                                                                     OneshotReceiver<T>& rx) {
    const Clock::time_point at = clock.now() + d;
    const std::size_t winner = co_await select(rx, deadline(clock, at));
    if (winner == 1)
        co_return std::nullopt;
    auto got = rx.try_recv();
    if (got.has_value())
        co_return std::optional<T>(std::move(*got));
    co_return std::optional<T>();
}

}  // namespace rivetkit::rt

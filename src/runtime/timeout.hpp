#pragma once
// timeout (tokio::time::timeout): `op`'s result, or std::nullopt when `d` passes first (then `op`
// is cancelled). For awaitable<void>, true = completed in time. If `op` completes in the same
// instant the deadline passes, the value wins when `op` did not have to suspend.

#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "runtime/clock.hpp"

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

}  // namespace rivetkit::rt

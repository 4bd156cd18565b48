#pragma once
// Signature introspection for user handlers, typed argument decoding from the CBOR args array,
// and result encoding. Internal to the typed API.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "base/error.hpp"
#include "base/result.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit::detail {

// MARK: signatures

template <typename T>
struct Signature : Signature<decltype(&T::operator())> {};
template <typename R, typename... A>
struct Signature<R (*)(A...)> {
    using result = R;
    using args = std::tuple<A...>;
};
template <typename R, typename... A>
struct Signature<R (&)(A...)> : Signature<R (*)(A...)> {};
template <typename R, typename... A>
struct Signature<R(A...)> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...)> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) noexcept> : Signature<R (*)(A...)> {};
template <typename C, typename R, typename... A>
struct Signature<R (C::*)(A...) const noexcept> : Signature<R (*)(A...)> {};

template <typename F>
using SignatureOf = Signature<std::remove_cvref_t<F>>;

template <typename T>
struct Awaited {
    using type = T;
    static constexpr bool is_async = false;
};
template <typename T, typename E>
struct Awaited<boost::asio::awaitable<T, E>> {
    using type = T;
    static constexpr bool is_async = true;
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<Result<T>> : std::true_type {
    using inner = T;
};

// The argument types after the context, decayed: what gets decoded from the args array.
template <typename Tuple>
struct DropFirst;
template <typename First, typename... Rest>
struct DropFirst<std::tuple<First, Rest...>> {
    using type = std::tuple<std::remove_cvref_t<Rest>...>;
};

// MARK: argument decoding

// nlohmann's "[json.exception.type_error.302] type must be ..." without the bracketed id.
std::string describe_json_error(const char* what);

// actor/validation_error "Invalid action `name` arguments", the detail in metadata issues[].
Error invalid_args(std::string_view action, std::string_view detail);
Error invalid_argument(std::string_view action, std::size_t index, std::string_view detail);
Error invalid_arity(std::string_view action, std::size_t expected_min, std::size_t expected_max,
                    std::size_t got);

// nlohmann converts between numbers (and from booleans) silently; arguments must match.
template <typename T>
std::optional<std::string> scalar_mismatch(const Json& v) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean())
            return std::string("expected a boolean, got ") + v.type_name();
    } else if constexpr (std::is_integral_v<T>) {
        if (!v.is_number_integer())
            return std::string("expected an integer, got ") + v.type_name();
        if (v.is_number_unsigned()) {
            if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
                return std::string("integer out of range");
        } else {
            const auto n = v.get<std::int64_t>();
            if constexpr (std::is_signed_v<T>) {
                if (n < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
                    n > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
                    return std::string("integer out of range");
            } else if (n < 0 || static_cast<std::uint64_t>(n) > std::numeric_limits<T>::max()) {
                return std::string("integer out of range");
            }
        }
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number())
            return std::string("expected a number, got ") + v.type_name();
    }
    return std::nullopt;
}

template <typename T>
Result<T> decode_value(const Json& v) {
    if constexpr (IsOptional<T>::value) {
        if (v.is_null())
            return T{};
        auto inner = decode_value<typename T::value_type>(v);
        if (!inner.ok())
            return std::move(inner).error();
        return T(std::move(inner).value());
    } else if constexpr (std::is_same_v<T, Json>) {
        return v;
    } else {
        if (auto mismatch = scalar_mismatch<T>(v))
            return Error("", "", *mismatch);
        try {
            return v.get<T>();
        } catch (const Json::exception& e) {
            return Error("", "", describe_json_error(e.what()));
        }
    }
}

template <typename Tuple>
struct Arity;
template <typename... A>
struct Arity<std::tuple<A...>> {
    static constexpr std::size_t max = sizeof...(A);
    // Trailing std::optional parameters may be left out.
    static constexpr std::size_t min = [] {
        constexpr bool optional[] = {IsOptional<A>::value..., false};
        std::size_t n = sizeof...(A);
        while (n > 0 && optional[n - 1])
            --n;
        return n;
    }();
};

// Decodes `args` (a JSON array) into the parameter tuple; actor/validation_error naming the
// zero-based position of the first bad argument.
template <typename Tuple>
Result<Tuple> decode_args(std::string_view action, const Json& args) {
    constexpr std::size_t max = Arity<Tuple>::max;
    constexpr std::size_t min = Arity<Tuple>::min;
    if (!args.is_array())
        return invalid_args(action, "args must be an array");
    if (args.size() < min || args.size() > max)
        return invalid_arity(action, min, max, args.size());
    return [&]<std::size_t... I>(std::index_sequence<I...>)->Result<Tuple> {
        std::optional<Error> failure;
        std::tuple<std::optional<std::tuple_element_t<I, Tuple>>...> parts;
        (
            [&] {
                if (failure)
                    return;
                using T = std::tuple_element_t<I, Tuple>;
                static const Json null_value;
                const Json& item = I < args.size() ? args[I] : null_value;
                auto decoded = decode_value<T>(item);
                if (!decoded.ok())
                    failure = invalid_argument(action, I, decoded.error().message());
                else
                    std::get<I>(parts).emplace(std::move(decoded).value());
            }(),
            ...);
        if (failure)
            return std::move(*failure);
        return Tuple(std::move(*std::get<I>(parts))...);
    }
    (std::make_index_sequence<max>{});
}

// MARK: results

// A handler's result as a JSON value; an Error result is thrown as ErrorException.
template <typename R>
Json result_to_json(R&& r) {
    using T = std::remove_cvref_t<R>;
    if constexpr (IsResult<T>::value) {
        if (!r.ok())
            throw ErrorException(r.error());
        if constexpr (std::is_void_v<typename IsResult<T>::inner>)
            return Json(nullptr);
        else
            return Json(std::move(r).value());
    } else if constexpr (std::is_same_v<T, Error>) {
        throw ErrorException(std::forward<R>(r));
    } else {
        return Json(std::forward<R>(r));
    }
}

}  // namespace rivetkit::detail

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

// MARK: plain arguments

// The parameter types the fast path reads straight from CBOR: booleans, integers wider than a
// byte, double, std::string, and std::optional of those.
template <typename T>
struct PlainArg
    : std::bool_constant<std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                         std::is_same_v<T, std::string> || std::is_same_v<T, short> ||
                         std::is_same_v<T, unsigned short> || std::is_same_v<T, int> ||
                         std::is_same_v<T, unsigned> || std::is_same_v<T, long> ||
                         std::is_same_v<T, unsigned long> || std::is_same_v<T, long long> ||
                         std::is_same_v<T, unsigned long long>> {};
template <typename T>
struct PlainArg<std::optional<T>> : PlainArg<T> {};

template <typename Tuple>
struct PlainParams;
template <typename... A>
struct PlainParams<std::tuple<A...>> : std::bool_constant<(PlainArg<A>::value && ...)> {};

template <typename T>
bool read_plain(PlainCbor& in, T& out) {
    if constexpr (IsOptional<T>::value) {
        if (in.null()) {
            out.reset();
            return true;
        }
        typename T::value_type value{};
        if (!read_plain(in, value))
            return false;
        out = std::move(value);
        return true;
    } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                         std::is_same_v<T, std::string>) {
        return in.read(out);
    } else if constexpr (std::is_signed_v<T>) {
        std::int64_t n = 0;
        if (!in.read(n) || n < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            n > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
            return false;
        out = static_cast<T>(n);
        return true;
    } else {
        std::uint64_t n = 0;
        if (!in.read(n) || n > static_cast<std::uint64_t>(std::numeric_limits<T>::max()))
            return false;
        out = static_cast<T>(n);
        return true;
    }
}

template <typename T>
bool starts_with_dollar(const T& v) {
    if constexpr (std::is_same_v<T, std::string>)
        return !v.empty() && v.front() == '$';
    else if constexpr (std::is_same_v<T, std::optional<std::string>>)
        return v && !v->empty() && v->front() == '$';
    else
        return false;
}

// Reads `cbor`, an action's args array, into `out` when it is the plain form of the parameters
// (PlainCbor) and their number is right. False otherwise, with `out` partly written: the caller
// then decodes through from_cbor and decode_args, which give the same values for every input
// this accepts and report whatever it does not.
template <typename Tuple>
bool decode_plain_args(BytesView cbor, Tuple& out) {
    PlainCbor in(cbor);
    std::size_t n = 0;  // absent args: none
    if (!cbor.empty() && !in.array(n))
        return false;
    if (n < Arity<Tuple>::min || n > Arity<Tuple>::max)
        return false;
    const bool read = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return ((I >= n || read_plain(in, std::get<I>(out))) && ...);
    }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
    if (!read || !in.at_end())
        return false;
    // A two-item array led by a "$"-string is a compat-form value to from_cbor.
    if constexpr (std::tuple_size_v<Tuple> >= 2) {
        if (n == 2 && starts_with_dollar(std::get<0>(out)))
            return false;
    }
    return true;
}

// An action's CBOR args array as JSON, for decode_args (absent args: none);
// actor/invalid_request when it is not CBOR.
Result<Json> action_args(BytesView cbor);

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

// The results written straight to CBOR (the bytes to_cbor writes for their JSON value): none,
// scalars as cbor_args takes them, and a Result of those.
template <typename R>
struct PlainResult : std::bool_constant<std::is_void_v<R> || kCborScalar<R>> {};
template <typename T>
struct PlainResult<Result<T>> : PlainResult<T> {};

// Appends a PlainResult's CBOR; an Error result is thrown as ErrorException.
template <typename R>
void write_plain_result(Bytes& out, R&& r) {
    using T = std::remove_cvref_t<R>;
    if constexpr (IsResult<T>::value) {
        if (!r.ok())
            throw ErrorException(r.error());
        if constexpr (std::is_void_v<typename IsResult<T>::inner>)
            out.push_back(0xf6);
        else
            cbor_arg(out, r.value());
    } else {
        cbor_arg(out, r);
    }
}

}  // namespace rivetkit::detail

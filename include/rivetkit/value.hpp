#pragma once
// Values as the typed API sees them: nlohmann::json in C++, CBOR on the wire and in storage
// (action args and results, event args, state, connection params), exactly as upstream rivetkit.

#include <nlohmann/json.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/bytes.hpp"
#include "base/result.hpp"

namespace rivetkit {

using Json = nlohmann::json;

// CBOR of a value, as a JavaScript CBOR encoder (the official client's, cbor-x) writes the same
// value: integers within -2^32 .. 2^32 - 1 as integers, integers beyond that up to ±(2^53 - 1)
// as float64 (so a TypeScript client reads a millisecond timestamp as a number, not a BigInt),
// larger integers as 64-bit integers (a BigInt there). Maps keep their keys.
Bytes to_cbor(const Json& value);

// Decodes CBOR sent by a client or read from storage; empty input is null. Accepts everything
// the official JS encoders emit, including the one-byte tags nlohmann 3.11 refuses. Values that
// have no plain JSON form (byte strings, bigints, and literal two-element arrays
// whose first item is a "$"-string) come out in the client protocol's JSON compat form
// (["$Uint8Array", base64], ["$BigInt", "n"], ...), the same value a JSON client would send;
// undefined reads as null. A float without a fraction within ±(2^53 - 1) reads as the integer it
// is (JavaScript has one number type; its encoders write integers beyond 32 bits as floats).
Result<Json> from_cbor(BytesView cbor);

namespace detail {
// cbor_args of numbers, booleans and strings is written directly, with the bytes to_cbor writes
// for the same array: no Json array in between (a broadcast's arguments, most often).
void cbor_array_head(Bytes& out, std::size_t n);
void cbor_scalar(Bytes& out, std::int64_t v);
void cbor_scalar(Bytes& out, std::uint64_t v);
void cbor_scalar(Bytes& out, double v);
void cbor_scalar(Bytes& out, bool v);
void cbor_scalar(Bytes& out, std::string_view v);

// An action's arguments in their plain CBOR form, read straight into C++ scalars (the typed
// runtime's fast path, detail::decode_plain_args): only what from_cbor would return as read and
// decode_value would accept. Any other form — a tag, undefined, a float that is a JavaScript
// integer (from_cbor's compat form), an integer beyond 64 bits, an indefinite length — makes a
// read return false, and the caller leaves the arguments to from_cbor and decode_args, which
// decode them or report the mismatch.
class PlainCbor {
  public:
    explicit PlainCbor(BytesView in) noexcept : in_(in) {}

    // A definite-length array head.
    bool array(std::size_t& n) noexcept;
    // Consumes a null, if that is what comes next.
    bool null() noexcept;
    bool read(bool& v) noexcept;
    bool read(std::int64_t& v) noexcept;
    bool read(std::uint64_t& v) noexcept;
    // An integer, or a float that is not a JavaScript integer.
    bool read(double& v) noexcept;
    // A definite-length text string, its bytes as they are (as from_cbor reads them).
    bool read(std::string& v);
    bool at_end() const noexcept { return pos_ == in_.size(); }

  private:
    bool head(std::uint8_t& major, std::uint64_t& argument) noexcept;

    BytesView in_;
    std::size_t pos_ = 0;
};

template <typename T>
inline constexpr bool kCborScalar =
    std::is_same_v<T, bool> || std::is_same_v<T, std::nullptr_t> || std::is_floating_point_v<T> ||
    (std::is_integral_v<T> && sizeof(T) > 1) ||  // one-byte types may be characters
    std::is_convertible_v<const T&, std::string_view>;

template <typename T>
void cbor_arg(Bytes& out, const T& v) {
    if constexpr (std::is_same_v<T, bool>)
        cbor_scalar(out, v);
    else if constexpr (std::is_same_v<T, std::nullptr_t>)
        out.push_back(0xf6);
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
        cbor_scalar(out, static_cast<std::int64_t>(v));
    else if constexpr (std::is_integral_v<T>)
        cbor_scalar(out, static_cast<std::uint64_t>(v));
    else if constexpr (std::is_floating_point_v<T>)
        cbor_scalar(out, static_cast<double>(v));
    else
        cbor_scalar(out, std::string_view(v));
}
}  // namespace detail

// The CBOR array a client spreads into its listener or action: cbor_args(1, "a") → [1, "a"].
template <typename... Args>
Bytes cbor_args(const Args&... args) {
    if constexpr ((detail::kCborScalar<Args> && ...)) {
        Bytes out;
        out.reserve(16);
        detail::cbor_array_head(out, sizeof...(Args));
        (detail::cbor_arg(out, args), ...);
        return out;
    } else {
        Json array = Json::array();
        (array.push_back(Json(args)), ...);
        return to_cbor(array);
    }
}

// A call's JSON result as T (a client's call<T>): errors pass through; a value that does not
// convert is client/invalid_output.
template <typename T>
Result<T> result_as(Result<Json> r) {
    if (!r.ok())
        return std::move(r).error();
    try {
        if constexpr (std::is_same_v<T, Json>)
            return std::move(r).value();
        else
            return r->template get<T>();
    } catch (const std::exception& e) {
        return Error("client", "invalid_output", e.what());
    }
}

}  // namespace rivetkit

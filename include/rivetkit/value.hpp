#pragma once
// Values as the typed API sees them: nlohmann::json in C++, CBOR on the wire and in storage
// (action args and results, event args, state, connection params), exactly as upstream rivetkit.

#include <nlohmann/json.hpp>
#include <exception>
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

// The CBOR array a client spreads into its listener or action: cbor_args(1, "a") → [1, "a"].
template <typename... Args>
Bytes cbor_args(const Args&... args) {
    Json array = Json::array();
    (array.push_back(Json(args)), ...);
    return to_cbor(array);
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

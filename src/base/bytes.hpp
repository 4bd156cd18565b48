#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rivetkit {

using Bytes = std::vector<std::uint8_t>;
using BytesView = std::span<const std::uint8_t>;

// Appends the characters as bytes, through byte pointers: one copy (GCC 12 copies a range of
// chars into a byte vector, or bytes into a string, one element at a time).
inline void append(Bytes& out, std::string_view s) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
    out.insert(out.end(), p, p + s.size());
}
// The bytes seen as characters, without a copy; `std::string(as_chars(b))` is one copy (from the
// bytes' own iterators it is a loop per byte).
inline std::string_view as_chars(BytesView b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}
inline Bytes to_bytes(std::string_view s) {
    Bytes out;
    append(out, s);
    return out;
}
inline Bytes concat(BytesView a, BytesView b) {
    Bytes out;
    out.reserve(a.size() + b.size());
    out.insert(out.end(), a.begin(), a.end());
    out.insert(out.end(), b.begin(), b.end());
    return out;
}
inline bool starts_with(BytesView s, BytesView prefix) {
    return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin());
}

}  // namespace rivetkit

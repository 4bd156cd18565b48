#include "base/uuid.hpp"

#include <cstdint>

#include "base/random.hpp"

namespace rivetkit {

std::string random_uuid_v4() {
    thread_local std::mt19937_64 rng = random_engine();
    std::uint64_t hi = rng();
    std::uint64_t lo = rng();
    hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
    lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // RFC 4122 variant
    // 8-4-4-4-12 lowercase hex digits, written directly (one per connection and request).
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(36, '-');
    std::size_t at = 0;
    const auto put = [&](std::uint64_t bits, int digits) {
        for (int d = digits - 1; d >= 0; --d)
            out[at++] = kHex[(bits >> (4 * d)) & 0xF];
    };
    put(hi >> 32, 8);
    ++at;
    put((hi >> 16) & 0xFFFF, 4);
    ++at;
    put(hi & 0xFFFF, 4);
    ++at;
    put(lo >> 48, 4);
    ++at;
    put(lo & 0xFFFFFFFFFFFFull, 12);
    return out;
}

}  // namespace rivetkit

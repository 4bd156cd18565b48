#include "bare/utf8.hpp"

#include <cstddef>
#include <cstring>

namespace rivetkit::bare {

bool is_valid_utf8(std::span<const std::uint8_t> s) noexcept {
    std::size_t i = 0;
    const std::size_t n = s.size();
    constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
    while (i < n) {
        // ASCII 32 bytes at a time, then eight (header names and values, keys, ids are mostly
        // ASCII): one test per block instead of a branch per byte.
        if (n - i >= 32) {
            std::uint64_t words[4];
            std::memcpy(words, s.data() + i, sizeof words);
            if (((words[0] | words[1] | words[2] | words[3]) & kHigh) == 0) {
                i += 32;
                continue;
            }
        }
        if (n - i >= 8) {
            std::uint64_t word = 0;
            std::memcpy(&word, s.data() + i, sizeof word);
            if ((word & kHigh) == 0) {
                i += 8;
                continue;
            }
        }
        const std::uint8_t b = s[i];
        if (b < 0x80) {
            ++i;
            continue;
        }
        std::size_t len = 0;
        // Bounds of the second byte carry the overlong/surrogate/range rules (RFC 3629 table).
        std::uint8_t lo = 0x80, hi = 0xbf;
        if (b >= 0xc2 && b <= 0xdf) {
            len = 2;
        } else if (b >= 0xe0 && b <= 0xef) {
            len = 3;
            if (b == 0xe0)
                lo = 0xa0;
            if (b == 0xed)
                hi = 0x9f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            len = 4;
            if (b == 0xf0)
                lo = 0x90;
            if (b == 0xf4)
                hi = 0x8f;
        } else {
            return false;
        }
        if (n - i < len)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (std::size_t k = 2; k < len; ++k) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
        }
        i += len;
    }
    return true;
}

}  // namespace rivetkit::bare

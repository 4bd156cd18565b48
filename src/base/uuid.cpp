#include "base/uuid.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "base/random.hpp"

namespace rivetkit {

std::string random_uuid_v4() {
    thread_local std::mt19937_64 rng = random_engine();
    std::uint64_t hi = rng();
    std::uint64_t lo = rng();
    hi = (hi & 0xFFFFFFFFFFFF0FFFull) | 0x0000000000004000ull;  // version 4
    lo = (lo & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // RFC 4122 variant
    return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF,
                       hi & 0xFFFF, lo >> 48, lo & 0xFFFFFFFFFFFFull);
}

}  // namespace rivetkit

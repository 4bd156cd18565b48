#pragma once
// The property every fuzz target checks: decoding never crashes, and whatever decodes re-encodes to
// exactly the input. The decoder accepts only canonical encodings (minimal varints, 0/1 bools and
// optional tags, no duplicate map keys), so a value has one wire form and any difference is a bug.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "bare/codec.hpp"

namespace rivetkit::fuzz {

template <typename T>
void check_round_trip(std::span<const std::uint8_t> input, std::size_t base_offset = 0) {
    T value{};
    if (auto err = bare::decode_into(input, value, base_offset)) {
        if (err->offset > base_offset + input.size()) {
            std::fprintf(stderr, "error offset %zu past the input\n", err->offset);
            std::abort();
        }
        return;
    }
    const auto encoded = bare::encode_to_bytes(value);
    if (!std::equal(encoded.begin(), encoded.end(), input.begin(), input.end())) {
        std::fprintf(stderr, "re-encoding differs from the accepted input\n");
        std::abort();
    }
}

}  // namespace rivetkit::fuzz

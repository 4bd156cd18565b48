#pragma once
// append_client_message: one binary WebSocket message as client frames (RFC 6455 section 5),
// written straight into a caller's buffer. The envoy's transport frames its own messages this way
// instead of through a Beast write operation per message (tests/envoy/ws_client_frames_test.cpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

#include "base/bytes.hpp"

namespace rivetkit::envoy {

// The masking keys of one connection. A client must mask what it sends; the keys protect
// intermediaries from payloads a browser script chose (section 10.3), which this client does not
// carry, so a fast generator seeded once serves.
class MaskKeys {
  public:
    MaskKeys() : state_((static_cast<std::uint64_t>(std::random_device{}()) << 32) |
                        std::random_device{}() | 1u) {}
    explicit MaskKeys(std::uint64_t seed) : state_(seed | 1u) {}

    std::uint32_t next() noexcept {  // xorshift64*
        state_ ^= state_ >> 12;
        state_ ^= state_ << 25;
        state_ ^= state_ >> 27;
        return static_cast<std::uint32_t>((state_ * 0x2545F4914F6CDD1DULL) >> 32);
    }

  private:
    std::uint64_t state_;
};

// The largest frame header: 2 bytes, an 8-byte length, a 4-byte masking key.
inline constexpr std::size_t kMaxClientFrameHeader = 14;

// Writes the header of one masked client frame to `out` (kMaxClientFrameHeader bytes of room);
// returns its length.
inline std::size_t client_frame_header(std::uint8_t* out, bool fin, std::uint8_t opcode,
                                       std::size_t payload, const std::uint8_t (&key)[4]) {
    std::size_t h = 0;
    out[h++] = static_cast<std::uint8_t>((fin ? 0x80u : 0u) | opcode);
    if (payload < 126) {
        out[h++] = static_cast<std::uint8_t>(0x80u | payload);
    } else if (payload <= 0xffff) {
        out[h++] = 0x80u | 126u;
        out[h++] = static_cast<std::uint8_t>(payload >> 8);
        out[h++] = static_cast<std::uint8_t>(payload);
    } else {
        out[h++] = 0x80u | 127u;
        for (int shift = 56; shift >= 0; shift -= 8)
            out[h++] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(payload) >> shift);
    }
    std::memcpy(out + h, key, 4);
    return h + 4;
}

// Copies `n` bytes from `in` to `out`, masked with `key` (byte i with key[i % 4]).
inline void mask_copy(std::uint8_t* out, const std::uint8_t* in, std::size_t n,
                      const std::uint8_t (&key)[4]) {
    std::uint8_t wide_key[8];
    std::memcpy(wide_key, key, 4);
    std::memcpy(wide_key + 4, key, 4);
    std::uint64_t wide;
    std::memcpy(&wide, wide_key, 8);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t chunk;
        std::memcpy(&chunk, in + i, 8);
        chunk ^= wide;
        std::memcpy(out + i, &chunk, 8);
    }
    for (; i < n; ++i)
        out[i] = in[i] ^ key[i % 4];
}

// Appends `message` as one binary frame, or, past `max_frame` bytes, as a binary frame and
// continuation frames of up to `max_frame` bytes each. `append(n)` returns room for n more bytes
// (a char*), or null to give up: then false.
template <class Append>
bool append_client_message(BytesView message, std::size_t max_frame, MaskKeys& keys,
                           Append&& append) {
    std::size_t offset = 0;
    bool first = true;
    do {
        const std::size_t n = std::min(message.size() - offset, max_frame);
        const bool fin = offset + n == message.size();
        const std::uint32_t word = keys.next();
        std::uint8_t key[4];
        std::memcpy(key, &word, 4);
        std::uint8_t header[kMaxClientFrameHeader];
        const std::size_t h = client_frame_header(header, fin, first ? 0x2 : 0x0, n, key);
        char* room = append(h + n);
        if (room == nullptr)
            return false;
        auto* out = reinterpret_cast<std::uint8_t*>(room);
        std::memcpy(out, header, h);
        mask_copy(out + h, message.data() + offset, n, key);
        offset += n;
        first = false;
    } while (offset < message.size());
    return true;
}

}  // namespace rivetkit::envoy

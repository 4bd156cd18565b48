#pragma once
// The client side of WebSocket framing (RFC 6455 section 5), as the envoy's transport speaks it
// to the engine without a WebSocket library's operation per message
// (tests/envoy/ws_client_frames_test.cpp): append_client_message writes one binary message as
// masked client frames straight into a caller's buffer, append_client_control a control frame,
// and parse_server_frame_header reads the header of a frame from the server.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string_view>

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

// Appends one control frame (close, ping or pong: opcode 0x8, 0x9, 0xA) with `payload` (at most
// 125 bytes; longer is cut there). False when `append` gives up.
template <class Append>
bool append_client_control(std::uint8_t opcode, BytesView payload, MaskKeys& keys,
                           Append&& append) {
    const std::size_t n = std::min<std::size_t>(payload.size(), 125);
    const std::uint32_t word = keys.next();
    std::uint8_t key[4];
    std::memcpy(key, &word, 4);
    std::uint8_t header[kMaxClientFrameHeader];
    const std::size_t h = client_frame_header(header, true, opcode, n, key);
    char* room = append(h + n);
    if (room == nullptr)
        return false;
    auto* out = reinterpret_cast<std::uint8_t*>(room);
    std::memcpy(out, header, h);
    mask_copy(out + h, payload.data(), n, key);
    return true;
}

// Whether a close frame may carry `code` (RFC 6455 section 7.4): the defined codes that are not
// reserved for local use (1005, 1006, 1015) and the registered and private ranges 3000-4999.
inline bool valid_close_code(std::uint16_t code) noexcept {
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1013) ||
           (code >= 3000 && code <= 4999);
}

// A close frame's payload: the code (big-endian) and the reason (UTF-8, cut to fit 125 bytes at
// a character boundary); empty for code 0, which stands for "no code" (1005, never sent).
inline Bytes close_payload(std::uint16_t code, std::string_view reason) {
    if (code == 0)
        return {};
    std::size_t n = std::min<std::size_t>(reason.size(), 123);
    while (n > 0 && n < reason.size() && (static_cast<std::uint8_t>(reason[n]) & 0xC0) == 0x80)
        --n;  // not inside a multi-byte character
    Bytes out(2 + n);
    out[0] = static_cast<std::uint8_t>(code >> 8);
    out[1] = static_cast<std::uint8_t>(code);
    if (n > 0)
        std::memcpy(out.data() + 2, reason.data(), n);
    return out;
}

struct ServerFrameHeader {
    bool fin = false;
    std::uint8_t opcode = 0;
    std::size_t header_size = 0;
    std::uint64_t payload_size = 0;
};

enum class FrameHeaderParse : std::uint8_t { need_more, ok, bad };

// The header of the frame at the start of `in`, from a server: never masked. `bad` (with `why`)
// for reserved bits set (no extension was negotiated), a mask, an unknown opcode, a control frame
// that is fragmented or longer than 125 bytes, or a 64-bit length with its top bit set. Reads
// nothing past `in`.
inline FrameHeaderParse parse_server_frame_header(BytesView in, ServerFrameHeader& out,
                                                  const char*& why) {
    if (in.size() < 2)
        return FrameHeaderParse::need_more;
    const std::uint8_t b0 = in[0];
    const std::uint8_t b1 = in[1];
    out.fin = (b0 & 0x80) != 0;
    out.opcode = b0 & 0x0f;
    if ((b0 & 0x70) != 0) {
        why = "reserved bits set";
        return FrameHeaderParse::bad;
    }
    if ((b1 & 0x80) != 0) {
        why = "masked frame from the server";
        return FrameHeaderParse::bad;
    }
    const bool control = (out.opcode & 0x8) != 0;
    if (out.opcode > 0x2 && !(out.opcode >= 0x8 && out.opcode <= 0xA)) {
        why = "unknown opcode";
        return FrameHeaderParse::bad;
    }
    std::uint64_t len = b1 & 0x7f;
    std::size_t h = 2;
    if (len == 126) {
        if (in.size() < 4)
            return FrameHeaderParse::need_more;
        len = (static_cast<std::uint64_t>(in[2]) << 8) | in[3];
        h = 4;
    } else if (len == 127) {
        if (in.size() < 10)
            return FrameHeaderParse::need_more;
        len = 0;
        for (std::size_t i = 2; i < 10; ++i)
            len = (len << 8) | in[i];
        if ((len >> 63) != 0) {
            why = "frame length out of range";
            return FrameHeaderParse::bad;
        }
        h = 10;
    }
    if (control && (!out.fin || len > 125)) {
        why = "fragmented or oversized control frame";
        return FrameHeaderParse::bad;
    }
    out.header_size = h;
    out.payload_size = len;
    return FrameHeaderParse::ok;
}

}  // namespace rivetkit::envoy

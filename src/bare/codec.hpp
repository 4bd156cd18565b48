#pragma once
// Whole-message entry points over the generated per-type codecs.
//
// Every generated type T (in its schema namespace) provides, found by argument-dependent lookup:
//   void encode(bare::Writer&, const T&);
//   void decode(bare::Reader&, T&);
//   constexpr std::string_view bare_type_name(const T*);

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "bare/decode_error.hpp"
#include "bare/reader.hpp"
#include "bare/writer.hpp"
#include "base/result.hpp"

namespace rivetkit::bare {

std::string fmt_trailing(std::size_t remaining);
DecodeError unsupported_version(std::uint16_t got, std::uint16_t expected);

template <typename T>
void encode_into(Writer& w, const T& value) {
    encode(w, value);
}

template <typename T>
std::vector<std::uint8_t> encode_to_bytes(const T& value) {
    Writer w;
    encode(w, value);
    return w.take();
}

// Decodes exactly one T from `input`; trailing bytes are an error. On failure `out` holds a
// partially decoded value and must not be used.
template <typename T>
std::optional<DecodeError> decode_into(std::span<const std::uint8_t> input, T& out,
                                       std::size_t base_offset = 0) {
    Reader r(input, base_offset);
    decode(r, out);
    if (!r.failed() && !r.at_end()) {
        r.fail(fmt_trailing(r.remaining()));
    }
    if (r.failed())
        return r.take_error(bare_type_name(static_cast<const T*>(nullptr)));
    return std::nullopt;
}

template <typename T>
Result<T> decode_from_bytes(std::span<const std::uint8_t> input) {
    T out{};
    if (auto err = decode_into(input, out))
        return err->to_error();
    return out;
}

// MARK: Versioned envelope: u16 little-endian schema version, then the BARE body.

struct VersionedView {
    std::uint16_t version = 0;
    std::span<const std::uint8_t> body;
};

inline constexpr std::size_t kVersionPrefixSize = 2;

// Fails (offset 0) when the payload is shorter than the prefix.
std::optional<DecodeError> split_versioned(std::span<const std::uint8_t> payload,
                                           VersionedView& out);
Result<VersionedView> split_versioned(std::span<const std::uint8_t> payload);

template <typename T>
std::vector<std::uint8_t> encode_versioned(std::uint16_t version, const T& value) {
    Writer w;
    w.write_u16(version);
    encode(w, value);
    return w.take();
}

// Decodes the body of an already split payload; error offsets count from the payload start.
template <typename T>
Result<T> decode_versioned_body(const VersionedView& view) {
    T out{};
    if (auto err = decode_into(view.body, out, kVersionPrefixSize))
        return err->to_error();
    return out;
}

// Decodes a payload that must carry exactly `expected_version`.
template <typename T>
Result<T> decode_versioned(std::span<const std::uint8_t> payload, std::uint16_t expected_version) {
    auto view = split_versioned(payload);
    if (!view.ok())
        return std::move(view).error();
    if (view->version != expected_version) {
        return unsupported_version(view->version, expected_version).to_error();
    }
    return decode_versioned_body<T>(*view);
}

}  // namespace rivetkit::bare

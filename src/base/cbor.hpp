#pragma once
// CBOR for values from outside (clients, the inspector, persisted rows) and for values we write.
//
// read_cbor: our reader into nlohmann values. nlohmann 3.11's own reader refuses the one-byte tags
// 0xc0-0xd7 that JS encoders emit, and builds a SAX parser per call; this one reads what JS
// encoders write, never reads past its input and bounds nesting. cbor_well_formed walks the same
// grammar without building anything (an action's args are checked when the frame arrives and
// decoded once, by the actor). write_cbor writes exactly the bytes nlohmann's writer does.
//
// parse_cbor_or_discarded: nlohmann's reader made total: with allow_exceptions=false it still
// throws when an array or map header announces more elements than a vector can hold (out_of_range
// 408, found by fuzzing the storage rows). This returns a discarded value for that as for any
// other malformed input.

#include <cstdint>
#include <optional>

#include <nlohmann/json_fwd.hpp>

#include "base/bytes.hpp"

namespace rivetkit {

// What read_cbor met that has no plain JSON value: tags (bignums come out as binary with the tag
// as subtype; other tags are dropped around their content), `undefined` and unassigned simple
// values (null), map keys that are not text (their JSON text becomes the key), and negative
// integers beyond int64 (a double).
struct CborReadNotes {
    bool tagged = false;
    bool undefined = false;
    bool non_text_key = false;
    bool wide_negative = false;

    bool any() const noexcept { return tagged || undefined || non_text_key || wide_negative; }
};

// Strict (the whole input is one value); nullopt when it is not well-formed CBOR, nests deeper
// than 128 levels, or has a map key that is an array, a map or bytes.
std::optional<nlohmann::json> read_cbor(BytesView cbor, CborReadNotes* notes = nullptr);
// Whether read_cbor would accept `cbor`, without allocating.
bool cbor_well_formed(BytesView cbor);

// The argument of a head whose initial byte has `info` (0-23 itself; 24-27 the next 1, 2, 4 or 8
// bytes, big-endian), read at in[pos], `pos` moved past it; false when `info` is 28-31 or the
// input ends first. Shared by read_cbor and the typed API's scalar reader.
bool read_cbor_argument(BytesView in, std::size_t& pos, std::uint8_t info,
                        std::uint64_t& out) noexcept;
// A float's value from its head's `info` (25 half, 26 single, 27 double precision) and its bits.
double cbor_float_value(std::uint8_t info, std::uint64_t bits) noexcept;

// Appends the CBOR of `value` to `out`: smallest heads, floats as float32 when exact (NaN and
// infinities as half floats), binary with a subtype behind its tag, as nlohmann's to_cbor.
void write_cbor(const nlohmann::json& value, Bytes& out);

// Appends a CBOR head (major type and argument) in its shortest form, as write_cbor writes them.
void write_cbor_head(std::uint8_t major, std::uint64_t argument, Bytes& out);

// nlohmann's reader, strict; discarded when it is not valid CBOR (tags are not).
nlohmann::json parse_cbor_or_discarded(BytesView cbor);

}  // namespace rivetkit

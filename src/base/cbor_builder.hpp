#pragma once
// CborBuilder: CBOR written piece by piece, for the client protocol's envelopes (server and
// client side), whose ids must be 8-byte integers and whose values are already-encoded CBOR
// documents spliced in unchanged.

#include <cstdint>
#include <string_view>
#include <utility>

#include "base/bytes.hpp"
#include "base/cbor.hpp"

namespace rivetkit {

class CborBuilder {
  public:
    void head(std::uint8_t major, std::uint64_t argument) {
        write_cbor_head(major, argument, out_);
    }
    void map(std::uint64_t pairs) { head(5, pairs); }
    void text(std::string_view s) {
        head(3, s.size());
        append(out_, s);
    }
    // Always the 8-byte form: the official client's decoder yields a bigint only for that width.
    void u64_fixed(std::uint64_t v) {
        out_.push_back(0x1b);
        for (int shift = 56; shift >= 0; shift -= 8)
            out_.push_back(static_cast<std::uint8_t>(v >> shift));
    }
    void boolean(bool b) { out_.push_back(b ? 0xf5 : 0xf4); }
    void null() { out_.push_back(0xf6); }
    // An already-encoded CBOR value, as is.
    void raw(BytesView cbor) { out_.insert(out_.end(), cbor.begin(), cbor.end()); }
    // An already-encoded CBOR value; null when there is none (empty).
    void raw_or_null(BytesView cbor) {
        if (cbor.empty())
            null();
        else
            raw(cbor);
    }
    // {body: {tag: <tag>, val: {...}}} up to the head of val's map; its `fields` pairs follow.
    void envelope(std::string_view tag, std::uint64_t fields) {
        map(1);
        text("body");
        map(2);
        text("tag");
        text(tag);
        text("val");
        map(fields);
    }
    Bytes take() { return std::move(out_); }

  private:
    Bytes out_;
};

}  // namespace rivetkit

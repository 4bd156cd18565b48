#pragma once
// Reads BARE values from a byte span.
//
// Errors are sticky: the first failure is recorded with its offset, and every later read returns a
// zero value without consuming input. Generated decoders check `failed()` after each field and, on
// the way out, add the field names that make up DecodeError::path.
//
// Safety rules the reader enforces for every caller:
//   - never reads past the span;
//   - a length or count larger than the remaining input fails before anything is allocated
//     (every list/map element occupies at least one byte, so count <= remaining bounds reserve());
//   - varints must be canonical and at most 10 bytes; bool and optional tags must be 0 or 1;
//     str must be valid UTF-8.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bare/decode_error.hpp"

namespace rivetkit::bare {

class Reader {
  public:
    // `base_offset` is added to reported offsets, so errors in a body that follows a version prefix
    // point into the whole payload.
    explicit Reader(std::span<const std::uint8_t> input, std::size_t base_offset = 0) noexcept
        : in_(input), base_(base_offset) {}

    std::uint8_t read_u8();
    std::uint16_t read_u16() { return static_cast<std::uint16_t>(read_le(2)); }
    std::uint32_t read_u32() { return static_cast<std::uint32_t>(read_le(4)); }
    std::uint64_t read_u64() { return read_le(8); }
    std::int8_t read_i8() { return static_cast<std::int8_t>(read_u8()); }
    std::int16_t read_i16() { return static_cast<std::int16_t>(read_u16()); }
    std::int32_t read_i32() { return static_cast<std::int32_t>(read_u32()); }
    std::int64_t read_i64() { return static_cast<std::int64_t>(read_u64()); }
    float read_f32();
    double read_f64();
    std::uint64_t read_uint();
    std::int64_t read_int();
    bool read_bool();
    std::string read_str();
    std::vector<std::uint8_t> read_data();
    void read_fixed_data(std::span<std::uint8_t> out);
    template <std::size_t N>
    std::array<std::uint8_t, N> read_fixed_data() {
        std::array<std::uint8_t, N> out{};
        read_fixed_data(std::span<std::uint8_t>(out));
        return out;
    }
    // Element count of a list or map; fails when it exceeds the remaining bytes.
    std::size_t read_length();
    bool read_optional_tag();
    std::uint64_t read_tag() { return read_uint(); }

    bool failed() const noexcept { return failed_; }
    // Offset into the whole payload (base offset included).
    std::size_t offset() const noexcept { return base_ + pos_; }
    std::size_t remaining() const noexcept { return in_.size() - pos_; }
    bool at_end() const noexcept { return pos_ == in_.size(); }

    // Records a failure at the current position (or `at`, a value from offset()); first one wins.
    void fail(std::string reason);
    void fail_at(std::size_t at, std::string reason);

    // Path segments, innermost first, added while unwinding after a failure.
    void add_field(std::string_view name);
    void add_index(std::uint64_t index);

    // The recorded error with `root` as the first path element. Only meaningful when failed().
    DecodeError take_error(std::string_view root);

  private:
    std::uint64_t read_le(int bytes);
    bool need(std::size_t n, const char* what);
    std::span<const std::uint8_t> read_length_prefixed(const char* what);

    std::span<const std::uint8_t> in_;
    std::size_t base_ = 0;
    std::size_t pos_ = 0;
    bool failed_ = false;
    DecodeError error_;
    std::vector<std::string> segments_;
};

}  // namespace rivetkit::bare

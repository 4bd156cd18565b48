#pragma once
// Appends BARE-encoded values to a byte buffer. Encoding cannot fail; the buffer is reusable.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace rivetkit::bare {

class Writer {
  public:
    Writer() = default;
    // Adopts a buffer (its capacity is reused, its contents dropped).
    explicit Writer(std::vector<std::uint8_t> buffer) : buf_(std::move(buffer)) { buf_.clear(); }

    void clear() noexcept { buf_.clear(); }
    std::size_t size() const noexcept { return buf_.size(); }
    const std::vector<std::uint8_t>& bytes() const noexcept { return buf_; }
    // Moves the bytes out; the writer is empty afterwards.
    std::vector<std::uint8_t> take() noexcept;

    void write_u8(std::uint8_t v) { buf_.push_back(v); }
    void write_u16(std::uint16_t v) { write_le(v, 2); }
    void write_u32(std::uint32_t v) { write_le(v, 4); }
    void write_u64(std::uint64_t v) { write_le(v, 8); }
    void write_i8(std::int8_t v) { write_u8(static_cast<std::uint8_t>(v)); }
    void write_i16(std::int16_t v) { write_u16(static_cast<std::uint16_t>(v)); }
    void write_i32(std::int32_t v) { write_u32(static_cast<std::uint32_t>(v)); }
    void write_i64(std::int64_t v) { write_u64(static_cast<std::uint64_t>(v)); }
    void write_f32(float v);
    void write_f64(double v);
    void write_uint(std::uint64_t v);
    void write_int(std::int64_t v);
    void write_bool(bool v) { write_u8(v ? 1 : 0); }
    // The caller guarantees `v` is valid UTF-8 (the decoder rejects anything else).
    void write_str(std::string_view v);
    void write_data(std::span<const std::uint8_t> v);
    // data[N]: the bytes without a length prefix.
    void write_fixed_data(std::span<const std::uint8_t> v);
    // Element count of a list or map.
    void write_length(std::size_t n) { write_uint(n); }
    void write_optional_tag(bool present) { write_u8(present ? 1 : 0); }
    void write_tag(std::uint64_t tag) { write_uint(tag); }

  private:
    void write_le(std::uint64_t v, int bytes);

    std::vector<std::uint8_t> buf_;
};

}  // namespace rivetkit::bare

#include "bare/writer.hpp"

#include <bit>
#include <utility>

#include "base/bytes.hpp"

namespace rivetkit::bare {

std::vector<std::uint8_t> Writer::take() noexcept {
    std::vector<std::uint8_t> out = std::move(buf_);
    buf_.clear();
    return out;
}

void Writer::write_le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
        buf_.push_back(static_cast<std::uint8_t>(v & 0xff));
        v >>= 8;
    }
}

void Writer::write_f32(float v) {
    write_u32(std::bit_cast<std::uint32_t>(v));
}
void Writer::write_f64(double v) {
    write_u64(std::bit_cast<std::uint64_t>(v));
}

void Writer::write_uint(std::uint64_t v) {
    while (v >= 0x80) {
        buf_.push_back(static_cast<std::uint8_t>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    buf_.push_back(static_cast<std::uint8_t>(v));
}

void Writer::write_int(std::int64_t v) {
    // Zig-zag: small magnitudes of either sign stay short.
    const auto u = static_cast<std::uint64_t>(v);
    write_uint((u << 1) ^ (v < 0 ? ~std::uint64_t{0} : 0));
}

void Writer::write_str(std::string_view v) {
    write_uint(v.size());
    append(buf_, v);
}

void Writer::write_data(std::span<const std::uint8_t> v) {
    write_uint(v.size());
    buf_.insert(buf_.end(), v.begin(), v.end());
}

void Writer::write_fixed_data(std::span<const std::uint8_t> v) {
    buf_.insert(buf_.end(), v.begin(), v.end());
}

}  // namespace rivetkit::bare

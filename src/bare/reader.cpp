#include "bare/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "bare/utf8.hpp"

namespace rivetkit::bare {

bool Reader::need(std::size_t n, const char* what) {
    if (failed_)
        return false;
    if (remaining() < n) {
        fail(fmt::format("unexpected end of input reading {} ({} byte(s) needed, {} left)", what, n,
                         remaining()));
        return false;
    }
    return true;
}

std::uint8_t Reader::read_u8() {
    if (!need(1, "u8"))
        return 0;
    return in_[pos_++];
}

std::uint64_t Reader::read_le(int bytes) {
    const auto n = static_cast<std::size_t>(bytes);
    if (!need(n, "fixed-width integer"))
        return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
        v |= std::uint64_t{in_[pos_ + i]} << (8 * i);
    pos_ += n;
    return v;
}

float Reader::read_f32() {
    return std::bit_cast<float>(read_u32());
}
double Reader::read_f64() {
    return std::bit_cast<double>(read_u64());
}

std::uint64_t Reader::read_uint() {
    if (failed_)
        return 0;
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
        if (pos_ >= in_.size()) {
            fail_at(base_ + start, "unexpected end of input in varint");
            return 0;
        }
        const std::uint8_t b = in_[pos_++];
        // The tenth byte holds only bit 63; anything more would overflow 64 bits.
        if (i == 9 && b > 1) {
            fail_at(base_ + start, "varint overflows 64 bits");
            return 0;
        }
        v |= std::uint64_t{b & 0x7fu} << (7 * i);
        if ((b & 0x80) == 0) {
            if (b == 0 && i > 0) {
                fail_at(base_ + start, "non-canonical (overlong) varint");
                return 0;
            }
            return v;
        }
    }
    fail_at(base_ + start, "varint longer than 10 bytes");
    return 0;
}

std::int64_t Reader::read_int() {
    const std::uint64_t u = read_uint();
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
}

bool Reader::read_bool() {
    const std::size_t at = offset();
    const std::uint8_t b = read_u8();
    if (b > 1)
        fail_at(at, fmt::format("invalid bool value {}", b));
    return b == 1;
}

bool Reader::read_optional_tag() {
    const std::size_t at = offset();
    const std::uint8_t b = read_u8();
    if (b > 1)
        fail_at(at, fmt::format("invalid optional tag {}", b));
    return b == 1;
}

std::size_t Reader::read_length() {
    const std::size_t at = offset();
    const std::uint64_t n = read_uint();
    if (failed_)
        return 0;
    if (n > remaining()) {
        fail_at(at, fmt::format("length {} exceeds the {} byte(s) left", n, remaining()));
        return 0;
    }
    return static_cast<std::size_t>(n);
}

std::span<const std::uint8_t> Reader::read_length_prefixed(const char* what) {
    const std::size_t at = offset();
    const std::uint64_t n = read_uint();
    if (failed_)
        return {};
    if (n > remaining()) {
        fail_at(at, fmt::format("{} length {} exceeds the {} byte(s) left", what, n, remaining()));
        return {};
    }
    auto bytes = in_.subspan(pos_, static_cast<std::size_t>(n));
    pos_ += bytes.size();
    return bytes;
}

std::string Reader::read_str() {
    const std::size_t at = offset();
    auto bytes = read_length_prefixed("str");
    if (failed_)
        return {};
    if (!is_valid_utf8(bytes)) {
        fail_at(at, "invalid UTF-8 in str");
        return {};
    }
    return std::string(as_chars(bytes));
}

std::vector<std::uint8_t> Reader::read_data() {
    auto bytes = read_length_prefixed("data");
    return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

void Reader::read_fixed_data(std::span<std::uint8_t> out) {
    if (!need(out.size(), "fixed-length data"))
        return;
    std::copy_n(in_.begin() + static_cast<std::ptrdiff_t>(pos_), out.size(), out.begin());
    pos_ += out.size();
}

void Reader::fail(std::string reason) {
    fail_at(offset(), std::move(reason));
}

void Reader::fail_at(std::size_t at, std::string reason) {
    if (failed_)
        return;
    failed_ = true;
    error_.reason = std::move(reason);
    error_.offset = at;
}

void Reader::add_field(std::string_view name) {
    if (failed_)
        segments_.emplace_back(name);
}

void Reader::add_index(std::uint64_t index) {
    if (failed_)
        segments_.push_back(fmt::format("[{}]", index));
}

DecodeError Reader::take_error(std::string_view root) {
    DecodeError out = std::move(error_);
    out.path = std::string(root);
    for (auto it = segments_.rbegin(); it != segments_.rend(); ++it) {
        if (!out.path.empty() && it->front() != '[')
            out.path += '.';
        out.path += *it;
    }
    segments_.clear();
    return out;
}

}  // namespace rivetkit::bare

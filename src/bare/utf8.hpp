#pragma once

#include <cstdint>
#include <span>

namespace rivetkit::bare {

// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::span<const std::uint8_t> bytes) noexcept;

}  // namespace rivetkit::bare

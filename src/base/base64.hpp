#pragma once
// Base64 (RFC 4648): the standard alphabet with padding, and the URL-safe alphabet without.

#include <optional>
#include <string>
#include <string_view>

#include "base/bytes.hpp"

namespace rivetkit::base64 {

std::string encode(BytesView bytes);
std::string encode_url_no_pad(BytesView bytes);
// Accepts either alphabet, with or without padding; nullopt on any other character or a
// dangling 6-bit group.
std::optional<Bytes> decode(std::string_view text);

}  // namespace rivetkit::base64

#pragma once
// The inspector WebSocket protocol (/inspector/connect): versioned BARE frames, each a u16
// little-endian protocol version followed by a ToServer / ToClient message of that version
// (schemas/inspector-protocol). Like upstream, this host answers in v4 only and accepts client
// frames of v1 through v4, upgraded to v4 field by field. Requests that have no v4 meaning (v1's
// events requests) are refused with an error, as upstream's converters refuse them.

#include <cstdint>
#include <string_view>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "proto/inspector_v4.hpp"

namespace rivetkit::core::inspector {

namespace wire = proto::inspector_v4;

inline constexpr std::uint16_t kProtocolVersion = 4;
// QueueRequest limits above this are clamped (upstream's MAX_QUEUE_STATUS_LIMIT).
inline constexpr std::uint32_t kMaxQueueStatusLimit = 200;

// A client frame of any supported version, as its v4 body. inspector/invalid_request when the
// frame is too short, names an unknown version, does not decode exactly, or cannot be upgraded.
Result<wire::ToServerBody> decode_client_message(BytesView payload);

// A server message as a v4 frame.
Bytes encode_server_message(const wire::ToClientBody& body);

std::uint32_t clamp_queue_limit(std::uint64_t limit) noexcept;

// Variant names for logs ("PatchStateRequest", "Init", ...).
std::string_view message_kind(const wire::ToServerBody& body) noexcept;
std::string_view message_kind(const wire::ToClientBody& body) noexcept;

}  // namespace rivetkit::core::inspector

#pragma once
// The inspector WebSocket protocol (/inspector/connect): BARE ToServer / ToClient messages of
// schemas/inspector-protocol v1..v6. Internally every message is v6.
//
// Which version a socket speaks is fixed when it opens, as in upstream's newer rivetkit-core
// (registry/inspector_ws.rs, rivetkit 2.3.4+, what npm rivetkit 2.3.19 ships):
//   - `?protocol_version=N` on the connect path (the inspector UI sends it for runtimes 2.3.4+):
//     every frame in both directions is a bare message of version N, with no version prefix.
//   - no query parameter (older inspectors): each frame starts with a u16 little-endian version;
//     client frames of any version v1..v6 are accepted, and the server answers in embedded v5.
// Client messages of older versions are upgraded to v6 field by field; server messages are
// written down to the socket's version, messages that version lacks becoming an Error with
// upstream's "inspector.*_dropped" code. Requests that have no v6 meaning (v1's events
// requests) are refused, as upstream's converters refuse them.

#include <cstdint>
#include <string_view>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "proto/inspector_v6.hpp"

namespace rivetkit::core::inspector {

namespace wire = proto::inspector_v6;

inline constexpr std::uint16_t kProtocolVersion = 6;
// What a socket without `protocol_version` speaks (upstream's LEGACY_INSPECTOR_VERSION).
inline constexpr std::uint16_t kLegacyEmbeddedVersion = 5;
// QueueRequest limits above this are clamped (upstream's MAX_QUEUE_STATUS_LIMIT).
inline constexpr std::uint32_t kMaxQueueStatusLimit = 200;

struct WireMode {
    std::uint16_t version = kLegacyEmbeddedVersion;
    // True: each frame carries its own u16 version (the legacy framing).
    bool embedded = true;
    friend bool operator==(const WireMode&, const WireMode&) = default;
};

// The mode of a socket opened on `path` (with its query). inspector/invalid_protocol_version
// when `protocol_version` is present but not an integer in 1..kProtocolVersion.
Result<WireMode> wire_mode_from_path(std::string_view path);

// A client frame as its v6 body. inspector/invalid_request when the frame is too short, names an
// unknown version, does not decode exactly, or cannot be upgraded.
Result<wire::ToServerBody> decode_client_message(BytesView payload, WireMode mode);
// The legacy framing (version embedded in the frame).
Result<wire::ToServerBody> decode_client_message(BytesView payload);

// A server message as a frame of the socket's mode.
Bytes encode_server_message(const wire::ToClientBody& body, WireMode mode);

std::uint32_t clamp_queue_limit(std::uint64_t limit) noexcept;

// Variant names for logs ("PatchStateRequest", "Init", ...).
std::string_view message_kind(const wire::ToServerBody& body) noexcept;
std::string_view message_kind(const wire::ToClientBody& body) noexcept;

}  // namespace rivetkit::core::inspector

#pragma once
// Actor-local KV key layout, shared with upstream's TypeScript and Rust hosts so an actor written
// by one host wakes on another. Keys are opaque bytes; the first byte names the subsystem.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/bytes.hpp"

namespace rivetkit::core::keys {

inline constexpr std::array<std::uint8_t, 1> kPersistData{1};     // PersistedActor
inline constexpr std::array<std::uint8_t, 1> kConnPrefix{2};      // + utf8(conn id)
inline constexpr std::array<std::uint8_t, 1> kInspectorToken{3};  // raw ASCII token
inline constexpr std::array<std::uint8_t, 1> kUserKvPrefix{4};    // + user key
inline constexpr std::array<std::uint8_t, 1> kQueuePrefix{5};
// The bare [6] key holds the last pushed alarm; it can't collide with workflow storage, which
// always lives under the two-byte prefix [6, 1].
inline constexpr std::array<std::uint8_t, 1> kLastPushedAlarm{6};
inline constexpr std::array<std::uint8_t, 2> kWorkflowStoragePrefix{6, 1};
inline constexpr std::array<std::uint8_t, 2> kTracesStoragePrefix{7, 1};
inline constexpr std::array<std::uint8_t, 2> kQueueStoragePrefix{5, 1};
inline constexpr std::array<std::uint8_t, 3> kQueueMetadata{5, 1, 1};
inline constexpr std::array<std::uint8_t, 3> kQueueMessagesPrefix{5, 1, 2};

inline Bytes to_bytes(BytesView key) {
    return Bytes(key.begin(), key.end());
}

inline Bytes connection_key(std::string_view conn_id) {
    Bytes key(kConnPrefix.begin(), kConnPrefix.end());
    key.insert(key.end(), conn_id.begin(), conn_id.end());
    return key;
}

inline Bytes user_key(BytesView key) {
    return concat(kUserKvPrefix, key);
}

// Queue message ids are big-endian so KV order is FIFO order.
inline Bytes queue_message_key(std::uint64_t id) {
    Bytes key(kQueueMessagesPrefix.begin(), kQueueMessagesPrefix.end());
    for (int shift = 56; shift >= 0; shift -= 8) {
        key.push_back(static_cast<std::uint8_t>(id >> shift));
    }
    return key;
}

inline std::optional<std::uint64_t> decode_queue_message_key(BytesView key) {
    if (key.size() != kQueueMessagesPrefix.size() + 8 || !starts_with(key, kQueueMessagesPrefix)) {
        return std::nullopt;
    }
    std::uint64_t id = 0;
    for (std::size_t i = kQueueMessagesPrefix.size(); i < key.size(); ++i)
        id = (id << 8) | key[i];
    return id;
}

}  // namespace rivetkit::core::keys

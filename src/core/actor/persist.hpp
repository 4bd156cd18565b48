#pragma once
// Persisted records (actor-persist schemas) and their KV value framing.
//
// Every value is `u16 little-endian version ‖ BARE body`, byte-identical to upstream's Rust and
// TypeScript hosts so an actor written by one host wakes on another. Writers always emit the
// current version (4 for actor/connection/queue records, 1 for the last pushed alarm); readers
// accept the older versions upstream still reads and upgrade them in memory. A decode failure is a
// structured protocol/invalid_persisted_data error that names the record, never a crash.

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "proto/persist_v4.hpp"

namespace rivetkit::core {

using PersistedActor = proto::persist_v4::Actor;
using PersistedScheduleEvent = proto::persist_v4::ScheduleEvent;
using PersistedConnection = proto::persist_v4::Conn;
using PersistedSubscription = proto::persist_v4::Subscription;
using PersistedQueueMetadata = proto::persist_v4::QueueMetadata;
using PersistedQueueMessage = proto::persist_v4::QueueMessage;

inline constexpr std::uint16_t kCurrentPersistVersion = 4;
inline constexpr std::uint16_t kLastPushedAlarmVersion = 1;

// Key [1]. Reads v1..v4, including the short-lived v4 writer that stored schedule args as plain
// `data` (accepted only when the bytes are not canonical current v4).
Bytes encode_persisted_actor(const PersistedActor& actor);
Result<PersistedActor> decode_persisted_actor(BytesView payload);

// Key [2] + conn id. Reads v3 and v4.
Bytes encode_persisted_connection(const PersistedConnection& conn);
Result<PersistedConnection> decode_persisted_connection(BytesView payload);

// Keys [5,1,1] and [5,1,2]+id. v4 only.
Bytes encode_queue_metadata(const PersistedQueueMetadata& meta);
Result<PersistedQueueMetadata> decode_queue_metadata(BytesView payload);
Bytes encode_queue_message(const PersistedQueueMessage& message);
Result<PersistedQueueMessage> decode_queue_message(BytesView payload);

// Key [6]: the alarm timestamp last pushed to the engine (None = no alarm). v1 only.
Bytes encode_last_pushed_alarm(std::optional<std::int64_t> alarm_ts);
Result<std::optional<std::int64_t>> decode_last_pushed_alarm(BytesView payload);

// TypeScript parity: empty schedule args are stored as None.
inline std::optional<Bytes> schedule_args_from(Bytes args) {
    if (args.empty())
        return std::nullopt;
    return std::optional<Bytes>(std::move(args));
}

}  // namespace rivetkit::core

#pragma once
// Rows of the actor's internal SQLite tables (internal_storage.hpp) decoded into the records the
// core keeps: pure functions of column values, no database. A row of the wrong shape (a column of
// another type, a flag that is not 0/1, a message index beyond u16, a gateway id that is not 4
// bytes, subscriptions or headers that are not the CBOR upstream writes) is a
// protocol/invalid_persisted_data error whose metadata names the actor, table and column. Fuzzed
// (fuzz/fuzz_storage.cpp).

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "proto/persist_v4.hpp"

namespace rivetkit::core::storage {

// A column value: NULL, INTEGER, REAL, TEXT, BLOB (the same type as sqlite::Value).
using Value = std::variant<std::monostate, std::int64_t, double, std::string, Bytes>;
using Row = std::vector<Value>;

Error persisted_error(std::string_view actor_id, std::string message,
                      const std::map<std::string, nlohmann::json>& found = {});

// _rivet_meta.schema_version: an 8-byte little-endian integer.
Result<std::int64_t> schema_version(std::string_view actor_id, BytesView value);
Bytes encode_schema_version(std::int64_t version);

// SELECT a.has_initialized, a.input, s.state (the actor and its state row) and the one-shot
// schedule rows SELECT event_id, trigger_at, action, args.
Result<proto::persist_v4::Actor> actor_from_rows(std::string_view actor_id, const Row& actor,
                                                 const std::vector<Row>& one_shots);

// SELECT c.conn_id, c.parameters, s.state, s.subscriptions, c.gateway_id, c.request_id,
// s.server_message_index, s.client_message_index, c.request_path, c.request_headers.
Result<proto::persist_v4::Conn> connection_from_row(std::string_view actor_id, const Row& row);
// The CBOR columns of a connection as upstream writes them.
Bytes subscriptions_cbor(const proto::persist_v4::Conn& conn);
Bytes request_headers_cbor(const proto::persist_v4::Conn& conn);

struct RuntimeRow {
    std::optional<std::int64_t> last_pushed_alarm;
    std::optional<std::string> inspector_token;
    std::int64_t queue_next_id = 1;
};
// SELECT last_pushed_alarm, inspector_token, queue_next_id.
Result<RuntimeRow> runtime_from_row(std::string_view actor_id, const Row& row);

struct QueueRow {
    std::uint64_t id = 0;
    proto::persist_v4::QueueMessage message;
};
// SELECT id, name, body, created_at.
Result<QueueRow> queue_message_from_row(std::string_view actor_id, const Row& row);

// SELECT COUNT(*), MAX(id) of _rivet_queue with the runtime row (if any): the queue's metadata as
// the core keeps it, nullopt when nothing was ever stored.
Result<std::optional<proto::persist_v4::QueueMetadata>> queue_metadata_from(
    std::string_view actor_id, const std::optional<RuntimeRow>& runtime, const Row& stats);

// SELECT key, value of _rivet_user_kv.
Result<std::pair<Bytes, Bytes>> user_kv_from_row(std::string_view actor_id, const Row& row);

}  // namespace rivetkit::core::storage

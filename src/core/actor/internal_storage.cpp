#include "core/actor/internal_storage.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <utility>

#include "base/log.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/sqlite.hpp"
#include "core/actor/storage_rows.hpp"
#include "runtime/notify.hpp"
#include "sqlite/database.hpp"

namespace rivetkit::core {

namespace {

using sqlite::QueryResult;
using sqlite::Session;
using sqlite::Value;
using Row = std::vector<Value>;

// MARK: schema

constexpr std::string_view kCreateMeta = R"(CREATE TABLE IF NOT EXISTS _rivet_meta (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) STRICT, WITHOUT ROWID)";

// Entry i moves the schema from version i to i + 1. Shipped entries never change.
const std::vector<std::vector<std::string_view>>& migrations() {
    static const std::vector<std::vector<std::string_view>> ladder = {
        {
            R"(CREATE TABLE _rivet_runtime (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    last_pushed_alarm INTEGER,
    inspector_token   TEXT,
    queue_next_id     INTEGER NOT NULL
) STRICT)",
            R"(CREATE TABLE _rivet_actor (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    has_initialized INTEGER NOT NULL,
    input           BLOB
) STRICT)",
            R"(CREATE TABLE _rivet_actor_state (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    state BLOB NOT NULL
) STRICT)",
            R"(CREATE TABLE _rivet_schedule_events (
    event_id         TEXT PRIMARY KEY,
    trigger_at       INTEGER NOT NULL,
    action           TEXT NOT NULL,
    args             BLOB,
    kind             INTEGER NOT NULL,
    cron_expression  TEXT,
    timezone         TEXT,
    interval_ms      INTEGER,
    last_started_at  INTEGER,
    max_history      INTEGER NOT NULL
) STRICT, WITHOUT ROWID)",
            R"(CREATE INDEX _rivet_schedule_events_trigger_at
    ON _rivet_schedule_events (trigger_at))",
            R"(CREATE TABLE _rivet_schedule_history (
    id           INTEGER PRIMARY KEY,
    schedule_id  TEXT NOT NULL,
    action       TEXT NOT NULL,
    scheduled_at INTEGER NOT NULL,
    fired_at     INTEGER NOT NULL,
    finished_at  INTEGER,
    result         INTEGER NOT NULL,
    error_group    TEXT,
    error_code     TEXT,
    error_message  TEXT,
    error_metadata BLOB
) STRICT)",
            R"(CREATE INDEX _rivet_schedule_history_schedule
    ON _rivet_schedule_history (schedule_id, fired_at DESC, id DESC))",
            R"(CREATE INDEX _rivet_schedule_history_fired_at
    ON _rivet_schedule_history (fired_at DESC, id DESC))",
            R"(CREATE INDEX _rivet_schedule_history_running
    ON _rivet_schedule_history (result)
    WHERE result = 0)",
            R"(CREATE TABLE _rivet_conns (
    conn_id         TEXT PRIMARY KEY,
    parameters      BLOB NOT NULL,
    gateway_id      BLOB NOT NULL,
    request_id      BLOB NOT NULL,
    request_path    TEXT NOT NULL,
    request_headers BLOB NOT NULL
) STRICT, WITHOUT ROWID)",
            R"(CREATE TABLE _rivet_conn_state (
    conn_id              TEXT PRIMARY KEY,
    state                BLOB NOT NULL,
    server_message_index INTEGER NOT NULL,
    client_message_index INTEGER NOT NULL,
    subscriptions        BLOB NOT NULL
) STRICT, WITHOUT ROWID)",
            R"(CREATE TABLE _rivet_queue (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    body       BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT)",
            R"(CREATE INDEX _rivet_queue_name_id
    ON _rivet_queue (name, id))",
            R"(CREATE TABLE _rivet_wf_kv (
    key   BLOB PRIMARY KEY,
    value BLOB NOT NULL
) STRICT, WITHOUT ROWID)",
            R"(CREATE TABLE _rivet_user_kv (
    key   BLOB PRIMARY KEY,
    value BLOB NOT NULL
) STRICT, WITHOUT ROWID)",
        },
        {
            "ALTER TABLE _rivet_schedule_events ADD COLUMN ray_id TEXT",
            "ALTER TABLE _rivet_schedule_events ADD COLUMN traceparent TEXT",
            "ALTER TABLE _rivet_schedule_events ADD COLUMN tracestate TEXT",
            "ALTER TABLE _rivet_queue ADD COLUMN ray_id TEXT",
            "ALTER TABLE _rivet_queue ADD COLUMN traceparent TEXT",
            "ALTER TABLE _rivet_queue ADD COLUMN tracestate TEXT",
        },
    };
    return ladder;
}

constexpr std::string_view kSchemaVersionKey = "schema_version";
constexpr std::string_view kImportStateKey = "kv_import_state";
constexpr std::string_view kImportImporting = "importing";
constexpr std::string_view kImportDone = "done";

constexpr std::string_view kUpsertMeta =
    "INSERT INTO _rivet_meta (key, value) VALUES (?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value";
constexpr std::string_view kLoadMeta = "SELECT value FROM _rivet_meta WHERE key = ?";

// MARK: errors and columns

using storage::persisted_error;

// The blob column of a one-column row (a meta value, a user KV value); NULL reads as empty.
Result<Bytes> blob_column(std::string_view actor_id, std::string_view table, const Row& row) {
    if (!row.empty()) {
        if (const auto* v = std::get_if<Bytes>(&row[0]))
            return *v;
        if (std::holds_alternative<std::monostate>(row[0]))
            return Bytes{};
    }
    return persisted_error(actor_id,
                           "internal storage row of " + std::string(table) +
                               ": column value is not a blob",
                           {{"table", table}, {"column", "value"}});
}

#define RIVETKIT_TRY(var, expr)              \
    auto var##_result = (expr);              \
    if (!var##_result.ok())                  \
        return std::move(var##_result).error(); \
    auto var = std::move(var##_result).value()

Value blob_value(BytesView bytes) {
    return Value(Bytes(bytes.begin(), bytes.end()));
}
Value opt_blob_value(const std::optional<Bytes>& bytes) {
    return bytes ? Value(*bytes) : Value(std::monostate{});
}
Value text_value(std::string_view text) {
    return Value(std::string(text));
}
std::string text_of(BytesView bytes) {
    return std::string(as_chars(bytes));
}

Status run(Session& s, std::string_view sql, std::vector<Value> params = {}) {
    auto done = s.run(std::string(sql), params);
    if (!done.ok())
        return std::move(done).error();
    return Status{};
}

// MARK: meta

Result<std::optional<Bytes>> load_meta(Session& s, std::string_view actor_id, std::string_view key) {
    auto found = s.query(std::string(kLoadMeta), {text_value(key)});
    if (!found.ok())
        return std::move(found).error();
    if (found.value().rows.empty())
        return std::optional<Bytes>();
    RIVETKIT_TRY(value, blob_column(actor_id, "_rivet_meta", found.value().rows.front()));
    return std::optional<Bytes>(std::move(value));
}

Status store_meta(Session& s, std::string_view key, Value value) {
    return run(s, kUpsertMeta, {text_value(key), std::move(value)});
}

// Brings the schema to kInternalSchemaVersion inside the caller's transaction; returns the import
// state found in _rivet_meta.
Result<std::optional<std::string>> ensure_schema(Session& s, std::string_view actor_id) {
    if (Status created = s.exec(std::string(kCreateMeta)); !created.ok())
        return std::move(created).error();
    RIVETKIT_TRY(stored, load_meta(s, actor_id, kSchemaVersionKey));
    std::int64_t version = 0;
    if (stored) {
        RIVETKIT_TRY(decoded, storage::schema_version(actor_id, *stored));
        version = decoded;
    }
    if (version > kInternalSchemaVersion || version < 0)
        return persisted_error(
            actor_id,
            "actor storage schema version " + std::to_string(version) +
                " is newer than this host supports (" + std::to_string(kInternalSchemaVersion) +
                "); a newer rivetkit wrote it",
            {{"table", "_rivet_meta"}, {"found", version}, {"supported", kInternalSchemaVersion}});
    const auto& ladder = migrations();
    for (std::int64_t v = version; v < kInternalSchemaVersion; ++v) {
        for (std::string_view sql : ladder[static_cast<std::size_t>(v)]) {
            if (Status applied = s.exec(std::string(sql)); !applied.ok())
                return std::move(applied).error();
        }
    }
    if (version != kInternalSchemaVersion) {
        if (Status st = store_meta(s, kSchemaVersionKey,
                                   Value(storage::encode_schema_version(kInternalSchemaVersion)));
            !st.ok())
            return std::move(st).error();
    }
    RIVETKIT_TRY(import_state, load_meta(s, actor_id, kImportStateKey));
    if (!import_state)
        return std::optional<std::string>();
    return std::optional<std::string>(text_of(*import_state));
}

// MARK: records

enum class RecordKind : std::uint8_t {
    Actor,
    Connection,
    ConnectionPrefix,
    InspectorToken,
    UserKv,
    QueueMetadata,
    QueueMessage,
    QueueMessagePrefix,
    LastPushedAlarm,
    Other,
};

RecordKind classify(BytesView key) {
    if (key.size() == 1) {
        switch (key[0]) {
            case 1:
                return RecordKind::Actor;
            case 2:
                return RecordKind::ConnectionPrefix;
            case 3:
                return RecordKind::InspectorToken;
            case 6:
                return RecordKind::LastPushedAlarm;
            default:
                break;
        }
    }
    if (!key.empty() && key[0] == keys::kConnPrefix[0])
        return RecordKind::Connection;
    if (!key.empty() && key[0] == keys::kUserKvPrefix[0])
        return RecordKind::UserKv;
    if (std::ranges::equal(key, keys::kQueueMetadata))
        return RecordKind::QueueMetadata;
    if (std::ranges::equal(key, keys::kQueueMessagesPrefix))
        return RecordKind::QueueMessagePrefix;
    if (keys::decode_queue_message_key(key))
        return RecordKind::QueueMessage;
    return RecordKind::Other;
}

Error unmapped(std::string_view actor_id, std::string_view op, BytesView key) {
    std::string hex;
    static constexpr char kDigits[] = "0123456789abcdef";
    for (std::size_t i = 0; i < key.size() && i < 8; ++i) {
        hex += kDigits[key[i] >> 4];
        hex += kDigits[key[i] & 0xf];
    }
    return Error("actor", "internal_error",
                 std::string(op) + " of a key the internal storage has no table for",
                 nlohmann::json({{"actorId", actor_id}, {"keyPrefix", hex}}).dump());
}

constexpr std::string_view kLoadActor =
    "SELECT a.has_initialized, a.input, s.state FROM _rivet_actor a "
    "JOIN _rivet_actor_state s ON s.id = a.id WHERE a.id = 1";
constexpr std::string_view kLoadOneShots =
    "SELECT event_id, trigger_at, action, args FROM _rivet_schedule_events WHERE kind = 0 "
    "ORDER BY trigger_at, event_id";
constexpr std::string_view kCountRecurring =
    "SELECT COUNT(*) FROM _rivet_schedule_events WHERE kind != 0";
constexpr std::string_view kUpsertActor =
    "INSERT INTO _rivet_actor (id, has_initialized, input) VALUES (1, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET has_initialized = excluded.has_initialized, "
    "input = excluded.input";
constexpr std::string_view kUpsertState =
    "INSERT INTO _rivet_actor_state (id, state) VALUES (1, ?) "
    "ON CONFLICT(id) DO UPDATE SET state = excluded.state";
constexpr std::string_view kDeleteOneShots = "DELETE FROM _rivet_schedule_events WHERE kind = 0";
constexpr std::string_view kInsertOneShot =
    "INSERT OR REPLACE INTO _rivet_schedule_events (event_id, trigger_at, action, args, kind, "
    "cron_expression, timezone, interval_ms, last_started_at, max_history) "
    "VALUES (?, ?, ?, ?, 0, NULL, NULL, NULL, NULL, 0)";

constexpr std::string_view kLoadConnections =
    "SELECT c.conn_id, c.parameters, s.state, s.subscriptions, c.gateway_id, c.request_id, "
    "s.server_message_index, s.client_message_index, c.request_path, c.request_headers "
    "FROM _rivet_conns c JOIN _rivet_conn_state s ON s.conn_id = c.conn_id";
constexpr std::string_view kInsertConnection =
    "INSERT OR IGNORE INTO _rivet_conns (conn_id, parameters, gateway_id, request_id, "
    "request_path, request_headers) VALUES (?, ?, ?, ?, ?, ?)";
constexpr std::string_view kUpsertConnectionState =
    "INSERT INTO _rivet_conn_state (conn_id, state, server_message_index, client_message_index, "
    "subscriptions) VALUES (?, ?, ?, ?, ?) ON CONFLICT(conn_id) DO UPDATE SET "
    "state = excluded.state, server_message_index = excluded.server_message_index, "
    "client_message_index = excluded.client_message_index, "
    "subscriptions = excluded.subscriptions";
constexpr std::string_view kDeleteConnectionState = "DELETE FROM _rivet_conn_state WHERE conn_id = ?";
constexpr std::string_view kDeleteConnection = "DELETE FROM _rivet_conns WHERE conn_id = ?";

constexpr std::string_view kLoadRuntime =
    "SELECT last_pushed_alarm, inspector_token, queue_next_id FROM _rivet_runtime WHERE id = 1";
constexpr std::string_view kUpsertAlarm =
    "INSERT INTO _rivet_runtime (id, last_pushed_alarm, inspector_token, queue_next_id) "
    "VALUES (1, ?, NULL, 1) ON CONFLICT(id) DO UPDATE SET "
    "last_pushed_alarm = excluded.last_pushed_alarm";
constexpr std::string_view kUpsertToken =
    "INSERT INTO _rivet_runtime (id, last_pushed_alarm, inspector_token, queue_next_id) "
    "VALUES (1, NULL, ?, 1) ON CONFLICT(id) DO UPDATE SET "
    "inspector_token = excluded.inspector_token";
constexpr std::string_view kUpsertQueueNextId =
    "INSERT INTO _rivet_runtime (id, last_pushed_alarm, inspector_token, queue_next_id) "
    "VALUES (1, NULL, NULL, ?) ON CONFLICT(id) DO UPDATE SET "
    "queue_next_id = excluded.queue_next_id";

constexpr std::string_view kQueueStats = "SELECT COUNT(*), MAX(id) FROM _rivet_queue";
constexpr std::string_view kLoadQueue =
    "SELECT id, name, body, created_at FROM _rivet_queue ORDER BY id";
constexpr std::string_view kLoadQueueMessage =
    "SELECT id, name, body, created_at FROM _rivet_queue WHERE id = ?";
constexpr std::string_view kInsertQueueMessage =
    "INSERT OR REPLACE INTO _rivet_queue (id, name, body, created_at) VALUES (?, ?, ?, ?)";
constexpr std::string_view kDeleteQueueMessage = "DELETE FROM _rivet_queue WHERE id = ?";

constexpr std::string_view kGetUserKv = "SELECT value FROM _rivet_user_kv WHERE key = ?";
constexpr std::string_view kUpsertUserKv =
    "INSERT INTO _rivet_user_kv (key, value) VALUES (?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value";
constexpr std::string_view kDeleteUserKv = "DELETE FROM _rivet_user_kv WHERE key = ?";
constexpr std::string_view kDeleteUserKvRange =
    "DELETE FROM _rivet_user_kv WHERE key >= ? AND key < ?";
constexpr std::string_view kUpsertWorkflowKv =
    "INSERT INTO _rivet_wf_kv (key, value) VALUES (?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value";

// Upstream's per-value limits for the user KV API (the engine's own key limit, 128 KiB values).
constexpr std::size_t kUserKvKeyLimit = 2048;
constexpr std::size_t kUserKvValueLimit = 128 * 1024;

// The smallest key greater than every key starting with `prefix`; nullopt if there is none.
std::optional<Bytes> prefix_end(BytesView prefix) {
    Bytes end(prefix.begin(), prefix.end());
    while (!end.empty()) {
        if (end.back() != 0xff) {
            ++end.back();
            return end;
        }
        end.pop_back();
    }
    return std::nullopt;
}

Result<std::optional<Bytes>> read_actor(Session& s, std::string_view actor_id,
                                        std::optional<SqliteActorStore::ActorColdRows>& cold) {
    auto found = s.query(std::string(kLoadActor));
    if (!found.ok())
        return std::move(found).error();
    if (found.value().rows.empty())
        return std::optional<Bytes>();
    auto listed = s.query(std::string(kLoadOneShots));
    if (!listed.ok())
        return std::move(listed).error();
    RIVETKIT_TRY(actor, storage::actor_from_rows(actor_id, found.value().rows.front(),
                                                 listed.value().rows));
    auto recurring = s.query(std::string(kCountRecurring));
    if (recurring.ok() && !recurring.value().rows.empty()) {
        const Row& row = recurring.value().rows.front();
        const auto* n = row.empty() ? nullptr : std::get_if<std::int64_t>(&row[0]);
        if (n != nullptr && *n > 0)
            log::warn("actor has recurring schedules this host does not run; they are kept",
                      {{"actor_id", actor_id}, {"count", *n}});
    }
    cold = SqliteActorStore::ActorColdRows{actor.input, actor.has_initialized,
                                           actor.scheduled_events};
    return std::optional<Bytes>(encode_persisted_actor(actor));
}

Status write_actor(Session& s, const PersistedActor& actor,
                   const std::optional<SqliteActorStore::ActorColdRows>& cold) {
    if (!cold || cold->input != actor.input || cold->has_initialized != actor.has_initialized) {
        if (Status st = run(s, kUpsertActor,
                            {Value(std::int64_t{actor.has_initialized ? 1 : 0}),
                             opt_blob_value(actor.input)});
            !st.ok())
            return st;
    }
    if (Status st = run(s, kUpsertState, {blob_value(actor.state)}); !st.ok())
        return st;
    if (!cold || cold->events != actor.scheduled_events) {
        if (Status st = run(s, kDeleteOneShots); !st.ok())
            return st;
        for (const auto& e : actor.scheduled_events) {
            if (Status st = run(s, kInsertOneShot,
                                {text_value(e.event_id), Value(e.timestamp),
                                 text_value(e.action), opt_blob_value(e.args)});
                !st.ok())
                return st;
        }
    }
    return Status{};
}

Status write_connection(Session& s, const PersistedConnection& conn) {
    if (Status st = run(s, kInsertConnection,
                        {text_value(conn.id), blob_value(conn.parameters),
                         blob_value(conn.gateway_id), blob_value(conn.request_id),
                         text_value(conn.request_path), Value(storage::request_headers_cbor(conn))});
        !st.ok())
        return st;
    return run(s, kUpsertConnectionState,
               {text_value(conn.id), blob_value(conn.state),
                Value(std::int64_t{conn.server_message_index}),
                Value(std::int64_t{conn.client_message_index}),
                Value(storage::subscriptions_cbor(conn))});
}

Status delete_connection(Session& s, std::string_view id) {
    if (Status st = run(s, kDeleteConnectionState, {text_value(id)}); !st.ok())
        return st;
    return run(s, kDeleteConnection, {text_value(id)});
}

Result<std::vector<KvEntry>> read_connections(Session& s, std::string_view actor_id) {
    auto found = s.query(std::string(kLoadConnections) + " ORDER BY c.conn_id");
    if (!found.ok())
        return std::move(found).error();
    std::vector<KvEntry> out;
    for (const Row& row : found.value().rows) {
        RIVETKIT_TRY(conn, storage::connection_from_row(actor_id, row));
        out.emplace_back(keys::connection_key(conn.id), encode_persisted_connection(conn));
    }
    return out;
}

Result<std::optional<Bytes>> read_connection(Session& s, std::string_view actor_id,
                                             std::string_view id) {
    auto found = s.query(std::string(kLoadConnections) + " WHERE c.conn_id = ?", {text_value(id)});
    if (!found.ok())
        return std::move(found).error();
    if (found.value().rows.empty())
        return std::optional<Bytes>();
    RIVETKIT_TRY(conn, storage::connection_from_row(actor_id, found.value().rows.front()));
    return std::optional<Bytes>(encode_persisted_connection(conn));
}

using storage::RuntimeRow;

Result<std::optional<RuntimeRow>> read_runtime(Session& s, std::string_view actor_id) {
    auto found = s.query(std::string(kLoadRuntime));
    if (!found.ok())
        return std::move(found).error();
    if (found.value().rows.empty())
        return std::optional<RuntimeRow>();
    RIVETKIT_TRY(runtime, storage::runtime_from_row(actor_id, found.value().rows.front()));
    return std::optional<RuntimeRow>(std::move(runtime));
}

Result<std::optional<Bytes>> read_queue_metadata(Session& s, std::string_view actor_id) {
    RIVETKIT_TRY(runtime, read_runtime(s, actor_id));
    auto stats = s.query(std::string(kQueueStats));
    if (!stats.ok())
        return std::move(stats).error();
    const Row none;
    RIVETKIT_TRY(meta, storage::queue_metadata_from(
                           actor_id, runtime,
                           stats.value().rows.empty() ? none : stats.value().rows.front()));
    if (!meta)
        return std::optional<Bytes>();
    return std::optional<Bytes>(encode_queue_metadata(*meta));
}

Result<KvEntry> queue_entry(const Row& row, std::string_view actor_id) {
    RIVETKIT_TRY(queued, storage::queue_message_from_row(actor_id, row));
    return KvEntry(keys::queue_message_key(queued.id), encode_queue_message(queued.message));
}

Status write_queue_message(Session& s, std::string_view actor_id, std::uint64_t id,
                           BytesView value) {
    auto decoded = decode_queue_message(value);
    if (!decoded.ok())
        return std::move(decoded).error();
    const auto& m = decoded.value();
    if (m.failure_count || m.available_at || m.in_flight || m.in_flight_at)
        return persisted_error(actor_id,
                               "queue message " + std::to_string(id) +
                                   " carries retry, delay or in-flight state that the SQLite "
                                   "queue cannot keep",
                               {{"table", "_rivet_queue"}, {"id", id}});
    if (id > static_cast<std::uint64_t>(INT64_MAX))
        return persisted_error(actor_id, "queue message id beyond SQLite's integer range",
                               {{"table", "_rivet_queue"}});
    return run(s, kInsertQueueMessage,
               {Value(static_cast<std::int64_t>(id)), text_value(m.name), blob_value(m.body),
                Value(m.created_at)});
}

Status check_user_kv(BytesView key, BytesView value) {
    if (key.size() > kUserKvKeyLimit)
        return Error("kv", "key_too_large",
                     "KV key too large (" + std::to_string(key.size()) + " > " +
                         std::to_string(kUserKvKeyLimit) + " bytes)");
    if (value.size() > kUserKvValueLimit)
        return Error("kv", "value_too_large",
                     "KV value too large (" + std::to_string(value.size()) + " > " +
                         std::to_string(kUserKvValueLimit) + " bytes)");
    return Status{};
}

Result<std::vector<KvEntry>> list_user_kv(Session& s, std::string_view actor_id, BytesView start,
                                          std::optional<Bytes> end, const ListOpts& opts) {
    std::string sql = "SELECT key, value FROM _rivet_user_kv WHERE key >= ?";
    std::vector<Value> params{blob_value(start)};
    if (end) {
        sql += " AND key < ?";
        params.emplace_back(std::in_place_type<Bytes>, *end);
    }
    sql += opts.reverse ? " ORDER BY key DESC" : " ORDER BY key ASC";
    if (opts.limit) {
        sql += " LIMIT ?";
        params.emplace_back(std::in_place_type<std::int64_t>, static_cast<std::int64_t>(*opts.limit));
    }
    auto found = s.query(sql, params);
    if (!found.ok())
        return std::move(found).error();
    std::vector<KvEntry> out;
    out.reserve(found.value().rows.size());
    for (const Row& row : found.value().rows) {
        RIVETKIT_TRY(entry, storage::user_kv_from_row(actor_id, row));
        out.push_back(std::move(entry));
    }
    return out;
}

// One record read, by key.
Result<std::optional<Bytes>> get_record(Session& s, std::string_view actor_id, BytesView key,
                                        std::optional<SqliteActorStore::ActorColdRows>& cold) {
    switch (classify(key)) {
        case RecordKind::Actor:
            return read_actor(s, actor_id, cold);
        case RecordKind::Connection:
            return read_connection(s, actor_id, text_of(key.subspan(1)));
        case RecordKind::InspectorToken: {
            RIVETKIT_TRY(runtime, read_runtime(s, actor_id));
            if (!runtime || !runtime->inspector_token)
                return std::optional<Bytes>();
            return std::optional<Bytes>(to_bytes(*runtime->inspector_token));
        }
        case RecordKind::LastPushedAlarm: {
            RIVETKIT_TRY(runtime, read_runtime(s, actor_id));
            if (!runtime || !runtime->last_pushed_alarm)
                return std::optional<Bytes>();
            return std::optional<Bytes>(encode_last_pushed_alarm(runtime->last_pushed_alarm));
        }
        case RecordKind::UserKv: {
            auto found = s.query(std::string(kGetUserKv), {blob_value(key)});
            if (!found.ok())
                return std::move(found).error();
            if (found.value().rows.empty())
                return std::optional<Bytes>();
            RIVETKIT_TRY(value, blob_column(actor_id, "_rivet_user_kv", found.value().rows.front()));
            return std::optional<Bytes>(std::move(value));
        }
        case RecordKind::QueueMetadata:
            return read_queue_metadata(s, actor_id);
        case RecordKind::QueueMessage: {
            auto id = *keys::decode_queue_message_key(key);
            auto found = s.query(std::string(kLoadQueueMessage),
                                 {Value(static_cast<std::int64_t>(id))});
            if (!found.ok())
                return std::move(found).error();
            if (found.value().rows.empty())
                return std::optional<Bytes>();
            RIVETKIT_TRY(entry, queue_entry(found.value().rows.front(), actor_id));
            return std::optional<Bytes>(std::move(entry.second));
        }
        default:
            return unmapped(actor_id, "get", key);
    }
}

// One record write. A put of [1] leaves the new cold rows in `written`.
Status put_record(Session& s, std::string_view actor_id, BytesView key, BytesView value,
                  const std::optional<SqliteActorStore::ActorColdRows>& cold,
                  std::optional<SqliteActorStore::ActorColdRows>& written) {
    switch (classify(key)) {
        case RecordKind::Actor: {
            auto actor = decode_persisted_actor(value);
            if (!actor.ok())
                return std::move(actor).error();
            if (Status st = write_actor(s, actor.value(), written ? written : cold); !st.ok())
                return st;
            written = SqliteActorStore::ActorColdRows{actor.value().input,
                                                      actor.value().has_initialized,
                                                      actor.value().scheduled_events};
            return Status{};
        }
        case RecordKind::Connection: {
            auto conn = decode_persisted_connection(value);
            if (!conn.ok())
                return std::move(conn).error();
            return write_connection(s, conn.value());
        }
        case RecordKind::InspectorToken:
            return run(s, kUpsertToken, {text_value(text_of(value))});
        case RecordKind::LastPushedAlarm: {
            auto alarm = decode_last_pushed_alarm(value);
            if (!alarm.ok())
                return std::move(alarm).error();
            return run(s, kUpsertAlarm,
                       {alarm.value() ? Value(*alarm.value()) : Value(std::monostate{})});
        }
        case RecordKind::UserKv:
            if (Status st = check_user_kv(key, value); !st.ok())
                return st;
            return run(s, kUpsertUserKv, {blob_value(key), blob_value(value)});
        case RecordKind::QueueMetadata: {
            auto meta = decode_queue_metadata(value);
            if (!meta.ok())
                return std::move(meta).error();
            if (meta.value().next_id > static_cast<std::uint64_t>(INT64_MAX))
                return persisted_error(actor_id, "queue next id beyond SQLite's integer range",
                                       {{"table", "_rivet_runtime"}});
            return run(s, kUpsertQueueNextId,
                       {Value(static_cast<std::int64_t>(meta.value().next_id))});
        }
        case RecordKind::QueueMessage:
            return write_queue_message(s, actor_id, *keys::decode_queue_message_key(key), value);
        default:
            return unmapped(actor_id, "put", key);
    }
}

Status delete_record(Session& s, std::string_view actor_id, BytesView key) {
    switch (classify(key)) {
        case RecordKind::Connection:
            return delete_connection(s, text_of(key.subspan(1)));
        case RecordKind::UserKv:
            return run(s, kDeleteUserKv, {blob_value(key)});
        case RecordKind::QueueMessage:
            return run(s, kDeleteQueueMessage,
                       {Value(static_cast<std::int64_t>(*keys::decode_queue_message_key(key)))});
        case RecordKind::InspectorToken:
            return run(s, "UPDATE _rivet_runtime SET inspector_token = NULL WHERE id = 1");
        case RecordKind::LastPushedAlarm:
            return run(s, "UPDATE _rivet_runtime SET last_pushed_alarm = NULL WHERE id = 1");
        default:
            return unmapped(actor_id, "delete", key);
    }
}

bool in_user_space(BytesView key) {
    return !key.empty() && key[0] == keys::kUserKvPrefix[0];
}

// A range over user KV: from a key in [4]... up to one in [4]... or to [5] (the space's end).
bool user_range(BytesView start, BytesView end) {
    const Bytes space_end{static_cast<std::uint8_t>(keys::kUserKvPrefix[0] + 1)};
    return in_user_space(start) && (in_user_space(end) || std::ranges::equal(end, space_end));
}

// MARK: legacy import

constexpr std::uint32_t kLegacyScanPage = 256;

struct ImportCounts {
    std::size_t actor = 0;
    std::size_t connections = 0;
    std::size_t queue = 0;
    std::size_t user_kv = 0;
    std::size_t workflow = 0;
    std::size_t skipped = 0;
    std::size_t bytes = 0;
};

// Writes one page of legacy entries into the tables. `queue_next_id` collects the queue's next id.
Status import_page(Session& s, std::string_view actor_id, const std::vector<KvEntry>& page,
                   std::int64_t& queue_next_id, ImportCounts& counts) {
    std::optional<SqliteActorStore::ActorColdRows> none;
    std::optional<SqliteActorStore::ActorColdRows> written;
    auto named = [&](const Error& e, std::string_view what) {
        return persisted_error(actor_id,
                               "legacy KV import: " + std::string(what) + ": " + e.message(),
                               {{"record", what}, {"cause", e.id()}});
    };
    for (const auto& [key, value] : page) {
        counts.bytes += key.size() + value.size();
        const BytesView k(key);
        if (k.size() == 1 && k[0] == 1) {
            if (Status st = put_record(s, actor_id, k, value, none, written); !st.ok())
                return named(st.error(), "[1] actor");
            ++counts.actor;
        } else if (k.size() == 1 && k[0] == 3) {
            if (Status st = put_record(s, actor_id, k, value, none, written); !st.ok())
                return named(st.error(), "[3] inspector token");
        } else if (k.size() == 1 && k[0] == 6) {
            if (Status st = put_record(s, actor_id, k, value, none, written); !st.ok())
                return named(st.error(), "[6] last pushed alarm");
        } else if (k.size() > 1 && k[0] == keys::kConnPrefix[0]) {
            if (Status st = put_record(s, actor_id, k, value, none, written); !st.ok())
                return named(st.error(), "[2] connection " + text_of(k.subspan(1)));
            ++counts.connections;
        } else if (std::ranges::equal(k, keys::kQueueMetadata)) {
            auto meta = decode_queue_metadata(value);
            if (!meta.ok())
                return named(meta.error(), "[5,1,1] queue metadata");
            queue_next_id = std::max(
                queue_next_id,
                static_cast<std::int64_t>(std::min<std::uint64_t>(meta.value().next_id, INT64_MAX)));
        } else if (auto id = keys::decode_queue_message_key(k)) {
            if (Status st = write_queue_message(s, actor_id, *id, value); !st.ok())
                return named(st.error(), "[5,1,2] queue message " + std::to_string(*id));
            queue_next_id = std::max(queue_next_id,
                                     static_cast<std::int64_t>(std::min<std::uint64_t>(
                                         *id + 1, INT64_MAX)));
            ++counts.queue;
        } else if (k.size() >= 1 && k[0] == keys::kUserKvPrefix[0]) {
            if (Status st = run(s, kUpsertUserKv, {blob_value(k), blob_value(value)}); !st.ok())
                return st;
            ++counts.user_kv;
        } else if (starts_with(k, keys::kWorkflowStoragePrefix)) {
            if (Status st = run(s, kUpsertWorkflowKv, {blob_value(k), blob_value(value)});
                !st.ok())
                return st;
            ++counts.workflow;
        } else if (!k.empty() && (k[0] == 0 || k[0] >= 8)) {
            // This project's user KV before it kept keys under [4]: the user key was the raw key.
            Bytes user = keys::user_key(k);
            if (Status st = run(s, kUpsertUserKv, {Value(std::move(user)), blob_value(value)});
                !st.ok())
                return st;
            ++counts.user_kv;
        } else {
            ++counts.skipped;  // traces [7,1], and nothing else this host or upstream writes
        }
    }
    return Status{};
}

constexpr std::string_view kClearImported[] = {
    "DELETE FROM _rivet_conn_state", "DELETE FROM _rivet_conns",
    "DELETE FROM _rivet_schedule_events", "DELETE FROM _rivet_actor_state",
    "DELETE FROM _rivet_actor", "DELETE FROM _rivet_queue",
    "DELETE FROM _rivet_wf_kv", "DELETE FROM _rivet_user_kv",
    "DELETE FROM _rivet_runtime",
};

}  // namespace

// MARK: SqliteActorStore

struct SqliteActorStore::Prepare {
    bool running = false;
    std::optional<Status> outcome;
    rt::Notify done;
};

SqliteActorStore::SqliteActorStore(SharedString actor_id, std::shared_ptr<ActorSqlite> sqlite,
                                   std::shared_ptr<KvBackend> legacy)
    : actor_id_(std::move(actor_id)),
      sqlite_(std::move(sqlite)),
      legacy_(std::move(legacy)),
      prepare_(std::make_shared<Prepare>()) {}

Task<Status> SqliteActorStore::prepare() {
    auto state = prepare_;
    while (state->running)
        co_await state->done.notified();
    if (state->outcome && state->outcome->ok())
        co_return Status{};
    state->running = true;
    Status outcome = co_await prepare_once();
    state->running = false;
    state->outcome = outcome;
    state->done.notify_waiters();
    if (!outcome.ok())
        log::error("actor storage could not be prepared",
                   {{"actor_id", actor_id_}, {"error", outcome.error().to_string()}});
    co_return outcome;
}

Task<Status> SqliteActorStore::prepare_once() {
    auto opened = co_await sqlite_->database();
    if (!opened.ok())
        co_return std::move(opened).error();
    auto db = std::move(opened).value();
    std::optional<std::string> import_state;
    Status schema = co_await db->transaction([&](Session& s) -> Status {
        auto found = ensure_schema(s, actor_id_);
        if (!found.ok())
            return std::move(found).error();
        import_state = std::move(found).value();
        return Status{};
    });
    if (!schema.ok())
        co_return schema;
    if (import_state == kImportDone)
        co_return Status{};
    if (import_state && *import_state != kImportImporting)
        co_return persisted_error(actor_id_,
                                  "unknown legacy KV import state '" + *import_state + "'",
                                  {{"table", "_rivet_meta"}, {"found", *import_state}});
    co_return co_await import_legacy(std::move(db), import_state.has_value());
}

Task<Status> SqliteActorStore::import_legacy(std::shared_ptr<sqlite::Database> db, bool retry) {
    // One scan of the actor's whole legacy keyspace, a page at a time; a fresh actor costs one
    // empty page.
    const Bytes scan_end{0xff, 0xff, 0xff, 0xff};
    Bytes cursor{0x00};
    bool first_page = true;
    bool started = retry;
    ImportCounts counts;
    std::int64_t queue_next_id = 1;
    for (;;) {
        auto page = co_await legacy_->list_range(cursor, scan_end,
                                                 ListOpts{false, kLegacyScanPage});
        if (!page.ok())
            co_return std::move(page).error();
        auto entries = std::move(page).value();
        if (first_page && entries.empty() && !retry)
            break;
        first_page = false;
        if (!started) {
            log::info("legacy KV import started", {{"actor_id", actor_id_}});
            Status marked = co_await db->transaction([&](Session& s) {
                return store_meta(s, kImportStateKey, Value(to_bytes(kImportImporting)));
            });
            if (!marked.ok())
                co_return marked;
            started = true;
        }
        if (cursor == Bytes{0x00}) {
            if (retry)
                log::warn("retrying an interrupted legacy KV import", {{"actor_id", actor_id_}});
            Status cleared = co_await db->transaction([&](Session& s) -> Status {
                for (std::string_view sql : kClearImported) {
                    if (Status st = run(s, sql); !st.ok())
                        return st;
                }
                return Status{};
            });
            if (!cleared.ok())
                co_return cleared;
        }
        if (entries.empty())
            break;
        Status written = co_await db->transaction([&](Session& s) {
            return import_page(s, actor_id_, entries, queue_next_id, counts);
        });
        if (!written.ok()) {
            log::error("legacy KV import failed", {{"actor_id", actor_id_},
                                                   {"error", written.error().to_string()}});
            co_return written;
        }
        if (entries.size() < kLegacyScanPage)
            break;
        cursor = entries.back().first;
        cursor.push_back(0x00);  // the next key after the last one listed
    }
    Status finished = co_await db->transaction([&](Session& s) -> Status {
        if (started) {
            if (Status st = run(s, kUpsertQueueNextId, {Value(queue_next_id)}); !st.ok())
                return st;
        }
        return store_meta(s, kImportStateKey, Value(to_bytes(kImportDone)));
    });
    if (!finished.ok())
        co_return finished;
    if (started) {
        log::info("legacy KV import completed",
                  {{"actor_id", actor_id_},
                   {"actor_records", counts.actor},
                   {"connections", counts.connections},
                   {"queue_messages", counts.queue},
                   {"user_kv", counts.user_kv},
                   {"workflow_kv", counts.workflow},
                   {"skipped", counts.skipped},
                   {"bytes", counts.bytes}});
    }
    co_return Status{};
}

Task<Result<std::shared_ptr<sqlite::Database>>> SqliteActorStore::ready() {
    if (Status prepared = co_await prepare(); !prepared.ok())
        co_return std::move(prepared).error();
    co_return co_await sqlite_->database();
}

Task<Result<std::vector<std::optional<Bytes>>>> SqliteActorStore::batch_get(
    std::vector<Bytes> keys) {
    auto db = co_await ready();
    if (!db.ok())
        co_return std::move(db).error();
    std::vector<std::optional<Bytes>> out;
    std::optional<ActorColdRows> cold;  // set by a read of [1]
    const std::uint64_t version = cold_version_;
    Status read = co_await db.value()->transaction([&](Session& s) -> Status {
        out.clear();
        for (const auto& key : keys) {
            auto value = get_record(s, actor_id_, key, cold);
            if (!value.ok())
                return std::move(value).error();
            out.push_back(std::move(value).value());
        }
        return Status{};
    });
    if (!read.ok())
        co_return std::move(read).error();
    // A write that finished while this read waited for the database knows better (the chaos
    // runner saw a read put back schedule rows a save had just removed; the next save, finding
    // them "unchanged", left them in the database and the events fired again after a restart).
    if (cold && cold_version_ == version) {
        cold_ = std::move(cold);
        ++cold_version_;
    }
    co_return out;
}

Task<Status> SqliteActorStore::batch_put(std::vector<KvEntry> entries) {
    co_return co_await apply_batch(std::move(entries), {});
}

Task<Status> SqliteActorStore::batch_delete(std::vector<Bytes> keys) {
    co_return co_await apply_batch({}, std::move(keys));
}

Task<Status> SqliteActorStore::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) {
    auto db = co_await ready();
    if (!db.ok())
        co_return std::move(db).error();
    std::optional<ActorColdRows> written;
    const std::optional<ActorColdRows> cold = cold_;
    Status applied = co_await db.value()->transaction([&](Session& s) -> Status {
        written.reset();
        for (const auto& key : deletes) {
            if (Status st = delete_record(s, actor_id_, key); !st.ok())
                return st;
        }
        for (const auto& [key, value] : puts) {
            if (Status st = put_record(s, actor_id_, key, value, cold, written); !st.ok())
                return st;
        }
        return Status{};
    });
    if (!applied.ok()) {
        // What the rows hold is unknown after a failed commit: the next save writes them all.
        cold_.reset();
        ++cold_version_;
        co_return applied;
    }
    if (written) {
        cold_ = std::move(written);
        ++cold_version_;
    }
    // The dashboard reads the inspector token through the engine's actor-KV API, so a new token
    // is mirrored to [3] there too (as upstream does).
    for (auto& entry : puts) {
        if (classify(entry.first) == RecordKind::InspectorToken) {
            std::vector<KvEntry> mirror;
            mirror.push_back(std::move(entry));
            Status mirrored = co_await legacy_->batch_put(std::move(mirror));
            if (!mirrored.ok())
                co_return mirrored;
        }
    }
    co_return Status{};
}

Task<Status> SqliteActorStore::delete_range(Bytes start, Bytes end) {
    if (!user_range(start, end))
        co_return unmapped(actor_id_, "delete_range", start);
    auto db = co_await ready();
    if (!db.ok())
        co_return std::move(db).error();
    co_return co_await db.value()->transaction([&](Session& s) {
        return run(s, kDeleteUserKvRange, {Value(start), Value(end)});
    });
}

Task<Result<std::vector<KvEntry>>> SqliteActorStore::list_prefix(Bytes prefix, ListOpts opts) {
    const RecordKind kind = classify(prefix);
    if (kind != RecordKind::ConnectionPrefix && kind != RecordKind::QueueMessagePrefix &&
        !in_user_space(prefix))
        co_return unmapped(actor_id_, "list_prefix", prefix);
    auto db = co_await ready();
    if (!db.ok())
        co_return std::move(db).error();
    std::vector<KvEntry> out;
    Status listed = co_await db.value()->transaction([&](Session& s) -> Status {
        Result<std::vector<KvEntry>> found = std::vector<KvEntry>{};
        if (kind == RecordKind::ConnectionPrefix) {
            found = read_connections(s, actor_id_);
        } else if (kind == RecordKind::QueueMessagePrefix) {
            auto rows = s.query(std::string(kLoadQueue));
            if (!rows.ok())
                return std::move(rows).error();
            std::vector<KvEntry> entries;
            for (const Row& row : rows.value().rows) {
                auto entry = queue_entry(row, actor_id_);
                if (!entry.ok())
                    return std::move(entry).error();
                entries.push_back(std::move(entry).value());
            }
            found = std::move(entries);
        } else {
            found = list_user_kv(s, actor_id_, prefix, prefix_end(prefix), opts);
        }
        if (!found.ok())
            return std::move(found).error();
        out = std::move(found).value();
        return Status{};
    });
    if (!listed.ok())
        co_return std::move(listed).error();
    if (kind != RecordKind::UserKv) {
        if (opts.reverse)
            std::reverse(out.begin(), out.end());
        if (opts.limit && out.size() > *opts.limit)
            out.resize(*opts.limit);
    }
    co_return out;
}

Task<Result<std::vector<KvEntry>>> SqliteActorStore::list_range(Bytes start, Bytes end,
                                                                ListOpts opts) {
    if (!user_range(start, end))
        co_return unmapped(actor_id_, "list_range", start);
    auto db = co_await ready();
    if (!db.ok())
        co_return std::move(db).error();
    std::vector<KvEntry> out;
    Status listed = co_await db.value()->transaction([&](Session& s) -> Status {
        auto found = list_user_kv(s, actor_id_, start, end, opts);
        if (!found.ok())
            return std::move(found).error();
        out = std::move(found).value();
        return Status{};
    });
    if (!listed.ok())
        co_return std::move(listed).error();
    co_return out;
}

// MARK: UserKv

namespace {

Bytes prefixed(BytesView key) {
    return keys::user_key(key);
}

std::vector<KvEntry> unprefixed(std::vector<KvEntry> entries) {
    for (auto& [key, value] : entries)
        key.erase(key.begin(), key.begin() + static_cast<std::ptrdiff_t>(keys::kUserKvPrefix.size()));
    return entries;
}

// The end of the whole user space, for a range with no upper bound.
Bytes user_space_end() {
    return Bytes{static_cast<std::uint8_t>(keys::kUserKvPrefix[0] + 1)};
}

}  // namespace

Task<Result<std::vector<std::optional<Bytes>>>> UserKv::batch_get(std::vector<Bytes> keys) {
    for (auto& key : keys)
        key = prefixed(key);
    co_return co_await inner_->batch_get(std::move(keys));
}

Task<Status> UserKv::batch_put(std::vector<KvEntry> entries) {
    for (auto& entry : entries)
        entry.first = prefixed(entry.first);
    co_return co_await inner_->batch_put(std::move(entries));
}

Task<Status> UserKv::batch_delete(std::vector<Bytes> keys) {
    for (auto& key : keys)
        key = prefixed(key);
    co_return co_await inner_->batch_delete(std::move(keys));
}

Task<Status> UserKv::delete_range(Bytes start, Bytes end) {
    Bytes upper = end.empty() ? user_space_end() : prefixed(end);
    co_return co_await inner_->delete_range(prefixed(start), std::move(upper));
}

Task<Result<std::vector<KvEntry>>> UserKv::list_prefix(Bytes prefix, ListOpts opts) {
    auto listed = co_await inner_->list_prefix(prefixed(prefix), opts);
    if (!listed.ok())
        co_return std::move(listed).error();
    co_return unprefixed(std::move(listed).value());
}

Task<Result<std::vector<KvEntry>>> UserKv::list_range(Bytes start, Bytes end, ListOpts opts) {
    Bytes upper = end.empty() ? user_space_end() : prefixed(end);
    auto listed = co_await inner_->list_range(prefixed(start), std::move(upper), opts);
    if (!listed.ok())
        co_return std::move(listed).error();
    co_return unprefixed(std::move(listed).value());
}

Task<Status> UserKv::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) {
    for (auto& entry : puts)
        entry.first = prefixed(entry.first);
    for (auto& key : deletes)
        key = prefixed(key);
    co_return co_await inner_->apply_batch(std::move(puts), std::move(deletes));
}

}  // namespace rivetkit::core

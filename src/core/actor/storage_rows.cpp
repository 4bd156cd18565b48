#include "core/actor/storage_rows.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/cbor.hpp"

namespace rivetkit::core::storage {

namespace {

// Column readers: a row of the wrong shape is an error naming the table and column.
struct Columns {
    std::string_view actor_id;
    std::string_view table;

    Error bad(std::string_view column, std::string_view expected) const {
        return persisted_error(actor_id,
                               "internal storage row of " + std::string(table) + ": column " +
                                   std::string(column) + " is not " + std::string(expected),
                               {{"table", table}, {"column", column}});
    }
    Result<std::int64_t> integer(const Row& row, std::size_t i, std::string_view column) const {
        if (i < row.size()) {
            if (const auto* v = std::get_if<std::int64_t>(&row[i]))
                return *v;
        }
        return bad(column, "an integer");
    }
    Result<std::optional<std::int64_t>> opt_integer(const Row& row, std::size_t i,
                                                    std::string_view column) const {
        if (i >= row.size() || std::holds_alternative<std::monostate>(row[i]))
            return std::optional<std::int64_t>();
        if (const auto* v = std::get_if<std::int64_t>(&row[i]))
            return std::optional<std::int64_t>(*v);
        return bad(column, "an integer or NULL");
    }
    Result<std::string> text(const Row& row, std::size_t i, std::string_view column) const {
        if (i < row.size()) {
            if (const auto* v = std::get_if<std::string>(&row[i]))
                return *v;
        }
        return bad(column, "text");
    }
    Result<std::optional<std::string>> opt_text(const Row& row, std::size_t i,
                                                std::string_view column) const {
        if (i >= row.size() || std::holds_alternative<std::monostate>(row[i]))
            return std::optional<std::string>();
        if (const auto* v = std::get_if<std::string>(&row[i]))
            return std::optional<std::string>(*v);
        return bad(column, "text or NULL");
    }
    // NULL reads as empty, as upstream's reader does.
    Result<Bytes> blob(const Row& row, std::size_t i, std::string_view column) const {
        if (i < row.size()) {
            if (const auto* v = std::get_if<Bytes>(&row[i]))
                return *v;
            if (std::holds_alternative<std::monostate>(row[i]))
                return Bytes{};
        }
        return bad(column, "a blob");
    }
    Result<std::optional<Bytes>> opt_blob(const Row& row, std::size_t i,
                                          std::string_view column) const {
        if (i >= row.size() || std::holds_alternative<std::monostate>(row[i]))
            return std::optional<Bytes>();
        if (const auto* v = std::get_if<Bytes>(&row[i]))
            return std::optional<Bytes>(*v);
        return bad(column, "a blob or NULL");
    }
};

#define RIVETKIT_TRY(var, expr)                 \
    auto var##_result = (expr);                 \
    if (!var##_result.ok())                     \
        return std::move(var##_result).error(); \
    auto var = std::move(var##_result).value()

Bytes cbor_of(const nlohmann::json& value) {
    auto out = nlohmann::json::to_cbor(value);
    return Bytes(out.begin(), out.end());
}

}  // namespace

Error persisted_error(std::string_view actor_id, std::string message,
                      const std::map<std::string, nlohmann::json>& found) {
    nlohmann::json metadata = {{"actorId", actor_id}};
    for (const auto& [k, v] : found)
        metadata[k] = v;
    return Error("protocol", "invalid_persisted_data", std::move(message), metadata.dump());
}

Result<std::int64_t> schema_version(std::string_view actor_id, BytesView value) {
    if (value.size() != 8)
        return persisted_error(actor_id, "internal storage schema_version is not an 8-byte integer",
                               {{"table", "_rivet_meta"}, {"bytes", value.size()}});
    std::uint64_t raw = 0;
    for (std::size_t i = 8; i-- > 0;)
        raw = (raw << 8) | value[i];
    return static_cast<std::int64_t>(raw);
}

Bytes encode_schema_version(std::int64_t version) {
    Bytes out(8);
    for (std::size_t i = 0; i < 8; ++i)
        out[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(version) >> (8 * i));
    return out;
}

Result<proto::persist_v4::Actor> actor_from_rows(std::string_view actor_id, const Row& row,
                                                 const std::vector<Row>& one_shots) {
    const Columns actor_cols{actor_id, "_rivet_actor"};
    RIVETKIT_TRY(initialized, actor_cols.integer(row, 0, "has_initialized"));
    if (initialized != 0 && initialized != 1)
        return actor_cols.bad("has_initialized", "0 or 1");
    proto::persist_v4::Actor actor;
    actor.has_initialized = initialized == 1;
    RIVETKIT_TRY(input, actor_cols.opt_blob(row, 1, "input"));
    actor.input = std::move(input);
    RIVETKIT_TRY(state, (Columns{actor_id, "_rivet_actor_state"}.blob(row, 2, "state")));
    actor.state = std::move(state);
    const Columns events{actor_id, "_rivet_schedule_events"};
    for (const Row& e : one_shots) {
        proto::persist_v4::ScheduleEvent event;
        RIVETKIT_TRY(id, events.text(e, 0, "event_id"));
        RIVETKIT_TRY(at, events.integer(e, 1, "trigger_at"));
        RIVETKIT_TRY(action, events.text(e, 2, "action"));
        RIVETKIT_TRY(args, events.opt_blob(e, 3, "args"));
        event.event_id = std::move(id);
        event.timestamp = at;
        event.action = std::move(action);
        event.args = std::move(args);
        actor.scheduled_events.push_back(std::move(event));
    }
    return actor;
}

Result<proto::persist_v4::Conn> connection_from_row(std::string_view actor_id, const Row& row) {
    const Columns cols{actor_id, "_rivet_conns"};
    proto::persist_v4::Conn conn;
    RIVETKIT_TRY(id, cols.text(row, 0, "conn_id"));
    conn.id = std::move(id);
    RIVETKIT_TRY(parameters, cols.blob(row, 1, "parameters"));
    conn.parameters = std::move(parameters);
    RIVETKIT_TRY(state, cols.blob(row, 2, "state"));
    conn.state = std::move(state);
    RIVETKIT_TRY(subscriptions, cols.blob(row, 3, "subscriptions"));
    auto subs = parse_cbor_or_discarded(subscriptions);
    if (subs.is_discarded() || !subs.is_array())
        return cols.bad("subscriptions", "a CBOR array of event names");
    for (const auto& name : subs) {
        if (!name.is_string())
            return cols.bad("subscriptions", "a CBOR array of event names");
        conn.subscriptions.push_back({name.get<std::string>()});
    }
    RIVETKIT_TRY(gateway, cols.blob(row, 4, "gateway_id"));
    RIVETKIT_TRY(request, cols.blob(row, 5, "request_id"));
    if (gateway.size() != conn.gateway_id.size())
        return cols.bad("gateway_id", "4 bytes");
    if (request.size() != conn.request_id.size())
        return cols.bad("request_id", "4 bytes");
    std::copy(gateway.begin(), gateway.end(), conn.gateway_id.begin());
    std::copy(request.begin(), request.end(), conn.request_id.begin());
    RIVETKIT_TRY(server_index, cols.integer(row, 6, "server_message_index"));
    RIVETKIT_TRY(client_index, cols.integer(row, 7, "client_message_index"));
    if (server_index < 0 || server_index > 0xffff)
        return cols.bad("server_message_index", "a u16");
    if (client_index < 0 || client_index > 0xffff)
        return cols.bad("client_message_index", "a u16");
    conn.server_message_index = static_cast<std::uint16_t>(server_index);
    conn.client_message_index = static_cast<std::uint16_t>(client_index);
    RIVETKIT_TRY(path, cols.text(row, 8, "request_path"));
    conn.request_path = std::move(path);
    RIVETKIT_TRY(headers_raw, cols.blob(row, 9, "request_headers"));
    auto headers = parse_cbor_or_discarded(headers_raw);
    if (headers.is_discarded() || !headers.is_object())
        return cols.bad("request_headers", "a CBOR map of strings");
    for (const auto& [name, value] : headers.items()) {
        if (!value.is_string())
            return cols.bad("request_headers", "a CBOR map of strings");
        conn.request_headers.emplace_back(name, value.get<std::string>());
    }
    return conn;
}

Bytes subscriptions_cbor(const proto::persist_v4::Conn& conn) {
    nlohmann::json names = nlohmann::json::array();
    for (const auto& sub : conn.subscriptions)
        names.push_back(sub.event_name);
    return cbor_of(names);
}

Bytes request_headers_cbor(const proto::persist_v4::Conn& conn) {
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [name, value] : conn.request_headers)
        headers[name] = value;
    return cbor_of(headers);
}

Result<RuntimeRow> runtime_from_row(std::string_view actor_id, const Row& row) {
    const Columns cols{actor_id, "_rivet_runtime"};
    RuntimeRow out;
    RIVETKIT_TRY(alarm, cols.opt_integer(row, 0, "last_pushed_alarm"));
    RIVETKIT_TRY(token, cols.opt_text(row, 1, "inspector_token"));
    RIVETKIT_TRY(next_id, cols.integer(row, 2, "queue_next_id"));
    if (next_id < 0)
        return cols.bad("queue_next_id", "a non-negative integer");
    out.last_pushed_alarm = alarm;
    out.inspector_token = std::move(token);
    out.queue_next_id = next_id;
    return out;
}

Result<QueueRow> queue_message_from_row(std::string_view actor_id, const Row& row) {
    const Columns cols{actor_id, "_rivet_queue"};
    RIVETKIT_TRY(id, cols.integer(row, 0, "id"));
    if (id < 0)
        return cols.bad("id", "a non-negative integer");
    QueueRow out;
    out.id = static_cast<std::uint64_t>(id);
    RIVETKIT_TRY(name, cols.text(row, 1, "name"));
    RIVETKIT_TRY(body, cols.blob(row, 2, "body"));
    RIVETKIT_TRY(created_at, cols.integer(row, 3, "created_at"));
    out.message.name = std::move(name);
    out.message.body = std::move(body);
    out.message.created_at = created_at;
    return out;
}

Result<std::optional<proto::persist_v4::QueueMetadata>> queue_metadata_from(
    std::string_view actor_id, const std::optional<RuntimeRow>& runtime, const Row& stats) {
    const Columns cols{actor_id, "_rivet_queue"};
    std::int64_t count = 0;
    std::int64_t max_id = 0;
    if (!stats.empty()) {
        RIVETKIT_TRY(n, cols.integer(stats, 0, "count"));
        RIVETKIT_TRY(max, cols.opt_integer(stats, 1, "id"));
        count = n;
        max_id = max.value_or(0);
    }
    if (count < 0 || max_id < 0)
        return cols.bad("id", "a non-negative integer");
    if (!runtime && count == 0)
        return std::optional<proto::persist_v4::QueueMetadata>();
    proto::persist_v4::QueueMetadata meta;
    const std::int64_t stored = runtime ? runtime->queue_next_id : 1;
    const std::int64_t after_max = max_id == INT64_MAX ? INT64_MAX : max_id + 1;
    meta.next_id = static_cast<std::uint64_t>(std::max({stored, after_max, std::int64_t{1}}));
    meta.size = static_cast<std::uint32_t>(std::min<std::int64_t>(count, 0xffffffff));
    return std::optional<proto::persist_v4::QueueMetadata>(meta);
}

Result<std::pair<Bytes, Bytes>> user_kv_from_row(std::string_view actor_id, const Row& row) {
    const Columns cols{actor_id, "_rivet_user_kv"};
    RIVETKIT_TRY(key, cols.blob(row, 0, "key"));
    RIVETKIT_TRY(value, cols.blob(row, 1, "value"));
    return std::pair<Bytes, Bytes>(std::move(key), std::move(value));
}

}  // namespace rivetkit::core::storage

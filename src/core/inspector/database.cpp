#include "core/inspector/database.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "sqlite/json.hpp"

namespace rivetkit::core::inspector {

namespace {

// Ordered: a row object keeps its columns in SELECT order, as a JS object built from it does.
using json = nlohmann::ordered_json;
using sqlite::QueryResult;
using sqlite::Value;

Error not_enabled() {
    return Error("database", "not_enabled", "The actor has no database enabled");
}

std::string quote_identifier(const std::string& name) {
    std::string out = "\"";
    for (char c : name) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
    return out;
}

Bytes cbor(const json& value) {
    auto v = json::to_cbor(value);
    return Bytes(v.begin(), v.end());
}

boost::asio::awaitable<Result<std::shared_ptr<sqlite::Database>>> open(ActorContext ctx) {
    if (!database_enabled(ctx))
        co_return not_enabled();
    auto op = ctx.db();
    co_return co_await std::move(op);
}

// (No temporaries inside co_await: GCC 12 miscompiles their destruction in coroutines.)
boost::asio::awaitable<Result<QueryResult>> run_query(std::shared_ptr<sqlite::Database> db,
                                                      std::string sql,
                                                      std::vector<Value> params = {}) {
    auto op = db->query(std::move(sql), std::move(params));
    co_return co_await std::move(op);
}

}  // namespace

bool database_enabled(const ActorContext& ctx) {
    return ctx.config().has_database || ctx.db_opened();
}

boost::asio::awaitable<Result<Bytes>> database_schema(ActorContext ctx) {
    auto opening = open(ctx);
    auto db = co_await std::move(opening);
    if (!db.ok())
        co_return std::move(db).error();
    std::string list_sql =
        "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE "
        "'sqlite_%' AND name NOT LIKE '__drizzle_%' ORDER BY name";
    auto listing = run_query(*db, std::move(list_sql));
    auto tables = co_await std::move(listing);
    if (!tables.ok())
        co_return std::move(tables).error();
    json out = json::array();
    for (const auto& row : tables->rows) {
        const auto* name = std::get_if<std::string>(&row.at(0));
        if (name == nullptr)
            continue;
        const auto* type = std::get_if<std::string>(&row.at(1));
        const std::string quoted = quote_identifier(*name);
        auto columns_op = run_query(*db, fmt::format("PRAGMA table_info({})", quoted));
        auto columns = co_await std::move(columns_op);
        if (!columns.ok())
            co_return std::move(columns).error();
        auto foreign_op = run_query(*db, fmt::format("PRAGMA foreign_key_list({})", quoted));
        auto foreign = co_await std::move(foreign_op);
        if (!foreign.ok())
            co_return std::move(foreign).error();
        auto count_op = run_query(*db, fmt::format("SELECT COUNT(*) FROM {}", quoted));
        auto count = co_await std::move(count_op);
        if (!count.ok())
            co_return std::move(count).error();
        std::int64_t records = 0;
        if (!count->rows.empty() && !count->rows[0].empty()) {
            if (const auto* n = std::get_if<std::int64_t>(&count->rows[0][0]))
                records = *n;
        }
        out.push_back({{"table",
                        {{"schema", "main"},
                         {"name", *name},
                         {"type", type != nullptr ? *type : std::string("table")}}},
                       {"columns", sqlite::rows_to_json<json>(*columns)},
                       {"foreignKeys", sqlite::rows_to_json<json>(*foreign)},
                       {"records", records}});
    }
    co_return cbor(json{{"tables", std::move(out)}});
}

boost::asio::awaitable<Result<Bytes>> database_rows(ActorContext ctx, std::string table,
                                                    std::uint32_t limit, std::uint32_t offset) {
    auto opening = open(ctx);
    auto db = co_await std::move(opening);
    if (!db.ok())
        co_return std::move(db).error();
    std::vector<Value> params{static_cast<std::int64_t>(std::min<std::uint32_t>(limit, 500)),
                              static_cast<std::int64_t>(offset)};
    auto op = run_query(*db, fmt::format("SELECT * FROM {} LIMIT ? OFFSET ?", quote_identifier(table)),
                        std::move(params));
    auto rows = co_await std::move(op);
    if (!rows.ok())
        co_return std::move(rows).error();
    co_return cbor(sqlite::rows_to_json<json>(*rows));
}

boost::asio::awaitable<Result<Bytes>> database_execute(
    ActorContext ctx, std::string sql, std::vector<Value> args,
    std::optional<sqlite::NamedValues> properties) {
    if (std::all_of(sql.begin(), sql.end(), [](unsigned char c) { return std::isspace(c); }))
        co_return Error("actor", "invalid_request", "Invalid inspector request `sql`: must be non-empty");
    if (properties && !args.empty()) {
        co_return Error("actor", "invalid_request",
                        "Invalid inspector request `parameters`: use either args or properties, "
                        "not both");
    }
    auto opening = open(ctx);
    auto db = co_await std::move(opening);
    if (!db.ok())
        co_return std::move(db).error();
    Result<QueryResult> rows = QueryResult{};
    if (properties) {
        auto op = (*db)->query_named(std::move(sql), std::move(*properties));
        rows = co_await std::move(op);
    } else {
        auto op = run_query(*db, std::move(sql), std::move(args));
        rows = co_await std::move(op);
    }
    if (!rows.ok())
        co_return std::move(rows).error();
    co_return cbor(sqlite::rows_to_json<json>(*rows));
}

}  // namespace rivetkit::core::inspector

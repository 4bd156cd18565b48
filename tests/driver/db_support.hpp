#pragma once
// The fixtures' `c.db.execute(...)` and `c.db.transaction(...)` over ActorContext::db(), shared by
// the SQLite fixture files.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fixture_support.hpp"
#include "rivetkit/sqlite.hpp"

namespace rivetkit::driver {

// A JavaScript argument as an SQL parameter (booleans as 0/1, as better-sqlite3 binds them).
inline SqlValue sql_param(const Json& value) {
    if (value.is_null())
        return std::monostate{};
    if (value.is_boolean())
        return std::int64_t{value.get<bool>() ? 1 : 0};
    if (value.is_number_integer())
        return value.get<std::int64_t>();
    if (value.is_number())
        return value.get<double>();
    if (value.is_string())
        return value.get<std::string>();
    return value.dump();
}

template <typename T>
T or_throw(Result<T> result) {
    if (!result.ok())
        throw ErrorException(std::move(result).error());
    return std::move(result).value();
}

// `await c.db.execute(sql, ...args)`: one statement, its rows as objects. Arguments are passed
// one by one (GCC 12 cannot build an initializer list inside a co_await).
template <typename... Args>
boost::asio::awaitable<Json> execute(const Ctx& c, std::string sql, Args... args) {
    std::vector<SqlValue> params;
    (params.push_back(sql_param(Json(std::move(args)))), ...);
    std::shared_ptr<Database> db = co_await c.db();
    SqlRows rows = or_throw(co_await db->query(std::move(sql), std::move(params)));
    co_return sql_rows_to_json(rows);
}

// `await c.db.execute(script)` for several statements without parameters.
inline boost::asio::awaitable<void> execute_script(const Ctx& c, std::string sql) {
    std::shared_ptr<Database> db = co_await c.db();
    Status done = co_await db->exec(std::move(sql));
    if (!done.ok())
        throw ErrorException(std::move(done).error());
}

using TxBody = std::function<Status(sqlite::Session&)>;

// `await c.db.transaction(tx => ...)` with a synchronous body. Callers name the body before the
// co_await: GCC 12 destroys a temporary std::function inside a co_await expression twice.
inline boost::asio::awaitable<void> transaction(const Ctx& c,
                                         std::function<Status(sqlite::Session&)> body) {
    std::shared_ptr<Database> db = co_await c.db();
    Status done = co_await db->transaction(std::move(body));
    if (!done.ok())
        throw ErrorException(std::move(done).error());
}

inline Status run(sqlite::Session& tx, const std::string& sql, std::vector<SqlValue> params) {
    auto done = tx.run(sql, params);
    return done.ok() ? Status{} : Status(std::move(done).error());
}


// The first column of the first row, or null (`Object.values(rows[0] ?? {})[0]`).
inline Json first_value(const Json& rows) {
    if (!rows.is_array() || rows.empty() || !rows[0].is_object() || rows[0].empty())
        return nullptr;
    return rows[0].begin().value();
}

}  // namespace rivetkit::driver

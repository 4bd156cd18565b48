#pragma once
// The actor's SQLite database in the typed API: `co_await c.db()` gives the database (opened on
// first use, pages stored in the engine), whose query / run / exec / transaction calls return
// Result<...> with sqlite/* errors. Rows convert to JSON objects keyed by column name.

#include "core/actor/sqlite_database.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

using Database = core::sqlite::Database;
using SqlValue = core::sqlite::Value;
using SqlRows = core::sqlite::QueryResult;

// NULL → null, INTEGER / REAL → number, TEXT → string, BLOB → binary.
inline Json sql_value_to_json(const SqlValue& value) {
    return std::visit(
        [](const auto& v) -> Json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return Json(nullptr);
            } else if constexpr (std::is_same_v<T, Bytes>) {
                return Json::binary(std::vector<std::uint8_t>(v.begin(), v.end()));
            } else {
                return Json(v);
            }
        },
        value);
}

// [{column: value, ...}, ...]; a later column of the same name wins.
inline Json sql_rows_to_json(const SqlRows& rows) {
    Json out = Json::array();
    for (const auto& row : rows.rows) {
        Json object = Json::object();
        for (std::size_t i = 0; i < row.size() && i < rows.columns.size(); ++i)
            object[rows.columns[i]] = sql_value_to_json(row[i]);
        out.push_back(std::move(object));
    }
    return out;
}

}  // namespace rivetkit

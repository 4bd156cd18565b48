#pragma once
// The actor's SQLite database in the typed API: `co_await c.db()` gives the database (opened on
// first use, pages stored in the engine), whose query / run / exec / transaction calls return
// Result<...> with sqlite/* errors. Rows convert to JSON objects keyed by column name.

#include "sqlite/database.hpp"
#include "sqlite/json.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

using Database = sqlite::Database;
using SqlValue = sqlite::Value;
using SqlRows = sqlite::QueryResult;

// NULL → null, INTEGER / REAL → number, TEXT → string, BLOB → binary.
inline Json sql_value_to_json(const SqlValue& value) {
    return sqlite::value_to_json<Json>(value);
}

// [{column: value, ...}, ...]; a later column of the same name wins.
inline Json sql_rows_to_json(const SqlRows& rows) {
    return sqlite::rows_to_json<Json>(rows);
}

}  // namespace rivetkit

#pragma once
// The inspector's view of an actor's SQLite database, shaped as upstream's inspector shows it
// (each answer is the CBOR of a JSON value; rows are objects keyed by column name, BLOBs are
// byte strings):
//   schema: {"tables": [{"table": {"schema": "main", "name", "type"}, "columns": PRAGMA
//            table_info rows, "foreignKeys": PRAGMA foreign_key_list rows, "records": n}]}
//   rows:   the rows of one table, LIMIT min(limit, 500) OFFSET offset
//   execute: the rows of one statement with positional or named arguments
// Errors: database/not_enabled (the actor declares no database and has not opened one), the
// database's own sqlite/* errors.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "core/actor/context.hpp"
#include "sqlite/database.hpp"

namespace rivetkit::core::inspector {

// ActorConfig::has_database, or the actor opened its database in this generation.
bool database_enabled(const ActorContext& ctx);

boost::asio::awaitable<Result<Bytes>> database_schema(ActorContext ctx);
boost::asio::awaitable<Result<Bytes>> database_rows(ActorContext ctx, std::string table,
                                                    std::uint32_t limit, std::uint32_t offset);
// Positional `args`, or named `properties` (not both).
boost::asio::awaitable<Result<Bytes>> database_execute(
    ActorContext ctx, std::string sql, std::vector<sqlite::Value> args,
    std::optional<sqlite::NamedValues> properties = std::nullopt);

}  // namespace rivetkit::core::inspector

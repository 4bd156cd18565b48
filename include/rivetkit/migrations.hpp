#pragma once
// A migration ladder for an actor's SQLite database, the C++ form of rivetkit's
// `migrations({ tableName, migrations })` (rivetkit/unstable/migrations): numbered SQL steps from 1,
// the applied version kept in a one-row table (`singleton` 1, `schema_version`) of the same layout,
// so a database migrated by the TypeScript host continues here and the other way round.
//
//   co_await rivetkit::migrate(*co_await c.db(), {
//       {1, "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)"},
//       {2, "ALTER TABLE items ADD COLUMN status TEXT NOT NULL DEFAULT 'active'"},
//   });
//
// The steps not yet applied run in order inside one transaction (all or none). Errors (thrown as
// ErrorException): sqlite/invalid_migration for a bad ladder or table name, a stored version that
// is not a non-negative integer or is newer than the ladder; the failing step's sqlite/* error.

#include <boost/asio/awaitable.hpp>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "rivetkit/sqlite.hpp"

namespace rivetkit {

struct Migration {
    std::int64_t version = 0;
    std::string sql;
};

namespace detail {

inline Error invalid_migration(std::string message) {
    return Error("sqlite", "invalid_migration", std::move(message));
}

inline Status apply_migrations(sqlite::Session& s, const std::vector<Migration>& ladder,
                               const std::string& quoted) {
    if (Status made = s.exec("CREATE TABLE IF NOT EXISTS " + quoted +
                             " (singleton INTEGER PRIMARY KEY CHECK (singleton = 1), "
                             "schema_version INTEGER NOT NULL CHECK (schema_version BETWEEN 0 AND "
                             "9007199254740991)) STRICT");
        !made.ok())
        return made;
    auto rows = s.query("SELECT schema_version FROM " + quoted + " WHERE singleton = 1");
    if (!rows.ok())
        return std::move(rows).error();
    std::int64_t current = 0;
    if (!rows->rows.empty()) {
        const auto* stored = std::get_if<std::int64_t>(&rows->rows[0][0]);
        if (stored == nullptr || *stored < 0)
            return invalid_migration("invalid schema version in migration table " + quoted);
        current = *stored;
    }
    if (current > static_cast<std::int64_t>(ladder.size()))
        return invalid_migration("migration version " + std::to_string(current) + " in " +
                                 quoted + " is newer than supported version " +
                                 std::to_string(ladder.size()));
    for (std::size_t i = static_cast<std::size_t>(current); i < ladder.size(); ++i) {
        if (Status step = s.exec(ladder[i].sql); !step.ok())
            return step;
        auto written = s.run("INSERT INTO " + quoted +
                                 " (singleton, schema_version) VALUES (1, ?) ON CONFLICT(singleton) "
                                 "DO UPDATE SET schema_version = excluded.schema_version",
                             {sqlite::Value(ladder[i].version)});
        if (!written.ok())
            return std::move(written).error();
    }
    return Status{};
}

}  // namespace detail

inline boost::asio::awaitable<void> migrate(Database& db, std::vector<Migration> ladder,
                                            std::string table = "rivetkit_schema_version") {
    bool identifier = !table.empty() && !(table[0] >= '0' && table[0] <= '9');
    for (char ch : table)
        identifier = identifier && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!identifier)
        throw ErrorException(detail::invalid_migration("invalid migration table name \"" + table +
                                                       "\": expected a SQLite identifier"));
    if (ladder.empty())
        throw ErrorException(detail::invalid_migration("migration ladder must not be empty"));
    for (std::size_t i = 0; i < ladder.size(); ++i) {
        if (ladder[i].version != static_cast<std::int64_t>(i + 1))
            throw ErrorException(detail::invalid_migration(
                "invalid migration ladder: expected version " + std::to_string(i + 1) +
                ", received " + std::to_string(ladder[i].version)));
        if (ladder[i].sql.find_first_not_of(" \t\r\n") == std::string::npos)
            throw ErrorException(detail::invalid_migration(
                "invalid migration " + std::to_string(i + 1) + ": SQL is empty"));
    }
    const std::string quoted = "\"" + table + "\"";
    // Named before the co_await (see Database::transaction on GCC 12).
    auto body = [ladder = std::move(ladder), quoted](sqlite::Session& s) {
        return detail::apply_migrations(s, ladder, quoted);
    };
    Status done = co_await db.transaction(std::move(body));
    if (!done.ok())
        throw ErrorException(std::move(done).error());
}

}  // namespace rivetkit

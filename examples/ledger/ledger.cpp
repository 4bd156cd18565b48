#include "ledger/ledger.hpp"

#include <memory>
#include <string>
#include <vector>

#include "rivetkit/sqlite.hpp"

namespace rivetkit::examples {

namespace {

using Task = boost::asio::awaitable<Json>;
using LedgerAction = ActionContext<LedgerState, LedgerVars>;

// The database with its table; a failure is the action's structured error.
boost::asio::awaitable<std::shared_ptr<Database>> ledger_db(LedgerAction& c) {
    std::shared_ptr<Database> db = co_await c.db();
    std::string create =
        "CREATE TABLE IF NOT EXISTS entries ("
        "id INTEGER PRIMARY KEY, text TEXT NOT NULL, pad BLOB)";
    Status made = co_await db->exec(create);
    made.value();
    co_return db;
}

}  // namespace

Actor<LedgerState, LedgerVars> ledger_actor() {
    ActorOptions options;
    options.database = true;
    return Actor<LedgerState, LedgerVars>()
        .options(options)
        .action("add",
                [](LedgerAction& c, std::string text) -> Task {
                    auto db = co_await ledger_db(c);
                    std::string insert = "INSERT INTO entries (text) VALUES (?)";
                    std::vector<SqlValue> params{SqlValue(std::move(text))};
                    auto inserted = co_await db->run(insert, params);
                    co_return Json(inserted.value().last_insert_rowid);
                })
        .action("list",
                [](LedgerAction& c) -> Task {
                    auto db = co_await ledger_db(c);
                    std::string select = "SELECT id, text FROM entries ORDER BY id";
                    auto rows = co_await db->query(select);
                    co_return sql_rows_to_json(rows.value());
                })
        .action("count",
                [](LedgerAction& c) -> Task {
                    auto db = co_await ledger_db(c);
                    std::string select = "SELECT count(*) AS n FROM entries";
                    auto rows = co_await db->query(select);
                    co_return sql_rows_to_json(rows.value()).at(0).at("n");
                })
        .action("integrityCheck",
                [](LedgerAction& c) -> Task {
                    auto db = co_await ledger_db(c);
                    std::string check = "PRAGMA integrity_check";
                    auto rows = co_await db->query(check);
                    const SqlRows& result = rows.value();
                    if (result.rows.empty() || result.rows[0].empty())
                        co_return Json(nullptr);
                    co_return sql_value_to_json(result.rows[0][0]);
                })
        .action("holdTransaction",
                [](LedgerAction& c, std::int64_t rows, std::int64_t pad_bytes,
                   std::int64_t ms) -> Task {
                    if (rows < 0 || pad_bytes < 0 || ms < 0)
                        throw UserError("invalid_argument", "rows, padBytes and ms must be >= 0");
                    auto db = co_await ledger_db(c);
                    std::string begin = "BEGIN IMMEDIATE";
                    Status begun = co_await db->exec(begin);
                    begun.value();
                    std::string insert = "INSERT INTO entries (text, pad) VALUES (?, zeroblob(?))";
                    for (std::int64_t i = 0; i < rows; ++i) {
                        std::vector<SqlValue> params{SqlValue("held-" + std::to_string(i)),
                                                     SqlValue(pad_bytes)};
                        auto inserted = co_await db->run(insert, params);
                        if (!inserted.ok()) {
                            std::string rollback = "ROLLBACK";
                            Status rolled = co_await db->exec(rollback);
                            (void)rolled;
                            inserted.value();
                        }
                    }
                    c.vars().holding = true;
                    const bool waited = co_await c.sleep_for(std::chrono::milliseconds(ms));
                    c.vars().holding = false;
                    std::string end = waited ? "COMMIT" : "ROLLBACK";
                    Status ended = co_await db->exec(end);
                    ended.value();
                    co_return Json(waited ? rows : 0);
                })
        .action("holding", [](LedgerAction& c) { return c.vars().holding; });
}

}  // namespace rivetkit::examples

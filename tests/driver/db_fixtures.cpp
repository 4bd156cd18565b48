// actor-db-raw.ts (dbActorRaw): the raw-SQL database fixture, over c.db().
//
// Not reproduced: the actions that test the TypeScript database wrapper's own transaction
// coordinator (async transaction bodies that interleave with other calls, transaction timeouts and
// their diagnostics, leaked handles) and the Actor Runtime Socket; README.md lists them.

#include <algorithm>
#include <set>
#include <utility>

#include "db_support.hpp"
#include "fixture_support.hpp"
#include "rivetkit/migrations.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

std::int64_t safe_integer(const Json& value) {
    if (value.is_number_integer())
        return value.get<std::int64_t>();
    if (value.is_number())
        return static_cast<std::int64_t>(value.get<double>());
    if (value.is_string()) {
        try {
            return std::stoll(value.get<std::string>());
        } catch (const std::exception&) {
            return 0;
        }
    }
    return 0;
}

constexpr const char* kInsert =
    "INSERT INTO test_data (value, payload, created_at) VALUES (?, ?, ?)";

Void record_lifecycle(Ctx& c, std::string event) {
    const Json key = std::as_const(c).state().value("lifecycleObserverKey", Json());
    if (!key.is_string())
        co_return;
    Json args = Json::array();
    args.push_back(Json{{"actorKey", join_key(c.key())}, {"event", std::move(event)}});
    std::vector<std::string> observer{key.get<std::string>()};
    co_await call_actor("lifecycleObserver", std::move(observer), "recordEvent", std::move(args));
}

JsonActor db_actor_raw() {
    ActorOptions options;
    options.database = true;
    options.action_timeout = 120s;
    options.sleep_timeout = 100ms;
    return JsonActor()
        .state(Json{{"disconnectInsertEnabled", false},
                    {"disconnectInsertDelayMs", 0},
                    {"lifecycleObserverKey", nullptr},
                    {"transactionHolding", false}})
        .options(options)
        // The fixture's onMigrate: run at every start, before the first action.
        .on_wake([](Ctx& c) -> Void {
            co_await execute_script(
                c,
                "CREATE TABLE IF NOT EXISTS test_data ("
                "id INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL, "
                "payload TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)");
            co_await record_lifecycle(c, "wake");
        })
        .on_sleep([](Ctx& c) -> Void { co_await record_lifecycle(c, "sleep"); })
        .on_disconnect([](Ctx& c, Conn&) -> Void {
            const Json& state = std::as_const(c).state();
            if (!state.value("disconnectInsertEnabled", false))
                co_return;
            const std::int64_t delay = state.value("disconnectInsertDelayMs", std::int64_t{0});
            if (delay > 0)
                co_await plain_delay(c, std::chrono::milliseconds(delay));
            co_await execute(c, kInsert, "__disconnect__", "", c.now_ms());
        })
        .action("configureDisconnectInsert",
                [](Act& c, bool enabled, double delay_ms) {
                    c.state()["disconnectInsertEnabled"] = enabled;
                    c.state()["disconnectInsertDelayMs"] =
                        std::max<std::int64_t>(0, static_cast<std::int64_t>(delay_ms));
                })
        .action("configureLifecycleObserver",
                [](Act& c, Json key) { c.state()["lifecycleObserverKey"] = key; })
        .action("getDisconnectInsertCount",
                [](Act& c) -> Task {
                    Json rows = co_await execute(
                        c,
                        "SELECT COUNT(*) as count FROM test_data WHERE value = '__disconnect__'");
                    co_return rows.empty() ? Json(0) : rows[0]["count"];
                })
        .action("reset", [](Act& c) -> Void { co_await execute(c, "DELETE FROM test_data"); })
        .action("insertValue",
                [](Act& c, std::string value) -> Task {
                    co_await execute(c, kInsert, value, "", c.now_ms());
                    Json rows = co_await execute(c, "SELECT last_insert_rowid() as id");
                    co_return Json{{"id", rows[0]["id"]}};
                })
        .action("insertValueAndReadBack",
                [](Act& c, std::string value) -> Task {
                    co_await execute(c, kInsert, value, "", c.now_ms());
                    Json rows = co_await execute(
                        c,
                        "SELECT id, value, hex(value) as hex_value, length(value) as "
                        "sqlite_length FROM test_data ORDER BY id DESC LIMIT 1");
                    co_return rows.empty() ? Json() : rows[0];
                })
        .action("getValues",
                [](Act& c) { return execute(c, "SELECT * FROM test_data ORDER BY id"); })
        .action("getValue",
                [](Act& c, Json id) -> Task {
                    Json rows = co_await execute(c, "SELECT value FROM test_data WHERE id = ?", id);
                    co_return rows.empty() ? Json() : rows[0]["value"];
                })
        .action("getCount",
                [](Act& c) -> Task {
                    Json rows = co_await execute(c, "SELECT COUNT(*) as count FROM test_data");
                    co_return rows[0]["count"];
                })
        .action("rawSelectCount",
                [](Act& c) -> Task {
                    Json rows = co_await execute(c, "SELECT COUNT(*) as count FROM test_data");
                    co_return rows[0]["count"];
                })
        .action("insertMany",
                [](Act& c, std::int64_t count) -> Task {
                    if (count <= 0)
                        co_return Json{{"count", 0}};
                    const std::string now = std::to_string(c.now_ms());
                    std::string sql = "INSERT INTO test_data (value, payload, created_at) VALUES ";
                    for (std::int64_t i = 0; i < count; ++i)
                        sql += (i == 0 ? "" : ", ") +
                               ("('User " + std::to_string(i) + "', '', " + now + ")");
                    co_await execute(c, std::move(sql));
                    co_return Json{{"count", count}};
                })
        .action("updateValue",
                [](Act& c, Json id, std::string value) -> Task {
                    co_await execute(c, "UPDATE test_data SET value = ? WHERE id = ?", value, id);
                    co_return Json{{"success", true}};
                })
        .action("deleteValue",
                [](Act& c, Json id) -> Void {
                    co_await execute(c, "DELETE FROM test_data WHERE id = ?", id);
                })
        .action("transactionCommit",
                [](Act& c, std::string value) -> Void {
                    const std::int64_t now = c.now_ms();
                    TxBody body = [value, now](sqlite::Session& tx) {
                        return run(tx,
                                   "INSERT INTO test_data (value, payload, created_at) VALUES "
                                   "(?, '', ?)",
                                   {value, now});
                    };
                    co_await transaction(c, std::move(body));
                })
        .action("transactionRollback",
                [](Act& c, std::string value) -> Void {
                    const std::int64_t now = c.now_ms();
                    try {
                        TxBody body = [value, now](sqlite::Session& tx) {
                            Status inserted = run(tx,
                                                  "INSERT INTO test_data (value, payload, "
                                                  "created_at) VALUES (?, '', ?)",
                                                  {value, now});
                            if (!inserted.ok())
                                return inserted;
                            return Status(UserError("rollback", "expected rollback").error());
                        };
                        co_await transaction(c, std::move(body));
                    } catch (const ErrorException& e) {
                        if (e.error().message() != "expected rollback")
                            throw;
                    }
                })
        // C++ transactions have no timeout option; the body is the fixture's.
        .action("transactionWithTimeout",
                [](Act& c, Json) -> Void {
                    TxBody body = [](sqlite::Session& tx) {
                        auto rows = tx.query("SELECT 1");
                        return rows.ok() ? Status{} : Status(std::move(rows).error());
                    };
                    co_await transaction(c, std::move(body));
                })
        .action("transactionExec",
                [](Act& c) -> Task {
                    const std::string now = std::to_string(c.now_ms());
                    TxBody body = [now](sqlite::Session& tx) {
                        return tx.exec(
                            "INSERT INTO test_data (value, payload, created_at) VALUES "
                            "('exec-first', '', " +
                            now +
                            "); INSERT INTO test_data (value, payload, created_at) VALUES "
                            "('exec-second', '', " +
                            now + ");");
                    };
                    co_await transaction(c, std::move(body));
                    Json rows = co_await execute(c, "SELECT value FROM test_data ORDER BY id");
                    Json values = Json::array();
                    for (const Json& row : rows)
                        values.push_back(row["value"]);
                    co_return values;
                })
        .action("transactionAutomaticRollback",
                [](Act& c) -> Task {
                    co_await execute_script(c,
                                            "CREATE TABLE IF NOT EXISTS transaction_rollback_probe "
                                            "(id INTEGER PRIMARY KEY, value TEXT NOT NULL); "
                                            "DELETE FROM transaction_rollback_probe;");
                    try {
                        TxBody body = [](sqlite::Session& tx) {
                            Status first = run(tx,
                                               "INSERT INTO transaction_rollback_probe(id, value) "
                                               "VALUES (1, 'first')",
                                               {});
                            if (!first.ok())
                                return first;
                            return run(tx,
                                       "INSERT OR ROLLBACK INTO transaction_rollback_probe(id, "
                                       "value) VALUES (1, 'duplicate')",
                                       {});
                        };
                        co_await transaction(c, std::move(body));
                    } catch (const ErrorException&) {
                        // SQLite's ROLLBACK conflict policy already ended the transaction.
                    }
                    co_await execute(
                        c, "INSERT INTO transaction_rollback_probe(id, value) VALUES (2, 'after')");
                    co_return co_await execute(
                        c, "SELECT id, value FROM transaction_rollback_probe ORDER BY id");
                })
        .action("manualTransactionCompatibility",
                [](Act& c) -> Task {
                    co_await execute(c, "BEGIN");
                    std::exception_ptr failed;
                    try {
                        co_await execute(c,
                                         "INSERT INTO test_data (value, payload, created_at) "
                                         "VALUES ('manual-compatible', '', ?)",
                                         c.now_ms());
                        co_await execute(c, "COMMIT");
                    } catch (...) {
                        failed = std::current_exception();
                    }
                    if (failed) {
                        co_await execute(c, "ROLLBACK");
                        std::rethrow_exception(failed);
                    }
                    Json rows = co_await execute(c,
                                                 "SELECT count(*) AS count FROM test_data WHERE "
                                                 "value = 'manual-compatible'");
                    co_return rows.empty() ? Json() : rows[0]["count"];
                })
        .action("multiStatementInsert",
                [](Act& c, std::string value) -> Task {
                    co_await execute_script(
                        c, "BEGIN; INSERT INTO test_data (value, payload, created_at) VALUES ('" +
                               value + "', '', " + std::to_string(c.now_ms()) +
                               "); UPDATE test_data SET value = '" + value +
                               "-updated' WHERE id = last_insert_rowid(); COMMIT;");
                    Json rows =
                        co_await execute(c, "SELECT value FROM test_data ORDER BY id DESC LIMIT 1");
                    co_return rows.empty() ? Json() : rows[0]["value"];
                })
        .action("repeatUpdate",
                [](Act& c, std::int64_t id, std::int64_t count) -> Task {
                    std::string value;
                    if (count <= 0)
                        co_return Json{{"value", value}};
                    std::string script = "BEGIN";
                    for (std::int64_t i = 0; i < count; ++i) {
                        value = "Updated " + std::to_string(i);
                        script += "; UPDATE test_data SET value = '" + value +
                                  "' WHERE id = " + std::to_string(id);
                    }
                    script += "; COMMIT";
                    co_await execute_script(c, std::move(script));
                    co_return Json{{"value", value}};
                })
        .action("insertPayloadOfSize",
                [](Act& c, std::int64_t size) -> Task {
                    co_await execute(
                        c, kInsert, "payload",
                        std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, size)), 'x'),
                        c.now_ms());
                    Json rows = co_await execute(c, "SELECT last_insert_rowid() as id");
                    co_return Json{{"id", rows[0]["id"]}, {"size", size}};
                })
        .action("getPayloadSize",
                [](Act& c, Json id) -> Task {
                    Json rows = co_await execute(
                        c, "SELECT length(payload) as size FROM test_data WHERE id = ?", id);
                    co_return rows.empty() ? Json(0) : rows[0]["size"];
                })
        .action("insertPayloadRows",
                [](Act& c, double count, double payload_size) -> Task {
                    const auto n = std::max<std::int64_t>(0, static_cast<std::int64_t>(count));
                    if (n == 0)
                        co_return Json{{"count", 0}};
                    const std::string payload(static_cast<std::size_t>(std::max<std::int64_t>(
                                                  0, static_cast<std::int64_t>(payload_size))),
                                              'x');
                    const std::int64_t now = c.now_ms();
                    for (std::int64_t i = 0; i < n; ++i)
                        co_await execute(c, kInsert, "bulk-" + std::to_string(i), payload, now);
                    co_return Json{{"count", n}};
                })
        .action("roundRobinUpdateValues",
                [](Act& c, std::vector<double> row_ids, double iterations) -> Task {
                    std::vector<std::int64_t> ids;
                    std::set<std::int64_t> seen;
                    for (double id : row_ids) {
                        const auto n = static_cast<std::int64_t>(id);
                        if (n > 0 && seen.insert(n).second)
                            ids.push_back(n);
                    }
                    const auto rounds =
                        std::max<std::int64_t>(0, static_cast<std::int64_t>(iterations));
                    if (ids.empty() || rounds == 0)
                        co_return Json::array();
                    TxBody body = [ids, rounds](sqlite::Session& tx) {
                        for (std::int64_t i = 0; i < rounds; ++i) {
                            const std::int64_t id = ids[static_cast<std::size_t>(i) % ids.size()];
                            Status st = run(tx, "UPDATE test_data SET value = ? WHERE id = ?",
                                            {"v-" + std::to_string(i), id});
                            if (!st.ok())
                                return st;
                        }
                        return Status{};
                    };
                    co_await transaction(c, std::move(body));
                    std::string list;
                    for (std::int64_t id : ids)
                        list += (list.empty() ? "" : ",") + std::to_string(id);
                    co_return co_await execute(c, "SELECT id, value FROM test_data WHERE id IN (" +
                                                      list + ") ORDER BY id");
                })
        .action("getPageCount",
                [](Act& c) -> Task {
                    co_return safe_integer(first_value(co_await execute(c, "PRAGMA page_count")));
                })
        .action("vacuum", [](Act& c) -> Void { co_await execute(c, "VACUUM"); })
        .action("integrityCheck",
                [](Act& c) -> Task {
                    Json value = first_value(co_await execute(c, "PRAGMA integrity_check"));
                    co_return value.is_string() ? value : Json(value.is_null() ? "" : value.dump());
                })
        .action("runMixedWorkload",
                [](Act& c, double seed_count, double churn_count) -> Void {
                    const auto seeds =
                        std::max<std::int64_t>(1, static_cast<std::int64_t>(seed_count));
                    const auto churn =
                        std::max<std::int64_t>(0, static_cast<std::int64_t>(churn_count));
                    const std::int64_t now = c.now_ms();
                    TxBody body = [seeds, churn, now](sqlite::Session& tx) {
                        constexpr const char* upsert =
                            "INSERT OR REPLACE INTO test_data (id, value, payload, created_at) "
                            "VALUES (?, ?, ?, ?)";
                        for (std::int64_t i = 0; i < seeds; ++i) {
                            Status st = run(
                                tx, upsert,
                                {i + 1, "seed-" + std::to_string(i),
                                 std::string(static_cast<std::size_t>(1024 + (i % 5) * 128), 'x'),
                                 now});
                            if (!st.ok())
                                return st;
                        }
                        for (std::int64_t i = 0; i < churn; ++i) {
                            const std::int64_t id = (i % seeds) + 1;
                            Status st =
                                i % 9 == 0
                                    ? run(tx, "DELETE FROM test_data WHERE id = ?", {id})
                                    : run(tx, upsert,
                                          {id, "upd-" + std::to_string(i),
                                           std::string(static_cast<std::size_t>(768 + (i % 7) * 96),
                                                       'x'),
                                           now + i});
                            if (!st.ok())
                                return st;
                        }
                        return Status{};
                    };
                    co_await transaction(c, std::move(body));
                })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("destroy", [](Act& c) { c.destroy(); })
        .action("ping", [](Act&) { return std::string("pong"); });
}

// db-pragma-migration.ts: rivetkit's migration ladder helper (rivetkit::migrate) in onMigrate.
JsonActor db_pragma_migration_actor() {
    ActorOptions options;
    options.database = true;
    options.action_timeout = 120s;
    options.sleep_timeout = 100ms;
    auto insert = [](Act& c, std::string sql) -> Task {
        co_await execute(c, std::move(sql));
        Json rows = co_await execute(c, "SELECT last_insert_rowid() as id");
        co_return Json{{"id", rows[0]["id"]}};
    };
    return JsonActor()
        .state(Json::object())
        .options(options)
        .on_wake([](Ctx& c) -> Void {
            std::shared_ptr<Database> db = co_await c.db();
            std::vector<Migration> ladder{
                {1, "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)"},
                {2, "ALTER TABLE items ADD COLUMN status TEXT NOT NULL DEFAULT 'active'"}};
            co_await migrate(*db, std::move(ladder), "items_schema_version");
        })
        .action("insertItem",
                [insert](Act& c, std::string name) {
                    return insert(c, "INSERT INTO items (name) VALUES ('" + name + "')");
                })
        .action("insertItemWithStatus",
                [insert](Act& c, std::string name, std::string status) {
                    return insert(c, "INSERT INTO items (name, status) VALUES ('" + name + "', '" +
                                         status + "')");
                })
        .action("getItems",
                [](Act& c) { return execute(c, "SELECT id, name, status FROM items ORDER BY id"); })
        .action("getSchemaVersion",
                [](Act& c) -> Task {
                    Json rows = co_await execute(
                        c, "SELECT schema_version FROM items_schema_version WHERE singleton = 1");
                    co_return rows[0]["schema_version"];
                })
        .action("getColumns",
                [](Act& c) -> Task {
                    Json rows = co_await execute(c, "PRAGMA table_info(items)");
                    Json names = Json::array();
                    for (const Json& row : rows)
                        names.push_back(row["name"]);
                    co_return names;
                })
        .action("triggerSleep", [](Act& c) { c.sleep(); });
}

}  // namespace

void use_db_fixtures(Registry& registry) {
    registry.use("dbActorRaw", db_actor_raw());
    registry.use("dbPragmaMigrationActor", db_pragma_migration_actor());
}

}  // namespace rivetkit::driver

// actor-db-raw.ts (dbActorRaw): the raw-SQL database fixture, over c.db(); also
// db-pragma-migration.ts, db-init-order.ts, db-stress.ts and db-lifecycle.ts.
//
// Not reproduced: the actions that test the TypeScript database wrapper's own transaction
// coordinator (async transaction bodies that interleave with other calls, transaction timeouts and
// their diagnostics, leaked handles) and the Actor Runtime Socket; README.md lists them.

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
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
        .on_migrate([](Ctx& c) -> Void {
            co_await execute_script(
                c,
                "CREATE TABLE IF NOT EXISTS test_data ("
                "id INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL, "
                "payload TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL)");
        })
        .on_wake([](Ctx& c) -> Void { co_await record_lifecycle(c, "wake"); })
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
        .on_migrate([](Ctx& c) -> Void {
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


// MARK: db-init-order.ts

// Process-wide, as the fixture's module-level maps: what onSleep / onDestroy saw, per actor id.
struct Observations {
    std::mutex mutex;
    std::map<std::string, std::int64_t> on_sleep;
    std::map<std::string, std::int64_t> on_destroy;
};
Observations& init_order_observations() {
    static Observations observations;
    return observations;
}

void observe(std::map<std::string, std::int64_t> Observations::*which, const std::string& actor_id,
             std::int64_t count) {
    Observations& o = init_order_observations();
    std::lock_guard lock(o.mutex);
    (o.*which)[actor_id] = count;
}

std::int64_t observed(std::map<std::string, std::int64_t> Observations::*which,
                      const std::string& actor_id) {
    Observations& o = init_order_observations();
    std::lock_guard lock(o.mutex);
    auto it = (o.*which).find(actor_id);
    return it == (o.*which).end() ? -1 : it->second;
}

Void create_init_order_table(Ctx& c) {
    co_await execute_script(c,
                            "CREATE TABLE IF NOT EXISTS init_order_items ("
                            "id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL)");
}

// `rows[0]?.count ?? -1` of a COUNT(*) query.
boost::asio::awaitable<std::int64_t> count_rows(const Ctx& c, std::string sql) {
    Json rows = co_await execute(c, std::move(sql));
    Json value = first_value(rows);
    co_return value.is_number_integer() ? value.get<std::int64_t>() : -1;
}

constexpr const char* kCountItems = "SELECT COUNT(*) as count FROM init_order_items";

ActorOptions init_order_options(bool sleeps = true) {
    ActorOptions options;
    options.database = true;
    options.action_timeout = 120s;
    if (sleeps)
        options.sleep_timeout = 100ms;
    return options;
}

JsonActor init_order_actor(bool sleeps = true) {
    return JsonActor().options(init_order_options(sleeps)).on_migrate(create_init_order_table);
}

void use_init_order_fixtures(Registry& registry) {
    registry.use("dbInitOrderCreateStateActor",
                 init_order_actor()
                     .create_state([](Ctx& c, const Json&) -> Task {
                         const std::int64_t count = co_await count_rows(c, kCountItems);
                         Json state = Json::object();
                         state["count"] = count;
                         co_return state;
                     })
                     .action("getInitialCount",
                             [](Act& c) { return std::as_const(c).state().value("count", Json()); }));
    registry.use("dbInitOrderOnCreateActor",
                 init_order_actor()
                     .state(Json{{"initialCount", -1}})
                     .on_create([](Ctx& c) -> Void {
                         const std::int64_t count = co_await count_rows(c, kCountItems);
                         c.state()["initialCount"] = count;
                     })
                     .action("getInitialCount", [](Act& c) {
                         return std::as_const(c).state().value("initialCount", Json());
                     }));
    registry.use("dbInitOrderCreateVarsActor",
                 init_order_actor()
                     .state(Json::object())
                     .create_vars([](Ctx& c) -> Task {
                         const std::int64_t count = co_await count_rows(c, kCountItems);
                         Json vars = Json::object();
                         vars["initialCount"] = count;
                         co_return vars;
                     })
                     .action("getInitialCount",
                             [](Act& c) { return c.vars().value("initialCount", Json()); }));
    registry.use(
        "dbInitOrderOnWakeActor",
        init_order_actor()
            .state(Json::object())
            .on_wake([](Ctx& c) -> Void {
                co_await execute(c, "INSERT INTO init_order_items (name) VALUES (?)", "wake-event");
            })
            .action("getWakeCount",
                    [](Act& c) {
                        return count_rows(c, "SELECT COUNT(*) as count FROM init_order_items "
                                             "WHERE name = 'wake-event'");
                    })
            .action("triggerSleep", [](Act& c) { c.sleep(); }));
    auto insert = [](Act& c, std::string name) -> Void {
        co_await execute(c, "INSERT INTO init_order_items (name) VALUES (?)", std::move(name));
    };
    registry.use(
        "dbInitOrderOnSleepActor",
        init_order_actor()
            .state(Json::object())
            .on_sleep([](Ctx& c) -> Void {
                const std::int64_t count = co_await count_rows(c, kCountItems);
                observe(&Observations::on_sleep, c.actor_id(), count);
                co_await execute(c, "INSERT INTO init_order_items (name) VALUES (?)",
                                 "sleep-event");
            })
            .action("getActorId", [](Act& c) { return c.actor_id(); })
            .action("insert", insert)
            .action("getSleepEventCount",
                    [](Act& c) {
                        return count_rows(c, "SELECT COUNT(*) as count FROM init_order_items "
                                             "WHERE name = 'sleep-event'");
                    })
            .action("triggerSleep", [](Act& c) { c.sleep(); }));
    registry.use("dbInitOrderOnDestroyActor",
                 init_order_actor(false)
                     .state(Json::object())
                     .on_destroy([](Ctx& c) -> Void {
                         const std::int64_t count = co_await count_rows(c, kCountItems);
                         observe(&Observations::on_destroy, c.actor_id(), count);
                     })
                     .action("getActorId", [](Act& c) { return c.actor_id(); })
                     .action("insert", insert)
                     .action("triggerDestroy", [](Act& c) { c.destroy(); }));
    registry.use("dbInitOrderObserver",
                 JsonActor()
                     .state(Json::object())
                     .action("getOnSleepCount",
                             [](Act&, std::string actor_id) {
                                 return observed(&Observations::on_sleep, actor_id);
                             })
                     .action("getOnDestroyCount", [](Act&, std::string actor_id) {
                         return observed(&Observations::on_destroy, actor_id);
                     }));
}

// MARK: db-stress.ts

Void create_stress_tables(Ctx& c) {
    co_await execute_script(
        c,
        "CREATE TABLE IF NOT EXISTS stress_data (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "value TEXT NOT NULL, created_at INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS stress_meta_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
        "updated_at INTEGER NOT NULL);"
        "CREATE TABLE IF NOT EXISTS stress_payloads (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, "
        "payload TEXT NOT NULL, updated_at INTEGER NOT NULL)");
}

constexpr const char* kUpsertMeta =
    "INSERT OR REPLACE INTO stress_meta_kv (key, value, updated_at) VALUES (?, ?, ?)";
constexpr const char* kInsertData = "INSERT INTO stress_data (value, created_at) VALUES (?, ?)";

Task upsert_meta_rows(Act& c, std::int64_t count) {
    const std::int64_t n = std::max<std::int64_t>(0, count);
    for (std::int64_t i = 0; i < n; ++i) {
        co_await execute(c, kUpsertMeta, "key-" + std::to_string(i % 32),
                         "value-" + std::to_string(i), c.now_ms());
    }
    co_return first_value(co_await execute(c, "SELECT COUNT(*) as count FROM stress_meta_kv"));
}

// The fixture's kitchen sink. Its `Promise.all` groups run one after the other here: the
// statements of one actor's database are serialized either way.
Task kitchen_sink_smoke(Act& c, std::int64_t rounds) {
    const std::int64_t n = std::max<std::int64_t>(1, rounds);
    const std::int64_t started_at = c.now_ms();
    co_await execute(c, kUpsertMeta, "started-at", std::to_string(started_at), started_at);
    for (std::int64_t round = 0; round < n; ++round) {
        const std::int64_t now = started_at + round;
        const std::string r = std::to_string(round);
        co_await execute(c, kUpsertMeta, "parallel-key-" + std::to_string(round % 17),
                         "parallel-value-" + r, now);
        co_await execute(c, kInsertData, "parallel-data-" + r, now);
        co_await execute(c, "SELECT COUNT(*) as count FROM stress_meta_kv");
        co_await execute(c, "PRAGMA page_count");

        TxBody body = [round, r, now](sqlite::Session& tx) -> Status {
            std::vector<SqlValue> insert{SqlValue("tx-data-" + r), SqlValue(now)};
            if (Status s = run(tx, kInsertData, std::move(insert)); !s.ok())
                return s;
            std::vector<SqlValue> payload{
                SqlValue(round + 1), SqlValue("payload-" + r),
                SqlValue(std::string(static_cast<std::size_t>(1024 + (round % 5) * 2048), 'x')),
                SqlValue(now)};
            if (Status s = run(tx,
                               "INSERT OR REPLACE INTO stress_payloads (id, tag, payload, "
                               "updated_at) VALUES (?, ?, ?, ?)",
                               std::move(payload));
                !s.ok())
                return s;
            if (Status s = run(tx, "SAVEPOINT payload_patch", {}); !s.ok())
                return s;
            std::vector<SqlValue> patch{SqlValue("-patch-" + r), SqlValue(now + 1),
                                        SqlValue(round + 1)};
            if (Status s = run(tx,
                               "UPDATE stress_payloads SET payload = payload || ?, updated_at = ? "
                               "WHERE id = ?",
                               std::move(patch));
                !s.ok())
                return s;
            if (Status s = run(tx, "ROLLBACK TO payload_patch", {}); !s.ok())
                return s;
            if (Status s = run(tx, "RELEASE payload_patch", {}); !s.ok())
                return s;
            std::vector<SqlValue> meta{SqlValue("tx-value-" + r), SqlValue(now + 2),
                                       SqlValue("parallel-key-" + std::to_string(round % 17))};
            return run(tx, "UPDATE stress_meta_kv SET value = ?, updated_at = ? WHERE key = ?",
                       std::move(meta));
        };
        co_await transaction(c, std::move(body));

        // A transaction its body abandons: nothing of it stays.
        TxBody rollback = [r, now](sqlite::Session& tx) -> Status {
            std::vector<SqlValue> insert{SqlValue("rollback-data-" + r), SqlValue(now)};
            if (Status s = run(tx, kInsertData, std::move(insert)); !s.ok())
                return s;
            return Error("user", "intentional_rollback", "intentional stress rollback");
        };
        std::shared_ptr<Database> db = co_await c.db();
        Status abandoned = co_await db->transaction(std::move(rollback));
        if (abandoned.ok() || !abandoned.error().is("user", "intentional_rollback"))
            throw ErrorException(abandoned.ok() ? Error("user", "intentional_rollback",
                                                        "the rollback did not fail")
                                                : abandoned.error());

        if (round % 3 == 0) {
            co_await execute(c,
                             "DELETE FROM stress_data WHERE id IN (SELECT id FROM stress_data "
                             "WHERE value LIKE 'parallel-data-%' ORDER BY id LIMIT 1)");
        }
    }
    co_await execute(c, kUpsertMeta, "completed-rounds", std::to_string(n), c.now_ms());
    co_await execute(c, "DELETE FROM stress_payloads WHERE id % 11 = 0");
    co_await execute(c, "VACUUM");

    Json out = Json::object();
    out["metaCount"] =
        first_value(co_await execute(c, "SELECT COUNT(*) as count FROM stress_meta_kv"));
    out["dataCount"] =
        first_value(co_await execute(c, "SELECT COUNT(*) as count FROM stress_data"));
    out["payloadCount"] =
        first_value(co_await execute(c, "SELECT COUNT(*) as count FROM stress_payloads"));
    out["pageCount"] = first_value(co_await execute(c, "PRAGMA page_count"));
    Json integrity = first_value(co_await execute(c, "PRAGMA integrity_check"));
    out["integrity"] = integrity.is_string() ? integrity.get<std::string>() : std::string();
    co_return out;
}

JsonActor db_stress_actor() {
    ActorOptions options;
    options.database = true;
    options.action_timeout = 120s;
    options.sleep_timeout = 100ms;
    return JsonActor()
        .state(Json::object())
        .options(options)
        .on_migrate(create_stress_tables)
        .action("insertBatch",
                [](Act& c, std::int64_t count) -> Task {
                    const std::string now = std::to_string(c.now_ms());
                    std::string sql = "INSERT INTO stress_data (value, created_at) VALUES ";
                    for (std::int64_t i = 0; i < count; ++i)
                        sql += (i == 0 ? "" : ", ") + ("('row-" + std::to_string(i) + "', ") +
                               now + ")";
                    co_await execute(c, std::move(sql));
                    Json out = Json::object();
                    out["count"] = count;
                    co_return out;
                })
        .action("upsertMetaRows", upsert_meta_rows)
        .action("kitchenSinkSmoke", kitchen_sink_smoke)
        .action("getCount",
                [](Act& c) -> Task {
                    co_return first_value(
                        co_await execute(c, "SELECT COUNT(*) as count FROM stress_data"));
                })
        .action("measureEventLoopHealth",
                [](Act& c, std::int64_t insert_count) -> Task {
                    const std::int64_t start_ms = c.now_ms();
                    for (std::int64_t i = 0; i < insert_count; ++i) {
                        co_await execute(c, "INSERT INTO stress_data (value, created_at) VALUES "
                                            "('drift-" +
                                                std::to_string(i) + "', " +
                                                std::to_string(c.now_ms()) + ")");
                    }
                    Json out = Json::object();
                    out["elapsedMs"] = c.now_ms() - start_ms;
                    out["insertCount"] = insert_count;
                    co_return out;
                })
        .action("writeAndVerify",
                [](Act& c, std::int64_t count) -> Task {
                    const std::string now = std::to_string(c.now_ms());
                    for (std::int64_t i = 0; i < count; ++i) {
                        co_await execute(c, "INSERT INTO stress_data (value, created_at) VALUES "
                                            "('verify-" +
                                                std::to_string(i) + "', " + now + ")");
                    }
                    co_return first_value(co_await execute(
                        c, "SELECT COUNT(*) as count FROM stress_data WHERE value LIKE "
                           "'verify-%'"));
                })
        .action("integrityCheck",
                [](Act& c) -> Task {
                    Json value = first_value(co_await execute(c, "PRAGMA integrity_check"));
                    co_return value.is_string() ? value.get<std::string>() : std::string();
                })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("reset",
                [](Act& c) -> Void {
                    co_await execute(c, "DELETE FROM stress_data");
                    co_await execute(c, "DELETE FROM stress_meta_kv");
                    co_await execute(c, "DELETE FROM stress_payloads");
                })
        .action("destroy", [](Act& c) { c.destroy(); });
}

// MARK: db-lifecycle.ts

// Per actor id: database clients made and migrations run. C++ has no database-provider hooks;
// both count the starts that ran on_migrate (the TypeScript provider makes a client and migrates
// once per start too).
struct LifecycleCounts {
    std::mutex mutex;
    std::map<std::string, std::int64_t> create;
    std::map<std::string, std::int64_t> migrate;
};
LifecycleCounts& lifecycle_counts() {
    static LifecycleCounts counts;
    return counts;
}
void count_lifecycle_start(const std::string& actor_id) {
    LifecycleCounts& counts = lifecycle_counts();
    std::lock_guard lock(counts.mutex);
    counts.create[actor_id] += 1;
    counts.migrate[actor_id] += 1;
}

void use_lifecycle_db_fixtures(Registry& registry) {
    ActorOptions options;
    options.database = true;
    options.sleep_timeout = 1000ms;
    registry.use(
        "dbLifecycle",
        JsonActor()
            .state(Json::object())
            .options(options)
            .on_migrate([](Ctx& c) -> Void {
                count_lifecycle_start(c.actor_id());
                co_await execute_script(c,
                                        "CREATE TABLE IF NOT EXISTS lifecycle_data ("
                                        "id INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL, "
                                        "created_at INTEGER NOT NULL)");
            })
            .action("getActorId", [](Act& c) { return c.actor_id(); })
            .action("ping", [](Act&) { return std::string("pong"); })
            .action("insertValue",
                    [](Act& c, std::string value) -> Void {
                        co_await execute(c,
                                         "INSERT INTO lifecycle_data (value, created_at) VALUES "
                                         "(?, ?)",
                                         std::move(value), c.now_ms());
                    })
            .action("getCount",
                    [](Act& c) -> Task {
                        Json value = first_value(
                            co_await execute(c, "SELECT COUNT(*) as count FROM lifecycle_data"));
                        co_return value.is_null() ? Json(0) : value;
                    })
            .action("triggerSleep", [](Act& c) { c.sleep(); })
            .action("triggerDestroy", [](Act& c) { c.destroy(); }));
    ActorOptions failing_options;
    failing_options.database = true;
    registry.use("dbLifecycleFailing",
                 JsonActor()
                     .state(Json::object())
                     .options(failing_options)
                     .on_migrate([](Ctx& c) {
                         count_lifecycle_start(c.actor_id());
                         throw std::runtime_error("forced migrate failure");
                     })
                     .action("ping", [](Act&) { return std::string("pong"); }));
    registry.use("dbLifecycleObserver",
                 JsonActor().state(Json::object()).action("getCounts", [](Act&, std::string id) {
                     LifecycleCounts& counts = lifecycle_counts();
                     std::lock_guard lock(counts.mutex);
                     Json out = Json::object();
                     out["create"] = counts.create.count(id) ? counts.create[id] : 0;
                     out["migrate"] = counts.migrate.count(id) ? counts.migrate[id] : 0;
                     return out;
                 }));
}

}  // namespace

void use_db_fixtures(Registry& registry) {
    registry.use("dbActorRaw", db_actor_raw());
    registry.use("dbPragmaMigrationActor", db_pragma_migration_actor());
    registry.use("dbStressActor", db_stress_actor());
    use_init_order_fixtures(registry);
    use_lifecycle_db_fixtures(registry);
}

}  // namespace rivetkit::driver

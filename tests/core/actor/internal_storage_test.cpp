// The actor's internal storage in its SQLite database (core/actor/internal_storage.hpp) over an
// in-memory page store: records round-trip through upstream's tables, the legacy KV layout is
// imported once (and again from the start when an import was interrupted), and storage this host
// cannot read fails closed without anything being overwritten.

#include "core/actor/internal_storage.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/actor/keys.hpp"
#include "core/actor/sqlite.hpp"
#include "memory_page_store.hpp"
#include "sqlite/database.hpp"

namespace rivetkit::core {
namespace {

namespace asio = boost::asio;
using rivetkit::testing::MemoryPageStore;
using sqlite::Value;

template <typename F>
void run(F body) {
    asio::io_context io;
    auto done = asio::co_spawn(io, body(), asio::use_future);
    io.run();
    done.get();
}

int next_name = 0;

// A store on `pages` for one actor generation; `legacy` is its engine KV.
struct Generation {
    std::shared_ptr<ActorSqlite> sqlite;
    std::shared_ptr<SqliteActorStore> store;

    Generation(std::shared_ptr<MemoryPageStore> pages, std::shared_ptr<InMemoryKv> legacy)
        : sqlite(std::make_shared<ActorSqlite>("storage-test-" + std::to_string(++next_name),
                                               std::move(pages))),
          store(std::make_shared<SqliteActorStore>("actor-1", sqlite, std::move(legacy))) {}
};

// Runs statements on the pages directly (no generation may have the database open).
sqlite::QueryResult sql(const std::shared_ptr<MemoryPageStore>& pages, const std::string& query,
                        std::vector<Value> params = {}) {
    auto conn = sqlite::Connection::open("storage-test-direct-" + std::to_string(++next_name), pages);
    EXPECT_TRUE(conn.ok()) << (conn.ok() ? "" : conn.error().to_string());
    if (!conn.ok())
        return {};
    sqlite::Session s(**conn);
    auto rows = s.query(query, params);
    EXPECT_TRUE(rows.ok()) << query << ": " << (rows.ok() ? "" : rows.error().to_string());
    return rows.ok() ? std::move(rows).value() : sqlite::QueryResult{};
}

Bytes le64(std::int64_t v) {
    Bytes out(8);
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * i));
    return out;
}

PersistedActor sample_actor() {
    PersistedActor actor;
    actor.input = Bytes{0xa1, 0x61, 0x6e, 0x01};  // {"n": 1}
    actor.has_initialized = true;
    actor.state = Bytes{0xa1, 0x65, 'c', 'o', 'u', 'n', 't', 0x05};  // {"count": 5}
    actor.scheduled_events.push_back({"ev-1", 1'800'000'000'000, "remind", std::nullopt});
    actor.scheduled_events.push_back({"ev-2", 1'800'000'000'500, "bump", Bytes{0x81, 0x02}});
    return actor;
}

PersistedConnection sample_conn() {
    PersistedConnection conn;
    conn.id = "conn-1";
    conn.parameters = Bytes{0xf6};
    conn.state = Bytes{0xa0};
    conn.subscriptions = {{"newCount"}, {"tick"}};
    conn.gateway_id = {1, 2, 3, 4};
    conn.request_id = {5, 6, 7, 8};
    conn.server_message_index = 7;
    conn.client_message_index = 3;
    conn.request_path = "/connect";
    conn.request_headers = {{"x-rivet-encoding", "bare"}};
    return conn;
}

PersistedQueueMessage sample_message(std::string body_text) {
    PersistedQueueMessage m;
    m.name = "jobs";
    m.body = to_bytes(body_text);
    m.created_at = 1'700'000'000'000;
    return m;
}

// The legacy layout of one actor, as the KV-era hosts wrote it.
std::shared_ptr<InMemoryKv> legacy_layout() {
    auto kv = std::make_shared<InMemoryKv>();
    kv->insert(keys::to_bytes(keys::kPersistData), encode_persisted_actor(sample_actor()));
    kv->insert(keys::connection_key("conn-1"), encode_persisted_connection(sample_conn()));
    kv->insert(keys::to_bytes(keys::kInspectorToken), to_bytes("legacy-token"));
    kv->insert(keys::user_key(to_bytes("greeting")), to_bytes("hello"));
    kv->insert(to_bytes("plain"), to_bytes("raw user key"));  // this project's pre-[4] user KV
    kv->insert(keys::to_bytes(keys::kQueueMetadata), encode_queue_metadata({9, 2}));
    kv->insert(keys::queue_message_key(4), encode_queue_message(sample_message("four")));
    kv->insert(keys::queue_message_key(7), encode_queue_message(sample_message("seven")));
    kv->insert(keys::to_bytes(keys::kLastPushedAlarm), encode_last_pushed_alarm(1'800'000'000'000));
    return kv;
}

// One key or one entry as a batch. (Braced lists inside co_await expressions trip GCC 12's
// coroutine lowering, so batches are built by plain functions.)
std::vector<Bytes> one_key(Bytes key) {
    std::vector<Bytes> out;
    out.push_back(std::move(key));
    return out;
}
std::vector<KvEntry> one_entry(Bytes key, Bytes value) {
    std::vector<KvEntry> out;
    out.emplace_back(std::move(key), std::move(value));
    return out;
}

std::vector<Bytes> record_keys() {
    return {keys::to_bytes(keys::kPersistData), keys::connection_key("conn-1"),
            keys::to_bytes(keys::kInspectorToken), keys::to_bytes(keys::kLastPushedAlarm),
            keys::to_bytes(keys::kQueueMetadata), keys::queue_message_key(7)};
}

// The vault actor's database as the TypeScript host (rivetkit 2.3.19) wrote it
// (vectors/generate_ts_storage.sh): its CREATE statements and its rows, a blob as a byte array.
nlohmann::json ts_vector() {
    std::ifstream in(std::string(RIVETKIT_STORAGE_VECTORS_DIR) + "/ts-2.3.19-vault.json");
    EXPECT_TRUE(in.good());
    return nlohmann::json::parse(in, nullptr, false);
}

Value value_of(const nlohmann::json& v) {
    if (v.is_null())
        return Value(std::monostate{});
    if (v.is_number_integer())
        return Value(v.get<std::int64_t>());
    if (v.is_number_float())
        return Value(v.get<double>());
    if (v.is_string())
        return Value(v.get<std::string>());
    Bytes bytes;
    for (const auto& b : v)
        bytes.push_back(b.get<std::uint8_t>());
    return Value(std::move(bytes));
}

Bytes bytes_of(const nlohmann::json& v) {
    return std::get<Bytes>(value_of(v));
}

// Rebuilds that database on `pages` with the TypeScript host's own statements and rows.
void load_ts_database(const std::shared_ptr<MemoryPageStore>& pages, const nlohmann::json& dump) {
    auto conn = sqlite::Connection::open("storage-test-ts-" + std::to_string(++next_name), pages);
    ASSERT_TRUE(conn.ok()) << conn.error().to_string();
    sqlite::Session s(**conn);
    for (const char* type : {"table", "index"}) {
        for (const auto& m : dump["master"]) {
            if (m["type"] == type && m["sql"].is_string()) {
                ASSERT_TRUE(s.exec(m["sql"].get<std::string>()).ok()) << m["sql"];
            }
        }
    }
    for (const auto& [table, rows] : dump["tables"].items()) {
        for (const auto& row : rows) {
            std::string cols;
            std::string marks;
            std::vector<Value> params;
            for (const auto& [col, v] : row.items()) {
                cols += (cols.empty() ? "" : ", ") + col;
                marks += marks.empty() ? "?" : ", ?";
                params.push_back(value_of(v));
            }
            auto inserted =
                s.run("INSERT INTO " + table + " (" + cols + ") VALUES (" + marks + ")", params);
            ASSERT_TRUE(inserted.ok()) << table << ": " << inserted.error().to_string();
        }
    }
}

}  // namespace

TEST(InternalStorage, TheTypeScriptHostsDatabaseReadsBackAsItsRecordsWithoutAWrite) {
    const nlohmann::json dump = ts_vector();
    ASSERT_TRUE(dump.is_object());
    auto pages = std::make_shared<MemoryPageStore>();
    load_ts_database(pages, dump);
    const auto& tables = dump["tables"];
    const int commits = pages->commits;
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        auto values = co_await g.store->batch_get(record_keys());
        EXPECT_TRUE(values.ok()) << values.error().to_string();
        if (!values.ok())
            co_return;
        const auto& v = values.value();
        auto actor = decode_persisted_actor(*v[0]).value();
        EXPECT_TRUE(actor.has_initialized);
        EXPECT_FALSE(actor.input.has_value());
        EXPECT_EQ(nlohmann::json::from_cbor(actor.state), nlohmann::json({{"count", 5}, {"reminded", 0}}));
        EXPECT_EQ(actor.state, bytes_of(tables["_rivet_actor_state"][0]["state"]));
        const auto& event = tables["_rivet_schedule_events"][0];
        EXPECT_EQ(actor.scheduled_events.size(), 1u);
        if (actor.scheduled_events.size() == 1u) {
            EXPECT_EQ(actor.scheduled_events[0].event_id, event["event_id"]);
            EXPECT_EQ(actor.scheduled_events[0].action, "remind");
            EXPECT_EQ(actor.scheduled_events[0].timestamp, event["trigger_at"].get<std::int64_t>());
            EXPECT_EQ(actor.scheduled_events[0].args, std::optional<Bytes>(Bytes{0x80}));
        }
        const auto& runtime = tables["_rivet_runtime"][0];
        EXPECT_EQ(*v[2], to_bytes(runtime["inspector_token"].get<std::string>()));
        EXPECT_EQ(decode_last_pushed_alarm(*v[3]).value(),
                  runtime["last_pushed_alarm"].get<std::int64_t>());
        EXPECT_EQ(decode_queue_metadata(*v[4]).value(), (PersistedQueueMetadata{2, 1}));
        auto queue = co_await g.store->list_prefix(keys::to_bytes(keys::kQueueMessagesPrefix), {});
        EXPECT_TRUE(queue.ok() && queue.value().size() == 1u);
        if (queue.ok() && queue.value().size() == 1u) {
            EXPECT_EQ(queue.value()[0].first, keys::queue_message_key(1));
            auto message = decode_queue_message(queue.value()[0].second).value();
            EXPECT_EQ(message.name, "jobs");
            EXPECT_EQ(nlohmann::json::from_cbor(message.body), nlohmann::json({{"n", 1}}));
        }
        Kv user(std::make_shared<UserKv>(g.store), "actor-1");
        auto greeting = co_await user.get(to_bytes("greeting"));
        EXPECT_EQ(greeting.value(), std::optional<Bytes>(to_bytes("hello-1")));
        co_await g.sqlite->cleanup();
    });
    EXPECT_EQ(pages->commits, commits) << "reading an actor must not rewrite its database";
}

TEST(InternalStorage, OurSchemaIsTheTypeScriptHostsSchema) {
    const nlohmann::json dump = ts_vector();
    ASSERT_TRUE(dump.is_object());
    auto theirs = std::make_shared<MemoryPageStore>();
    load_ts_database(theirs, dump);
    auto ours = std::make_shared<MemoryPageStore>();
    run([&]() -> asio::awaitable<void> {
        Generation g(ours, std::make_shared<InMemoryKv>());
        EXPECT_TRUE((co_await g.store->prepare()).ok());
        co_await g.sqlite->cleanup();
    });
    auto shape = [](const std::shared_ptr<MemoryPageStore>& pages, const std::string& name) {
        auto cols = sql(pages, "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid",
                        {Value(name)});
        auto kind = sql(pages, "SELECT type, wr, strict FROM pragma_table_list(?)", {Value(name)});
        auto indexes = sql(pages, "SELECT name, \"unique\", partial FROM pragma_index_list(?) ORDER BY name",
                           {Value(name)});
        return std::make_tuple(cols.rows, kind.rows, indexes.rows);
    };
    std::size_t compared = 0;
    for (const auto& m : dump["master"]) {
        const std::string name = m["name"];
        if (m["type"] != "table" || name.rfind("_rivet_", 0) != 0)
            continue;
        EXPECT_EQ(shape(ours, name), shape(theirs, name)) << name;
        ++compared;
    }
    EXPECT_EQ(compared, 11u);
}

TEST(InternalStorage, AFreshActorReadsEmptyAndGetsTheCurrentSchema) {
    auto pages = std::make_shared<MemoryPageStore>();
    auto legacy = std::make_shared<InMemoryKv>();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, legacy);
        auto values = co_await g.store->batch_get(record_keys());
        EXPECT_TRUE(values.ok()) << values.error().to_string();
        for (const auto& v : values.value())
            EXPECT_FALSE(v.has_value());
        co_await g.sqlite->cleanup();
    });
    auto meta = sql(pages, "SELECT key, value FROM _rivet_meta ORDER BY key");
    ASSERT_EQ(meta.rows.size(), 2u);
    EXPECT_EQ(std::get<std::string>(meta.rows[0][0]), "kv_import_state");
    EXPECT_EQ(std::get<Bytes>(meta.rows[0][1]), to_bytes("done"));
    EXPECT_EQ(std::get<std::string>(meta.rows[1][0]), "schema_version");
    EXPECT_EQ(std::get<Bytes>(meta.rows[1][1]), le64(kInternalSchemaVersion));
    // The v2 step of the ladder ran: the trace columns exist.
    auto cols = sql(pages, "SELECT name FROM pragma_table_info('_rivet_queue') ORDER BY cid");
    ASSERT_EQ(cols.rows.size(), 7u);
    EXPECT_EQ(std::get<std::string>(cols.rows[6][0]), "tracestate");
}

TEST(InternalStorage, RecordsRoundTripThroughUpstreamsTables) {
    auto pages = std::make_shared<MemoryPageStore>();
    auto legacy = std::make_shared<InMemoryKv>();
    run([&]() -> asio::awaitable<void> {
        auto actor = std::make_shared<PersistedActor>(sample_actor());
        auto conn = std::make_shared<PersistedConnection>(sample_conn());
        Generation g(pages, legacy);
        std::vector<KvEntry> puts;
        puts.emplace_back(keys::to_bytes(keys::kPersistData), encode_persisted_actor(*actor));
        puts.emplace_back(keys::connection_key(conn->id), encode_persisted_connection(*conn));
        puts.emplace_back(keys::to_bytes(keys::kInspectorToken), to_bytes("tok"));
        puts.emplace_back(keys::to_bytes(keys::kLastPushedAlarm),
                          encode_last_pushed_alarm(1'800'000'000'000));
        puts.emplace_back(keys::queue_message_key(7), encode_queue_message(sample_message("x")));
        puts.emplace_back(keys::to_bytes(keys::kQueueMetadata), encode_queue_metadata({8, 1}));
        Status put = co_await g.store->apply_batch(std::move(puts), {});
        EXPECT_TRUE(put.ok()) << put.error().to_string();
        auto values = co_await g.store->batch_get(record_keys());
        EXPECT_TRUE(values.ok());
        const auto& v = values.value();
        EXPECT_EQ(decode_persisted_actor(*v[0]).value(), *actor);
        EXPECT_TRUE(decode_persisted_connection(*v[1]).value() == *conn);
        EXPECT_EQ(*v[2], to_bytes("tok"));
        EXPECT_EQ(decode_last_pushed_alarm(*v[3]).value(), 1'800'000'000'000);
        EXPECT_EQ(decode_queue_metadata(*v[4]).value(), (PersistedQueueMetadata{8, 1}));
        EXPECT_EQ(decode_queue_message(*v[5]).value(), sample_message("x"));
        auto listed = co_await g.store->list_prefix(keys::to_bytes(keys::kConnPrefix), {});
        EXPECT_EQ(listed.value().size(), 1u);
        // A deleted connection leaves both of its tables.
        Status deleted = co_await g.store->batch_delete(one_key(keys::connection_key(conn->id)));
        EXPECT_TRUE(deleted.ok());
        co_await g.sqlite->cleanup();
    });
    // The rows are upstream's: one-shot events are kind 0; the token is mirrored to engine KV [3]
    // for the dashboard.
    auto events = sql(pages, "SELECT event_id, trigger_at, action, args, kind, max_history FROM "
                             "_rivet_schedule_events ORDER BY trigger_at");
    ASSERT_EQ(events.rows.size(), 2u);
    EXPECT_EQ(std::get<std::string>(events.rows[0][0]), "ev-1");
    EXPECT_TRUE(std::holds_alternative<std::monostate>(events.rows[0][3]));
    EXPECT_EQ(std::get<Bytes>(events.rows[1][3]), (Bytes{0x81, 0x02}));
    EXPECT_EQ(std::get<std::int64_t>(events.rows[1][4]), 0);
    auto state = sql(pages, "SELECT state FROM _rivet_actor_state WHERE id = 1");
    EXPECT_EQ(std::get<Bytes>(state.rows.at(0).at(0)), sample_actor().state);
    auto runtime = sql(pages, "SELECT last_pushed_alarm, inspector_token, queue_next_id FROM _rivet_runtime");
    EXPECT_EQ(std::get<std::int64_t>(runtime.rows.at(0).at(0)), 1'800'000'000'000);
    EXPECT_EQ(std::get<std::string>(runtime.rows.at(0).at(1)), "tok");
    EXPECT_EQ(std::get<std::int64_t>(runtime.rows.at(0).at(2)), 8);
    EXPECT_EQ(sql(pages, "SELECT count(*) FROM _rivet_conns").rows.at(0).at(0), Value(std::int64_t{0}));
    EXPECT_EQ(sql(pages, "SELECT count(*) FROM _rivet_conn_state").rows.at(0).at(0), Value(std::int64_t{0}));
    EXPECT_EQ(legacy->peek(keys::to_bytes(keys::kInspectorToken)), to_bytes("tok"));
}

TEST(InternalStorage, TheLegacyLayoutIsImportedOnceAndThenServedFromSqlite) {
    auto pages = std::make_shared<MemoryPageStore>();
    auto legacy = legacy_layout();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, legacy);
        auto values = co_await g.store->batch_get(record_keys());
        EXPECT_TRUE(values.ok()) << values.error().to_string();
        const auto& v = values.value();
        EXPECT_EQ(decode_persisted_actor(*v[0]).value(), sample_actor());
        EXPECT_TRUE(decode_persisted_connection(*v[1]).value() == sample_conn());
        EXPECT_EQ(*v[2], to_bytes("legacy-token"));
        EXPECT_EQ(decode_last_pushed_alarm(*v[3]).value(), 1'800'000'000'000);
        EXPECT_EQ(decode_queue_metadata(*v[4]).value(), (PersistedQueueMetadata{9, 2}));
        EXPECT_EQ(decode_queue_message(*v[5]).value(), sample_message("seven"));
        // User KV: [4] keys verbatim, and this project's raw keys moved under [4].
        Kv user(std::make_shared<UserKv>(g.store), "actor-1");
        auto greeting = co_await user.get(to_bytes("greeting"));
        EXPECT_EQ(*greeting.value(), to_bytes("hello"));
        auto plain = co_await user.get(to_bytes("plain"));
        EXPECT_EQ(*plain.value(), to_bytes("raw user key"));
        auto all = co_await user.list_prefix({});
        EXPECT_EQ(all.value().size(), 2u);
        co_await g.sqlite->cleanup();
    });
    // Once only: a later change to the legacy KV is not read again.
    legacy->insert(keys::to_bytes(keys::kInspectorToken), to_bytes("changed-later"));
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, legacy);
        auto token = co_await g.store->batch_get(one_key(keys::to_bytes(keys::kInspectorToken)));
        EXPECT_EQ(*token.value().at(0), to_bytes("legacy-token"));
        co_await g.sqlite->cleanup();
    });
}

TEST(InternalStorage, AnInterruptedImportStartsOverFromAnEmptyDestination) {
    auto pages = std::make_shared<MemoryPageStore>();
    auto legacy = legacy_layout();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        (void)co_await g.store->prepare();
        co_await g.sqlite->cleanup();
    });
    // What an import cut off half way leaves: the state "importing" and a stray row.
    sql(pages, "UPDATE _rivet_meta SET value = CAST('importing' AS BLOB) WHERE key = 'kv_import_state'");
    sql(pages, "INSERT INTO _rivet_user_kv (key, value) VALUES (X'0473747261', X'00')");
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, legacy);
        auto actor = co_await g.store->batch_get(one_key(keys::to_bytes(keys::kPersistData)));
        EXPECT_TRUE(actor.ok()) << actor.error().to_string();
        EXPECT_EQ(decode_persisted_actor(*actor.value().at(0)).value(), sample_actor());
        co_await g.sqlite->cleanup();
    });
    EXPECT_EQ(sql(pages, "SELECT count(*) FROM _rivet_user_kv").rows.at(0).at(0), Value(std::int64_t{2}));
    EXPECT_EQ(sql(pages, "SELECT value FROM _rivet_meta WHERE key = 'kv_import_state'").rows.at(0).at(0),
              Value(to_bytes("done")));
}

TEST(InternalStorage, AnUndecodableLegacyRecordFailsTheStartAndNothingIsMarkedDone) {
    auto pages = std::make_shared<MemoryPageStore>();
    auto legacy = legacy_layout();
    legacy->insert(keys::to_bytes(keys::kPersistData), Bytes{0x04, 0x00, 0xff});
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, legacy);
        auto actor = co_await g.store->batch_get(one_key(keys::to_bytes(keys::kPersistData)));
        EXPECT_FALSE(actor.ok());
        if (!actor.ok()) {
            EXPECT_EQ(actor.error().id(), "protocol/invalid_persisted_data");
            EXPECT_NE(actor.error().message().find("[1] actor"), std::string::npos)
                << actor.error().message();
            EXPECT_NE(actor.error().metadata().value_or("").find("actor-1"), std::string::npos);
        }
        co_await g.sqlite->cleanup();
    });
    EXPECT_EQ(sql(pages, "SELECT value FROM _rivet_meta WHERE key = 'kv_import_state'").rows.at(0).at(0),
              Value(to_bytes("importing")));
    // The legacy data is untouched for the next attempt.
    EXPECT_EQ(legacy->peek(keys::to_bytes(keys::kInspectorToken)), to_bytes("legacy-token"));
}

TEST(InternalStorage, StorageFromANewerHostFailsClosedWithoutWriting) {
    auto pages = std::make_shared<MemoryPageStore>();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        Status put = co_await g.store->batch_put(one_entry(keys::to_bytes(keys::kPersistData), encode_persisted_actor(sample_actor())));
        EXPECT_TRUE(put.ok());
        co_await g.sqlite->cleanup();
    });
    sql(pages, "UPDATE _rivet_meta SET value = ? WHERE key = 'schema_version'",
        {Value(le64(kInternalSchemaVersion + 1))});
    const auto before = pages->pages;
    const int commits = pages->commits;
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        auto actor = co_await g.store->batch_get(one_key(keys::to_bytes(keys::kPersistData)));
        EXPECT_FALSE(actor.ok());
        if (!actor.ok()) {
            EXPECT_EQ(actor.error().id(), "protocol/invalid_persisted_data");
            EXPECT_NE(actor.error().message().find("schema version 3 is newer"), std::string::npos)
                << actor.error().message();
            auto meta = nlohmann::json::parse(actor.error().metadata().value_or("{}"));
            EXPECT_EQ(meta["found"], 3);
            EXPECT_EQ(meta["supported"], 2);
        }
        Status put = co_await g.store->batch_put(one_entry(keys::to_bytes(keys::kPersistData), encode_persisted_actor(PersistedActor{})));
        EXPECT_FALSE(put.ok());
        co_await g.sqlite->cleanup();
    });
    EXPECT_EQ(pages->commits, commits);
    EXPECT_EQ(pages->pages, before);
}

TEST(InternalStorage, ACorruptRowIsAStructuredErrorNamingTableAndColumn) {
    auto pages = std::make_shared<MemoryPageStore>();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        (void)co_await g.store->batch_put(one_entry(keys::to_bytes(keys::kPersistData), encode_persisted_actor(sample_actor())));
        co_await g.sqlite->cleanup();
    });
    sql(pages, "UPDATE _rivet_actor SET has_initialized = 7");
    sql(pages, "INSERT INTO _rivet_conns VALUES ('c', X'', X'01', X'0102030405', '/', X'a0')");
    sql(pages, "INSERT INTO _rivet_conn_state VALUES ('c', X'', 0, 0, X'a0')");
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        auto actor = co_await g.store->batch_get(one_key(keys::to_bytes(keys::kPersistData)));
        EXPECT_FALSE(actor.ok());
        if (!actor.ok()) {
            EXPECT_EQ(actor.error().id(), "protocol/invalid_persisted_data");
            auto meta = nlohmann::json::parse(actor.error().metadata().value_or("{}"));
            EXPECT_EQ(meta["table"], "_rivet_actor");
            EXPECT_EQ(meta["column"], "has_initialized");
        }
        auto conns = co_await g.store->list_prefix(keys::to_bytes(keys::kConnPrefix), {});
        EXPECT_FALSE(conns.ok());
        if (!conns.ok()) {
            auto conn_meta = nlohmann::json::parse(conns.error().metadata().value_or("{}"));
            EXPECT_EQ(conn_meta["column"], "subscriptions") << conns.error().message();
        }
        co_await g.sqlite->cleanup();
    });
}

TEST(InternalStorage, UserKvKeepsItsKeysUnderItsPrefixAndEnforcesUpstreamsLimits) {
    auto pages = std::make_shared<MemoryPageStore>();
    run([&]() -> asio::awaitable<void> {
        Generation g(pages, std::make_shared<InMemoryKv>());
        Kv user(std::make_shared<UserKv>(g.store), "actor-1");
        EXPECT_TRUE((co_await user.put(to_bytes("a/1"), to_bytes("x"))).ok());
        EXPECT_TRUE((co_await user.put(to_bytes("a/2"), to_bytes("y"))).ok());
        EXPECT_TRUE((co_await user.put(to_bytes("b"), to_bytes("z"))).ok());
        auto a = co_await user.list_prefix(to_bytes("a/"));
        EXPECT_TRUE(a.ok() && a.value().size() == 2u);
        if (a.ok() && a.value().size() == 2u) {
            EXPECT_EQ(a.value()[0].first, to_bytes("a/1"));
        }
        auto reversed = co_await user.list_range(to_bytes("a"), {}, ListOpts{true, 1});
        EXPECT_TRUE(reversed.ok() && reversed.value().size() == 1u);
        if (reversed.ok() && reversed.value().size() == 1u) {
            EXPECT_EQ(reversed.value().at(0).first, to_bytes("b"));
        }
        EXPECT_TRUE((co_await user.delete_range(to_bytes("a/"), to_bytes("a0"))).ok());
        EXPECT_EQ((co_await user.list_prefix({})).value().size(), 1u);
        Status big = co_await user.put(to_bytes("big"), Bytes(128 * 1024 + 1, 0));
        EXPECT_FALSE(big.ok());
        if (!big.ok()) {
            EXPECT_EQ(big.error().id(), "kv/value_too_large");
        }
        co_await g.sqlite->cleanup();
    });
    auto keys = sql(pages, "SELECT key FROM _rivet_user_kv");
    ASSERT_EQ(keys.rows.size(), 1u);
    EXPECT_EQ(std::get<Bytes>(keys.rows[0][0]), (Bytes{4, 'b'}));
}

}  // namespace rivetkit::core

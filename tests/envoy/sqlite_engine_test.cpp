// The SQLite page requests against the real Rivet Engine 2.3.19: what a fresh database looks
// like, a commit round trip, the head-txid and generation fences, and pages surviving a sleep.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/actor/sqlite_database.hpp"
#include "core/actor/sqlite_envoy_store.hpp"
#include "engine_harness.hpp"
#include "live_envoy.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rivetkit::Bytes;
using rivetkit::Result;
using rivetkit::testing::EngineHarness;
using rivetkit::testing::http_request;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

const std::string kPool = "cpp-pool";

EnvoyConfig live_config(const EngineHarness& engine) {
    EnvoyConfig c;
    c.endpoint = engine.endpoint();
    c.pool_name = kPool;
    c.prepopulate_actor_names = {{"counter", R"({"kind":"test"})"}};
    return c;
}

std::unique_ptr<EngineHarness> start_engine() {
    auto engine = EngineHarness::start({});
    if (!engine.ok()) {
        ADD_FAILURE() << engine.error().to_string();
        return nullptr;
    }
    auto pool = (*engine)->create_pool(kPool);
    EXPECT_TRUE(pool.ok()) << (pool.ok() ? "" : pool.error().to_string());
    return std::move(engine).value();
}

struct Started {
    std::string actor;
    std::uint32_t generation = 0;
};

Started start_actor(EngineHarness& engine, LiveCallbacks& cb, LiveEnvoy& envoy,
                    const std::string& key) {
    if (!cb.wait([](const LiveCallbacks::State& s) { return s.connects >= 1; }))
        return {};
    if (!engine.wait_envoy_registered(envoy.handle().envoy_key()).ok())
        return {};
    auto id = engine.create_actor("counter", key, kPool);
    if (!id.ok())
        return {};
    std::string actor = *id;
    if (!cb.wait([&](const LiveCallbacks::State& s) { return s.starts_of(actor) >= 1; }))
        return {};
    return {actor, cb.read([](const auto& s) { return s.starts.back().generation; })};
}

Bytes page_of(std::uint8_t fill) {
    return Bytes(4096, fill);
}

std::optional<Result<SqliteGetPagesResult>> get_pages(LiveEnvoy& envoy, std::string actor,
                                                      std::vector<std::uint32_t> pgnos,
                                                      SqliteFence fence) {
    EnvoyHandle h = envoy.handle();
    return envoy.run([h, actor, pgnos, fence]() -> asio::awaitable<Result<SqliteGetPagesResult>> {
        co_return co_await h.sqlite_get_pages(actor, pgnos, fence);
    });
}

std::optional<Result<std::optional<std::uint64_t>>> commit(LiveEnvoy& envoy, std::string actor,
                                                           SqliteCommit c, SqliteFence fence) {
    EnvoyHandle h = envoy.handle();
    return envoy.run(
        [h, actor, c, fence]() -> asio::awaitable<Result<std::optional<std::uint64_t>>> {
            co_return co_await h.sqlite_commit(actor, c, fence);
        });
}

namespace sql = rivetkit::core::sqlite;

std::shared_ptr<sql::Database> open_db(LiveEnvoy& envoy, const std::string& actor,
                                       std::uint32_t generation) {
    EnvoyHandle h = envoy.handle();
    auto opened = envoy.run(
        [h, actor, generation]() -> asio::awaitable<Result<std::shared_ptr<sql::Database>>> {
            asio::any_io_executor io = co_await asio::this_coro::executor;
            auto store = std::make_shared<sql::EnvoyPageStore>(h, io, actor, generation);
            co_return co_await sql::Database::open(actor, store);
        });
    EXPECT_TRUE(opened && opened->ok()) << (opened ? opened->error().to_string() : "no reply");
    return opened && opened->ok() ? opened->value() : nullptr;
}

rivetkit::Status exec(LiveEnvoy& envoy, std::shared_ptr<sql::Database> db, std::string text) {
    auto r = envoy.run(
        [db, text]() -> asio::awaitable<rivetkit::Status> { co_return co_await db->exec(text); });
    return r ? *r : rivetkit::Status(rivetkit::Error("test", "timeout", "no reply"));
}

std::vector<std::string> names(LiveEnvoy& envoy, std::shared_ptr<sql::Database> db) {
    auto r = envoy.run([db]() -> asio::awaitable<Result<sql::QueryResult>> {
        std::string text = "SELECT name FROM people ORDER BY id";
        co_return co_await db->query(text);
    });
    EXPECT_TRUE(r && r->ok()) << (r ? r->error().to_string() : "no reply");
    std::vector<std::string> out;
    if (r && r->ok()) {
        for (auto& row : (*r)->rows)
            out.push_back(std::get<std::string>(row.at(0)));
    }
    return out;
}

void close_db(LiveEnvoy& envoy, std::shared_ptr<sql::Database> db) {
    envoy.run([db]() -> asio::awaitable<bool> {
        co_await db->close();
        co_return true;
    });
}

}  // namespace

TEST(SqliteEngine, FreshDatabaseHasNoPagesAndCommitsRoundTrip) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    auto started = start_actor(*engine, *cb, envoy, "sqlite-1");
    ASSERT_FALSE(started.actor.empty()) << engine->log_tail();

    // A database nothing was ever committed to does not exist yet: the engine answers
    // depot/database_not_found, which the VFS reads as an empty file.
    auto fresh = get_pages(envoy, started.actor, {1, 2}, SqliteFence{started.generation, {}});
    ASSERT_TRUE(fresh);
    ASSERT_FALSE(fresh->ok());
    EXPECT_EQ(fresh->error().id(), "depot/database_not_found") << fresh->error().to_string();

    SqliteCommit c;
    c.dirty_pages = {{1, page_of(0xA1)}, {2, page_of(0xB2)}};
    c.db_size_pages = 2;
    c.now_ms = 1;
    auto committed = commit(envoy, started.actor, c, SqliteFence{started.generation, {}});
    ASSERT_TRUE(committed);
    ASSERT_TRUE(committed->ok()) << committed->error().to_string() << "\n" << engine->log_tail();
    ASSERT_TRUE(committed->value().has_value());
    std::uint64_t head = *committed->value();

    auto read = get_pages(envoy, started.actor, {1, 2, 3}, SqliteFence{started.generation, head});
    ASSERT_TRUE(read && read->ok()) << (read ? read->error().to_string() : "no reply");
    ASSERT_EQ((*read)->pages.size(), 3u);
    EXPECT_EQ((*read)->pages[0].bytes, page_of(0xA1));
    EXPECT_EQ((*read)->pages[1].bytes, page_of(0xB2));
    EXPECT_FALSE((*read)->pages[2].bytes.has_value());
    EXPECT_EQ((*read)->head_txid, head);

    // A writer that did not see the newest head is fenced off.
    SqliteCommit stale;
    stale.dirty_pages = {{1, page_of(0xCC)}};
    stale.db_size_pages = 2;
    stale.now_ms = 2;
    auto fenced = commit(envoy, started.actor, stale, SqliteFence{started.generation, head - 1});
    ASSERT_TRUE(fenced);
    ASSERT_FALSE(fenced->ok());
    EXPECT_EQ(fenced->error().id(), "depot/head_fence_mismatch") << fenced->error().to_string();

    // So is a generation that is not the actor's.
    auto wrong_generation =
        get_pages(envoy, started.actor, {1}, SqliteFence{started.generation + 5, {}});
    ASSERT_TRUE(wrong_generation);
    ASSERT_FALSE(wrong_generation->ok());
    // The engine answers this one with its generic internal error ("actor does not exist").
    EXPECT_EQ(wrong_generation->error().id(), "core/internal_error");

    // One commit carries at most 320 pages (upstream depot MAX_COMMIT_DIRTY_PAGES).
    SqliteCommit big;
    for (std::uint32_t pgno = 1; pgno <= 321; ++pgno)
        big.dirty_pages.push_back({pgno, page_of(0xDD)});
    big.db_size_pages = 321;
    big.now_ms = 3;
    auto too_large = commit(envoy, started.actor, big, SqliteFence{started.generation, head});
    ASSERT_TRUE(too_large);
    ASSERT_FALSE(too_large->ok());
    EXPECT_EQ(too_large->error().id(), "depot/commit_too_large") << too_large->error().to_string();

    auto unchanged = get_pages(envoy, started.actor, {1}, SqliteFence{started.generation, {}});
    ASSERT_TRUE(unchanged && unchanged->ok());
    EXPECT_EQ((*unchanged)->pages.at(0).bytes, page_of(0xA1));
}

// The VFS end to end: the database outlives a sleep (a new generation reads what the old one
// committed) and an engine restart; a writer of an older generation is refused.
TEST(SqliteEngine, DatabaseSurvivesSleepAndEngineRestart) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    auto started = start_actor(*engine, *cb, envoy, "sqlite-vfs-1");
    ASSERT_FALSE(started.actor.empty()) << engine->log_tail();
    const std::string actor = started.actor;

    auto db = open_db(envoy, actor, started.generation);
    ASSERT_TRUE(db);
    ASSERT_TRUE(exec(envoy, db, "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)").ok());
    ASSERT_TRUE(exec(envoy, db, "INSERT INTO people (name) VALUES ('ada')").ok());
    ASSERT_TRUE(exec(envoy, db,
                     "BEGIN; INSERT INTO people (name) VALUES ('grace');"
                     "INSERT INTO people (name) VALUES ('barbara'); COMMIT;")
                    .ok());
    EXPECT_EQ(names(envoy, db), (std::vector<std::string>{"ada", "grace", "barbara"}));
    close_db(envoy, db);

    // Sleep, then wake as generation 2.
    EnvoyHandle h = envoy.handle();
    envoy.run([h, actor]() -> asio::awaitable<bool> {
        h.sleep_actor(actor);
        co_return true;
    });
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.stops_of(actor) >= 1; }));
    auto woke = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/wake");
    ASSERT_TRUE(woke.ok());
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.starts_of(actor) >= 2; }));
    const auto generation2 = cb->read([](const auto& s) { return s.starts.back().generation; });
    ASSERT_GT(generation2, started.generation);

    // The old generation can no longer read (nor write) the database.
    auto stale = envoy.run(
        [h, actor,
         g = started.generation]() -> asio::awaitable<Result<std::shared_ptr<sql::Database>>> {
            asio::any_io_executor io = co_await asio::this_coro::executor;
            auto store = std::make_shared<sql::EnvoyPageStore>(h, io, actor, g);
            co_return co_await sql::Database::open(actor, store);
        });
    ASSERT_TRUE(stale);
    ASSERT_FALSE(stale->ok());
    EXPECT_EQ(stale->error().id(), "sqlite/storage_error") << stale->error().to_string();

    db = open_db(envoy, actor, generation2);
    ASSERT_TRUE(db);
    EXPECT_EQ(names(envoy, db), (std::vector<std::string>{"ada", "grace", "barbara"}));
    ASSERT_TRUE(exec(envoy, db, "INSERT INTO people (name) VALUES ('margaret')").ok());
    close_db(envoy, db);

    auto restarted = engine->restart();
    ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
    ASSERT_TRUE(cb->wait([](const auto& s) { return s.connects >= 2; }, 60s)) << "no reconnect";

    db = open_db(envoy, actor, generation2);
    ASSERT_TRUE(db);
    EXPECT_EQ(names(envoy, db), (std::vector<std::string>{"ada", "grace", "barbara", "margaret"}));
    auto integrity = envoy.run([db]() -> asio::awaitable<Result<sql::QueryResult>> {
        std::string text = "PRAGMA integrity_check";
        co_return co_await db->query(text);
    });
    ASSERT_TRUE(integrity && integrity->ok());
    EXPECT_EQ(std::get<std::string>((*integrity)->rows.at(0).at(0)), "ok");
    close_db(envoy, db);
}

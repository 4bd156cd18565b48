// The SQLite page requests against the real Rivet Engine 2.3.19: what a fresh database looks
// like, a commit round trip, the head-txid and generation fences, and pages surviving a sleep.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sqlite/database.hpp"
#include "sqlite/envoy_store.hpp"
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

namespace sql = rivetkit::sqlite;

// Puts `actor` to sleep and wakes it through the gateway; the generation it woke as, or 0 when
// the stop, the wake request or the new start did not happen.
std::uint32_t sleep_and_wake(EngineHarness& engine, LiveCallbacks& cb, LiveEnvoy& envoy,
                             const std::string& actor) {
    const auto stops = cb.read([&](const LiveCallbacks::State& s) { return s.stops_of(actor); });
    const auto starts = cb.read([&](const LiveCallbacks::State& s) { return s.starts_of(actor); });
    EnvoyHandle h = envoy.handle();
    envoy.run([h, actor]() -> asio::awaitable<bool> {
        h.sleep_actor(actor);
        co_return true;
    });
    if (!cb.wait([&](const auto& s) { return s.stops_of(actor) > stops; }))
        return 0;
    auto woke = http_request(engine.guard_port(), "GET", "/gateway/" + actor + "/wake");
    if (!woke.ok())
        return 0;
    if (!cb.wait([&](const auto& s) { return s.starts_of(actor) > starts; }))
        return 0;
    return cb.read([](const auto& s) { return s.starts.back().generation; });
}


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
    const auto generation2 = sleep_and_wake(*engine, *cb, envoy, actor);
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

namespace {

sql::Value scalar(LiveEnvoy& envoy, std::shared_ptr<sql::Database> db, std::string text) {
    auto r = envoy.run([db, text]() -> asio::awaitable<Result<sql::QueryResult>> {
        co_return co_await db->query(text);
    });
    EXPECT_TRUE(r && r->ok()) << text << ": " << (r ? r->error().to_string() : "no reply");
    if (!r || !r->ok() || (*r)->rows.empty() || (*r)->rows.at(0).empty())
        return sql::Value{};
    return (*r)->rows.at(0).at(0);
}

}  // namespace

// The staged commit protocol on the real engine: a stage is invisible until finalize, a stage
// abandoned half-way is discarded when the next commit claims its txid, and finalize publishes
// pages beyond the single-commit limit in one step.
TEST(SqliteEngine, StagedCommitIsInvisibleUntilFinalizeAndAnAbandonedStageIsDiscarded) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    auto started = start_actor(*engine, *cb, envoy, "sqlite-staged-1");
    ASSERT_FALSE(started.actor.empty()) << engine->log_tail();
    const std::string actor = started.actor;
    const std::uint32_t g = started.generation;
    EnvoyHandle h = envoy.handle();

    SqliteCommit first;
    first.dirty_pages = {{1, page_of(0x01)}};
    first.db_size_pages = 1;
    first.now_ms = 1;
    auto committed = commit(envoy, actor, first, SqliteFence{g, {}});
    ASSERT_TRUE(committed && committed->ok()) << (committed ? committed->error().to_string() : "");
    std::uint64_t head = committed->value().value();

    auto begin = [&](std::optional<std::uint64_t> expected) {
        return envoy.run([h, actor, g, expected]() -> asio::awaitable<Result<std::uint64_t>> {
            co_return co_await h.sqlite_commit_stage_begin(actor, SqliteFence{g, expected});
        });
    };
    auto segment = [&](std::uint64_t txid, std::uint32_t first_pgno,
                       std::vector<SqliteDirtyPage> pages) {
        return envoy.run([h, actor, g, txid, first_pgno,
                          pages]() -> asio::awaitable<Result<std::uint64_t>> {
            co_return co_await h.sqlite_commit_stage_segment(actor, g, txid, first_pgno, pages);
        });
    };
    auto finalize = [&](std::uint64_t txid, std::uint32_t size, std::vector<std::uint32_t> firsts) {
        return envoy.run([h, actor, g, txid, size,
                          firsts]() -> asio::awaitable<Result<std::optional<std::uint64_t>>> {
            co_return co_await h.sqlite_commit_finalize(actor, g, txid, size, 2, firsts);
        });
    };

    // A stale head is fenced at begin, like a commit.
    auto stale = begin(head - 1);
    ASSERT_TRUE(stale);
    ASSERT_FALSE(stale->ok());
    EXPECT_EQ(stale->error().id(), "depot/head_fence_mismatch") << stale->error().to_string();

    // Abandoned stage: one segment staged, never finalized.
    auto abandoned = begin(head);
    ASSERT_TRUE(abandoned && abandoned->ok()) << (abandoned ? abandoned->error().to_string() : "");
    EXPECT_EQ(**abandoned, head + 1);
    auto staged = segment(**abandoned, 0, {{1, page_of(0xEE)}, {2, page_of(0xEE)}});
    ASSERT_TRUE(staged && staged->ok()) << (staged ? staged->error().to_string() : "");
    EXPECT_GT(**staged, 0u);
    auto unseen = get_pages(envoy, actor, {1, 2}, SqliteFence{g, head});
    ASSERT_TRUE(unseen && unseen->ok()) << (unseen ? unseen->error().to_string() : "");
    EXPECT_EQ((*unseen)->pages.at(0).bytes, page_of(0x01)) << "a staged page is not readable";
    EXPECT_FALSE((*unseen)->pages.at(1).bytes.has_value());
    EXPECT_EQ((*unseen)->head_txid, head);

    // A segment that does not start on a shard boundary is refused.
    auto fresh = begin(head);
    ASSERT_TRUE(fresh && fresh->ok()) << (fresh ? fresh->error().to_string() : "");
    EXPECT_EQ(**fresh, head + 1) << "the abandoned stage's txid is reused";
    auto misaligned = segment(**fresh, 1, {{1, page_of(0x02)}});
    ASSERT_TRUE(misaligned);
    EXPECT_FALSE(misaligned->ok()) << "first_pgno 1 is not a shard boundary";

    // A full staged commit of 700 pages (more than one request may carry) in three segments.
    auto full = begin(head);
    ASSERT_TRUE(full && full->ok()) << (full ? full->error().to_string() : "");
    std::vector<SqliteDirtyPage> pages;
    for (std::uint32_t pgno = 1; pgno <= 700; ++pgno)
        pages.push_back({pgno, page_of(static_cast<std::uint8_t>(pgno))});
    std::vector<std::uint32_t> firsts;
    for (auto& cut : sql::cut_commit_segments(pages)) {
        firsts.push_back(cut.first_pgno);
        auto r = segment(**full, cut.first_pgno, cut.pages);
        ASSERT_TRUE(r && r->ok()) << "segment " << cut.first_pgno << ": "
                                  << (r ? r->error().to_string() : "no reply") << "\n"
                                  << engine->log_tail();
    }
    ASSERT_EQ(firsts, (std::vector<std::uint32_t>{0, 320, 640}));
    auto published = finalize(**full, 700, firsts);
    ASSERT_TRUE(published && published->ok())
        << (published ? published->error().to_string() : "no reply") << "\n"
        << engine->log_tail();
    ASSERT_TRUE(published->value().has_value());
    EXPECT_EQ(*published->value(), head + 1);

    auto read = get_pages(envoy, actor, {1, 2, 320, 700, 701}, SqliteFence{g, head + 1});
    ASSERT_TRUE(read && read->ok()) << (read ? read->error().to_string() : "");
    EXPECT_EQ((*read)->pages.at(0).bytes, page_of(1));
    EXPECT_EQ((*read)->pages.at(1).bytes, page_of(2)) << "not the abandoned stage's 0xEE";
    EXPECT_EQ((*read)->pages.at(2).bytes, page_of(static_cast<std::uint8_t>(320)));
    EXPECT_EQ((*read)->pages.at(3).bytes, page_of(static_cast<std::uint8_t>(700)));
    EXPECT_FALSE((*read)->pages.at(4).bytes.has_value());
}

// Through the VFS: a transaction of ~5 MiB (over 1,200 dirty pages, far past one commit request)
// is published as one staged commit and is there, whole, after a sleep and an engine restart.
TEST(SqliteEngine, TransactionLargerThanOneCommitIsStagedAndSurvivesSleepAndRestart) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    auto started = start_actor(*engine, *cb, envoy, "sqlite-staged-2");
    ASSERT_FALSE(started.actor.empty()) << engine->log_tail();
    const std::string actor = started.actor;

    auto db = open_db(envoy, actor, started.generation);
    ASSERT_TRUE(db);
    ASSERT_TRUE(exec(envoy, db, "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)").ok());
    auto big = exec(envoy, db,
                    "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                    "WHERE i < 1200) INSERT INTO blobs (body) SELECT randomblob(4000) FROM n; "
                    "COMMIT;");
    ASSERT_TRUE(big.ok()) << big.error().to_string() << "\n" << engine->log_tail();
    const auto checksum = scalar(envoy, db, "SELECT sum(length(body)) + count(*) FROM blobs");
    EXPECT_EQ(std::get<std::int64_t>(checksum), 1200 * 4000 + 1200);
    const auto digest = scalar(envoy, db, "SELECT hex(substr(body, 1, 16)) FROM blobs WHERE id = 777");
    // Smaller writes after it still go through the single-request path.
    ASSERT_TRUE(exec(envoy, db, "INSERT INTO blobs (body) VALUES (x'01')").ok());
    close_db(envoy, db);

    const auto generation2 = sleep_and_wake(*engine, *cb, envoy, actor);
    ASSERT_GT(generation2, started.generation);
    auto restarted = engine->restart();
    ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
    ASSERT_TRUE(cb->wait([](const auto& s) { return s.connects >= 2; }, 60s)) << "no reconnect";

    db = open_db(envoy, actor, generation2);
    ASSERT_TRUE(db);
    EXPECT_EQ(std::get<std::int64_t>(scalar(envoy, db, "SELECT count(*) FROM blobs")), 1201);
    EXPECT_EQ(std::get<std::int64_t>(scalar(envoy, db,
                                            "SELECT sum(length(body)) + count(*) FROM blobs "
                                            "WHERE id <= 1200")),
              1200 * 4000 + 1200);
    EXPECT_EQ(scalar(envoy, db, "SELECT hex(substr(body, 1, 16)) FROM blobs WHERE id = 777"),
              digest);
    EXPECT_EQ(std::get<std::string>(scalar(envoy, db, "PRAGMA integrity_check")), "ok");
    close_db(envoy, db);
}

// A commit applied by the engine whose reply never reached the store (the envoy re-sends a
// request that was in flight across a reconnect; the engine fences the second copy with
// depot/head_fence_mismatch) is recognized as applied by reading its pages back, and the store
// carries on from the engine's head. A fence mismatch over pages that are not this commit's stays
// an error.
TEST(SqliteEngine, CommitWhoseReplyWasLostIsRecognizedAsApplied) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    auto started = start_actor(*engine, *cb, envoy, "sqlite-lost-reply");
    ASSERT_FALSE(started.actor.empty()) << engine->log_tail();
    const std::string actor = started.actor;
    const std::uint32_t g = started.generation;

    auto io = envoy.run([]() -> asio::awaitable<asio::any_io_executor> {
        co_return co_await asio::this_coro::executor;
    });
    ASSERT_TRUE(io);
    // The store blocks the calling thread on the envoy's io thread: call it from this one.
    sql::EnvoyPageStore store(envoy.handle(), *io, actor, g);
    auto pages_of = [](std::uint8_t fill) {
        return std::vector<SqliteDirtyPage>{{1, page_of(fill)},
                                            {2, page_of(static_cast<std::uint8_t>(fill + 1))}};
    };
    ASSERT_TRUE(store.commit(pages_of(0x10), 2).ok());
    auto first = get_pages(envoy, actor, {1}, SqliteFence{g, {}});
    ASSERT_TRUE(first && first->ok());
    const std::uint64_t head = (*first)->head_txid.value();

    // "The store's commit" lands while its reply is lost: sent here outside the store.
    SqliteCommit landed{pages_of(0x20), 2, 5};
    auto applied = commit(envoy, actor, landed, SqliteFence{g, head});
    ASSERT_TRUE(applied && applied->ok()) << (applied ? applied->error().to_string() : "");
    // The re-sent copy meets the fence, and the store recognizes its own pages.
    auto resent = store.commit(pages_of(0x20), 2);
    ASSERT_TRUE(resent.ok()) << resent.error().to_string();
    // It now writes on from the engine's head.
    ASSERT_TRUE(store.commit(pages_of(0x30), 2).ok());
    auto now = get_pages(envoy, actor, {1, 2}, SqliteFence{g, {}});
    ASSERT_TRUE(now && now->ok());
    EXPECT_EQ((*now)->pages.at(0).bytes, page_of(0x30));
    EXPECT_EQ((*now)->pages.at(1).bytes, page_of(0x31));
    EXPECT_EQ((*now)->head_txid, head + 2);

    // Someone else's pages at a newer head: not this commit, the mismatch stands.
    SqliteCommit other{pages_of(0x40), 2, 6};
    auto moved = commit(envoy, actor, other, SqliteFence{g, head + 2});
    ASSERT_TRUE(moved && moved->ok());
    auto refused = store.commit(pages_of(0x50), 2);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().id(), "depot/head_fence_mismatch") << refused.error().to_string();
    auto kept = get_pages(envoy, actor, {1}, SqliteFence{g, {}});
    ASSERT_TRUE(kept && kept->ok());
    EXPECT_EQ((*kept)->pages.at(0).bytes, page_of(0x40));
}

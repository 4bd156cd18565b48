// The page VFS and the database API against an in-memory page store that behaves like the
// engine's (atomic commits, missing pages, injected failures).

#include "sqlite/vfs.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <algorithm>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "sqlite/database.hpp"
#include "sqlite/envoy_store.hpp"
#include "memory_page_store.hpp"

namespace asio = boost::asio;
using rivetkit::Bytes;
using rivetkit::Error;
using rivetkit::Result;
using rivetkit::Status;
using namespace rivetkit::sqlite;
using rivetkit::testing::MemoryPageStore;

namespace {

std::unique_ptr<Connection> open(const std::string& name, std::shared_ptr<PageStore> store) {
    auto conn = Connection::open(name, std::move(store));
    EXPECT_TRUE(conn.ok()) << (conn.ok() ? "" : conn.error().to_string());
    return conn.ok() ? std::move(conn).value() : nullptr;
}

std::int64_t count_rows(Session& s, const std::string& table) {
    auto r = s.query("SELECT count(*) FROM " + table);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? std::get<std::int64_t>(r->rows.at(0).at(0)) : -1;
}

// Runs the coroutine `body` makes on an io_context of its own (body outlives the coroutine: its
// captures stay valid; a lambda temporary would be gone before io.run()).
template <typename F>
void run_io(F body) {
    asio::io_context io;
    auto done = asio::co_spawn(io, body(), asio::use_future);
    io.run();
    done.get();
}

void expect_integrity(Session& s) {
    auto r = s.query("PRAGMA integrity_check");
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(std::get<std::string>(r->rows.at(0).at(0)), "ok");
}

}  // namespace

TEST(SqliteVfs, DataSurvivesReopeningFromTheStore) {
    auto store = std::make_shared<MemoryPageStore>();
    {
        auto conn = open("vfs-reopen", store);
        ASSERT_TRUE(conn);
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB)").ok());
        auto inserted = s.run("INSERT INTO t (name, data) VALUES (?, ?)",
                              {Value(std::string("alice")), Value(Bytes{1, 2, 3})});
        ASSERT_TRUE(inserted.ok()) << inserted.error().to_string();
        EXPECT_EQ(inserted->changes, 1);
        EXPECT_EQ(inserted->last_insert_rowid, 1);
    }
    EXPECT_GE(store->commits, 2);
    EXPECT_EQ(store->size_pages, 2u);
    // The header page carries the size the VFS reads back.
    ASSERT_TRUE(store->pages.contains(1));

    auto conn = open("vfs-reopen", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    auto rows = s.query("SELECT id, name, data, 1.5, NULL FROM t");
    ASSERT_TRUE(rows.ok()) << rows.error().to_string();
    ASSERT_EQ(rows->rows.size(), 1u);
    EXPECT_EQ(rows->columns, (std::vector<std::string>{"id", "name", "data", "1.5", "NULL"}));
    const auto& row = rows->rows[0];
    EXPECT_EQ(std::get<std::int64_t>(row[0]), 1);
    EXPECT_EQ(std::get<std::string>(row[1]), "alice");
    EXPECT_EQ(std::get<Bytes>(row[2]), (Bytes{1, 2, 3}));
    EXPECT_EQ(std::get<double>(row[3]), 1.5);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(row[4]));
    expect_integrity(s);
}

TEST(SqliteVfs, ColdScanReadsAheadInsteadOfOneRequestPerPage) {
    auto store = std::make_shared<MemoryPageStore>();
    {
        auto conn = open("vfs-read-ahead", store);
        ASSERT_TRUE(conn);
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (payload BLOB);"
                           "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                           "WHERE i < 200) INSERT INTO t SELECT zeroblob(3000) FROM n;")
                        .ok());
    }
    ASSERT_GT(store->size_pages, 200u);
    store->reads = 0;
    auto conn = open("vfs-read-ahead", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    EXPECT_EQ(count_rows(s, "t"), 200);
    auto sum = s.query("SELECT sum(length(payload)) FROM t");
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(std::get<std::int64_t>(sum->rows.at(0).at(0)), 600000);
    EXPECT_LE(store->reads, 20) << "pages were fetched one at a time";
}

// A database larger than its page cache: committed pages beyond the limit are dropped, least
// recently read first, and fetched again when read — the data stays whole and memory bounded.
TEST(SqliteVfs, PageCacheStaysWithinItsLimitAndRefetchesWhatItDropped) {
    auto store = std::make_shared<MemoryPageStore>();
    {
        auto conn = Connection::open("vfs-cache-fill", store, 64);
        ASSERT_TRUE(conn.ok()) << conn.error().to_string();
        Session s(**conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)").ok());
        for (int batch = 0; batch < 4; ++batch) {
            ASSERT_TRUE(s.exec("BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
                               "FROM n WHERE i < 100) INSERT INTO t (body) SELECT "
                               "zeroblob(4000) FROM n; COMMIT;")
                            .ok());
            EXPECT_LE((*conn)->cached_pages(), 64u);
        }
        EXPECT_GT(store->pages.size(), 400u);
    }
    auto conn = Connection::open("vfs-cache-read", store, 64);
    ASSERT_TRUE(conn.ok()) << conn.error().to_string();
    Session s(**conn);
    ASSERT_TRUE(s.exec("PRAGMA cache_size = 16").ok());  // keep SQLite's own cache small too
    for (int pass = 0; pass < 2; ++pass) {
        const int reads_before = store->reads;
        auto sum = s.query("SELECT count(*), sum(length(body)) FROM t");
        ASSERT_TRUE(sum.ok()) << sum.error().to_string();
        EXPECT_EQ(std::get<std::int64_t>(sum->rows.at(0).at(0)), 400);
        EXPECT_EQ(std::get<std::int64_t>(sum->rows.at(0).at(1)), 400 * 4000);
        EXPECT_LE((*conn)->cached_pages(), 64u);
        // The second pass reads again what the first one dropped.
        EXPECT_GT(store->reads, reads_before) << "pass " << pass;
    }
    expect_integrity(s);
    // Writes after evictions still commit against the right pages.
    ASSERT_TRUE(s.exec("UPDATE t SET body = zeroblob(10) WHERE id % 7 = 0").ok());
    auto after = s.query("SELECT sum(length(body)) FROM t");
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(std::get<std::int64_t>(after->rows.at(0).at(0)), 343 * 4000 + 57 * 10);
    expect_integrity(s);
}

TEST(SqliteVfs, OneTransactionIsOneCommit) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-one-commit", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER)").ok());
    int before = store->commits;
    ASSERT_TRUE(s.exec("BEGIN; INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);"
                       "INSERT INTO t VALUES (3); COMMIT;")
                    .ok());
    EXPECT_EQ(store->commits, before + 1);
    ASSERT_TRUE(s.exec("BEGIN; INSERT INTO t VALUES (4); ROLLBACK;").ok());
    EXPECT_EQ(store->commits, before + 1) << "a rolled back transaction reached the store";
    EXPECT_EQ(count_rows(s, "t"), 3);
}

// Measured with the peer benchmark: every commit also wrote page one (SQLite bumps the file's
// change counter at each commit unless the connection holds its lock), so an actor's state save
// cost the engine two pages where rivetkit 2.3.19 writes one. One connection per database and no
// other reader: the connection keeps its lock (locking_mode EXCLUSIVE, as upstream pins it).
TEST(SqliteVfs, AnUpdateCommitsOnlyThePagesItChanged) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-only-changed-pages", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)").ok());
    ASSERT_TRUE(s.exec("INSERT INTO t VALUES (1, 0)").ok());
    for (int i = 1; i <= 3; ++i) {
        const int before = store->commits;
        ASSERT_TRUE(s.exec("UPDATE t SET v = v + 1 WHERE k = 1").ok());
        EXPECT_EQ(store->commits, before + 1);
        EXPECT_EQ(store->last_commit_pgnos, std::vector<std::uint32_t>{2}) << "update " << i;
    }
    // Growing the file still states the new size on page one (the depot checks it).
    ASSERT_TRUE(s.exec("CREATE TABLE u (v BLOB); INSERT INTO u VALUES (zeroblob(20000))").ok());
    conn.reset();
    auto again = open("vfs-only-changed-pages", store);
    ASSERT_TRUE(again);
    Session s2(*again);
    EXPECT_EQ(count_rows(s2, "u"), 1);
    expect_integrity(s2);
}

// Found by upstream's actor-db-stress (kitchen sink, then sleep): SQLite syncs a shrinking
// transaction (VACUUM) before it truncates the file, so the commit carried the old file size
// while page one stated the new one, and the engine refused to open the database on the next
// wake (depot/stale_main_page). The shrunk size now goes out with the transaction itself.
TEST(SqliteVfs, AShrinkingTransactionCommitsTheSizeItsHeaderStates) {
    auto store = std::make_shared<MemoryPageStore>();
    {
        auto conn = open("vfs-vacuum", store);
        ASSERT_TRUE(conn);
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (v TEXT)").ok());
        ASSERT_TRUE(s.exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                           "WHERE i < 400) INSERT INTO t SELECT printf('%.2000c', 'x') FROM n")
                        .ok());
        const std::uint32_t grown = store->size_pages;
        ASSERT_TRUE(s.exec("DELETE FROM t WHERE rowid > 20").ok());
        const int commits_before_vacuum = store->commits;
        ASSERT_TRUE(s.exec("VACUUM").ok());
        EXPECT_LT(store->size_pages, grown / 4);
        EXPECT_EQ(store->commits, commits_before_vacuum + 1)
            << "the truncate after the commit needed a commit of its own";
        expect_integrity(s);
    }
    // A fresh connection (the next wake) opens what the store holds.
    auto reopened = open("vfs-vacuum-reopened", store);
    ASSERT_TRUE(reopened);
    Session s(*reopened);
    EXPECT_EQ(count_rows(s, "t"), 20);
    expect_integrity(s);
}

TEST(SqliteVfs, FailedCommitLeavesThePreviousConsistentState) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-failed-commit", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB)").ok());
    ASSERT_TRUE(s.run("INSERT INTO t (payload) VALUES (zeroblob(100))").ok());
    const auto pages_before = store->pages;
    const auto size_before = store->size_pages;

    // A transaction that spans many pages (a small cache forces SQLite to spill some of them to
    // the file before the commit), then the commit fails.
    ASSERT_TRUE(s.exec("PRAGMA cache_size = 5").ok());
    ASSERT_TRUE(s.exec("BEGIN").ok());
    for (int i = 0; i < 60; ++i)
        ASSERT_TRUE(s.run("INSERT INTO t (payload) VALUES (zeroblob(3000))").ok());
    EXPECT_EQ(count_rows(s, "t"), 61);
    store->fail_commits = 1;
    auto committed = s.exec("COMMIT");
    ASSERT_FALSE(committed.ok());
    EXPECT_EQ(committed.error().id(), "sqlite/storage_error") << committed.error().to_string();
    EXPECT_EQ(committed.error().metadata(), R"({"cause":"depot/head_fence_mismatch"})");
    (void)s.exec("ROLLBACK");

    EXPECT_EQ(store->pages, pages_before);
    EXPECT_EQ(store->size_pages, size_before);
    EXPECT_EQ(count_rows(s, "t"), 1);
    expect_integrity(s);

    // The connection keeps working, and a fresh one sees exactly what was committed.
    ASSERT_TRUE(s.run("INSERT INTO t (payload) VALUES (x'01')").ok());
    EXPECT_EQ(count_rows(s, "t"), 2);
    conn.reset();
    auto reopened = open("vfs-failed-commit", store);
    ASSERT_TRUE(reopened);
    Session fresh(*reopened);
    EXPECT_EQ(count_rows(fresh, "t"), 2);
    expect_integrity(fresh);
}

// A transaction the store refuses as too large fails as a whole and changes nothing.
TEST(SqliteVfs, TransactionOverTheCommitLimitFailsAndChangesNothing) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-too-large", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (payload BLOB); INSERT INTO t VALUES (x'00');").ok());
    const auto pages_before = store->pages;
    auto big = s.exec(
        "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
        "WHERE i < 400) INSERT INTO t SELECT zeroblob(4000) FROM n; COMMIT;");
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.error().metadata(), R"({"cause":"depot/commit_too_large"})")
        << big.error().to_string();
    (void)s.exec("ROLLBACK");
    EXPECT_EQ(store->pages, pages_before);
    EXPECT_EQ(count_rows(s, "t"), 1);
    expect_integrity(s);
    // Smaller transactions still go through.
    ASSERT_TRUE(s.exec("BEGIN; INSERT INTO t VALUES (zeroblob(4000)); COMMIT;").ok());
    EXPECT_EQ(count_rows(s, "t"), 2);
}

// The staged commit's segments as the engine requires them: shard-aligned starts, at most five
// shards each, a shard never split, ascending — whatever order the pages came in.
TEST(SqliteVfs, StagedCommitSegmentsAreShardAlignedAndNeverSplitAShard) {
    std::vector<rivetkit::envoy::SqliteDirtyPage> pages;
    // Pages 1..700 (shards 0..10) plus two far pages, given in descending order.
    for (std::uint32_t pgno = 700; pgno >= 1; --pgno)
        pages.push_back({pgno, Bytes{static_cast<std::uint8_t>(pgno)}});
    pages.push_back({10'000, Bytes{static_cast<std::uint8_t>(10'000)}});
    pages.push_back({10'001, Bytes{static_cast<std::uint8_t>(10'001)}});
    std::reverse(pages.begin(), pages.end());

    auto segments = cut_commit_segments(pages);
    ASSERT_EQ(segments.size(), 4u);
    EXPECT_EQ(segments[0].first_pgno, 0u);    // shards 0-4: pages 1..319
    EXPECT_EQ(segments[0].pages.size(), 319u);
    EXPECT_EQ(segments[1].first_pgno, 320u);  // shards 5-9: pages 320..639
    EXPECT_EQ(segments[1].pages.size(), 320u);
    EXPECT_EQ(segments[2].first_pgno, 640u);  // shard 10: pages 640..700
    EXPECT_EQ(segments[2].pages.size(), 61u);
    EXPECT_EQ(segments[3].first_pgno, 9984u);  // 10000 / 64 * 64
    EXPECT_EQ(segments[3].pages.size(), 2u);

    std::uint32_t previous = 0;
    std::size_t total = 0;
    for (const auto& segment : segments) {
        ASSERT_FALSE(segment.pages.empty());
        EXPECT_EQ(segment.first_pgno % kShardPages, 0u);
        for (const auto& page : segment.pages) {
            EXPECT_GT(page.pgno, previous) << "pages ascend across segments";
            previous = page.pgno;
            EXPECT_GE(page.pgno, segment.first_pgno);
            EXPECT_LT(page.pgno, segment.first_pgno + kSegmentMaxShards * kShardPages);
            EXPECT_EQ(page.bytes, Bytes{static_cast<std::uint8_t>(page.pgno)});
        }
        total += segment.pages.size();
    }
    EXPECT_EQ(total, pages.size());

    // A window is five shards from the first page's shard, gaps included: 64 opens shards 1-5,
    // 383 (shard 5) still belongs to it, 384 (shard 6) opens the next.
    std::vector<rivetkit::envoy::SqliteDirtyPage> sparse{{384, {}}, {64, {}}, {383, {}}};
    auto cut = cut_commit_segments(sparse);
    ASSERT_EQ(cut.size(), 2u);
    EXPECT_EQ(cut[0].first_pgno, 64u);
    ASSERT_EQ(cut[0].pages.size(), 2u);
    EXPECT_EQ(cut[0].pages[1].pgno, 383u);
    EXPECT_EQ(cut[1].first_pgno, 384u);
    EXPECT_TRUE(cut_commit_segments({}).empty());
}

TEST(SqliteVfs, FailedAutocommitStatementIsNotApplied) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-failed-autocommit", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER)").ok());
    store->fail_commits = 1;
    auto inserted = s.run("INSERT INTO t VALUES (7)");
    ASSERT_FALSE(inserted.ok());
    EXPECT_EQ(inserted.error().id(), "sqlite/storage_error");
    EXPECT_EQ(count_rows(s, "t"), 0);
    ASSERT_TRUE(s.run("INSERT INTO t VALUES (8)").ok());
    auto rows = s.query("SELECT v FROM t");
    ASSERT_TRUE(rows.ok());
    ASSERT_EQ(rows->rows.size(), 1u);
    EXPECT_EQ(std::get<std::int64_t>(rows->rows[0][0]), 8);
}

TEST(SqliteVfs, ReadFailureIsAStorageErrorAndTheStoreIsUntouched) {
    auto store = std::make_shared<MemoryPageStore>();
    {
        auto conn = open("vfs-read-failure", store);
        ASSERT_TRUE(conn);
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1);").ok());
    }
    store->fail_reads = true;
    auto conn = Connection::open("vfs-read-failure", store);
    ASSERT_FALSE(conn.ok());
    EXPECT_EQ(conn.error().id(), "sqlite/storage_error") << conn.error().to_string();
    EXPECT_EQ(conn.error().metadata(), R"({"cause":"depot/unavailable"})");
    store->fail_reads = false;
    auto again = open("vfs-read-failure", store);
    ASSERT_TRUE(again);
    Session s(*again);
    EXPECT_EQ(count_rows(s, "t"), 1);
}

TEST(SqliteVfs, StatementErrorsAreStructured) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-errors", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER UNIQUE)").ok());
    auto wrong_params = s.run("INSERT INTO t VALUES (?)", {});
    ASSERT_FALSE(wrong_params.ok());
    EXPECT_EQ(wrong_params.error().id(), "sqlite/invalid_bind_parameter");
    ASSERT_TRUE(s.run("INSERT INTO t VALUES (?)", {Value(std::int64_t{1})}).ok());
    auto duplicate = s.run("INSERT INTO t VALUES (?)", {Value(std::int64_t{1})});
    ASSERT_FALSE(duplicate.ok());
    EXPECT_EQ(duplicate.error().id(), "sqlite/constraint");
    auto bad = s.query("SELEC 1");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().id(), "sqlite/query_error");
    auto two = s.query("SELECT 1; SELECT 2");
    ASSERT_FALSE(two.ok());
    EXPECT_EQ(two.error().id(), "sqlite/query_error");
    auto dup = Connection::open("vfs-errors", store);
    ASSERT_FALSE(dup.ok());
    EXPECT_EQ(dup.error().id(), "sqlite/already_open");
}

// Named parameters: :name, @name and $name all match the bare key (or the key with its prefix);
// a missing name or a positional parameter is a structured error.
TEST(SqliteVfs, NamedParametersBindByName) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-named", store);
    ASSERT_TRUE(conn);
    Session s(*conn);
    auto r = s.query_named("SELECT :a, @b, $c, :a",
                           {{"c", Value(std::string("three"))},
                            {"a", Value(std::int64_t{1})},
                            {"@b", Value(2.5)}});
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    ASSERT_EQ(r->rows.size(), 1u);
    EXPECT_EQ(r->rows[0], (std::vector<Value>{Value(std::int64_t{1}), Value(2.5),
                                              Value(std::string("three")),
                                              Value(std::int64_t{1})}));
    auto missing = s.query_named("SELECT :a, :b", {{"a", Value(std::int64_t{1})}});
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().id(), "sqlite/invalid_bind_parameter");
    EXPECT_NE(missing.error().message().find(":b"), std::string::npos);
    auto positional = s.query_named("SELECT ?", {{"a", Value(std::int64_t{1})}});
    ASSERT_FALSE(positional.ok());
    EXPECT_EQ(positional.error().id(), "sqlite/invalid_bind_parameter");
    auto none = s.query_named("SELECT 7", {});
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(std::get<std::int64_t>(none->rows.at(0).at(0)), 7);
}

// The async API: SQLite runs on the worker pool, the caller's coroutine stays on its io thread.
TEST(SqliteDatabase, RunsOnTheWorkerAndTransactionsRollBackOnError) {
    auto store = std::make_shared<MemoryPageStore>();
    asio::io_context io;
    auto done = asio::co_spawn(
        io,
        [store, &io]() -> asio::awaitable<void> {
            std::string name = "db-async";
            auto opened = co_await Database::open(name, store);
            EXPECT_TRUE(opened.ok());
            if (!opened.ok())
                co_return;
            auto db = *opened;
            std::string create = "CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)";
            auto made = co_await db->exec(create);
            EXPECT_TRUE(made.ok());
            std::vector<Value> params{Value(std::string("a")), Value(std::int64_t{1})};
            std::string insert = "INSERT INTO kv VALUES (?, ?)";
            auto put = co_await db->run(insert, params);
            EXPECT_TRUE(put.ok());
            EXPECT_TRUE(io.get_executor().running_in_this_thread());

            std::function<Status(Session&)> failing = [](Session& s) -> Status {
                if (auto r = s.run("INSERT INTO kv VALUES ('b', 2)"); !r.ok())
                    return r.error();
                return Error("test", "abort", "body failed");
            };
            auto failed = co_await db->transaction(failing);
            EXPECT_FALSE(failed.ok());
            EXPECT_EQ(failed.error().id(), "test/abort");

            std::function<Status(Session&)> body = [](Session& s) -> Status {
                if (auto r = s.run("INSERT INTO kv VALUES ('c', 3)"); !r.ok())
                    return r.error();
                if (auto r = s.run("UPDATE kv SET v = v + 10 WHERE k = 'a'"); !r.ok())
                    return r.error();
                return {};
            };
            auto ok = co_await db->transaction(body);
            EXPECT_TRUE(ok.ok());
            std::string select = "SELECT k, v FROM kv ORDER BY k";
            auto rows = co_await db->query(select);
            EXPECT_TRUE(rows.ok());
            if (rows.ok()) {
                EXPECT_EQ(rows->rows.size(), 2u);
                EXPECT_EQ(std::get<std::string>(rows->rows.at(0).at(0)), "a");
                EXPECT_EQ(std::get<std::int64_t>(rows->rows.at(0).at(1)), 11);
                EXPECT_EQ(std::get<std::string>(rows->rows.at(1).at(0)), "c");
            }
            co_await db->close();
            std::string one = "SELECT 1";
            auto after = co_await db->query(one);
            EXPECT_FALSE(after.ok());
            if (!after.ok()) {
                EXPECT_EQ(after.error().id(), "sqlite/closed");
            }
        },
        asio::use_future);
    io.run();
    done.get();
}

// Hosts call sqlite::wait_for_workers before destroying their io_context; several host threads
// stop at once, so barriers run concurrently and must not split the pool between them (each
// would hold part of it and wait for the rest until its bound).
TEST(SqliteWorkers, ConcurrentBarriersAllPassWithoutWaitingForTheirBound) {
    std::vector<std::thread> callers;
    std::vector<int> passed(6, 0);
    const auto started = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < passed.size(); ++i)
        callers.emplace_back([&, i] { passed[i] = wait_for_workers(std::chrono::seconds(5)); });
    for (auto& t : callers)
        t.join();
    EXPECT_EQ(std::count(passed.begin(), passed.end(), 1), 6);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
}

// Committed pages are held without their longest run of zeros; whatever the run's place (none,
// at the start, in the middle, at the end, the whole page), every byte reads back as written, on
// the same connection (from the file's cache, SQLite's own cache released) and after a reopen.
TEST(SqliteVfs, CompactlyCachedPagesReadBackByteForByte) {
    auto store = std::make_shared<MemoryPageStore>();
    auto conn = open("vfs-compact", store);
    ASSERT_TRUE(conn);
    std::vector<Bytes> blobs;
    std::uint32_t seed = 7;
    auto next = [&seed] {
        seed = seed * 1664525u + 1013904223u;
        return static_cast<std::uint8_t>((seed >> 24) | 1);  // never zero
    };
    for (std::size_t zeros_at : {0u, 1u, 100u, 2000u, 3900u}) {
        for (std::size_t zeros : {0u, 63u, 64u, 500u, 3000u}) {
            Bytes b(3900);
            for (auto& byte : b)
                byte = next();
            for (std::size_t i = zeros_at; i < std::min(b.size(), zeros_at + zeros); ++i)
                b[i] = 0;
            blobs.push_back(std::move(b));
        }
    }
    blobs.push_back(Bytes(3900, 0));
    {
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)").ok());
        for (std::size_t i = 0; i < blobs.size(); ++i)
            ASSERT_TRUE(s.run("INSERT INTO t (id, body) VALUES (?, ?)",
                              {Value(static_cast<std::int64_t>(i)), Value(blobs[i])})
                            .ok());
    }
    const std::size_t pages = conn->cached_pages();
    ASSERT_GT(pages, blobs.size() / 2);
    EXPECT_LT(conn->cached_bytes(), pages * kSqlitePageSize) << "no page was held compactly";
    auto check = [&](Connection& c) {
        c.release_memory();
        Session s(c);
        auto rows = s.query("SELECT id, body FROM t ORDER BY id");
        ASSERT_TRUE(rows.ok()) << rows.error().to_string();
        ASSERT_EQ(rows->rows.size(), blobs.size());
        for (std::size_t i = 0; i < blobs.size(); ++i)
            EXPECT_EQ(std::get<Bytes>(rows->rows[i][1]), blobs[i]) << "blob " << i;
        expect_integrity(s);
    };
    check(*conn);
    conn.reset();
    auto again = open("vfs-compact", store);
    ASSERT_TRUE(again);
    check(*again);
}

// What an awake actor's database holds in memory: its pages once, compactly (SQLite's own cache
// is released after every call), the schema and the connection — measured over the internal
// storage's tables, as an actor start leaves them.
TEST(SqliteVfs, AnOpenSmallDatabaseHoldsItsPagesOnceAndCompactly) {
    auto store = std::make_shared<MemoryPageStore>();
    const sqlite3_int64 sqlite_heap_before = sqlite3_memory_used();
    const std::size_t held_before = cached_page_bytes();
    std::shared_ptr<Database> db;
    run_io([&]() -> asio::awaitable<void> {
        auto opened = co_await Database::open("vfs-small-awake", store);
        EXPECT_TRUE(opened.ok());
        if (!opened.ok())
            co_return;
        db = *opened;
        std::string schema;
        for (int t = 0; t < 9; ++t)
            schema += "CREATE TABLE t" + std::to_string(t) + " (id INTEGER PRIMARY KEY, v BLOB);";
        auto created = co_await db->exec(schema);
        EXPECT_TRUE(created.ok());
        std::vector<Value> row;
        row.emplace_back(Bytes(3, 1));
        auto inserted = co_await db->run("INSERT INTO t3 (v) VALUES (?)", std::move(row));
        EXPECT_TRUE(inserted.ok());
        auto read = co_await db->query("SELECT v FROM t3");
        EXPECT_TRUE(read.ok());
    });
    ASSERT_TRUE(db);
    EXPECT_GE(store->size_pages, 10u);
    // Ten pages of which nine are empty tables: a few hundred bytes in the file's cache instead of
    // 40 KB; page one (the schema text) is most of it.
    EXPECT_LT(cached_page_bytes() - held_before, 6000u);
    // SQLite's heap for it: the connection and the parsed schema (~25 KB), not its pages again
    // (each of the ten would add ~4.2 KB had the calls left them in SQLite's cache).
    EXPECT_LT(sqlite3_memory_used() - sqlite_heap_before, 32'000);
}


// Databases made by the same code hold the same schema pages and empty-table roots: the process
// keeps one copy of each, however many databases hold it, and frees it with the last of them.
TEST(SqliteVfs, IdenticalPagesOfDifferentDatabasesAreHeldOnce) {
    // Tables no other test makes (their pages would be shared with this one's).
    std::string schema;
    for (int t = 0; t < 9; ++t)
        schema += "CREATE TABLE shared" + std::to_string(t) + " (id INTEGER PRIMARY KEY, v BLOB);";
    auto make = [&](const std::string& name, std::size_t& held) {
        auto store = std::make_shared<MemoryPageStore>();
        auto conn = open(name, store);
        EXPECT_TRUE(conn);
        if (!conn)
            return std::unique_ptr<Connection>();
        Session s(*conn);
        EXPECT_TRUE(s.exec(schema).ok());
        EXPECT_TRUE(s.run("INSERT INTO shared3 (v) VALUES (?)", {Value(Bytes(3, 1))}).ok());
        held = conn->cached_bytes();
        return conn;
    };
    // Earlier tests' databases close on the worker threads: let them finish first.
    ASSERT_TRUE(wait_for_workers(std::chrono::seconds(5)));
    const std::size_t before = cached_page_bytes();
    std::size_t first_held = 0, second_held = 0;
    auto first = make("vfs-shared-a", first_held);
    const std::size_t after_first = cached_page_bytes();
    auto second = make("vfs-shared-b", second_held);
    ASSERT_TRUE(first && second);
    const std::size_t after_second = cached_page_bytes();
    // Each file holds its pages in full...
    EXPECT_EQ(first_held, second_held);
    EXPECT_GT(first_held, 500u);
    // ...but the second adds only the pages that differ: the header page, whose counters and
    // size are the same here too, so nothing at all.
    EXPECT_GT(after_first - before, 500u);
    EXPECT_LT(after_second - after_first, (after_first - before) / 4);
    // Still each database's own: a write to one changes nothing the other reads.
    {
        Session s(*first);
        ASSERT_TRUE(s.run("INSERT INTO shared3 (v) VALUES (?)", {Value(Bytes(5, 2))}).ok());
    }
    {
        Session s(*second);
        auto rows = s.query("SELECT count(*) FROM shared3");
        ASSERT_TRUE(rows.ok());
        EXPECT_EQ(std::get<std::int64_t>(rows->rows.at(0).at(0)), 1);
    }
    first.reset();
    second.reset();
    EXPECT_EQ(cached_page_bytes(), before);
}

// Idle close: at a quiet point the connection is closed and its memory returned; the next call
// opens it again on the pages the file state kept, reading nothing from the store. A transaction
// open across calls keeps the connection; keep_open() ends idle closing for good.
TEST(SqliteDatabase, AnIdleClosedDatabaseReopensOnItsPagesWithoutReadingTheStore) {
    auto store = std::make_shared<MemoryPageStore>();
    auto settle = [] { EXPECT_TRUE(wait_for_workers(std::chrono::seconds(5))); };
    run_io([&]() -> asio::awaitable<void> {
        auto opened = co_await Database::open("db-idle-close", store);
        EXPECT_TRUE(opened.ok());
        if (!opened.ok())
            co_return;
        std::shared_ptr<Database> db = *opened;
        const std::size_t connections = open_connections();
        auto created = co_await db->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
        EXPECT_TRUE(created.ok());
        EXPECT_EQ(db->opens(), 1u);
        const int reads = store->reads;
        for (int i = 0; i < 5; ++i) {
            db->close_if_idle();
            settle();
            EXPECT_EQ(open_connections(), connections - 1) << "not closed at the quiet point";
            const sqlite3_int64 heap_idle = sqlite3_memory_used();
            std::vector<Value> row;
            row.emplace_back(std::string("v") + std::to_string(i));
            auto inserted = co_await db->run("INSERT INTO t (v) VALUES (?)", std::move(row));
            EXPECT_TRUE(inserted.ok()) << inserted.error().to_string();
            EXPECT_GT(sqlite3_memory_used() - heap_idle, 10'000) << "the reopened connection";
        }
        EXPECT_EQ(db->opens(), 6u) << "each call after an idle close opens again";
        EXPECT_EQ(store->reads, reads) << "a reopen fetched pages it had";

        // A transaction spanning calls keeps its connection (and so its transaction).
        auto begun = co_await db->exec("BEGIN");
        EXPECT_TRUE(begun.ok());
        db->close_if_idle();
        settle();
        std::vector<Value> row;
        row.emplace_back(std::string("in-tx"));
        auto inserted = co_await db->run("INSERT INTO t (v) VALUES (?)", std::move(row));
        EXPECT_TRUE(inserted.ok());
        auto rolled = co_await db->exec("ROLLBACK");
        EXPECT_TRUE(rolled.ok()) << rolled.error().to_string();
        EXPECT_EQ(db->opens(), 6u);
        auto rows = co_await db->query("SELECT count(*) FROM t");
        EXPECT_TRUE(rows.ok());
        if (rows.ok()) {
            EXPECT_EQ(std::get<std::int64_t>(rows->rows.at(0).at(0)), 5);
        }

        // Connection state (a PRAGMA) survives once the database is kept open.
        db->keep_open();
        auto fk = co_await db->exec("PRAGMA foreign_keys = ON");
        EXPECT_TRUE(fk.ok());
        db->close_if_idle();
        settle();
        auto read = co_await db->query("PRAGMA foreign_keys");
        EXPECT_TRUE(read.ok());
        if (read.ok()) {
            EXPECT_EQ(std::get<std::int64_t>(read->rows.at(0).at(0)), 1);
        }
        EXPECT_EQ(db->opens(), 6u);

        // Closed while idle-closed: later calls fail as after any close.
        db->keep_open();
        co_await db->close();
        auto after = co_await db->query("SELECT 1");
        EXPECT_FALSE(after.ok());
        if (!after.ok()) {
            EXPECT_TRUE(after.error().is("sqlite", "closed"));
        }
    });
    // What the idle-closed connections committed is in the store.
    auto conn = Connection::open("db-idle-close-check", store);
    ASSERT_TRUE(conn.ok());
    Session s(**conn);
    EXPECT_EQ(count_rows(s, "t"), 5);
}

// Past the process's limit of connections kept open for reuse, the least recently used closes,
// and its next use opens it again; a database kept open is not counted and never closed so.
TEST(SqliteDatabase, PastTheLimitTheLeastRecentlyUsedConnectionClosesAndReopensOnItsNextUse) {
    auto settle = [] { EXPECT_TRUE(wait_for_workers(std::chrono::seconds(5))); };
    const std::size_t previous = set_reusable_connection_limit(2);
    run_io([&]() -> asio::awaitable<void> {
        settle();
        const std::size_t base = open_connections();
        std::vector<std::shared_ptr<Database>> dbs;
        for (const char* name : {"lru-a", "lru-b", "lru-c"}) {
            auto opened = co_await Database::open(name, std::make_shared<MemoryPageStore>());
            EXPECT_TRUE(opened.ok());
            if (!opened.ok())
                co_return;
            dbs.push_back(*opened);
            auto created = co_await dbs.back()->exec("CREATE TABLE t (v INTEGER)");
            EXPECT_TRUE(created.ok());
        }
        settle();
        EXPECT_EQ(open_connections(), base + 2) << "a, the oldest, still open past the limit";
        auto use = [&](std::size_t i) -> asio::awaitable<void> {
            auto rows = co_await dbs[i]->query("SELECT count(*) FROM t");
            EXPECT_TRUE(rows.ok()) << rows.error().to_string();
        };
        co_await use(0);  // the oldest: opens again, and b closes
        EXPECT_EQ(dbs[0]->opens(), 2u);
        co_await use(2);
        EXPECT_EQ(dbs[2]->opens(), 1u) << "closed while among the two most recently used";
        co_await use(1);  // b opens again; a is now the oldest and closes
        EXPECT_EQ(dbs[1]->opens(), 2u);
        settle();
        EXPECT_EQ(open_connections(), base + 2);

        dbs[0]->keep_open();
        co_await use(0);  // opens again, kept open from now on, out of the count
        EXPECT_EQ(dbs[0]->opens(), 3u);
        co_await use(2);
        co_await use(1);
        settle();
        EXPECT_EQ(open_connections(), base + 3) << "a kept open, b and c within the limit";
        co_await use(0);
        EXPECT_EQ(dbs[0]->opens(), 3u) << "a kept-open database was closed past the limit";
        for (auto& db : dbs)
            co_await db->close();
    });
    set_reusable_connection_limit(previous);
}

// The statement cache (database.cpp): a statement's text is compiled at its first use and again at
// its second, which keeps it; the kept statement serves every later call with that text, each with
// its own parameters.
TEST(SqliteStatements, ARepeatedStatementIsKeptAndBindsEachCallsParameters) {
    auto conn = open("statements-repeated", std::make_shared<MemoryPageStore>());
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)").ok());
    const std::uint64_t before = conn->statements_prepared();
    for (std::int64_t i = 0; i < 50; ++i) {
        auto put = s.run("INSERT INTO t (id, v) VALUES (?, ?)",
                         {Value(i), Value("v" + std::to_string(i))});
        ASSERT_TRUE(put.ok()) << put.error().to_string();
        EXPECT_EQ(put->last_insert_rowid, i);
    }
    for (std::int64_t i : {7, 0, 49, 7}) {
        auto got = s.query("SELECT v FROM t WHERE id = ?", {Value(i)});
        ASSERT_TRUE(got.ok()) << got.error().to_string();
        ASSERT_EQ(got->rows.size(), 1u);
        EXPECT_EQ(std::get<std::string>(got->rows[0][0]), "v" + std::to_string(i));
    }
    const std::string below = "SELECT count(*) FROM t WHERE id < :n";
    auto named = s.query_named(below, {{"n", Value(std::int64_t{10})}});
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(std::get<std::int64_t>(named->rows.at(0).at(0)), 10);
    named = s.query_named(below, {{"n", Value(std::int64_t{3})}});
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(std::get<std::int64_t>(named->rows.at(0).at(0)), 3);
    EXPECT_EQ(conn->statements_prepared() - before, 6u);  // three texts, each twice
    EXPECT_EQ(conn->statement_cache().size(), 3u);
    expect_integrity(s);
}

// A call that failed — a constraint, the wrong number of parameters, a missing name — leaves its
// statement reset for the next call with the same text.
TEST(SqliteStatements, AStatementWhoseCallFailedServesTheNextCall) {
    auto conn = open("statements-failed", std::make_shared<MemoryPageStore>());
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER UNIQUE)").ok());
    const std::string insert = "INSERT INTO t VALUES (?)";
    ASSERT_TRUE(s.run(insert, {Value(std::int64_t{1})}).ok());
    auto duplicate = s.run(insert, {Value(std::int64_t{1})});
    ASSERT_FALSE(duplicate.ok());
    EXPECT_EQ(duplicate.error().id(), "sqlite/constraint");
    auto wrong = s.run(insert, {});
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().id(), "sqlite/invalid_bind_parameter");
    ASSERT_TRUE(s.run(insert, {Value(std::int64_t{2})}).ok());
    auto missing = s.query_named("SELECT count(*) FROM t WHERE v >= :lo AND v <= :hi",
                                 {{"lo", Value(std::int64_t{1})}});
    ASSERT_FALSE(missing.ok());
    auto both = s.query_named("SELECT count(*) FROM t WHERE v >= :lo AND v <= :hi",
                              {{"lo", Value(std::int64_t{1})}, {"hi", Value(std::int64_t{2})}});
    ASSERT_TRUE(both.ok()) << both.error().to_string();
    EXPECT_EQ(std::get<std::int64_t>(both->rows.at(0).at(0)), 2);
    // A transaction that failed rolled back; its BEGIN and COMMIT serve the next one.
    ASSERT_TRUE(s.run("BEGIN IMMEDIATE").ok());
    ASSERT_FALSE(s.run(insert, {Value(std::int64_t{2})}).ok());
    ASSERT_TRUE(s.exec("ROLLBACK").ok());
    ASSERT_TRUE(s.run("BEGIN IMMEDIATE").ok());
    ASSERT_TRUE(s.run(insert, {Value(std::int64_t{3})}).ok());
    ASSERT_TRUE(s.run("COMMIT").ok());
    EXPECT_EQ(count_rows(s, "t"), 3);
}

// A kept statement follows the schema: columns added, the table dropped (an error, not a crash),
// the table made again.
TEST(SqliteStatements, AKeptStatementFollowsSchemaChanges) {
    auto conn = open("statements-schema", std::make_shared<MemoryPageStore>());
    ASSERT_TRUE(conn);
    Session s(*conn);
    ASSERT_TRUE(s.exec("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1)").ok());
    const std::string all = "SELECT * FROM t";
    auto first = s.query(all);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(first->columns, (std::vector<std::string>{"a"}));
    ASSERT_TRUE(s.exec("ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'x'").ok());
    auto widened = s.query(all);
    ASSERT_TRUE(widened.ok()) << widened.error().to_string();
    EXPECT_EQ(widened->columns, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(widened->rows.at(0), (std::vector<Value>{Value(std::int64_t{1}),
                                                       Value(std::string("x"))}));
    ASSERT_TRUE(s.exec("DROP TABLE t").ok());
    auto gone = s.query(all);
    ASSERT_FALSE(gone.ok());
    EXPECT_EQ(gone.error().id(), "sqlite/query_error");
    ASSERT_TRUE(s.exec("CREATE TABLE t (c TEXT); INSERT INTO t VALUES ('back')").ok());
    auto again = s.query(all);
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    EXPECT_EQ(again->columns, (std::vector<std::string>{"c"}));
    EXPECT_EQ(again->rows.at(0), (std::vector<Value>{Value(std::string("back"))}));
}

// A text used once is not kept; past the capacity the least recently used statement is dropped
// (kept again from its second use after that); with capacity 0 nothing is kept.
TEST(SqliteStatements, PastTheCapacityTheLeastRecentlyUsedIsDropped) {
    struct Restore {
        std::size_t previous = set_statement_cache_capacity(2);
        ~Restore() { set_statement_cache_capacity(previous); }
    } restore;
    auto conn = open("statements-capacity", std::make_shared<MemoryPageStore>());
    ASSERT_TRUE(conn);
    Session s(*conn);
    auto prepared_by = [&](const std::string& sql) {
        const std::uint64_t before = conn->statements_prepared();
        auto r = s.query(sql);
        EXPECT_TRUE(r.ok()) << sql;
        return conn->statements_prepared() - before;
    };
    EXPECT_EQ(prepared_by("SELECT 1"), 1u);  // seen: []
    EXPECT_EQ(conn->statement_cache().size(), 0u);
    EXPECT_EQ(prepared_by("SELECT 1"), 1u);  // kept: [1]
    EXPECT_EQ(prepared_by("SELECT 1"), 0u);
    EXPECT_EQ(prepared_by("SELECT 2"), 1u);
    EXPECT_EQ(prepared_by("SELECT 2"), 1u);  // [1, 2]
    EXPECT_EQ(prepared_by("SELECT 1"), 0u);  // [2, 1]
    EXPECT_EQ(prepared_by("SELECT 3"), 1u);
    EXPECT_EQ(prepared_by("SELECT 3"), 1u);  // [1, 3]
    EXPECT_EQ(prepared_by("SELECT 1"), 0u);  // [3, 1]
    EXPECT_EQ(prepared_by("SELECT 2"), 1u);  // dropped: seen again
    EXPECT_EQ(prepared_by("SELECT 2"), 1u);  // [1, 2]
    EXPECT_EQ(prepared_by("SELECT 1"), 0u);
    EXPECT_EQ(prepared_by("SELECT 3"), 1u);
    EXPECT_EQ(conn->statement_cache().size(), 2u);
    set_statement_cache_capacity(0);
    EXPECT_EQ(prepared_by("SELECT 1"), 1u);  // what was kept goes at the next statement
    EXPECT_EQ(prepared_by("SELECT 1"), 1u);
    EXPECT_EQ(conn->statement_cache().size(), 0u);
}

// The connection finalizes what it kept before it closes: SQLite frees everything the connection
// allocated (a statement left unfinalized would keep the closed connection alive as a zombie).
TEST(SqliteStatements, KeptStatementsAreFreedWithTheConnection) {
    auto use = [](const std::string& name) {
        auto conn = open(name, std::make_shared<MemoryPageStore>());
        ASSERT_TRUE(conn);
        Session s(*conn);
        ASSERT_TRUE(s.exec("CREATE TABLE t (v INTEGER)").ok());
        for (std::int64_t i = 0; i < 4; ++i)
            ASSERT_TRUE(s.run("INSERT INTO t VALUES (?)", {Value(i)}).ok());
        EXPECT_EQ(count_rows(s, "t"), 4);
        EXPECT_EQ(count_rows(s, "t"), 4);
        EXPECT_EQ(conn->statement_cache().size(), 2u);
    };
    use("statements-freed-warmup");  // SQLite's own first-use allocations
    const auto before = sqlite3_memory_used();
    use("statements-freed");
    EXPECT_EQ(sqlite3_memory_used(), before);
}

// EnvoyPageStore on virtual time against a frame-level engine stand-in: SQLite's worker blocks on
// the envoy, so the workers run in lockstep with the io thread (rt::lockstep) and timeouts take
// virtual time only.

#include <gtest/gtest.h>

#include <boost/asio/this_coro.hpp>
#include <functional>
#include <map>
#include <optional>

#include "base/log.hpp"
#include "envoy/envoy.hpp"
#include "fake_engine.hpp"
#include "recording_callbacks.hpp"
#include "runtime/outside_work.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/yield.hpp"
#include "sqlite/database.hpp"
#include "sqlite/envoy_store.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
namespace sqlite = rivetkit::sqlite;
using namespace std::chrono_literals;
using rivetkit::Bytes;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

#define CO_ASSERT(cond)                                     \
    do {                                                    \
        if (!(cond)) {                                      \
            ADD_FAILURE() << "assertion failed: " #cond;    \
            co_return;                                      \
        }                                                   \
    } while (0)

// The engine's page storage for one database, with its fences; it can swallow the reply of the
// next commit it applies (as a dropped connection would, without the drop).
struct PageEngine {
    std::map<std::uint32_t, Bytes> pages;
    std::optional<std::uint64_t> head;
    int applied = 0;
    int fenced = 0;
    bool swallow_next_reply = false;

    void serve(FakeConnection& conn, proto::ToRivet message) {
        if (auto* get = message.get_if<proto::ToRivetSqliteGetPagesRequest>()) {
            proto::SqliteGetPagesResponse response;
            if (!head) {
                response.value = proto::SqliteErrorResponse{"depot", "database_not_found", ""};
            } else if (get->data.expected_head_txid && get->data.expected_head_txid != head) {
                response.value = proto::SqliteErrorResponse{"depot", "head_fence_mismatch", ""};
            } else {
                proto::SqliteGetPagesOk ok;
                ok.head_txid = head;
                for (auto pgno : get->data.pgnos) {
                    auto it = pages.find(pgno);
                    ok.pages.push_back(proto::SqliteFetchedPage{
                        pgno, it == pages.end() ? std::nullopt : std::optional<Bytes>(it->second)});
                }
                response.value = std::move(ok);
            }
            conn.push(proto::ToEnvoy{
                proto::ToEnvoySqliteGetPagesResponse{get->request_id, std::move(response)}});
        } else if (auto* commit = message.get_if<proto::ToRivetSqliteCommitRequest>()) {
            proto::SqliteCommitResponse response;
            if (commit->data.expected_head_txid && commit->data.expected_head_txid != head) {
                ++fenced;
                response.value = proto::SqliteErrorResponse{"depot", "head_fence_mismatch", ""};
            } else {
                for (const auto& page : commit->data.dirty_pages)
                    pages[page.pgno] = page.bytes;
                head = head.value_or(0) + 1;
                ++applied;
                response.value = proto::SqliteCommitOk{head};
                if (swallow_next_reply) {
                    swallow_next_reply = false;
                    return;
                }
            }
            conn.push(proto::ToEnvoy{
                proto::ToEnvoySqliteCommitResponse{commit->request_id, std::move(response)}});
        }
    }
};

using Body = std::function<asio::awaitable<void>(std::shared_ptr<sqlite::Database>,
                                                  sqlite::EnvoyPageStore&)>;

// An envoy on a frame-level engine stand-in serving `engine`, a database on its page store, and
// `body` run against them; on virtual time, SQLite's workers in lockstep.
void with_database(PageEngine& engine, Body body) {
    const rivetkit::log::Level level = rivetkit::log::level();
    if (std::getenv("RIVETKIT_TEST_LOGS") == nullptr)
        rivetkit::log::set_level(rivetkit::log::Level::off);
    rt::TestRuntime runtime;
    {
        rt::lockstep::Scope lockstep;
        runtime.block_on([&]() -> asio::awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            auto transports = std::make_shared<FakeEngine>();
            EnvoyConfig config;
            config.endpoint = "http://127.0.0.1:7420";
            config.pool_name = "page-store";
            config.envoy_key = "page-store";
            config.sqlite_request_timeout = 5s;
            config.rng_seed = 1;
            EnvoyHandle handle = start_envoy(ex, runtime.clock(), config,
                                             std::make_shared<RecordingCallbacks>(), transports);
            auto accepting = transports->accept(runtime.clock(), 5s);
            std::shared_ptr<FakeConnection> conn = co_await std::move(accepting);
            CO_ASSERT(conn != nullptr);
            conn->push(init_message());
            bool done = false;
            // Parameters, not captures: a coroutine lambda's captures die with the temporary.
            auto serve = [](std::shared_ptr<FakeConnection> c, PageEngine& e, rt::Clock& clock,
                            const bool& stop) -> asio::awaitable<void> {
                while (!stop) {
                    auto reading = c->next(clock, 100ms);
                    std::optional<proto::ToRivet> m = co_await std::move(reading);
                    if (m)
                        e.serve(*c, std::move(*m));
                }
            };
            rt::spawn(ex, serve(conn, engine, runtime.clock(), done));

            auto store = std::make_shared<sqlite::EnvoyPageStore>(handle, ex, "actor-1", 1);
            auto opening = sqlite::Database::open("page-store-test#1", store);
            auto db = co_await std::move(opening);
            EXPECT_TRUE(db.ok()) << db.error().to_string();
            if (db.ok()) {
                auto running = body(*db, *store);
                co_await std::move(running);
                auto closing = (*db)->close();
                co_await std::move(closing);
            }
            done = true;
            handle.shutdown(true);
            auto stopping = handle.wait_stopped();
            co_await std::move(stopping);
        }());
        runtime.run_until_idle();
    }
    rivetkit::log::set_level(level);
}

// Found by the stack simulation (seed 145): a commit whose reply never came timed out, SQLite
// rolled the transaction back although the engine held it, and every later commit carried a stale
// head and was fenced — the database could never be written again. The store now sends a commit
// that timed out again; the engine fences that copy, the store reads the pages back, finds its
// commit there and adopts the engine's head.
TEST(EnvoyPageStore, ACommitWhoseReplyNeverCameIsSentAgainAndRecognized) {
    PageEngine engine;
    with_database(engine, [&](std::shared_ptr<sqlite::Database> db,
                              sqlite::EnvoyPageStore&) -> asio::awaitable<void> {
        auto creating = db->exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)");
        CO_ASSERT((co_await std::move(creating)).ok());
        const int before = engine.applied;

        engine.swallow_next_reply = true;
        auto second = db->exec("INSERT INTO t VALUES (2)");
        auto inserted = co_await std::move(second);
        EXPECT_TRUE(inserted.ok()) << inserted.error().to_string();
        EXPECT_EQ(engine.applied, before + 1) << "applied once";
        EXPECT_EQ(engine.fenced, 1) << "its second copy was fenced";

        auto third = db->exec("INSERT INTO t VALUES (3)");
        auto after = co_await std::move(third);
        EXPECT_TRUE(after.ok()) << after.error().to_string();
        auto counting = db->query("SELECT count(*) FROM t");
        auto count = co_await std::move(counting);
        CO_ASSERT(count.ok());
        EXPECT_EQ(std::get<std::int64_t>(count->rows.at(0).at(0)), 3);
        EXPECT_EQ(engine.applied, before + 2);
    });
}

// Found in review: a store whose head went stale (another writer committed, or a commit's outcome
// could not be learned) was fenced on every later commit, for as long as its generation ran. It
// now gives up once — later calls fail without reaching the engine — and asks its host to put the
// generation to sleep, so the next one starts from what the engine holds.
TEST(EnvoyPageStore, AStoreFencedByAnotherWriterDivergesOnceAndAsksForSleep) {
    PageEngine engine;
    with_database(engine, [&](std::shared_ptr<sqlite::Database> db,
                              sqlite::EnvoyPageStore& store) -> asio::awaitable<void> {
        int asked = 0;
        store.on_diverged([&asked] { ++asked; });
        auto creating = db->exec("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)");
        CO_ASSERT((co_await std::move(creating)).ok());
        // Another writer moves the engine's head (other bytes on page 1).
        engine.pages[1] = Bytes(4096, 7);
        engine.head = engine.head.value_or(0) + 1;

        auto second = db->exec("INSERT INTO t VALUES (2)");
        auto inserted = co_await std::move(second);
        EXPECT_FALSE(inserted.ok());
        const int fenced = engine.fenced;
        auto third = db->exec("INSERT INTO t VALUES (3)");
        auto again = co_await std::move(third);
        EXPECT_FALSE(again.ok());
        if (!again.ok()) {
            EXPECT_NE(again.error().to_string().find("diverged"), std::string::npos)
                << again.error().to_string();
        }
        EXPECT_EQ(engine.fenced, fenced) << "no request after the divergence";
        auto waiting = rt::yield_now();
        co_await std::move(waiting);
        EXPECT_EQ(asked, 1);
    });
}

}  // namespace

// The actor's database connection is closed once its storage has been quiet for two seconds
// (ActorTask's database idle deadline, on virtual time) and opened again by the next use, on the
// pages it kept: an awake actor whose storage is quiet holds no SQLite connection.

#include <gtest/gtest.h>

#include "core/actor/internal_storage.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/sqlite.hpp"
#include "memory_page_store.hpp"
#include "sqlite/database.hpp"
#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

std::size_t settled_connections() {
    EXPECT_TRUE(sqlite::wait_for_workers(std::chrono::seconds(5)));
    return sqlite::open_connections();
}

TEST(ActorTaskDatabase, a_quiet_database_is_closed_and_opened_again_by_its_next_use) {
    rt::TestRuntime rt;
    auto pages = std::make_shared<rivetkit::testing::MemoryPageStore>();
    auto database = std::make_shared<ActorSqlite>("actor-db-idle#1", pages);
    auto store = std::make_shared<SqliteActorStore>("actor-db-idle", database,
                                                    std::make_shared<InMemoryKv>());
    auto ctx = new_with_kv(rt, "actor-db-idle", "task-db-idle", store);
    ctx.configure_sqlite(database);
    auto factory = answering_factory();
    auto wired = new_wired_task("actor-db-idle", ctx, factory);
    const std::size_t base = settled_connections();
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(wired.task));
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        EXPECT_EQ(settled_connections(), base + 1) << "the start read the actor's storage";
        const int reads = pages->reads;

        co_await rt.clock().sleep_for(1500ms);
        EXPECT_EQ(settled_connections(), base + 1) << "closed before two quiet seconds";
        co_await rt.clock().sleep_for(1000ms);
        EXPECT_EQ(settled_connections(), base) << "still open after two quiet seconds";

        // The next use opens it again, reading nothing from the page store.
        Bytes key = keys::user_key(Bytes{'k'});
        Bytes value{'v'};
        auto put = co_await ctx.kv().put(std::move(key), std::move(value));
        EXPECT_TRUE(put.ok()) << put.error().to_string();
        EXPECT_EQ(settled_connections(), base + 1);
        Bytes again = keys::user_key(Bytes{'k'});
        auto got = co_await ctx.kv().get(std::move(again));
        CO_ASSERT(got.ok() && got->has_value());
        EXPECT_EQ(**got, Bytes{'v'});
        EXPECT_EQ(pages->reads, reads) << "a reopen fetched pages it had";

        // Used within each period: it stays open.
        for (int i = 0; i < 4; ++i) {
            co_await rt.clock().sleep_for(1000ms);
            Bytes k = keys::user_key(Bytes{'k'});
            auto read = co_await ctx.kv().get(std::move(k));
            EXPECT_TRUE(read.ok());
            // The loop sees the use when it next wakes (an action here).
            auto [action_tx, action_rx] = rt::oneshot<Result<Bytes>>();
            DispatchCommand action = dispatch::Action{
                "ping", {}, ConnHandle("conn-db-idle", {}, {}, false), std::move(action_tx)};
            EXPECT_TRUE(wired.dispatch_tx.send(std::move(action)));
            (void)co_await action_rx.recv();
            EXPECT_EQ(settled_connections(), base + 1) << "closed while in use, round " << i;
        }

        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
    }());
    EXPECT_EQ(settled_connections(), base) << "the stop closes it";
}

}  // namespace
}  // namespace rivetkit::core::test

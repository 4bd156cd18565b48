// Unit tests of the example actors with the test kit (rivetkit/testing.hpp): no engine, no
// network, virtual time. Built in this tree (tests/api) and, by scripts/check-package.sh, against
// the installed package (examples/testing/CMakeLists.txt) — the way a user tests their actors.

#include <gtest/gtest.h>

#include <rivetkit/testing.hpp>

#include "counter/counter.hpp"
#include "ledger/ledger.hpp"
#include "reminder/reminder.hpp"

using namespace std::chrono_literals;
using rivetkit::Json;
using rivetkit::testing::TestEngine;

TEST(CounterKit, increments_broadcast_to_subscribers_and_survive_sleep) {
    TestEngine engine;
    engine.use("counter", rivetkit::examples::counter_actor());
    auto counter = engine.get_or_create("counter", {"kit"});

    auto conn = counter.connect();
    ASSERT_TRUE(conn.ok());
    std::vector<std::int64_t> seen;
    (*conn)->on("newCount", [&](const Json& args) { seen.push_back(args[0].get<std::int64_t>()); });

    EXPECT_EQ(counter.call<std::int64_t>("increment", 2).value(), 2);
    EXPECT_EQ((*conn)->call<std::int64_t>("increment", 3).value(), 5);
    EXPECT_EQ(seen, (std::vector<std::int64_t>{2, 5}));

    auto failed = counter.call<std::int64_t>("fail");
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(failed.error().is("user", "deliberate_failure"));

    ASSERT_TRUE(counter.sleep().ok());
    EXPECT_FALSE(counter.awake());
    EXPECT_FALSE((*conn)->is_open()) << "a connection ends when its actor stops";
    EXPECT_EQ(counter.saved_state(), Json({{"count", 5}}));
    EXPECT_EQ(counter.call<std::int64_t>("getCount").value(), 5) << "woken from its saved bytes";
    EXPECT_TRUE(counter.awake());
}

TEST(CounterKit, an_idle_actor_sleeps_after_its_sleep_timeout_and_input_sets_the_start) {
    TestEngine engine;
    engine.use("counter", rivetkit::examples::counter_actor());
    auto counter = engine.get_or_create("counter", {"input"}, Json({{"start", 40}}));
    EXPECT_EQ(counter.call<std::int64_t>("increment", 2).value(), 42);
    engine.advance(5s);
    EXPECT_TRUE(counter.awake());
    engine.advance(60s);
    EXPECT_FALSE(counter.awake()) << "no connection, nothing running: the actor went to sleep";
    EXPECT_EQ(counter.call<std::int64_t>("getCount").value(), 42);
}

TEST(CounterKit, a_crash_loses_what_was_not_saved_yet) {
    TestEngine engine;
    engine.use("counter", rivetkit::examples::counter_actor());
    auto counter = engine.get_or_create("counter", {"crash"});
    EXPECT_EQ(counter.call<std::int64_t>("increment", 5).value(), 5);
    engine.advance(2s);  // past the 1 s save interval
    EXPECT_EQ(counter.saved_state(), Json({{"count", 5}}));
    EXPECT_EQ(counter.call<std::int64_t>("increment", 1).value(), 6);
    counter.crash();  // before the next save
    EXPECT_FALSE(counter.awake());
    EXPECT_EQ(counter.call<std::int64_t>("getCount").value(), 5);
}

TEST(CounterKit, a_failed_kv_write_is_retried_and_a_lost_reply_still_counts) {
    TestEngine engine;
    engine.use("counter", rivetkit::examples::counter_actor());
    auto counter = engine.get_or_create("counter", {"faults"});
    EXPECT_EQ(counter.call<std::int64_t>("increment", 1).value(), 1);
    engine.advance(2s);
    engine.fail_kv_writes(1);
    EXPECT_EQ(counter.call<std::int64_t>("increment", 1).value(), 2);
    const std::size_t writes = engine.kv_writes();
    engine.advance(2s);
    EXPECT_GT(engine.kv_writes(), writes) << "the save after the failed one went through";
    EXPECT_EQ(counter.saved_state(), Json({{"count", 2}}));

    counter.lose_next_reply();
    auto lost = counter.call<std::int64_t>("increment", 10);
    ASSERT_FALSE(lost.ok());
    EXPECT_TRUE(lost.error().is("client", "reply_lost"));
    EXPECT_EQ(counter.call<std::int64_t>("getCount").value(), 12) << "the action ran";
}

TEST(ReminderKit, a_reminder_fires_when_its_time_comes_even_while_the_actor_sleeps) {
    TestEngine engine;
    engine.use("reminder", rivetkit::examples::reminder_actor());
    auto reminder = engine.get_or_create("reminder", {"kit"});
    using Fired = std::vector<std::string>;

    ASSERT_TRUE(reminder.action("remindIn", Json::array({1000, "stretch"})).ok());
    engine.advance(999ms);
    EXPECT_EQ(reminder.call<Fired>("getFired").value(), Fired{});
    engine.advance(1ms);
    EXPECT_EQ(reminder.call<Fired>("getFired").value(), Fired{"stretch"});

    ASSERT_TRUE(reminder.action("remindIn", Json::array({60'000, "later"})).ok());
    ASSERT_TRUE(reminder.action("goToSleep").ok());
    engine.run_until_idle();
    EXPECT_FALSE(reminder.awake());
    ASSERT_TRUE(reminder.alarm_at_ms().has_value());
    EXPECT_EQ(*reminder.alarm_at_ms(), engine.now_ms() + 60'000);
    engine.advance(60s);
    EXPECT_TRUE(reminder.awake()) << "the engine's alarm woke it";
    EXPECT_EQ(reminder.call<Fired>("getFired").value(), (Fired{"stretch", "later"}));
}

TEST(LedgerKit, rows_live_in_the_actors_database_across_sleep_until_destroy) {
    TestEngine engine;
    engine.use("ledger", rivetkit::examples::ledger_actor());
    auto ledger = engine.get_or_create("ledger", {"kit"});
    EXPECT_EQ(ledger.call<std::int64_t>("add", "coffee").value(), 1);
    EXPECT_EQ(ledger.call<std::int64_t>("add", "tea").value(), 2);
    ASSERT_TRUE(ledger.sleep().ok());
    EXPECT_EQ(ledger.call<std::int64_t>("count").value(), 2);
    auto rows = ledger.call<Json>("list");
    ASSERT_TRUE(rows.ok());
    EXPECT_EQ((*rows)[1]["text"], "tea");
    EXPECT_EQ(ledger.call<std::string>("integrityCheck").value(), "ok");

    ASSERT_TRUE(ledger.destroy().ok());
    EXPECT_TRUE(ledger.destroyed());
    auto gone = ledger.call<std::int64_t>("count");
    ASSERT_FALSE(gone.ok());
    EXPECT_TRUE(gone.error().is("actor", "not_found"));
    auto again = engine.get_or_create("ledger", {"kit"});
    EXPECT_EQ(again.call<std::int64_t>("count").value(), 0) << "a new actor under the freed key";
}

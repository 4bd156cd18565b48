// The actor's SQLite database through the typed API on the real engine 2.3.19: an actor writes
// rows with `co_await c.db()`, sleeps, wakes as a new generation and reads them back; the rows
// also survive an engine restart. The pages live only in the engine (no local file).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "live_stack.hpp"
#include "rivetkit/rivetkit.hpp"

namespace rivetkit::testing {
namespace {

using namespace std::chrono_literals;
using JsonTask = boost::asio::awaitable<Json>;

struct NotesState {
    std::int64_t adds = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NotesState, adds)

Actor<NotesState> notes_actor() {
    using Action = ActionContext<NotesState>;
    return Actor<NotesState>()
        .action("add",
                [](Action& c, std::string text) -> JsonTask {
                    auto db = co_await c.db();
                    std::string create =
                        "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT)";
                    auto made = co_await db->exec(create);
                    made.value();
                    std::string insert = "INSERT INTO notes (text) VALUES (?)";
                    std::vector<SqlValue> params{SqlValue(std::move(text))};
                    auto inserted = co_await db->run(insert, params);
                    c.state().adds += 1;
                    co_return Json(inserted.value().last_insert_rowid);
                })
        .action("list",
                [](Action& c) -> JsonTask {
                    auto db = co_await c.db();
                    std::string select = "SELECT id, text FROM notes ORDER BY id";
                    auto rows = co_await db->query(select);
                    co_return sql_rows_to_json(rows.value());
                })
        .action("badSql",
                [](Action& c) -> JsonTask {
                    auto db = co_await c.db();
                    std::string wrong = "SELECT * FROM missing_table";
                    auto rows = co_await db->query(wrong);
                    co_return sql_rows_to_json(rows.value());
                })
        .action("goToSleep", [](Action& c) { c.sleep(); });
}

std::string target(const std::string& action) {
    return gateway_target("notes", "n1", "/action/" + action);
}

HttpResult call(EngineHarness& engine, const std::string& action, Json args) {
    Json body{{"args", std::move(args)}};
    auto r = http_request(engine.guard_port(), "POST", target(action), body.dump(),
                          {{"x-rivet-encoding", "json"}});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? std::move(r).value() : HttpResult{};
}

Json output(const HttpResult& r) {
    auto json = Json::parse(r.body, nullptr, false);
    return json.is_object() && json.contains("output") ? json["output"] : Json();
}

}  // namespace

TEST(SqliteActorEngine, RowsSurviveSleepWakeAndEngineRestart) {
    auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
        r.register_actor("notes", notes_actor().factory());
    });
    ASSERT_TRUE(stack.ok()) << stack.error().to_string();
    EngineHarness& engine = *stack->engine;
    LiveHost& host = *stack->host;

    auto first = call(engine, "add", Json::array({"ada"}));
    ASSERT_EQ(first.status, 200u) << first.body;
    EXPECT_EQ(output(first), Json(1));
    const std::string actor = first.header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor.empty());
    ASSERT_EQ(call(engine, "add", Json::array({"grace"})).status, 200u);

    // A SQL error is a structured sqlite/* error, and the actor keeps serving.
    auto bad = call(engine, "badSql", Json::array());
    EXPECT_NE(bad.status, 200u);
    auto bad_json = Json::parse(bad.body, nullptr, false);
    EXPECT_EQ(bad_json["group"], "sqlite") << bad.body;
    EXPECT_EQ(bad_json["code"], "query_error") << bad.body;

    // Sleep: the generation stops (closing its database), the next call wakes generation 2.
    ASSERT_EQ(call(engine, "goToSleep", Json::array()).status, 200u);
    ASSERT_TRUE(host.wait_actor(actor, false, 1)) << "the actor did not sleep";
    auto after_sleep = call(engine, "list", Json::array());
    ASSERT_EQ(after_sleep.status, 200u) << after_sleep.body;
    EXPECT_EQ(after_sleep.header("x-rivet-actor-generation").value_or(""), "2");
    const Json expected =
        Json::array({Json{{"id", 1}, {"text", "ada"}}, Json{{"id", 2}, {"text", "grace"}}});
    EXPECT_EQ(output(after_sleep), expected);
    ASSERT_EQ(call(engine, "add", Json::array({"barbara"})).status, 200u);

    // Engine restart: the engine's storage keeps the pages.
    auto restarted = engine.restart();
    ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
    HttpResult listed;
    for (int attempt = 0; attempt < 100; ++attempt) {
        listed = call(engine, "list", Json::array());
        if (listed.status == 200u)
            break;
        std::this_thread::sleep_for(100ms);
    }
    ASSERT_EQ(listed.status, 200u) << listed.body << "\n" << engine.log_tail();
    Json with_third = expected;
    with_third.push_back(Json{{"id", 3}, {"text", "barbara"}});
    EXPECT_EQ(output(listed), with_third);

    // The open database caches its pages; a new generation reads them from the engine only.
    ASSERT_EQ(call(engine, "goToSleep", Json::array()).status, 200u);
    ASSERT_TRUE(host.wait_actor(actor, false, 2)) << "the actor did not sleep again";
    auto third_generation = call(engine, "list", Json::array());
    ASSERT_EQ(third_generation.status, 200u) << third_generation.body;
    EXPECT_EQ(third_generation.header("x-rivet-actor-generation").value_or(""), "3");
    EXPECT_EQ(output(third_generation), with_third);
}

}  // namespace rivetkit::testing

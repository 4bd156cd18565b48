// The inspector WebSocket against the official TypeScript inspector codecs
// (tests/interop/js/inspector.mjs): a C++ host on the real engine serves the counter test actor;
// node opens /inspector/connect through the gateway with the actor's KV [3] token. inspector-ws:
// an older inspector's framing (v4 requests with the version embedded; the host answers in
// embedded v5, as upstream). inspector-v6: the 2.3.19 inspector's own path, the protocol version
// (its CURRENT_VERSION, 6) once on the URL and its versioned handlers for every frame, listing and
// deleting a scheduled event. One engine and host for the suite.

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "counter_actor.hpp"
#include "ledger/ledger.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

class InspectorInterop : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            core::ActorConfig config;
            config.has_state = true;
            config.actions = {{"increment"}, {"getCount"}};
            r.register_actor("counter", counter_factory(std::move(config)));
            r.register_actor("ledger", examples::ledger_actor().factory());
        });
        if (!stack.ok()) {
            start_error_ = stack.error().to_string();
            return;
        }
        stack_ = new LiveStack(std::move(stack).value());
    }
    static void TearDownTestSuite() {
        delete stack_;
        stack_ = nullptr;
    }
    void SetUp() override { ASSERT_NE(stack_, nullptr) << start_error_; }

    json scenario(const std::string& name, std::vector<std::string> extra = {}) {
        std::vector<std::string> args{name, "--encoding", "json"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto run = run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/inspector.mjs",
                                     std::move(args), stack_->engine->endpoint(),
                                     std::chrono::minutes(2));
        EXPECT_EQ(run.failure, "");
        return run.result;
    }

    static inline LiveStack* stack_ = nullptr;
    static inline std::string start_error_;
};

TEST_F(InspectorInterop, OfficialCodecDrivesTheInspectorSocket) {
    auto r = scenario("inspector-ws");
    // A wrong token: accepted, then closed as upstream closes it.
    EXPECT_EQ(r["denied"], json({{"code", 1008}, {"reason", "inspector.unauthorized"}}))
        << r.dump(2);

    const json& init = r["init"];
    EXPECT_EQ(init["state"], json({{"count", 5}})) << init.dump(2);
    EXPECT_EQ(init["isStateEnabled"], true);
    EXPECT_EQ(init["rpcs"], json::array({"increment", "getCount"}));
    EXPECT_EQ(init["connections"], 0);
    EXPECT_EQ(init["queueSize"], 0);
    // Every actor keeps its state in its SQLite database (as rivetkit 2.3.19), so the tab shows.
    EXPECT_EQ(init["isDatabaseEnabled"], true);
    // The counter answers workflow history with None, which upstream reads as enabled.
    EXPECT_EQ(init["isWorkflowEnabled"], true);
    EXPECT_EQ(init["tabConfig"], json::array());
    EXPECT_EQ(init["schedules"], json::array());

    EXPECT_EQ(r["state"], json({{"rid", 1}, {"state", {{"count", 5}}}, {"isStateEnabled", true}}));
    EXPECT_EQ(r["rpcs"], json({{"rid", 2}, {"rpcs", {"increment", "getCount"}}}));
    EXPECT_EQ(r["connections"], json({{"rid", 3}, {"count", 0}}));
    EXPECT_EQ(r["queue"], json({{"rid", 4}, {"size", 0}, {"maxSize", 1000}, {"truncated", false}}));
    EXPECT_EQ(r["trace"], json({{"rid", 5}, {"payloadBytes", 0}}));

    // An undecodable frame: an Error message, and the socket keeps answering.
    EXPECT_EQ(r.value("badFrame", std::string{}).rfind("inspector.invalid_request: ", 0), 0u)
        << r.dump(2);
    EXPECT_EQ(r["afterBad"], json({{"rid", 6}, {"state", {{"count", 5}}}}));

    EXPECT_EQ(r["patched"], json({{"count", 42}}));
    EXPECT_EQ(r["savedPush"], json({{"count", 42}}));
    // The runtime keeps its own count (5); the inspector's action goes through it.
    EXPECT_EQ(r["action"], json({{"rid", 8}, {"output", 6}}));
    // The action's transient connection came and went while the action ran: one push, empty.
    EXPECT_EQ(r["connectionsPushed"], 0);
    EXPECT_EQ(r["pushedState"], json({{"count", 6}})) << r.dump(2);
    // No protocol_version on the URL: upstream's legacy framing, embedded v5.
    EXPECT_EQ(r["serverFrameVersions"], json::array({5})) << r.dump(2);
}

TEST_F(InspectorInterop, OfficialV6ClientPathListsAndDeletesSchedules) {
    const std::string key = "inspector-v6-schedules";
    auto created = http_request(
        stack_->engine->guard_port(), "POST",
        gateway_target("counter", key, "/action/increment"),
        R"({"args":[3]})", {{"x-rivet-encoding", "json"}});
    ASSERT_TRUE(created.ok()) << created.error().to_string();
    ASSERT_EQ(created->status, 200u) << created->body;
    const std::string actor_id = created->header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor_id.empty());
    // Far in the future, so it never fires during the test.
    constexpr std::int64_t kRunAt = 4102444800000;
    const bool scheduled = stack_->host->call([&] {
        auto ctx = stack_->host->registry().actor_context(actor_id);
        if (ctx)
            (void)ctx->at(kRunAt, "increment", json::to_cbor(json::array({2})));
        return ctx.has_value();
    });
    ASSERT_TRUE(scheduled);

    auto r = scenario("inspector-v6", {"--key", key});
    // What the UI reads to choose negotiated framing (2.3.4+), and its CURRENT_VERSION.
    EXPECT_EQ(r["metadataVersion"], "2.3.19") << r.dump(2);
    EXPECT_EQ(r["version"], 6) << r.dump(2);
    const json& init = r["init"];
    EXPECT_EQ(init["state"], json({{"count", 3}})) << init.dump(2);
    EXPECT_EQ(init["rpcs"], json::array({"increment", "getCount"}));
    EXPECT_EQ(init["tabConfig"], json::array());
    ASSERT_EQ(init["schedules"].size(), 1u) << init.dump(2);
    const json& schedule = init["schedules"][0];
    EXPECT_EQ(schedule["kind"], "at");
    EXPECT_EQ(schedule["action"], "increment");
    EXPECT_EQ(schedule["args"], json::array({2}));
    EXPECT_EQ(schedule["nextRunAt"], kRunAt);

    EXPECT_EQ(r["state"], json({{"rid", 1}, {"state", {{"count", 3}}}}));
    EXPECT_EQ(r["listed"]["rid"], 2);
    EXPECT_EQ(r["listed"]["schedules"], init["schedules"]);
    EXPECT_EQ(r["sameIdsAsInit"], true);
    EXPECT_EQ(r["history"], json({{"rid", 3}, {"matches", true}, {"count", 0}}));
    EXPECT_EQ(r["deleted"], json({{"rid", 4}, {"deleted", true}}));
    EXPECT_EQ(r["after"], json({{"rid", 5}, {"count", 0}}));
    EXPECT_EQ(r["action"], json({{"rid", 6}, {"output", 3}}));
    // A version newer than the host knows: closed before anything is sent.
    EXPECT_EQ(r["tooNew"], json({{"code", 1002}, {"reason", "inspector.invalid_protocol_version"}}))
        << r.dump(2);
    const bool still_scheduled = stack_->host->call([&] {
        auto ctx = stack_->host->registry().actor_context(actor_id);
        return ctx && ctx->next_event().has_value();
    });
    EXPECT_FALSE(still_scheduled);
}

// The database tab, read with the official codecs: the ledger actor (SQLite, declared with
// ActorOptions::database) shows its tables, columns, row counts and rows over the v6 socket and
// the HTTP routes, and a statement runs through /inspector/database/execute.
TEST_F(InspectorInterop, DatabaseTabShowsTheActorsSqliteTables) {
    auto r = scenario("inspector-db", {"--key", "inspector-db"});
    EXPECT_EQ(r["isDatabaseEnabled"], true) << r.dump(2);
    EXPECT_EQ(r["schemaRid"], 1);
    // The user's table, after the internal storage's (rivetkit 2.3.19 shows both).
    const json expected_entries = json{
        {"table", {{"schema", "main"}, {"name", "entries"}, {"type", "table"}}},
        {"columns",
         json::array({json{{"name", "id"}, {"type", "INTEGER"}, {"pk", 1}},
                      json{{"name", "text"}, {"type", "TEXT"}, {"pk", 0}},
                      json{{"name", "pad"}, {"type", "BLOB"}, {"pk", 0}}})},
        {"foreignKeys", json::array()},
        {"records", 2}};
    ASSERT_TRUE(r["tables"].is_array() && !r["tables"].empty()) << r.dump(2);
    EXPECT_EQ(r["tables"].back(), expected_entries) << r.dump(2);
    const json internal_tables = json::array(
        {"_rivet_actor", "_rivet_actor_state", "_rivet_conn_state", "_rivet_conns", "_rivet_meta",
         "_rivet_queue", "_rivet_runtime", "_rivet_schedule_events", "_rivet_schedule_history",
         "_rivet_user_kv", "_rivet_wf_kv"});
    json listed = json::array();
    for (const auto& t : r["tables"])
        listed.push_back(t["table"]["name"]);
    json expected_names = internal_tables;
    expected_names.push_back("entries");
    EXPECT_EQ(listed, expected_names) << r.dump(2);
    // offset 1: the second row only.
    EXPECT_EQ(r["rows"], json({{"rid", 2},
                               {"rows", json::array({json{{"id", 2}, {"text", "beta"}, {"pad", nullptr}}})}}))
        << r.dump(2);
    EXPECT_NE(r.value("missingTable", std::string{}).find("no_such_table"), std::string::npos)
        << r.dump(2);
    EXPECT_EQ(r["httpSchemaTables"], expected_names);
    EXPECT_EQ(r["httpRows"], json::array({json{{"id", 1}, {"text", "alpha"}, {"pad", nullptr}}}))
        << r.dump(2);
    EXPECT_EQ(r["executeStatus"], 200);
    EXPECT_EQ(r["executed"], json::array({json{{"n", 2}, {"last", "beta"}}})) << r.dump(2);
    EXPECT_EQ(r["named"], json::array({json{{"text", "beta"}}})) << r.dump(2);
    EXPECT_EQ(r["both"], json({{"status", 400}, {"code", "invalid_request"}})) << r.dump(2);
    EXPECT_EQ(r["unauthorized"], 401);
}

}  // namespace
}  // namespace rivetkit::testing

// The official TypeScript client against the C++ host: each test starts the pinned engine on
// free loopback ports with a fresh data directory, serves the counter contract from a
// CoreRegistry in this process, and runs one scenario of tests/interop/js/client.mjs under node
// in json, cbor and bare. The script reports what it observed; the assertions are here.

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "counter_actor.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

class Interop : public ::testing::TestWithParam<std::string> {
  protected:
    virtual EngineOptions engine_options() const { return {}; }

    void SetUp() override {
        auto stack = LiveStack::start(
            [](core::registry::CoreRegistry& r) { r.register_actor("counter", counter_factory()); },
            engine_options());
        ASSERT_TRUE(stack.ok()) << stack.error().to_string();
        stack_ = std::move(stack).value();
        engine_ = stack_.engine.get();
        host_ = stack_.host.get();
    }
    void TearDown() override { stack_ = {}; }

    // Runs one scenario; the parsed result line (ok == true asserted).
    json scenario(const std::string& name, std::vector<std::string> extra = {}) {
        std::vector<std::string> args{name, "--encoding", GetParam()};
        args.insert(args.end(), extra.begin(), extra.end());
        auto run = run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/client.mjs",
                                     std::move(args), engine_->endpoint(), std::chrono::minutes(3));
        EXPECT_EQ(run.failure, "");
        return run.result;
    }

    LiveStack stack_;
    EngineHarness* engine_ = nullptr;
    LiveHost* host_ = nullptr;
};

TEST_P(Interop, GetOrCreateIncrementOverHttp) {
    auto r = scenario("http-increment");
    EXPECT_EQ(r["outputs"], json::array({1, 3, 6}));
    EXPECT_EQ(r["count"], 6);
}

TEST_P(Interop, ResolveAndCallById) {
    auto r = scenario("resolve");
    EXPECT_TRUE(r["actorId"].is_string());
    EXPECT_EQ(r["sameIdTwice"], true);
    EXPECT_EQ(r["incremented"], 4);
    EXPECT_EQ(r["countByKey"], 4);
}

TEST_P(Interop, CreateWithInput) {
    auto r = scenario("create-input");
    EXPECT_EQ(r["input"], json({{"start", 5}}));
    EXPECT_EQ(r["count"], 5);
    EXPECT_EQ(r["inputWithout"], nullptr);
    EXPECT_EQ(r["countWithout"], 0);
    EXPECT_EQ(r["duplicate"]["threw"], true);
    // The engine answers a duplicate create with either code (7 of 10 runs the second, against
    // upstream's own host as well).
    const std::string dup = r["duplicate"]["error"].value("code", "");
    EXPECT_TRUE(dup == "duplicate_key" || dup == "destroyed_during_creation") << dup;
}

TEST_P(Interop, GetOfMissingActorFails) {
    auto r = scenario("get-missing");
    EXPECT_EQ(r["threw"], true);
    EXPECT_EQ(r["error"]["group"], "actor");
    EXPECT_EQ(r["error"]["code"], "not_found");
}

TEST_P(Interop, UserErrorReachesClientWithMetadata) {
    auto r = scenario("user-error");
    for (const char* via : {"http", "conn"}) {
        SCOPED_TRACE(via);
        EXPECT_EQ(r[via]["threw"], true);
        EXPECT_EQ(r[via]["error"]["group"], "user");
        EXPECT_EQ(r[via]["error"]["code"], "deliberate_failure");
        EXPECT_EQ(r[via]["error"]["message"], "counter failed on purpose");
        EXPECT_EQ(r[via]["error"]["metadata"], json({{"reason", "test"}}));
    }
    EXPECT_EQ(r["afterOnConn"], 1);
}

TEST_P(Interop, UnknownActionIsActionNotFound) {
    auto r = scenario("unknown-action");
    for (const char* via : {"http", "conn"}) {
        SCOPED_TRACE(via);
        EXPECT_EQ(r[via]["threw"], true);
        EXPECT_EQ(r[via]["error"]["group"], "actor");
        EXPECT_EQ(r[via]["error"]["code"], "action_not_found");
        EXPECT_EQ(r[via]["error"]["message"], "Action `nope` was not found.");
    }
    EXPECT_EQ(r["afterOnConn"], 1);
}

TEST_P(Interop, EventsReachSubscribedConnectionsBeforeTheReply) {
    auto r = scenario("events");
    EXPECT_EQ(r["value"], 3);
    EXPECT_EQ(r["bGotEvent"], true);
    EXPECT_EQ(r["seen"]["A"], json::array({"event:3", "reply:3"}));
    EXPECT_EQ(r["seen"]["B"], json::array({"event:3", "reply:3"}));
    EXPECT_EQ(r["seen"]["C"], json::array({"reply:3"}));
}

TEST_P(Interop, SleepsAndWakesWithStateIntact) {
    auto r = scenario("sleep-wake");
    EXPECT_EQ(r["before"], 7);
    EXPECT_EQ(r["sleepObserved"], true);
    EXPECT_EQ(r["countAfterWake"], 7);
    EXPECT_EQ(r["sameActorId"], true);
    EXPECT_EQ(r["generationBefore"], 1);
    EXPECT_EQ(r["generationAfter"], 2);
}

TEST_P(Interop, DestroyThenGetOrCreateStartsFresh) {
    auto r = scenario("destroy-fresh");
    EXPECT_EQ(r["before"], 11);
    EXPECT_EQ(r["destroyObserved"], true);
    EXPECT_EQ(r["countAfter"], 0);
    EXPECT_EQ(r["newIdDiffers"], true);
}

TEST_P(Interop, HibernatableConnectionSurvivesSleep) {
    auto r = scenario("hibernate");
    EXPECT_EQ(r["sleepObserved"], true);
    EXPECT_EQ(r["closed"], false);
    EXPECT_EQ(r["sameConnId"], true);
    EXPECT_EQ(r["eventAfterWake"], true);
    EXPECT_EQ(r["countAfter"], 2);
    EXPECT_EQ(r["generationAfter"], 2);
}

// Counting every event of a 100 x 1000 broadcast needs an engine that does not drop them itself.
// By default the engine hands tunnel messages to its gateway through an in-process pub/sub
// channel of 1024 entries per gateway and skips what a lagging gateway has not read
// (universalpubsub, "Skip lagged"). The envoy paces its bursts (5,000 frames/s) and on an idle
// machine the default engine delivers all 100,000; but with the CPU starved (CI's parallel tests
// and background build) whole runs of exactly 129 messages on many connections went missing at
// once, no socket closed: the shape of a lagging receiver skipping bursts of the engine's
// per-request tasks (tokio's scheduling budget is 128). So this test turns the fast path off
// (RIVET__MEMORY__DISABLE_MEMORY_OPTIMIZATION) and asserts what the host owns: every event, once,
// in order, on every connection. bench/ measures the default engine.
class InteropFanout : public Interop {
  protected:
    EngineOptions engine_options() const override {
        EngineOptions options;
        options.extra_env.emplace_back("RIVET__MEMORY__DISABLE_MEMORY_OPTIMIZATION", "true");
        return options;
    }
};

TEST_P(InteropFanout, HundredConnectionsReceiveEveryBroadcast) {
    // RIVETKIT_INTEROP_FANOUT_EVENTS / _CONNS shrink or grow the run by hand; CI uses 100 × 1000.
    const char* events_env = std::getenv("RIVETKIT_INTEROP_FANOUT_EVENTS");
    const char* conns_env = std::getenv("RIVETKIT_INTEROP_FANOUT_CONNS");
    const int events = events_env != nullptr ? std::atoi(events_env) : 1000;
    const int conns = conns_env != nullptr ? std::atoi(conns_env) : 100;
    auto r = scenario("fanout", {"--events", std::to_string(events), "--conns", std::to_string(conns)});
    EXPECT_EQ(r["replyReceived"], true) << r["replyError"].dump() << engine_->log_tail(6000);
    EXPECT_EQ(r["reply"], events);
    EXPECT_EQ(r["exactConns"], conns) << r["notExact"].dump() << "\nengine log tail:\n"
                                      << engine_->log_tail(6000);
    EXPECT_EQ(r["totalReceived"], events * conns);
    EXPECT_EQ(r["totalDuplicates"], 0);
    EXPECT_EQ(r["totalLost"], 0);
}

INSTANTIATE_TEST_SUITE_P(Encodings, Interop, ::testing::Values("json", "cbor", "bare"),
                         [](const auto& param_info) { return param_info.param; });
INSTANTIATE_TEST_SUITE_P(Encodings, InteropFanout, ::testing::Values("json", "cbor", "bare"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace rivetkit::testing

// The example actors of examples/ ("counter", "chatRoom", "reminder", "rateLimiter", registered by
// rivetkit::examples::register_examples) against the official TypeScript client: each test
// starts the pinned engine on free loopback ports with a fresh data directory, serves the
// examples from a CoreRegistry in this process, and runs one scenario of
// tests/interop/js/examples.mjs under node in json, cbor and bare. The script reports what it
// observed; the assertions are here.

#include "examples.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

class Examples : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            examples::register_examples(r);
        });
        ASSERT_TRUE(stack.ok()) << stack.error().to_string();
        stack_ = std::move(stack).value();
        engine_ = stack_.engine.get();
        host_ = stack_.host.get();
    }
    void TearDown() override { stack_ = {}; }

    // Runs one scenario of examples.mjs; the parsed result line, with ok == true asserted.
    json scenario(const std::string& name, std::vector<std::string> extra = {}) {
        std::vector<std::string> args{name, "--encoding", GetParam()};
        args.insert(args.end(), extra.begin(), extra.end());
        auto run = run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/examples.mjs",
                                     std::move(args), engine_->endpoint(), std::chrono::minutes(3));
        // The observations, for --gtest_output=json|xml.
        RecordProperty("result", run.line);
        EXPECT_EQ(run.failure, "") << "\nengine log tail: " << engine_->log_tail();
        return run.result;
    }

    LiveStack stack_;
    EngineHarness* engine_ = nullptr;
    LiveHost* host_ = nullptr;
};

// --- counter
// --------------------------------------------------------------------------------------

TEST_P(Examples, CounterIncrementsAndBroadcastsNewCount) {
    auto r = scenario("counter");
    EXPECT_EQ(r["initial"], 0);
    EXPECT_EQ(r["httpOutputs"], json::array({1, 3}));
    EXPECT_EQ(r["connReply"], 7);
    EXPECT_EQ(r["allEvents"], true);
    // Every new count reaches the subscribed connection, its own increment's before the reply.
    EXPECT_EQ(r["log"], json::array({"event:1", "event:3", "event:7", "reply:7"}));
    EXPECT_EQ(r["count"], 7);
    EXPECT_EQ(r["countWithInput"], 5);
    EXPECT_EQ(r["afterInput"], 6);
}

TEST_P(Examples, CounterFailIsAUserErrorEndToEnd) {
    auto r = scenario("counter-error");
    for (const char* via : {"http", "conn"}) {
        SCOPED_TRACE(via);
        EXPECT_EQ(r[via]["threw"], true);
        const json& e = r[via]["error"];
        EXPECT_EQ(e["name"], "RivetError");
        EXPECT_EQ(e["group"], "user");
        EXPECT_EQ(e["code"], "deliberate_failure");
        EXPECT_EQ(e["message"], "counter failed on purpose");
        EXPECT_EQ(e["metadata"], json({{"reason", "test"}}));
        EXPECT_EQ(e["actor"].value("actorId", ""), r["actorId"]) << e.dump();
        EXPECT_EQ(e["actor"].value("generation", -1), 1) << e.dump();
    }
    // The connection survives the error; fail() changed nothing.
    EXPECT_EQ(r["afterOnConn"], 1);
    EXPECT_EQ(r["countAfter"], 1);
}

// --- chatRoom
// -------------------------------------------------------------------------------------

TEST_P(Examples, ChatRoomBroadcastsNewMessageToEveryConnectionInOrder) {
    auto r = scenario("chat-room");
    EXPECT_EQ(r["initialA"], json::array());
    EXPECT_EQ(r["initialB"], json::array());
    ASSERT_TRUE(r["sent"].is_array() && r["sent"].size() == 3) << r.dump(2);
    const json expected = json::array({{"ann", "hello"}, {"bob", "hi ann"}, {"cat", "over http"}});
    std::int64_t previous = 0;
    for (std::size_t i = 0; i < 3; ++i) {
        SCOPED_TRACE(i);
        const json& m = r["sent"][i];
        EXPECT_EQ(m["sender"], expected[i][0]);
        EXPECT_EQ(m["text"], expected[i][1]);
        ASSERT_TRUE(m["timestamp"].is_number_integer()) << m.dump();
        // Wall-clock ms of the host, on the same machine as the client.
        const std::int64_t ts = m["timestamp"];
        EXPECT_GE(ts, r["clientBefore"].get<std::int64_t>() - 1000);
        EXPECT_LE(ts, r["clientAfter"].get<std::int64_t>() + 1000);
        EXPECT_GE(ts, previous);
        previous = ts;
    }
    EXPECT_EQ(r["bothGotAll"], true);
    // Both connections got every message, whoever sent it, in the order they were stored.
    EXPECT_EQ(r["eventsA"], r["sent"]);
    EXPECT_EQ(r["eventsB"], r["sent"]);
    EXPECT_EQ(r["history"], r["sent"]);
    EXPECT_EQ(r["historyViaA"], r["sent"]);
    EXPECT_EQ(r["historyViaB"], r["sent"]);
}

// --- reminder
// -------------------------------------------------------------------------------------

TEST_P(Examples, ReminderFiresAndReachesTheConnection) {
    auto r = scenario("reminder");
    EXPECT_EQ(r["initial"], json::array());
    EXPECT_EQ(r["scheduled"], json::array({nullptr, nullptr}));
    EXPECT_EQ(r["bothArrived"], true);
    ASSERT_TRUE(r["events"].is_array() && r["events"].size() == 2) << r.dump(2);
    // Scheduled "later" (900 ms) then "sooner" (300 ms): they fire in due order, not before due.
    EXPECT_EQ(r["events"][0]["value"], "sooner");
    EXPECT_EQ(r["events"][1]["value"], "later");
    EXPECT_GE(r["events"][0]["atMs"].get<std::int64_t>(), 300 - 50) << r["events"].dump();
    EXPECT_GE(r["events"][1]["atMs"].get<std::int64_t>(), 900 - 50) << r["events"].dump();
    EXPECT_EQ(r["fired"], json::array({"sooner", "later"}));
    EXPECT_EQ(r["negative"]["threw"], true);
    EXPECT_EQ(r["negative"]["error"]["group"], "user");
    EXPECT_EQ(r["negative"]["error"]["code"], "invalid_delay");
}

TEST_P(Examples, ReminderSetBeforeSleepFiresAfterIt) {
    auto r = scenario("reminder-sleep");
    const std::int64_t delay_ms = r.value("delayMs", 0);
    EXPECT_EQ(r["initial"], json::array());
    EXPECT_EQ(r["scheduled"], nullptr);
    EXPECT_EQ(r["sleepReply"], nullptr);
    ASSERT_EQ(r["sleepObserved"], true) << r.dump(2);
    // The actor was asleep before the reminder was due, so the fire cannot have come from the
    // running instance's own timer.
    EXPECT_LT(r["sleepObservedAtMs"].get<std::int64_t>(), delay_ms) << r.dump(2);
    // Nothing but the engine's alarm wakes it: the script only polls the engine API until then.
    EXPECT_EQ(r["wakeObserved"], true) << r.dump(2) << engine_->log_tail();
    EXPECT_GE(r["wakeObservedAtMs"].get<std::int64_t>(), delay_ms - 50) << r.dump(2);
    EXPECT_EQ(r["fired"], json::array({r["text"]})) << r.dump(2);
    EXPECT_EQ(r["connectableTsChanged"], true);
    EXPECT_EQ(r["generationBefore"], 1);
    EXPECT_EQ(r["generationAfter"], 2);
}

// --- rateLimiter
// ----------------------------------------------------------------------------------

TEST_P(Examples, RateLimiterRefusesTheSixthCallInAWindow) {
    auto r = scenario("rate-limiter");
    ASSERT_TRUE(r["results"].is_array() && r["results"].size() == 6) << r.dump(2);
    const std::int64_t before = r["clientBefore"];
    const std::int64_t after = r["clientAfter"];
    const json reset_at = r["results"][0]["resetAt"];
    ASSERT_TRUE(reset_at.is_number_integer()) << r.dump(2);
    // The window opened by the first call, on the host's wall clock (same machine).
    EXPECT_GE(reset_at.get<std::int64_t>(), before + 60'000 - 1000);
    EXPECT_LE(reset_at.get<std::int64_t>(), after + 60'000 + 1000);
    for (std::size_t i = 0; i < 5; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(r["results"][i], json({{"allowed", true},
                                         {"remaining", 4 - static_cast<int>(i)},
                                         {"resetAt", reset_at}}));
    }
    const json& sixth = r["results"][5];
    EXPECT_EQ(sixth["allowed"], false);
    EXPECT_EQ(sixth["remaining"], 0);
    EXPECT_EQ(sixth["resetAt"], reset_at);
    EXPECT_GT(sixth["resetAt"].get<std::int64_t>(), after);
    // Another key has a window of its own.
    EXPECT_EQ(r["other"]["allowed"], true);
    EXPECT_EQ(r["other"]["remaining"], 4);
}

// --- numbers beyond 32 bits
// ------------------------------------------------------------------------------

// A TypeScript client's integer beyond 32 bits (sent as a float64) is accepted as an int64
// argument, and an int64 result up to 2^53 - 1 arrives as a JavaScript number in every encoding,
// as from a TypeScript actor (not as a BigInt in cbor and bare).
TEST_P(Examples, IntegersBeyond32BitsTravelAsJavaScriptNumbers) {
    auto r = scenario("big-numbers");
    EXPECT_EQ(r["first"], 4294967296LL) << r.dump(2);
    EXPECT_EQ(r["firstType"], "number");
    EXPECT_EQ(r["second"], 1796346349679LL);
    EXPECT_EQ(r["secondType"], "number");
    EXPECT_EQ(r["resetAtType"], "number");
}

INSTANTIATE_TEST_SUITE_P(Encodings, Examples, ::testing::Values("json", "cbor", "bare"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace rivetkit::testing

// The inspector WebSocket against the official TypeScript inspector codecs
// (tests/interop/js/inspector.mjs): a C++ host on the real engine serves the counter test actor;
// node opens /inspector/connect through the gateway with the actor's KV [3] token, encodes its
// requests with rivetkit 2.3.19's generated v4 codec and decodes every server frame as the
// inspector UI does. One engine and host for the suite.

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "counter_actor.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

std::string node_binary() {
    const char* bin = std::getenv("RIVET_NODE_BIN");
    return bin != nullptr && *bin != '\0' ? bin : "node";
}

std::string tail(const std::string& s, std::size_t n = 3000) {
    return s.substr(s.size() > n ? s.size() - n : 0);
}

class InspectorInterop : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            core::ActorConfig config;
            config.has_state = true;
            config.actions = {{"increment"}, {"getCount"}};
            r.register_actor("counter", counter_factory(std::move(config)));
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

    json scenario(const std::string& name) {
        std::vector<std::string> argv{node_binary(),
                                      std::string(RIVETKIT_INTEROP_JS_DIR) + "/inspector.mjs", name,
                                      "--encoding", "json"};
        auto run = run_process(std::move(argv), {{"RIVET_ENDPOINT", stack_->engine->endpoint()}},
                               std::chrono::minutes(2));
        EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().to_string());
        if (!run.ok())
            return json::object();
        const std::string& out = run->out;
        auto last = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
        std::string line = out.substr(last == std::string::npos ? 0 : last + 1);
        json result = json::parse(line, nullptr, false);
        EXPECT_FALSE(result.is_discarded()) << "stdout: " << out << "\nstderr: " << tail(run->err);
        EXPECT_EQ(result.value("ok", false), true)
            << result.dump(2) << "\nstderr tail: " << tail(run->err);
        return result.is_discarded() ? json::object() : result;
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
    EXPECT_EQ(init["isDatabaseEnabled"], false);
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
}

}  // namespace
}  // namespace rivetkit::testing

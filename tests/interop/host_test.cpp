// The host executable (the README's main job) joining a real engine through RIVET_ENDPOINT:
// it announces the endpoint and a curl line, serves the example actors, drains on SIGTERM and
// SIGINT with exit code 0, and an actor's state survives the drain into the next host process.

#include <signal.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTarget =
    "/gateway/counter/action/increment?rvt-namespace=default&rvt-method=getOrCreate"
    "&rvt-runner=default&rvt-key=host-test&rvt-crash-policy=sleep";

// Bounded: the engine lists the envoy once its registration committed.
bool wait_any_envoy(EngineHarness& engine) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
        auto r = engine.api("GET", "/envoys?namespace=default");
        if (r.ok() && r->status == 200) {
            auto j = nlohmann::json::parse(r->body, nullptr, false);
            if (!j.is_discarded() && j.contains("envoys") && j["envoys"].is_array() &&
                !j["envoys"].empty())
                return true;
        }
        // Poll: the engine has no notification for a committed registration.
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

std::unique_ptr<ChildProcess> start_host(EngineHarness& engine) {
    auto child = ChildProcess::spawn({RIVETKIT_HOST_BIN},
                                     {{"RIVET_ENDPOINT", engine.endpoint()}, {"RIVET_POOL", "default"}});
    EXPECT_TRUE(child.ok());
    if (!child.ok())
        return nullptr;
    auto host = std::move(child).value();
    EXPECT_TRUE(host->wait_for_stdout("serving counter", 60s)) << host->out() << host->err();
    return host;
}

TEST(HostExecutable, ServesTheExamplesAndDrainsOnSignals) {
    EngineOptions options;
    options.extra_env.emplace_back("RIVET__RUNTIME__WORKER_CPU_MAX", "1000000");
    auto engine = EngineHarness::start(std::move(options));
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    ASSERT_TRUE((*engine)->create_pool("default").ok());

    auto host = start_host(**engine);
    ASSERT_TRUE(host);
    EXPECT_NE(host->out().find("curl -X POST '" + (*engine)->endpoint() + "/gateway/counter/"),
              std::string::npos)
        << host->out();
    ASSERT_TRUE(wait_any_envoy(**engine));
    for (int expected : {1, 2}) {
        auto r = http_request((*engine)->guard_port(), "POST", kTarget, R"({"args":[1]})",
                              {{"content-type", "application/json"}});
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->body, "{\"output\":" + std::to_string(expected) + "}") << host->err();
    }
    host->signal(SIGTERM);
    EXPECT_EQ(host->wait(60s), std::optional<int>(0)) << host->err();
    EXPECT_NE(host->err().find("rivetkit host exiting"), std::string::npos);

    // The drained actor's state is read back by the next host process.
    auto again = start_host(**engine);
    ASSERT_TRUE(again);
    auto count = http_request((*engine)->guard_port(), "POST",
                              "/gateway/counter/action/getCount?rvt-namespace=default"
                              "&rvt-method=getOrCreate&rvt-runner=default&rvt-key=host-test"
                              "&rvt-crash-policy=sleep",
                              R"({"args":[]})", {{"content-type", "application/json"}});
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(count->body, R"({"output":2})") << again->err();
    again->signal(SIGINT);
    EXPECT_EQ(again->wait(60s), std::optional<int>(0)) << again->err();
}

std::string node_binary() {
    const char* bin = std::getenv("RIVET_NODE_BIN");
    return bin != nullptr && *bin != '\0' ? bin : "node";
}

// The official client's hibernatable connection outlives the host process it was opened on:
// host A drains (the actor sleeps, its connection record saved), host B starts, and the same
// connection's next action wakes the actor on B, which restores the connection (same id, no new
// open, the event still delivered) — hibernation across a process restart, not just a sleep.
TEST(HostExecutable, HibernatableConnectionSurvivesAHostProcessRestart) {
    EngineOptions options;
    options.extra_env.emplace_back("RIVET__RUNTIME__WORKER_CPU_MAX", "1000000");
    auto engine = EngineHarness::start(std::move(options));
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    ASSERT_TRUE((*engine)->create_pool("default").ok());
    auto host = start_host(**engine);
    ASSERT_TRUE(host);
    ASSERT_TRUE(wait_any_envoy(**engine));

    auto client = ChildProcess::spawn(
        {node_binary(), std::string(RIVETKIT_INTEROP_JS_DIR) + "/host_restart.mjs",
         "conn-survives-restart", "--timeout", "150"},
        {{"RIVET_ENDPOINT", (*engine)->endpoint()}});
    ASSERT_TRUE(client.ok()) << client.error().to_string();
    auto& node = **client;
    ASSERT_TRUE(node.wait_for_stdout("\"ready\":true", 60s)) << node.out() << node.err();

    host->signal(SIGTERM);
    ASSERT_EQ(host->wait(60s), std::optional<int>(0)) << host->err();
    auto again = start_host(**engine);
    ASSERT_TRUE(again);
    node.signal(SIGUSR2);
    ASSERT_EQ(node.wait(120s), std::optional<int>(0)) << node.out() << node.err();

    const std::string& out = node.out();
    auto last = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
    auto r = nlohmann::json::parse(out.substr(last == std::string::npos ? 0 : last + 1), nullptr,
                                   false);
    ASSERT_FALSE(r.is_discarded()) << out;
    ASSERT_EQ(r.value("ok", false), true) << r.dump(2) << node.err();
    EXPECT_EQ(r["first"], 1);
    EXPECT_EQ(r["second"], 2);
    EXPECT_EQ(r["count"], 2);
    EXPECT_EQ(r["sameConnId"], true) << r.dump(2);
    EXPECT_EQ(r["opens"], 1) << "the connection must not be re-opened: " << r.dump(2);
    EXPECT_EQ(r["closed"], false) << r.dump(2);
    ASSERT_TRUE(r["generationBefore"].is_number() && r["generationAfter"].is_number()) << r.dump(2);
    EXPECT_GT(r["generationAfter"].get<int>(), r["generationBefore"].get<int>())
        << "the actor must have been restarted on the new host process";
    again->signal(SIGINT);
    EXPECT_EQ(again->wait(60s), std::optional<int>(0)) << again->err();
}

}  // namespace
}  // namespace rivetkit::testing

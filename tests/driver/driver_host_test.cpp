// rivetkit-driver-host under the host contract of upstream's driver test suite (README.md here):
// started as the suite's harness starts it (a fresh namespace and pool, the RIVETKIT_TEST_* /
// RIVET_* environment), it is listed as an envoy of the pool at once, serves the fixtures to the
// official TypeScript client, and exits within a second of SIGTERM. The client scenario
// (tests/interop/js/driver_findings.mjs) keeps a regression check for each defect the suite
// found, since CI cannot reach upstream's repository.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine_harness.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Bounded: the engine lists the envoy once its registration committed (no notification exists).
std::optional<std::chrono::milliseconds> wait_envoy(EngineHarness& engine, const std::string& ns,
                                                    const std::string& pool) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < 30s) {
        auto r = engine.api("GET", "/envoys?namespace=" + ns + "&name=" + pool);
        if (r.ok() && r->status == 200) {
            auto j = json::parse(r->body, nullptr, false);
            if (!j.is_discarded() && j.contains("envoys") && j["envoys"].is_array() &&
                !j["envoys"].empty())
                return std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start);
        }
        std::this_thread::sleep_for(50ms);
    }
    return std::nullopt;
}

TEST(DriverHost, FollowsTheSuitesHostContractAndKeepsItsFindingsFixed) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    const std::string ns = "driver-ci";
    const std::string pool = "driver-suite-ci";
    auto created =
        (*engine)->api("POST", "/namespaces", json{{"name", ns}, {"display_name", ns}}.dump());
    ASSERT_TRUE(created.ok() && created->status == 200)
        << (created.ok() ? created->body : created.error().to_string());
    ASSERT_TRUE((*engine)->create_pool(pool, ns).ok());

    auto child = ChildProcess::spawn({RIVETKIT_DRIVER_HOST_BIN},
                                     {{"RIVETKIT_TEST_ENDPOINT", (*engine)->endpoint()},
                                      {"RIVET_NAMESPACE", ns},
                                      {"RIVET_TOKEN", "dev"},
                                      {"RIVETKIT_TEST_POOL_NAME", pool}});
    ASSERT_TRUE(child.ok()) << child.error().to_string();
    auto& host = **child;
    auto registered = wait_envoy(**engine, ns, pool);
    ASSERT_TRUE(registered.has_value()) << host.err();
    // Within the harness's bound (30 s, counted against the test's own timeout); here ~0.5 s.
    std::printf("driver host registered after %lld ms\n",
                static_cast<long long>(registered->count()));

    for (const char* encoding : {"bare", "json"}) {
        SCOPED_TRACE(encoding);
        ::setenv("RIVET_NAMESPACE", ns.c_str(), 1);
        ::setenv("RIVET_POOL", pool.c_str(), 1);
        ScenarioRun run =
            run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/driver_findings.mjs",
                              {"findings", "--encoding", encoding}, (*engine)->endpoint(), 120s);
        ::unsetenv("RIVET_NAMESPACE");
        ::unsetenv("RIVET_POOL");
        ASSERT_TRUE(run.failure.empty()) << run.failure << "\nhost:\n" << tail(host.err());
        const json& r = run.result;
        EXPECT_EQ(r["added"], 2);
        EXPECT_EQ(r["invalid"]["threw"], true) << r.dump(2);
        EXPECT_EQ(r["invalid"]["error"]["group"], "actor") << r.dump(2);
        EXPECT_EQ(r["invalid"]["error"]["code"], "validation_error") << r.dump(2);
        EXPECT_EQ(r["connError"]["error"]["group"], "connection") << r.dump(2);
        EXPECT_EQ(r["connError"]["error"]["code"], "custom_error") << r.dump(2);
        EXPECT_EQ(r["reentrantResult"], (json{{"value", 5},
                                              {"derivedValue", 0},
                                              {"callCount", 1},
                                              {"errorGroup", "actor"},
                                              {"errorCode", "state_mutation_reentrant"}}));
        EXPECT_EQ(r["requestInfo"]["onBeforeConnect"]["hasRequest"], true) << r.dump(2);
        EXPECT_EQ(r["requestInfo"]["createConnState"]["hasRequest"], true) << r.dump(2);
        const json greeting{{"id", r["greetedConnId"]}, {"username", "connect-event-user"}};
        EXPECT_EQ(r["onConnectEvents"], json::array({json::array({"direct", greeting}),
                                                     json::array({"fromConns", greeting})}))
            << r.dump(2);
        EXPECT_EQ(r["inspector"]["status"], 200) << r.dump(2);
        EXPECT_EQ(r["inspector"]["body"],
                  (json{{"state", {{"count", 5}}}, {"isStateEnabled", true}}));
    }

    const auto signalled = std::chrono::steady_clock::now();
    host.signal(SIGTERM);
    auto code = host.wait(10s);
    const auto took = std::chrono::steady_clock::now() - signalled;
    // Exit code 0: the host's own stop path ended it, not a kill. The harness sends SIGKILL one
    // second after SIGTERM; the host bounds its stop at 0.8 s by design (driver_host.cpp), so the
    // measured time only has to be plausible on a loaded machine.
    EXPECT_EQ(code, std::optional<int>(0)) << host.err();
    EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(took).count(), 5000);
}

}  // namespace
}  // namespace rivetkit::testing

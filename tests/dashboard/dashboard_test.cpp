// The engine's dashboard inspects actors of a C++ host: the pinned engine on loopback with a fresh
// data directory, rivetkit::Registry serving the example actors (the inspector UI linked in), and
// tests/dashboard/dashboard.mjs driving headless Chromium through /ui/. The script reports what it
// saw; the assertions are here. Screenshots of every step: <build>/artifacts/dashboard/*.png (a run
// with a failed step also keeps them in artifacts/dashboard/failed-<time>/).

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "examples.hpp"
#include "rivetkit/registry.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : fallback;
}

TEST(Dashboard, InspectsCppActorsStateConnectionsQueueSchedulesAndDatabase) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    Registry registry;
    examples::use_examples(registry);
    HostConfig config;
    config.endpoint = (*engine)->endpoint();
    RunningHost host = registry.start(config);

    auto run = run_process({env_or("RIVET_NODE_BIN", "node"), RIVETKIT_DASHBOARD_JS, "--endpoint",
                            (*engine)->endpoint(), "--artifacts", RIVETKIT_DASHBOARD_ARTIFACTS},
                           {}, std::chrono::minutes(3));
    ASSERT_TRUE(run.ok()) << run.error().to_string();
    const std::string& out = run->out;
    auto last = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
    json r = json::parse(out.substr(last == std::string::npos ? 0 : last + 1), nullptr, false);
    ASSERT_FALSE(r.is_discarded()) << out << "\nstderr: " << run->err;
    EXPECT_EQ(r["failures"], json::array()) << r.dump(2);
    const json& s = r["steps"];

    // counter: exactly the tabs the TypeScript host's counter has (Database too: both keep an
    // actor's state in its SQLite database) and no Workflow tab.
    EXPECT_EQ(s["counterTabs"], json::array({"State", "Database", "Queue", "Schedules",
                                             "Connections", "Console", "Metadata"}));
    EXPECT_EQ(s["stateShown"], true);
    EXPECT_EQ(s["stateFollowsClientAction"], true);
    EXPECT_EQ(s["stateEditSaved"], true);
    EXPECT_EQ(s["stateAfterUiEdit"], 40);
    EXPECT_EQ(s["connectionShown"], true);
    EXPECT_EQ(s["queueShown"], true);
    EXPECT_EQ(s["consoleListsActions"], true);
    EXPECT_EQ(s["metadataTab"], true);
    EXPECT_EQ(s["counterDatabaseShown"], true);
    EXPECT_EQ(s["scheduleShown"], true);
    // ledger has a database: the Database tab, its table and the row added.
    EXPECT_EQ(s["ledgerTabs"], json::array({"State", "Database", "Queue", "Schedules",
                                            "Connections", "Console", "Metadata"}));
    EXPECT_EQ(s["databaseShown"], true);

    host.stop();
    EXPECT_EQ(host.wait(), 0);
}

}  // namespace
}  // namespace rivetkit::testing

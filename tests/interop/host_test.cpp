// The host executable (the README's main job) joining a real engine through RIVET_ENDPOINT:
// it announces the endpoint and a curl line, serves the example actors, drains on SIGTERM and
// SIGINT with exit code 0, and an actor's state survives the drain into the next host process.
// The ledger example's SQLite database stays consistent when the host is killed (SIGKILL) in the
// middle of a transaction.

#include <signal.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using namespace std::chrono_literals;

const std::string kTarget = gateway_target("counter", "host-test", "/action/increment");

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

// The number logged as `key=N` (logfmt), first occurrence.
std::optional<long> logged_number(const std::string& log, const std::string& key) {
    const auto at = log.find(" " + key + "=");
    if (at == std::string::npos)
        return std::nullopt;
    return std::strtol(log.c_str() + at + key.size() + 2, nullptr, 10);
}

std::unique_ptr<ChildProcess> start_host(EngineHarness& engine,
                                         std::vector<std::string> options = {}) {
    options.insert(options.begin(), RIVETKIT_HOST_BIN);
    auto child = ChildProcess::spawn(options,
                                     {{"RIVET_ENDPOINT", engine.endpoint()}, {"RIVET_POOL", "default"}});
    EXPECT_TRUE(child.ok());
    if (!child.ok())
        return nullptr;
    auto host = std::move(child).value();
    EXPECT_TRUE(host->wait_for_stdout("serving counter", 60s)) << host->out() << host->err();
    return host;
}

TEST(HostExecutable, ServesTheExamplesAndDrainsOnSignals) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    ASSERT_TRUE((*engine)->create_pool("default").ok());

    auto host = start_host(**engine);
    ASSERT_TRUE(host);
    EXPECT_NE(host->out().find("curl -X POST '" + (*engine)->endpoint() + "/gateway/counter/"),
              std::string::npos)
        << host->out();
    ASSERT_TRUE(wait_any_envoy(**engine));
    EXPECT_EQ(logged_number(host->err(), "sqlite_connections"), std::optional<long>(16))
        << host->err();
    for (int expected : {1, 2}) {
        auto r = http_request((*engine)->guard_port(), "POST", kTarget, R"({"args":[1]})",
                              {{"content-type", "application/json"}});
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(r->body, "{\"output\":" + std::to_string(expected) + "}") << host->err();
    }
    host->signal(SIGTERM);
    EXPECT_EQ(host->wait(60s), std::optional<int>(0)) << host->err();
    EXPECT_NE(host->err().find("rivetkit host exiting"), std::string::npos);
    // Default (info) logs: one line as the actor starts, one as it stops; the lifecycle detail
    // only with RIVET_LOG_LEVEL=debug.
    auto count_of = [](const std::string& text, const std::string& needle) {
        std::size_t n = 0;
        for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
            ++n;
        return n;
    };
    EXPECT_EQ(count_of(host->err(), "msg=\"actor started\""), 1u) << host->err();
    EXPECT_EQ(count_of(host->err(), "msg=\"actor stopped\""), 1u) << host->err();
    EXPECT_EQ(count_of(host->err(), "lifecycle transition"), 0u) << host->err();

    // The drained actor's state is read back by the next host process (this one keeping at most
    // one SQLite connection open between uses).
    auto again = start_host(**engine, {"--sqlite-connections", "1"});
    ASSERT_TRUE(again);
    EXPECT_EQ(logged_number(again->err(), "sqlite_connections"), std::optional<long>(1))
        << again->err();
    auto count = http_request((*engine)->guard_port(), "POST",
                              gateway_target("counter", "host-test", "/action/getCount"),
                              R"({"args":[]})", {{"content-type", "application/json"}});
    ASSERT_TRUE(count.ok());
    EXPECT_EQ(count->body, R"({"output":2})") << again->err();
    again->signal(SIGINT);
    EXPECT_EQ(again->wait(60s), std::optional<int>(0)) << again->err();
}

// --help lists every option with its environment variable; a wrong argument exits 2.
TEST(HostExecutable, HelpListsEveryOptionAndItsVariable) {
    auto help = ChildProcess::spawn({RIVETKIT_HOST_BIN, "--help"}, {});
    ASSERT_TRUE(help.ok());
    EXPECT_EQ((*help)->wait(30s), std::optional<int>(0));
    const std::string text = (*help)->out();
    for (const char* needle :
         {"--endpoint", "RIVET_ENDPOINT", "--token", "RIVET_TOKEN", "--namespace",
          "RIVET_NAMESPACE", "--pool", "RIVET_POOL", "--threads", "RIVET_THREADS",
          "--sqlite-connections", "RIVET_SQLITE_CONNECTIONS", "--engine-bin",
          "RIVET_ENGINE_BIN", "--log-level", "RIVET_LOG_LEVEL", "--log-format", "RIVET_LOG_FORMAT",
          "--version", "counter, chatRoom, reminder, rateLimiter, ledger"}) {
        EXPECT_NE(text.find(needle), std::string::npos) << needle << " missing from:\n" << text;
    }
    auto bad = ChildProcess::spawn({RIVETKIT_HOST_BIN, "--threads", "many"}, {});
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ((*bad)->wait(30s), std::optional<int>(2));
    EXPECT_NE((*bad)->err().find("--threads needs a number"), std::string::npos) << (*bad)->err();
    auto negative = ChildProcess::spawn({RIVETKIT_HOST_BIN, "--sqlite-connections", "-3"}, {});
    ASSERT_TRUE(negative.ok());
    EXPECT_EQ((*negative)->wait(30s), std::optional<int>(2));
    EXPECT_NE((*negative)->err().find("--sqlite-connections needs a number"), std::string::npos)
        << (*negative)->err();
}

// The official client's hibernatable connection outlives the host process it was opened on:
// host A drains (the actor sleeps, its connection record saved), host B starts, and the same
// connection's next action wakes the actor on B, which restores the connection (same id, no new
// open, the event still delivered) — hibernation across a process restart, not just a sleep.
TEST(HostExecutable, HibernatableConnectionSurvivesAHostProcessRestart) {
    auto engine = EngineHarness::start();
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
    EXPECT_EQ(r["sameConnId"], true) << r.dump(2) << "\nclient:\n" << node.err() << "\nfirst host:\n"
                                     << host->err() << "\nsecond host:\n" << again->err()
                                     << "\nengine:\n" << (*engine)->log_tail();
    EXPECT_EQ(r["opens"], 1) << "the connection must not be re-opened: " << r.dump(2);
    EXPECT_EQ(r["closed"], false) << r.dump(2);
    ASSERT_TRUE(r["generationBefore"].is_number() && r["generationAfter"].is_number()) << r.dump(2);
    EXPECT_GT(r["generationAfter"].get<int>(), r["generationBefore"].get<int>())
        << "the actor must have been restarted on the new host process";
    again->signal(SIGINT);
    EXPECT_EQ(again->wait(60s), std::optional<int>(0)) << again->err();
}


// Bounded: the engine marks an actor of a lost envoy as sleeping once the lost threshold passed.
bool wait_sleeping(EngineHarness& engine, const std::string& actor, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        auto r = engine.api("GET", "/actors?namespace=default&actor_id=" + actor);
        if (r.ok() && r->status == 200) {
            auto j = nlohmann::json::parse(r->body, nullptr, false);
            if (!j.is_discarded() && j.contains("actors") && j["actors"].is_array() &&
                !j["actors"].empty() && !j["actors"][0]["sleep_ts"].is_null())
                return true;
        }
        // Poll: the engine has no notification for an actor's state change.
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

// One action call on the ledger through the gateway; the output (null when the call failed).
nlohmann::json ledger_call(EngineHarness& engine, const std::string& actor,
                           const std::string& action, nlohmann::json args) {
    nlohmann::json body{{"args", std::move(args)}};
    auto r = http_request(engine.guard_port(), "POST", "/gateway/" + actor + "/action/" + action,
                          body.dump(), {{"content-type", "application/json"}});
    EXPECT_TRUE(r.ok()) << action << ": " << (r.ok() ? "" : r.error().to_string());
    if (!r.ok())
        return nullptr;
    EXPECT_EQ(r->status, 200u) << action << ": " << r->body;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    return !j.is_discarded() && j.is_object() && j.contains("output") ? j["output"]
                                                                       : nlohmann::json();
}

std::vector<std::string> ledger_texts(EngineHarness& engine, const std::string& actor) {
    std::vector<std::string> texts;
    nlohmann::json rows = ledger_call(engine, actor, "list", nlohmann::json::array());
    if (!rows.is_array())
        return texts;
    for (const auto& row : rows)
        texts.push_back(row.value("text", std::string("<missing>")));
    return texts;
}

// The issue's crash test: the host process is killed with SIGKILL while the ledger actor holds a
// SQLite transaction open (its rows written, larger than SQLite's page cache so pages were
// already handed to the VFS, the action call still outstanding). The next host process sees
// exactly the committed rows, an intact database (PRAGMA integrity_check) and takes new writes.
TEST(HostExecutable, SqliteTransactionOpenAtAHostCrashLeavesTheDatabaseConsistent) {
    // The engine gives up a vanished envoy's actors after pegboard.envoy_lost_threshold (15 s by
    // default); shortened so the test does not wait it out.
    EngineOptions options;
    options.extra_env.emplace_back("RIVET__PEGBOARD__ENVOY_LOST_THRESHOLD", "3000");
    auto engine = EngineHarness::start(std::move(options));
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    EngineHarness& e = **engine;
    ASSERT_TRUE(e.create_pool("default").ok());
    auto host = start_host(e);
    ASSERT_TRUE(host);
    ASSERT_TRUE(wait_any_envoy(e));
    auto id = e.create_actor("ledger", "crash-1", "default", "sleep");
    ASSERT_TRUE(id.ok()) << id.error().to_string();
    const std::string actor = *id;

    const std::vector<std::string> committed{"first", "second", "third"};
    for (std::size_t i = 0; i < committed.size(); ++i)
        ASSERT_EQ(ledger_call(e, actor, "add", {committed[i]}), nlohmann::json(i + 1))
            << host->err();
    ASSERT_EQ(ledger_texts(e, actor), committed);

    // 1200 rows with 4 KiB of padding each: about 5 MB, beyond SQLite's default 2 MB page cache.
    auto held = ChildProcess::spawn(
        {"curl", "-sS", "--max-time", "300", "-X", "POST", "-H", "content-type: application/json",
         "-d", R"({"args":[1200,4096,600000]})",
         e.endpoint() + "/gateway/" + actor + "/action/holdTransaction"},
        {});
    ASSERT_TRUE(held.ok()) << held.error().to_string();
    bool holding = false;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!holding && std::chrono::steady_clock::now() < deadline) {
        holding = ledger_call(e, actor, "holding", nlohmann::json::array()) == true;
        // Poll: the transaction being open is only visible through this action.
        if (!holding)
            std::this_thread::sleep_for(50ms);
    }
    if (!holding) {
        (void)(*held)->wait(0ms);
        (void)host->wait(0ms);
    }
    ASSERT_TRUE(holding) << "the transaction never got its rows written; held call: "
                         << (*held)->out() << (*held)->err() << "\nhost: " << host->err();

    ASSERT_FALSE((*held)->wait(0ms).has_value()) << "the held call ended: " << (*held)->out();

    host->signal(SIGKILL);
    ASSERT_EQ(host->wait(30s), std::optional<int>(-1));
    // The caller goes too: the engine's gateway re-sends a request still open when the actor is
    // rescheduled, which would run holdTransaction again on the next host.
    (*held)->signal(SIGKILL);
    ASSERT_TRUE((*held)->wait(30s).has_value());

    auto again = start_host(e);
    ASSERT_TRUE(again);
    ASSERT_TRUE(wait_sleeping(e, actor, 60s)) << "the actor of the killed host was never lost";

    EXPECT_EQ(ledger_call(e, actor, "integrityCheck", nlohmann::json::array()), "ok")
        << again->err();
    EXPECT_EQ(ledger_call(e, actor, "count", nlohmann::json::array()), 3) << again->err();
    EXPECT_EQ(ledger_texts(e, actor), committed) << "uncommitted rows are visible";

    // New writes work and are durable: the next id follows the committed rows.
    EXPECT_EQ(ledger_call(e, actor, "add", {"after-crash"}), 4) << again->err();
    auto expected = committed;
    expected.push_back("after-crash");
    EXPECT_EQ(ledger_texts(e, actor), expected);
    // A transaction that does commit still works after the crash (no pending rows, no wait).
    EXPECT_EQ(ledger_call(e, actor, "holdTransaction", {2, 0, 0}), 2) << again->err();
    EXPECT_EQ(ledger_call(e, actor, "count", nlohmann::json::array()), 6);
    EXPECT_EQ(ledger_call(e, actor, "integrityCheck", nlohmann::json::array()), "ok");

    again->signal(SIGINT);
    EXPECT_EQ(again->wait(60s), std::optional<int>(0)) << again->err();
}

}  // namespace
}  // namespace rivetkit::testing

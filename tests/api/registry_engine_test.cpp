// rivetkit::Registry (include/rivetkit/registry.hpp) on the real engine: a program's host with
// several io threads registers one engine connection per thread, serves actors on all of them,
// and stops cleanly; a bad endpoint is an error, not a hang.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "engine_harness.hpp"
#include "host/engine.hpp"
#include "rivetkit/registry.hpp"
#include "rivetkit/rivetkit.hpp"

namespace rivetkit::testing {
namespace {

using namespace std::chrono_literals;

struct HostTallyState {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(HostTallyState, count)

Actor<HostTallyState> host_tally() {
    return Actor<HostTallyState>().action("add", [](ActionContext<HostTallyState>& c, std::int64_t n) {
        return c.state().count += n;
    });
}

std::size_t pool_envoy_count(EngineHarness& engine) {
    auto r = engine.api("GET", "/envoys?namespace=default");
    if (!r.ok() || r->status != 200)
        return 0;
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.contains("envoys") || !j["envoys"].is_array())
        return 0;
    return j["envoys"].size();
}

}  // namespace

TEST(HostRegistry, EachThreadHoldsAnEngineConnectionAndServesActors) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();

    Registry registry;
    registry.use("tally", host_tally());
    std::atomic<int> ready_calls{0};
    std::atomic<unsigned> ready_threads{0};
    registry.on_ready([&](const HostInfo& info) {
        ready_threads = info.threads;
        ++ready_calls;
    });
    HostConfig config;
    config.endpoint = (*engine)->endpoint();
    config.threads = 3;
    RunningHost host = registry.start(config);  // also creates the pool
    EXPECT_EQ(host.info().threads, 3u);
    EXPECT_FALSE(host.info().local_engine_started);

    // Poll: the engine has no notification for committed envoy registrations.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (pool_envoy_count(**engine) < 3 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    EXPECT_EQ(pool_envoy_count(**engine), 3u);

    // Actors land on whichever connection the engine picks; every one answers.
    for (int i = 0; i < 12; ++i) {
        const std::string key = "t" + std::to_string(i);
        for (int expected : {i + 1, 2 * (i + 1)}) {
            auto r = http_request((*engine)->guard_port(), "POST",
                                  gateway_target("tally", key, "/action/add"),
                                  "{\"args\":[" + std::to_string(i + 1) + "]}",
                                  {{"content-type", "application/json"}});
            // The engine's side of a first request that never reached an actor (an open flake
            // seen under load: no envoy was asked to start the actor).
            ASSERT_TRUE(r.ok()) << r.error().to_string() << "\nengine log tail:\n"
                                << (*engine)->log_tail(8000);
            EXPECT_EQ(r->body, "{\"output\":" + std::to_string(expected) + "}") << key;
        }
    }
    EXPECT_EQ(ready_calls.load(), 1);
    EXPECT_EQ(ready_threads.load(), 3u);

    host.stop();
    EXPECT_EQ(host.wait(), 0);
    EXPECT_EQ(host.wait(), 0);  // waiting again returns the same result
}

// Engine 2.3.19 caches a pool's config for 5 s, and whether the pool serves envoys is in it. Engine
// connections registering at the same moment on a pool new to envoys could leave that cache
// saying "no envoys": an actor created right then became a runner-protocol actor no envoy is ever
// asked to start (the request hung; seen under load as a 30 s timeout in the test above). The
// host registers its first connection alone and announces itself ready only once the engine has
// registered every connection, so actors created at once are all served.
TEST(HostRegistry, ActorsCreatedAsSoonAsAManyThreadHostIsReadyOnANewPoolAreServed) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();

    Registry registry;
    registry.use("tally", host_tally());
    std::mutex mutex;
    std::condition_variable cv;
    bool ready = false;
    registry.on_ready([&](const HostInfo&) {
        std::lock_guard lock(mutex);
        ready = true;
        cv.notify_all();
    });
    HostConfig config;
    config.endpoint = (*engine)->endpoint();
    config.threads = 6;
    RunningHost host = registry.start(config);
    {
        std::unique_lock lock(mutex);
        ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return ready; }));
    }
    // Ready means registered: the engine lists every connection without polling.
    EXPECT_EQ(pool_envoy_count(**engine), 6u);

    constexpr int kActors = 6;
    std::vector<std::string> outcome(kActors);
    std::vector<std::thread> callers;
    for (int i = 0; i < kActors; ++i) {
        callers.emplace_back([&, i] {
            auto r = http_request((*engine)->guard_port(), "POST",
                                  gateway_target("tally", "fresh" + std::to_string(i),
                                                 "/action/add"),
                                  "{\"args\":[" + std::to_string(i + 1) + "]}",
                                  {{"content-type", "application/json"}}, 20s);
            outcome[i] = r.ok() ? r->body : r.error().to_string();
        });
    }
    for (auto& t : callers)
        t.join();
    for (int i = 0; i < kActors; ++i)
        EXPECT_EQ(outcome[i], "{\"output\":" + std::to_string(i + 1) + "}") << "actor " << i;

    host.stop();
    EXPECT_EQ(host.wait(), 0);
}

// The engine's dashboard loads the inspector as a page the actor serves itself; a host serves it
// on public paths (no token), as rivetkit 2.3.19 does, while the data paths keep asking for it.
TEST(HostRegistry, ServesTheInspectorUiWithoutTheTokenAndKeepsTheDataPathsBehindIt) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    Registry registry;
    registry.use("tally", host_tally());
    HostConfig config;
    config.endpoint = (*engine)->endpoint();
    RunningHost host = registry.start(config);
    // The first request creates the actor: wait for the engine to list the envoy (it has no
    // notification for that), or a loaded machine can have it wait past the request's timeout.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (pool_envoy_count(**engine) < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
    ASSERT_GE(pool_envoy_count(**engine), 1u);
    auto get = [&](const std::string& path) {
        auto r = http_request((*engine)->guard_port(), "GET", gateway_target("tally", "ui", path));
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
        return r.ok() ? std::move(r).value() : HttpResult{};
    };

    // Create the actor with an action first, as every other engine test does: in two of four
    // loaded runs a GET that had to create the actor never reached the host (no "actor started"
    // in 30 s), so the UI requests below go to a running actor.
    auto created = http_request((*engine)->guard_port(), "POST",
                                gateway_target("tally", "ui", "/action/add"), R"({"args":[1]})",
                                {{"content-type", "application/json"}});
    ASSERT_TRUE(created.ok()) << created.error().to_string();
    ASSERT_EQ(created->status, 200u) << created->body;

    auto index = get("/inspector/ui/?theme=dark");
    ASSERT_EQ(index.status, 200u) << index.body;
    EXPECT_EQ(index.header("content-type").value_or(""), "text/html; charset=utf-8");
    EXPECT_EQ(index.header("cache-control").value_or(""), "no-cache");
    EXPECT_TRUE(index.body.starts_with("<!DOCTYPE html>")) << index.body.substr(0, 200);
    // Every script and stylesheet the page loads is served, with its type.
    int assets = 0;
    for (std::size_t at = index.body.find("/assets/"); at != std::string::npos;
         at = index.body.find("/assets/", at + 1)) {
        const auto end = index.body.find('"', at);
        const std::string asset = index.body.substr(at + 1, end - at - 1);
        auto r = get("/inspector/ui/" + asset);
        EXPECT_EQ(r.status, 200u) << asset;
        const std::string type = r.header("content-type").value_or("");
        EXPECT_TRUE(type == "application/javascript; charset=utf-8" ||
                    type == "text/css; charset=utf-8")
            << asset << ": " << type;
        ++assets;
    }
    EXPECT_GT(assets, 0) << index.body;
    EXPECT_EQ(get("/inspector/ui").status, 200u);
    auto css = get("/inspector/tab.css");
    EXPECT_EQ(css.status, 200u);
    EXPECT_EQ(css.header("content-type").value_or(""), "text/css; charset=utf-8");
    EXPECT_NE(css.body.find("--rivet-"), std::string::npos);

    auto missing = get("/inspector/ui/assets/no-such-file.js");
    EXPECT_EQ(missing.status, 404u);
    EXPECT_NE(missing.body.find("\"code\":\"ui_asset_not_found\""), std::string::npos) << missing.body;
    EXPECT_EQ(get("/inspector/state").status, 401u);
    EXPECT_EQ(get("/inspector/summary").status, 401u);

    host.stop();
    EXPECT_EQ(host.wait(), 0);
}

TEST(HostRegistry, AnUnparsableEndpointIsAStructuredError) {
    Registry registry;
    registry.use("tally", host_tally());
    HostConfig config;
    config.endpoint = "not a url";
    try {
        (void)registry.start(config);
        FAIL() << "start() accepted an unparsable endpoint";
    } catch (const ErrorException& e) {
        EXPECT_EQ(e.error().group(), "host");
        EXPECT_EQ(e.error().code(), "invalid_endpoint");
    }
    EXPECT_EQ(registry.run(config), 2);
}

// The engine binary: an explicit one that is not there is an error naming it; with none given
// the lookup ends at the source tree's pinned engine (scripts/deps.sh), and an error lists every
// place it looked and how to get an engine.
TEST(HostRegistry, TheEngineBinaryIsFoundOrTheErrorSaysWhereToGetOne) {
    auto missing = host::find_engine_binary(std::string("/nonexistent/rivet-engine"));
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(missing.error().is("host", "engine_missing"));
    EXPECT_NE(missing.error().message().find("/nonexistent/rivet-engine"), std::string::npos);

    auto found = host::find_engine_binary(std::nullopt);
    ASSERT_TRUE(found.ok()) << found.error().to_string();
    EXPECT_EQ(found->filename(), "rivet-engine");

    host::set_package_engine_binary("/nonexistent/package/libexec/rivetkit/rivet-engine");
    auto fallback = host::find_engine_binary(std::nullopt);
    ASSERT_TRUE(fallback.ok()) << "a missing package engine falls through to the next place";
    host::set_package_engine_binary("");
}

}  // namespace rivetkit::testing

// The envoy against the real Rivet Engine 2.3.19 (pinned binary, fresh data directory per test).

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/actor/envoy_kv.hpp"
#include "engine_harness.hpp"
#include "envoy/state.hpp"
#include "live_envoy.hpp"
#include "recording_callbacks.hpp"
#include "subprocess.hpp"
#include "test_websocket.hpp"
#include "tls_proxy.hpp"

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rivetkit::Bytes;
using rivetkit::to_bytes;
using rivetkit::testing::EngineHarness;
using rivetkit::testing::EngineOptions;
using rivetkit::testing::http_request;
using rivetkit::testing::make_self_signed_cert;
using rivetkit::testing::TestCert;
using rivetkit::testing::TlsProxy;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

const std::string kPool = "cpp-pool";

EnvoyConfig live_config(const EngineHarness& engine) {
    EnvoyConfig c;
    c.endpoint = engine.endpoint();
    c.pool_name = kPool;
    c.prepopulate_actor_names = {{"counter", R"({"kind":"test"})"}};
    c.metadata_json = R"({"impl":"rivetkit-cpp"})";
    return c;
}

std::unique_ptr<EngineHarness> start_engine(EngineOptions options = {}) {
    auto engine = EngineHarness::start(std::move(options));
    if (!engine.ok()) {
        ADD_FAILURE() << engine.error().to_string();
        return nullptr;
    }
    auto pool = (*engine)->create_pool(kPool);
    EXPECT_TRUE(pool.ok()) << (pool.ok() ? "" : pool.error().to_string());
    return std::move(engine).value();
}

std::string body_string(const Bytes& b) {
    return std::string(b.begin(), b.end());
}

// Waits until `envoy` is connected and the engine has committed its registration: only then are
// actors created from the test allocated to it at once (see EngineHarness::wait_envoy_registered).
bool wait_registered(EngineHarness& engine, LiveCallbacks& cb, LiveEnvoy& envoy) {
    if (!cb.wait([](const LiveCallbacks::State& s) { return s.connects >= 1; })) {
        ADD_FAILURE() << "envoy did not connect\n" << engine.log_tail();
        return false;
    }
    auto registered = engine.wait_envoy_registered(envoy.handle().envoy_key());
    EXPECT_TRUE(registered.ok()) << registered.error().to_string();
    return registered.ok();
}

// Creates an actor and waits for its start on `cb`.
std::string create_started_actor(EngineHarness& engine, LiveCallbacks& cb, const std::string& key) {
    auto id = engine.create_actor("counter", key, kPool);
    EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().to_string());
    if (!id.ok())
        return {};
    std::string actor = *id;
    EXPECT_TRUE(cb.wait([&](const LiveCallbacks::State& s) { return s.starts_of(actor) >= 1; }))
        << "actor was not started on this envoy";
    return actor;
}

// Polls the REST view (bounded) until the engine reports `field` set on the actor.
bool wait_actor_field(EngineHarness& engine, const std::string& actor, const char* field,
                      std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        auto listed = engine.api("GET", "/actors?namespace=default&actor_id=" + actor);
        if (!listed.ok())
            return false;
        auto json = nlohmann::json::parse(listed->body, nullptr, false);
        if (!json.is_discarded() && !json["actors"].empty() &&
            !json["actors"][0][field].is_null()) {
            return true;
        }
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

// The engine reports the actor asleep.
bool wait_sleeping(EngineHarness& engine, const std::string& actor,
                   std::chrono::milliseconds timeout = 10s) {
    return wait_actor_field(engine, actor, "sleep_ts", timeout);
}

// The engine has taken the actor's Running event: a sleep intent sent before that is ignored.
bool wait_connectable(EngineHarness& engine, const std::string& actor,
                      std::chrono::milliseconds timeout = 10s) {
    return wait_actor_field(engine, actor, "connectable_ts", timeout);
}

}  // namespace

TEST(EngineIntegration, HandshakeRegistersEnvoyAndActorNames) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(cb->wait([](const auto& s) { return s.connects >= 1; })) << engine->log_tail();
    auto limits =
        envoy.run([h = envoy.handle()]() -> asio::awaitable<std::optional<ProtocolLimits>> {
            co_return h.protocol_limits();
        });
    ASSERT_TRUE(limits && *limits);
    EXPECT_EQ((*limits)->envoy_lost_threshold_ms, 15'000);
    EXPECT_EQ((*limits)->max_response_payload_size, 20u * 1024 * 1024);

    // The engine stores ToRivetMetadata asynchronously after the handshake: poll its REST view.
    rivetkit::Result<rivetkit::testing::HttpResult> envoys =
        engine->api("GET", "/envoys?namespace=default");
    for (int i = 0; i < 100; ++i) {
        envoys = engine->api("GET", "/envoys?namespace=default");
        ASSERT_TRUE(envoys.ok());
        if (envoys->body.find("rivetkit-cpp") != std::string::npos)
            break;
        std::this_thread::sleep_for(50ms);
    }
    auto json = nlohmann::json::parse(envoys->body);
    ASSERT_EQ(json["envoys"].size(), 1u) << envoys->body;
    EXPECT_EQ(json["envoys"][0]["envoy_key"], envoy.handle().envoy_key());
    EXPECT_EQ(json["envoys"][0]["pool_name"], kPool);
    EXPECT_NE(envoys->body.find("rivetkit-cpp"), std::string::npos) << envoys->body;

    auto names = engine->api("GET", "/actors/names?namespace=default");
    ASSERT_TRUE(names.ok());
    EXPECT_NE(names->body.find("\"counter\""), std::string::npos) << names->body;
}

TEST(EngineIntegration, ActorStartsAndServesHttpThroughBothRoutingStyles) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "http-1");
    ASSERT_FALSE(actor.empty());
    auto start = cb->read([&](const auto& s) { return s.starts.at(0); });
    EXPECT_EQ(start.config.name, "counter");
    EXPECT_EQ(start.config.key, "http-1");
    EXPECT_EQ(start.generation, 1u);

    // Path routing: the envoy sees the path after the actor id.
    auto path_routed =
        http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/path/based?y=2");
    ASSERT_TRUE(path_routed.ok()) << path_routed.error().to_string();
    EXPECT_EQ(path_routed->status, 200u) << path_routed->body;
    EXPECT_EQ(path_routed->header("x-path"), "/path/based?y=2");

    // Header routing: the envoy sees the full path including /request.
    auto header_routed =
        http_request(engine->guard_port(), "POST", "/request/hello?x=1", "body-data",
                     {{"x-rivet-target", "actor"}, {"x-rivet-actor", actor}});
    ASSERT_TRUE(header_routed.ok()) << header_routed.error().to_string();
    EXPECT_EQ(header_routed->status, 200u) << header_routed->body;
    EXPECT_EQ(header_routed->header("x-path"), "/request/hello?x=1");
    EXPECT_EQ(header_routed->header("x-method"), "POST");
    EXPECT_EQ(header_routed->body, "body-data");

    // More than 1 MiB each way.
    Bytes upload = pattern_bytes(1536 * 1024);
    auto up = http_request(engine->guard_port(), "POST", "/gateway/" + actor + "/echo",
                           body_string(upload));
    ASSERT_TRUE(up.ok()) << up.error().to_string();
    EXPECT_EQ(up->status, 200u);
    EXPECT_EQ(up->header("x-body-len"), std::to_string(upload.size()));
    EXPECT_TRUE(up->body == body_string(upload)) << "echoed " << up->body.size() << " bytes";
    auto down = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/big/2500000");
    ASSERT_TRUE(down.ok()) << down.error().to_string();
    EXPECT_EQ(down->status, 200u);
    EXPECT_TRUE(down->body == body_string(pattern_bytes(2'500'000))) << "got " << down->body.size();
}

TEST(EngineIntegration, StreamingGatewayCarriesLargeBodiesWithCredit) {
    EngineOptions options;
    options.gateway_v3 = true;
    auto engine = start_engine(options);
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "stream-1");
    ASSERT_FALSE(actor.empty());
    Bytes upload = pattern_bytes(3 * 1000 * 1000);
    auto up = http_request(engine->guard_port(), "POST", "/gateway/" + actor + "/echo",
                           body_string(upload));
    ASSERT_TRUE(up.ok()) << up.error().to_string();
    EXPECT_EQ(up->status, 200u) << up->body.substr(0, 200);
    EXPECT_EQ(up->header("x-body-len"), std::to_string(upload.size()));
    EXPECT_TRUE(up->body == body_string(upload)) << "echoed " << up->body.size() << " bytes";
    auto down = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/big/3145728");
    ASSERT_TRUE(down.ok()) << down.error().to_string();
    EXPECT_EQ(down->status, 200u);
    EXPECT_TRUE(down->body == body_string(pattern_bytes(3'145'728))) << "got " << down->body.size();

    // The same upload read by the handler as a stream: the gateway only sends past its ~1 MiB
    // window as the handler's reads return credit.
    auto streamed = http_request(engine->guard_port(), "POST", "/gateway/" + actor + "/stream/echo",
                                 body_string(upload));
    ASSERT_TRUE(streamed.ok()) << streamed.error().to_string();
    EXPECT_EQ(streamed->status, 200u) << streamed->header("x-error").value_or("");
    EXPECT_EQ(streamed->header("x-body-len"), std::to_string(upload.size()));
    EXPECT_TRUE(streamed->body == body_string(upload)) << "echoed " << streamed->body.size();
    auto pieces = std::stoul(streamed->header("x-pieces").value_or("0"));
    EXPECT_GT(pieces, 1u) << "the body was not streamed";
    std::cerr << "streamed upload arrived in " << pieces << " pieces\n";
}

TEST(EngineIntegration, KvRoundTrips) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "kv-1");
    ASSERT_FALSE(actor.empty());
    EnvoyHandle h = envoy.handle();

    auto put = envoy.run([h, actor]() -> asio::awaitable<rivetkit::Status> {
        std::vector<KvEntry> entries;
        for (std::string k : {"a/1", "a/2", "a/3", "b/1", "c"})
            entries.emplace_back(to_bytes(k), to_bytes("v:" + k));
        co_return co_await h.kv_put(actor, std::move(entries));
    });
    ASSERT_TRUE(put && put->ok()) << (put && !put->ok() ? put->error().to_string() : "");

    auto got = envoy.run(
        [h, actor]() -> asio::awaitable<rivetkit::Result<std::vector<std::optional<Bytes>>>> {
            std::vector<Bytes> keys{to_bytes("c"), to_bytes("missing"), to_bytes("a/2")};
            co_return co_await h.kv_get(actor, std::move(keys));
        });
    ASSERT_TRUE(got && got->ok());
    EXPECT_EQ((*got)->at(0), to_bytes("v:c"));
    EXPECT_EQ((*got)->at(1), std::nullopt);
    EXPECT_EQ((*got)->at(2), to_bytes("v:a/2"));

    auto keys_of = [](const std::vector<KvEntry>& entries) {
        std::vector<std::string> out;
        for (const auto& [k, v] : entries)
            out.emplace_back(k.begin(), k.end());
        return out;
    };
    using List = rivetkit::Result<std::vector<KvEntry>>;
    auto prefix = envoy.run([h, actor]() -> asio::awaitable<List> {
        co_return co_await h.kv_list_prefix(actor, to_bytes("a/"), KvListOptions{});
    });
    ASSERT_TRUE(prefix && prefix->ok());
    EXPECT_EQ(keys_of(**prefix), (std::vector<std::string>{"a/1", "a/2", "a/3"}));
    EXPECT_EQ((*prefix)->at(0).second, to_bytes("v:a/1"));

    auto reversed = envoy.run([h, actor]() -> asio::awaitable<List> {
        co_return co_await h.kv_list_prefix(actor, to_bytes("a/"), KvListOptions{true, 2});
    });
    ASSERT_TRUE(reversed && reversed->ok());
    EXPECT_EQ(keys_of(**reversed), (std::vector<std::string>{"a/3", "a/2"}));

    auto range = envoy.run([h, actor]() -> asio::awaitable<List> {
        co_return co_await h.kv_list_range(actor, to_bytes("a/2"), to_bytes("b/1"), true,
                                           KvListOptions{});
    });
    ASSERT_TRUE(range && range->ok());
    EXPECT_EQ(keys_of(**range), (std::vector<std::string>{"a/2", "a/3"}));

    auto all = envoy.run([h, actor]() -> asio::awaitable<List> {
        co_return co_await h.kv_list_all(actor, KvListOptions{false, 4});
    });
    ASSERT_TRUE(all && all->ok());
    EXPECT_EQ(keys_of(**all), (std::vector<std::string>{"a/1", "a/2", "a/3", "b/1"}));

    auto del = envoy.run([h, actor]() -> asio::awaitable<rivetkit::Status> {
        std::vector<Bytes> keys{to_bytes("c")};
        co_return co_await h.kv_delete(actor, std::move(keys));
    });
    ASSERT_TRUE(del && del->ok());
    auto del_range = envoy.run([h, actor]() -> asio::awaitable<rivetkit::Status> {
        co_return co_await h.kv_delete_range(actor, to_bytes("a/1"), to_bytes("a/3"));
    });
    ASSERT_TRUE(del_range && del_range->ok());
    auto rest = envoy.run([h, actor]() -> asio::awaitable<List> {
        co_return co_await h.kv_list_all(actor, KvListOptions{});
    });
    ASSERT_TRUE(rest && rest->ok());
    EXPECT_EQ(keys_of(**rest), (std::vector<std::string>{"a/3", "b/1"}));

    auto too_big = envoy.run([h, actor]() -> asio::awaitable<rivetkit::Status> {
        std::vector<KvEntry> entries;
        entries.emplace_back(to_bytes("k"), Bytes(200 * 1024, 'x'));
        co_return co_await h.kv_put(actor, std::move(entries));
    });
    ASSERT_TRUE(too_big);
    EXPECT_TRUE(!too_big->ok() && too_big->error().is("kv", "value_too_large"));

    auto engine_error = envoy.run([h]() -> asio::awaitable<rivetkit::Status> {
        std::vector<Bytes> keys{to_bytes("k")};
        co_return co_await h.kv_delete("not-an-actor-id", std::move(keys));
    });
    ASSERT_TRUE(engine_error);
    EXPECT_TRUE(!engine_error->ok() && engine_error->error().is("kv", "engine_error"));
}

TEST(EngineIntegration, SleepAndDestroyStopsAreAcknowledgedAndKvSurvivesSleep) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "sleep-1");
    ASSERT_FALSE(actor.empty());
    EnvoyHandle h = envoy.handle();
    auto put = envoy.run([h, actor]() -> asio::awaitable<rivetkit::Status> {
        std::vector<KvEntry> entries;
        entries.emplace_back(to_bytes("state"), to_bytes("42"));
        co_return co_await h.kv_put(actor, std::move(entries));
    });
    ASSERT_TRUE(put && put->ok());

    // Sleep through the envoy's intent; the engine answers with a SleepIntent stop.
    envoy.run([h, actor]() -> asio::awaitable<bool> {
        h.sleep_actor(actor);
        co_return true;
    });
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.stops_of(actor) >= 1; }));
    EXPECT_EQ(cb->read([](const auto& s) { return s.stops.at(0).reason; }),
              StopReason::sleep_intent);
    // The Stopped event was accepted: the engine marks the actor sleeping.
    EXPECT_TRUE(wait_sleeping(*engine, actor));

    // A request wakes it as generation 2, which still sees its KV.
    auto woke = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/wake");
    ASSERT_TRUE(woke.ok());
    EXPECT_EQ(woke->status, 200u);
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.starts_of(actor) >= 2; }));
    EXPECT_EQ(cb->read([](const auto& s) { return s.starts.back().generation; }), 2u);
    auto got = envoy.run(
        [h, actor]() -> asio::awaitable<rivetkit::Result<std::vector<std::optional<Bytes>>>> {
            std::vector<Bytes> keys{to_bytes("state")};
            co_return co_await h.kv_get(actor, std::move(keys));
        });
    ASSERT_TRUE(got && got->ok());
    EXPECT_EQ((*got)->at(0), to_bytes("42"));

    // Destroy through the REST API.
    auto destroyed = engine->api("DELETE", "/actors/" + actor + "?namespace=default");
    ASSERT_TRUE(destroyed.ok());
    EXPECT_EQ(destroyed->status, 200u) << destroyed->body;
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.stops_of(actor) >= 2; }));
    EXPECT_EQ(cb->read([](const auto& s) { return s.stops.back().reason; }), StopReason::destroy);
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
        auto listed = engine->api("GET", "/actors?namespace=default&actor_id=" + actor);
        ASSERT_TRUE(listed.ok());
        auto json = nlohmann::json::parse(listed->body);
        gone = json["actors"].empty() || !json["actors"][0]["destroy_ts"].is_null();
        if (!gone)
            std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(gone);
    EXPECT_EQ(cb->read([](const auto& s) { return s.disconnects; }), 0);
}

TEST(EngineIntegration, WebSocketEchoesAndSurvivesHibernation) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    cb->hibernate = true;
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "ws-1");
    ASSERT_FALSE(actor.empty());

    auto ws = rivetkit::testing::TestWebSocket::connect(engine->guard_port(),
                                                        "/gateway/" + actor + "/ws", {"rivet"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    ASSERT_TRUE((*ws)->send_text("ping-1").ok());
    auto echo1 = (*ws)->read_text();
    ASSERT_TRUE(echo1.ok()) << echo1.error().to_string();
    EXPECT_EQ(*echo1, "echo:ping-1");

    // Header-style routing through subprotocols reaches the same actor.
    auto ws2 = rivetkit::testing::TestWebSocket::connect(
        engine->guard_port(), "/some/ws", {"rivet", "rivet_target.actor", "rivet_actor." + actor});
    ASSERT_TRUE(ws2.ok()) << ws2.error().to_string();
    ASSERT_TRUE((*ws2)->send_text("other").ok());
    auto echo_other = (*ws2)->read_text();
    ASSERT_TRUE(echo_other.ok());
    EXPECT_EQ(*echo_other, "echo:other");
    (*ws2)->close();

    // Sleep the actor: the socket hibernates at the gateway instead of closing.
    EnvoyHandle h = envoy.handle();
    envoy.run([h, actor]() -> asio::awaitable<bool> {
        h.sleep_actor(actor);
        co_return true;
    });
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.ws_hibernations >= 1; }));
    ASSERT_TRUE(wait_sleeping(*engine, actor));

    // The next client message wakes the actor and is delivered once, in order.
    ASSERT_TRUE((*ws)->send_text("ping-2").ok());
    auto echo2 = (*ws)->read_text();
    ASSERT_TRUE(echo2.ok()) << echo2.error().to_string();
    EXPECT_EQ(*echo2, "echo:ping-2");
    ASSERT_TRUE((*ws)->send_text("ping-3").ok());
    auto echo3 = (*ws)->read_text();
    ASSERT_TRUE(echo3.ok());
    EXPECT_EQ(*echo3, "echo:ping-3");
    EXPECT_EQ(cb->read([&](const auto& s) { return s.starts_of(actor); }), 2u);
    EXPECT_EQ(cb->read([](const auto& s) { return s.ws_restores; }), 1);
    auto received = cb->read([](const auto& s) { return s.ws_received; });
    EXPECT_EQ(received, (std::vector<std::string>{"ping-1", "other", "ping-2", "ping-3"}));
    (*ws)->close();
}

TEST(EngineIntegration, AlarmWakesSleepingActor) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "alarm-1");
    ASSERT_FALSE(actor.empty());
    // Under ASan the sleep intent could otherwise overtake the Running event (failed CI once).
    ASSERT_TRUE(wait_connectable(*engine, actor));
    EnvoyHandle h = envoy.handle();
    auto wake_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count() +
                   2000;
    envoy.run([h, actor, wake_at]() -> asio::awaitable<bool> {
        // As upstream: the alarm goes out before the actor sleeps.
        h.set_alarm(actor, wake_at);
        h.sleep_actor(actor);
        co_return true;
    });
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.stops_of(actor) >= 1; }));
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.starts_of(actor) >= 2; }, 30s))
        << "the alarm did not wake the actor";
    auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    EXPECT_GE(now_ms, wake_at - 50) << "woke before its alarm";
    EXPECT_EQ(cb->read([](const auto& s) { return s.starts.back().generation; }), 2u);
}

TEST(EngineIntegration, EngineRestartReconnectsAndServesWithoutDuplicateStart) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "restart-1");
    ASSERT_FALSE(actor.empty());

    auto restarted = engine->restart();
    ASSERT_TRUE(restarted.ok()) << restarted.error().to_string();
    ASSERT_TRUE(cb->wait([](const auto& s) { return s.connects >= 2; }, 60s)) << "no reconnect\n"
                                                                              << engine->log_tail();

    auto served = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/after-restart");
    ASSERT_TRUE(served.ok()) << served.error().to_string();
    EXPECT_EQ(served->status, 200u) << served->body;
    EXPECT_EQ(served->header("x-path"), "/after-restart");
    EXPECT_EQ(cb->read([&](const auto& s) { return s.starts_of(actor); }), 1u)
        << "the actor was started twice";
    EXPECT_EQ(cb->read([&](const auto& s) { return s.stops_of(actor); }), 0u);
}

TEST(EngineIntegration, KilledEnvoysActorsMoveToTheOtherEnvoy) {
    // The engine's envoy-lost threshold (pegboard.envoy_lost_threshold, default 15 s) decides
    // when a vanished envoy's actors are given up; shortened so the test does not wait it out.
    EngineOptions options;
    options.extra_env = {{"RIVET__PEGBOARD__ENVOY_LOST_THRESHOLD", "3000"}};
    auto engine = start_engine(options);
    ASSERT_TRUE(engine);

    // Envoy A is its own OS process, killed with SIGKILL below: no Stopping, no close frame.
    auto child = rivetkit::testing::ChildProcess::spawn(
        {RIVETKIT_ENVOY_CHILD_BIN, engine->endpoint(), kPool}, {{"RIVET_LOG_LEVEL", "warn"}});
    ASSERT_TRUE(child.ok()) << child.error().to_string();
    ASSERT_TRUE((*child)->wait_for_stdout("connected ", 30s)) << (*child)->err();
    std::string line = (*child)->out().substr((*child)->out().find("connected ") + 10);
    std::string child_key = line.substr(0, line.find('\n'));
    ASSERT_TRUE(engine->wait_envoy_registered(child_key).ok());

    // Alone in the pool, the child gets the actor.
    auto id = engine->create_actor("counter", "failover-1", kPool, "restart");
    ASSERT_TRUE(id.ok()) << id.error().to_string();
    std::string actor = *id;
    ASSERT_TRUE((*child)->wait_for_stdout("started " + actor + " 1", 30s)) << (*child)->out();
    auto before = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/on-child");
    ASSERT_TRUE(before.ok());
    EXPECT_EQ(before->status, 200u);

    // Envoy B, in this process, joins the pool.
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy survivor(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, survivor));
    EXPECT_EQ(cb->read([&](const auto& s) { return s.starts_of(actor); }), 0u);
    auto limits =
        survivor.run([h = survivor.handle()]() -> asio::awaitable<std::optional<ProtocolLimits>> {
            co_return h.protocol_limits();
        });
    ASSERT_TRUE(limits && *limits);
    EXPECT_EQ((*limits)->envoy_lost_threshold_ms, 3000) << "the engine ignored the threshold";

    (*child)->signal(SIGKILL);
    EXPECT_EQ((*child)->wait(10s), std::optional<int>(-1));
    auto killed_at = std::chrono::steady_clock::now();

    // Engine 2.3.19: once the envoy-lost threshold passed the actor is marked lost and put to
    // sleep (whatever its crash policy); the next request wakes it on the envoy that is left.
    ASSERT_TRUE(wait_sleeping(*engine, actor, 60s)) << "actor never marked lost";
    auto served = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/moved");
    ASSERT_TRUE(served.ok()) << served.error().to_string();
    EXPECT_EQ(served->status, 200u) << served->body;
    EXPECT_EQ(served->header("x-path"), "/moved");
    ASSERT_TRUE(cb->wait([&](const auto& s) { return s.starts_of(actor) >= 1; }, 30s))
        << "actor not started on the surviving envoy";
    EXPECT_EQ(cb->read([](const auto& s) { return s.starts.back().generation; }), 2u);
    EXPECT_EQ(cb->read([&](const auto& s) { return s.starts_of(actor); }), 1u);
    std::cerr << "failover after kill took "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - killed_at)
                     .count()
              << " ms\n";
    // The survivor stayed connected the whole time: no ping timeout under normal load.
    EXPECT_EQ(cb->read([](const auto& s) { return s.disconnects; }), 0);
}

namespace {

// A fresh temporary directory removed at scope exit.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string tmpl =
            (std::filesystem::temp_directory_path() / "rivetkit-tls-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) != nullptr)
            path = tmpl;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

}  // namespace

TEST(EngineIntegration, WssThroughTlsProxyStartsActorAndServesRequests) {
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cert = make_self_signed_cert("localhost", {"localhost"}, {"127.0.0.1"});
    ASSERT_TRUE(cert.ok()) << cert.error().to_string();
    TempDir dir;
    ASSERT_TRUE(cert->write_cert(dir.path / "ca.pem").ok());
    auto proxy = TlsProxy::start(engine->guard_port(), *cert);
    ASSERT_TRUE(proxy.ok()) << proxy.error().to_string();

    EnvoyConfig config = live_config(*engine);
    config.endpoint = "wss://localhost:" + std::to_string((*proxy)->port());
    config.tls.ca_file = (dir.path / "ca.pem").string();
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(config, cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy))
        << (cb->read([](const auto& s) { return s.connect_errors.empty(); })
                ? std::string()
                : cb->read([](const auto& s) { return s.connect_errors.back().to_string(); }));
    // SNI carried the host name; the envoy's connection went through the proxy.
    auto names = (*proxy)->server_names();
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names.front(), "localhost");

    std::string actor = create_started_actor(*engine, *cb, "tls-1");
    ASSERT_FALSE(actor.empty());
    auto served =
        http_request(engine->guard_port(), "POST", "/gateway/" + actor + "/over-tls", "tls-body");
    ASSERT_TRUE(served.ok()) << served.error().to_string();
    EXPECT_EQ(served->status, 200u) << served->body;
    EXPECT_EQ(served->header("x-path"), "/over-tls");
    EXPECT_EQ(served->body, "tls-body");
    auto big = http_request(engine->guard_port(), "GET", "/gateway/" + actor + "/big/1500000");
    ASSERT_TRUE(big.ok()) << big.error().to_string();
    EXPECT_TRUE(big->body == body_string(pattern_bytes(1'500'000))) << "got " << big->body.size();

    auto ws = rivetkit::testing::TestWebSocket::connect(engine->guard_port(),
                                                        "/gateway/" + actor + "/ws", {"rivet"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    ASSERT_TRUE((*ws)->send_text("over-tls").ok());
    auto echo = (*ws)->read_text();
    ASSERT_TRUE(echo.ok()) << echo.error().to_string();
    EXPECT_EQ(*echo, "echo:over-tls");
    (*ws)->close();
    EXPECT_EQ(cb->read([](const auto& s) { return s.disconnects; }), 0);
    EXPECT_TRUE(cb->read([](const auto& s) { return s.connect_errors.empty(); }));
}

// Verification failures need no engine: the proxy's upstream is never reached.
TEST(EnvoyTls, UntrustedOrMismatchedCertificateFailsVerificationWithAClearError) {
    auto cert = make_self_signed_cert("localhost", {"localhost"}, {});
    ASSERT_TRUE(cert.ok()) << cert.error().to_string();
    auto other = make_self_signed_cert("localhost", {"localhost"}, {});
    ASSERT_TRUE(other.ok());
    TempDir dir;
    ASSERT_TRUE(cert->write_cert(dir.path / "right.pem").ok());
    ASSERT_TRUE(other->write_cert(dir.path / "other.pem").ok());
    auto proxy = TlsProxy::start(rivetkit::testing::free_loopback_port(), *cert);
    ASSERT_TRUE(proxy.ok()) << proxy.error().to_string();
    const std::string port = std::to_string((*proxy)->port());

    auto first_error = [](EnvoyConfig config) -> std::optional<rivetkit::Error> {
        config.pool_name = kPool;
        auto cb = std::make_shared<LiveCallbacks>();
        LiveEnvoy envoy(std::move(config), cb);
        if (!cb->wait([](const auto& s) { return !s.connect_errors.empty(); }, 20s))
            return std::nullopt;
        EXPECT_EQ(cb->read([](const auto& s) { return s.connects; }), 0);
        return cb->read([](const auto& s) { return s.connect_errors.front(); });
    };

    // The system's CA paths do not trust a self-signed certificate.
    EnvoyConfig system_ca;
    system_ca.endpoint = "wss://localhost:" + port;
    auto untrusted = first_error(system_ca);
    ASSERT_TRUE(untrusted);
    EXPECT_TRUE(untrusted->is("envoy", "tls_verify_failed")) << untrusted->to_string();
    EXPECT_NE(untrusted->message().find("self-signed certificate"), std::string::npos)
        << untrusted->message();

    // A CA file holding a different certificate does not either.
    EnvoyConfig wrong_ca = system_ca;
    wrong_ca.tls.ca_file = (dir.path / "other.pem").string();
    auto wrong = first_error(wrong_ca);
    ASSERT_TRUE(wrong);
    EXPECT_TRUE(wrong->is("envoy", "tls_verify_failed")) << wrong->to_string();

    // The right CA but a host the certificate does not name.
    EnvoyConfig mismatch;
    mismatch.endpoint = "wss://127.0.0.1:" + port;
    mismatch.tls.ca_file = (dir.path / "right.pem").string();
    auto mismatched = first_error(mismatch);
    ASSERT_TRUE(mismatched);
    EXPECT_TRUE(mismatched->is("envoy", "tls_verify_failed")) << mismatched->to_string();
    EXPECT_NE(mismatched->message().find("mismatch"), std::string::npos) << mismatched->message();

    // An unreadable CA file is a configuration error, reported on every attempt.
    EnvoyConfig missing_ca = system_ca;
    missing_ca.tls.ca_file = (dir.path / "missing.pem").string();
    auto missing = first_error(missing_ca);
    ASSERT_TRUE(missing);
    EXPECT_TRUE(missing->is("envoy", "tls_config")) << missing->to_string();

    // Verification off: the TLS handshake succeeds; the failure is the dead upstream's instead.
    EnvoyConfig insecure = system_ca;
    insecure.tls.insecure_skip_verify = true;
    auto unverified = first_error(insecure);
    ASSERT_TRUE(unverified);
    EXPECT_TRUE(unverified->is("envoy", "connect_failed")) << unverified->to_string();
    EXPECT_GE((*proxy)->server_names().size(), 1u);
}

namespace {

std::string key_name(const char* prefix, int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%03d", prefix, i);
    return buf;
}

std::vector<std::string> key_names(const std::vector<rivetkit::core::KvEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries)
        out.emplace_back(k.begin(), k.end());
    return out;
}

}  // namespace

// The production KV backend (core::EnvoyKv behind core::Kv) against the engine: batches beyond the
// engine's per-request limits are split, and oversize keys/values fail before anything is sent.
TEST(EngineIntegration, EnvoyKvBackendRoundTripsAndSplitsBatches) {
    using rivetkit::Status;
    using rivetkit::core::Kv;
    using rivetkit::core::KvEntry;
    using rivetkit::core::ListOpts;
    using List = rivetkit::Result<std::vector<KvEntry>>;
    using Values = rivetkit::Result<std::vector<std::optional<Bytes>>>;
    auto engine = start_engine();
    ASSERT_TRUE(engine);
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(live_config(*engine), cb);
    ASSERT_TRUE(wait_registered(*engine, *cb, envoy));
    std::string actor = create_started_actor(*engine, *cb, "envoy-kv-1");
    ASSERT_FALSE(actor.empty());
    EnvoyHandle h = envoy.handle();
    Kv kv(std::make_shared<rivetkit::core::EnvoyKv>(h, actor), actor);
    auto requests_sent = [&] {
        return *envoy.run(
            [h]() -> asio::awaitable<std::uint32_t> { co_return h.state().next_kv_request_id; });
    };
    auto list_prefix = [&](std::string prefix, ListOpts opts) {
        return *envoy.run([kv, prefix, opts]() -> asio::awaitable<List> {
            auto op = kv.list_prefix(to_bytes(prefix), opts);
            co_return co_await std::move(op);
        });
    };
    auto list_range = [&](std::string start, std::string end, ListOpts opts) {
        return *envoy.run([kv, start, end, opts]() -> asio::awaitable<List> {
            auto op = kv.list_range(to_bytes(start), to_bytes(end), opts);
            co_return co_await std::move(op);
        });
    };
    auto put_all = [&](std::vector<KvEntry> entries) {
        return *envoy.run([kv, entries]() -> asio::awaitable<Status> {
            auto op = kv.batch_put(entries);
            co_return co_await std::move(op);
        });
    };

    // 300 small entries (more keys than one request may carry) and 12 × 100 KiB (more bytes).
    std::vector<KvEntry> small;
    for (int i = 0; i < 300; ++i)
        small.emplace_back(to_bytes(key_name("p/", i)), to_bytes("v:" + key_name("", i)));
    auto before = requests_sent();
    Status put_small = put_all(small);
    ASSERT_TRUE(put_small.ok()) << put_small.error().to_string();
    EXPECT_EQ(requests_sent() - before, 3u) << "300 keys go out as 128 + 128 + 44";
    std::vector<KvEntry> big;
    for (int i = 0; i < 12; ++i)
        big.emplace_back(to_bytes(key_name("big/", i)), pattern_bytes(100 * 1024 + i));
    Status put_big = put_all(big);
    ASSERT_TRUE(put_big.ok()) << put_big.error().to_string();
    // Exactly at the limits: the engine agrees with the local checks.
    static constexpr std::size_t kLongestKey =
        rivetkit::envoy::kKvMaxKeySize - rivetkit::envoy::kKvKeyEncodingOverhead;
    Status at_limit =
        put_all({{Bytes(kLongestKey, 'k'), Bytes(rivetkit::envoy::kKvMaxValueSize, 'v')}});
    EXPECT_TRUE(at_limit.ok()) << at_limit.error().to_string();

    // Get: request order kept across chunks, missing keys nullopt.
    auto got = *envoy.run([kv]() -> asio::awaitable<Values> {
        std::vector<Bytes> keys;
        for (int i = 299; i >= 0; --i)
            keys.push_back(to_bytes(key_name("p/", i)));
        keys.push_back(to_bytes("missing"));
        keys.push_back(to_bytes(key_name("big/", 7)));
        auto op = kv.batch_get(std::move(keys));
        co_return co_await std::move(op);
    });
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    ASSERT_EQ(got->size(), 302u);
    EXPECT_EQ(got->at(0), to_bytes("v:299"));
    EXPECT_EQ(got->at(150), to_bytes("v:149"));
    EXPECT_EQ(got->at(299), to_bytes("v:000"));
    EXPECT_EQ(got->at(300), std::nullopt);
    EXPECT_EQ(got->at(301), pattern_bytes(100 * 1024 + 7));
    auto one = *envoy.run([kv]() -> asio::awaitable<rivetkit::Result<std::optional<Bytes>>> {
        auto op = kv.get(to_bytes("p/042"));
        co_return co_await std::move(op);
    });
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(*one, to_bytes("v:042"));

    // List: prefix, reverse, limit; range [start, end).
    auto all_p = list_prefix("p/", {});
    ASSERT_TRUE(all_p.ok()) << all_p.error().to_string();
    ASSERT_EQ(all_p->size(), 300u);
    EXPECT_EQ(key_names(*all_p).front(), "p/000");
    EXPECT_EQ(key_names(*all_p).back(), "p/299");
    EXPECT_EQ(all_p->at(7).second, to_bytes("v:007"));
    auto last3 = list_prefix("p/", {true, 3});
    ASSERT_TRUE(last3.ok());
    EXPECT_EQ(key_names(*last3), (std::vector<std::string>{"p/299", "p/298", "p/297"}));
    auto first2 = list_prefix("p/", {false, 2});
    ASSERT_TRUE(first2.ok());
    EXPECT_EQ(key_names(*first2), (std::vector<std::string>{"p/000", "p/001"}));
    auto bigs = list_prefix("big/", {});
    ASSERT_TRUE(bigs.ok());
    EXPECT_EQ(bigs->size(), 12u);
    auto range = list_range("p/010", "p/020", {});
    ASSERT_TRUE(range.ok());
    ASSERT_EQ(range->size(), 10u);
    EXPECT_EQ(key_names(*range).front(), "p/010");
    EXPECT_EQ(key_names(*range).back(), "p/019");
    auto range_rev = list_range("p/010", "p/020", {true, 2});
    ASSERT_TRUE(range_rev.ok());
    EXPECT_EQ(key_names(*range_rev), (std::vector<std::string>{"p/019", "p/018"}));

    // Delete one, 200 (two requests), a range; then deletes + puts in one apply_batch.
    auto deleted = *envoy.run([kv]() -> asio::awaitable<Status> {
        auto one_op = kv.del(to_bytes("p/000"));
        Status s = co_await std::move(one_op);
        if (!s.ok())
            co_return s;
        std::vector<Bytes> keys;
        for (int i = 1; i <= 200; ++i)
            keys.push_back(to_bytes(key_name("p/", i)));
        auto many = kv.batch_delete(std::move(keys));
        s = co_await std::move(many);
        if (!s.ok())
            co_return s;
        auto range_op = kv.delete_range(to_bytes("p/250"), to_bytes("p/299"));
        co_return co_await std::move(range_op);
    });
    ASSERT_TRUE(deleted.ok()) << deleted.error().to_string();
    auto left = list_prefix("p/", {});
    ASSERT_TRUE(left.ok());
    ASSERT_EQ(left->size(), 50u);  // p/201..p/249 and p/299 (the range end is exclusive)
    EXPECT_EQ(key_names(*left).front(), "p/201");
    EXPECT_EQ(key_names(*left).back(), "p/299");
    auto applied = *envoy.run([kv]() -> asio::awaitable<Status> {
        std::vector<KvEntry> puts{{to_bytes("p/201"), to_bytes("new")},
                                  {to_bytes("q/1"), to_bytes("x")}};
        std::vector<Bytes> deletes{to_bytes("p/201"), to_bytes("p/202")};
        auto op = kv.apply_batch(std::move(puts), std::move(deletes));
        co_return co_await std::move(op);
    });
    ASSERT_TRUE(applied.ok()) << applied.error().to_string();
    auto after_apply = *envoy.run([kv]() -> asio::awaitable<Values> {
        std::vector<Bytes> keys{to_bytes("p/201"), to_bytes("p/202"), to_bytes("q/1")};
        auto op = kv.batch_get(std::move(keys));
        co_return co_await std::move(op);
    });
    ASSERT_TRUE(after_apply.ok());
    EXPECT_EQ(after_apply->at(0), to_bytes("new"));
    EXPECT_EQ(after_apply->at(1), std::nullopt);
    EXPECT_EQ(after_apply->at(2), to_bytes("x"));

    // Oversize keys and values fail locally: no request leaves, not even the valid chunks before
    // the bad entry.
    before = requests_sent();
    std::vector<KvEntry> late_bad;
    for (int i = 0; i < 150; ++i)
        late_bad.emplace_back(to_bytes(key_name("ok/", i)), to_bytes("v"));
    late_bad[140].second = Bytes(rivetkit::envoy::kKvMaxValueSize + 1, 'v');
    Status value_too_large = put_all(late_bad);
    EXPECT_TRUE(!value_too_large.ok() && value_too_large.error().is("kv", "value_too_large"))
        << (value_too_large.ok() ? "ok" : value_too_large.error().to_string());
    Status key_too_large =
        put_all({{to_bytes("fine"), to_bytes("v")}, {Bytes(kLongestKey + 1, 'k'), to_bytes("v")}});
    EXPECT_TRUE(!key_too_large.ok() && key_too_large.error().is("kv", "key_too_large"));
    auto oversize_reads = *envoy.run([kv]() -> asio::awaitable<std::vector<Status>> {
        const Bytes huge(kLongestKey + 1, 'k');
        std::vector<Status> out;
        auto get_op = kv.get(huge);
        auto get_result = co_await std::move(get_op);
        out.push_back(get_result.ok() ? Status{} : Status(get_result.error()));
        auto list_op = kv.list_prefix(huge);
        auto list_result = co_await std::move(list_op);
        out.push_back(list_result.ok() ? Status{} : Status(list_result.error()));
        auto range_op = kv.list_range(to_bytes("a"), huge);
        auto range_result = co_await std::move(range_op);
        out.push_back(range_result.ok() ? Status{} : Status(range_result.error()));
        auto del_op = kv.batch_delete({to_bytes("p/299"), huge});
        out.push_back(co_await std::move(del_op));
        auto del_range_op = kv.delete_range(huge, to_bytes("z"));
        out.push_back(co_await std::move(del_range_op));
        auto apply_op = kv.apply_batch({{to_bytes("q/2"), to_bytes("v")}}, {huge});
        out.push_back(co_await std::move(apply_op));
        co_return out;
    });
    ASSERT_EQ(oversize_reads.size(), 6u);
    for (const auto& s : oversize_reads) {
        EXPECT_TRUE(!s.ok() && s.error().is("kv", "key_too_large"))
            << (s.ok() ? "ok" : s.error().to_string());
    }
    EXPECT_EQ(requests_sent(), before) << "a refused operation sent a request";
    auto untouched = list_prefix("ok/", {});
    ASSERT_TRUE(untouched.ok());
    EXPECT_TRUE(untouched->empty()) << untouched->size() << " entries of the refused batch written";
    auto still = *envoy.run([kv]() -> asio::awaitable<Values> {
        std::vector<Bytes> keys{to_bytes("fine"), to_bytes("p/299"), to_bytes("q/2")};
        auto op = kv.batch_get(std::move(keys));
        co_return co_await std::move(op);
    });
    ASSERT_TRUE(still.ok());
    EXPECT_EQ(still->at(0), std::nullopt);
    EXPECT_EQ(still->at(1), to_bytes("v:299"));
    EXPECT_EQ(still->at(2), std::nullopt);
}

// Envoy protocol behaviour on virtual time against the in-memory FakeEngine.

#include "envoy/envoy.hpp"

#include <gtest/gtest.h>

#include <set>

#include <boost/asio/this_coro.hpp>

#include "base/log.hpp"
#include "envoy/backoff.hpp"
#include "envoy/protocol.hpp"
#include "fake_engine.hpp"
#include "recording_callbacks.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;
using rivetkit::Bytes;
using rivetkit::Error;
using rivetkit::to_bytes;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

constexpr auto kWait = std::chrono::milliseconds(60'000);
const std::string kActor = "5z92qtpj4s7foepnsr65183n50dl00";

EnvoyConfig test_config() {
    EnvoyConfig c;
    c.endpoint = "http://127.0.0.1:7420";
    c.pool_name = "cpp-pool";
    c.envoy_key = "test-envoy-key";
    c.prepopulate_actor_names = {{"counter", "{}"}};
    c.metadata_json = R"({"impl":"cpp"})";
    return c;
}

struct Env {
    rt::TestRuntime rt;
    std::shared_ptr<FakeEngine> engine = std::make_shared<FakeEngine>();
    std::shared_ptr<RecordingCallbacks> cb = std::make_shared<RecordingCallbacks>();
    EnvoyConfig config = test_config();
    rt::Clock& clock() { return rt.clock(); }
};

// Starts the envoy, accepts its connection, consumes the metadata and sends Init.
asio::awaitable<std::pair<EnvoyHandle, std::shared_ptr<FakeConnection>>> connect(Env& env) {
    auto ex = co_await asio::this_coro::executor;
    EnvoyHandle handle = start_envoy(ex, env.clock(), env.config, env.cb, env.engine);
    auto conn = co_await env.engine->accept(env.clock(), kWait);
    EXPECT_TRUE(conn);
    auto meta = co_await conn->next_of<proto::ToRivetMetadata>(env.clock(), kWait);
    EXPECT_TRUE(meta);
    conn->push(init_message());
    std::shared_ptr<rt::Notify> changed = env.cb->changed;
    RecordingCallbacks* cb = env.cb.get();
    EXPECT_TRUE(
        co_await wait_until(env.clock(), *changed, kWait, [cb] { return cb->connects >= 1; }));
    co_return std::make_pair(handle, conn);
}

asio::awaitable<void> finish(Env& env, EnvoyHandle handle) {
    handle.shutdown(true);
    co_await handle.wait_stopped();
    (void)env;
}

std::optional<proto::ActorStateStopped> stopped_in(const proto::ToRivetEvents& events) {
    for (const auto& e : events.value) {
        if (auto* u = e.inner.get_if<proto::EventActorStateUpdate>()) {
            if (auto* s = u->state.get_if<proto::ActorStateStopped>())
                return *s;
        }
    }
    return std::nullopt;
}

bool is_running(const proto::EventWrapper& e) {
    auto* u = e.inner.get_if<proto::EventActorStateUpdate>();
    return u != nullptr && u->state.is<proto::ActorStateRunning>();
}

proto::ToEnvoy tunnel(TunnelId id, std::uint16_t index, proto::ToEnvoyTunnelMessageKind kind) {
    return proto::ToEnvoy{proto::ToEnvoyTunnelMessage{
        proto::MessageId{id.gateway_id, id.request_id, index}, std::move(kind)}};
}

// Starts kActor generation `gen` and consumes its ack and Running event.
asio::awaitable<void> start_actor(Env& env, FakeConnection& conn, std::uint32_t gen,
                                  std::vector<TunnelId> hibernating = {}) {
    auto cmd = start_command(kActor, gen, 1);
    for (const auto& id : hibernating) {
        cmd.get_if<proto::ToEnvoyCommands>()
            ->value[0]
            .inner.get_if<proto::CommandStartActor>()
            ->hibernating_requests.push_back(
                proto::HibernatingRequest{id.gateway_id, id.request_id});
    }
    conn.push(cmd);
    auto events = co_await conn.next_of<proto::ToRivetEvents>(env.clock(), kWait);
    EXPECT_TRUE(events && is_running(events->value.at(0)));
}

const TunnelId kRequest{{1, 2, 3, 4}, {5, 6, 7, 8}};

// Opens a WebSocket (kRequest, "/ws") on the running actor; the envoy's open, if it answered.
asio::awaitable<std::optional<proto::ToRivetWebSocketOpen>> open_socket(Env& env,
                                                                        FakeConnection& conn) {
    proto::ToEnvoyWebSocketOpen open{kActor, std::nullopt, "/ws", {}};
    conn.push(tunnel(kRequest, 0, proto::ToEnvoyTunnelMessageKind{open}));
    auto opened = co_await conn.next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
    auto* o = opened ? opened->message_kind.get_if<proto::ToRivetWebSocketOpen>() : nullptr;
    co_return o != nullptr ? std::optional(*o) : std::nullopt;
}

// A client's text message on kRequest.
proto::ToEnvoy client_message(std::uint16_t index, std::string text) {
    return tunnel(
        kRequest, index,
        proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyWebSocketMessage{to_bytes(text), false}});
}

// What the write of the alarm RecordingCallbacks set during the start resolved to; nullopt if it
// did not resolve in time or its sender was dropped.
asio::awaitable<std::optional<rivetkit::Status>> alarm_set_during_start(Env& env) {
    // A raw pointer: GCC 12 destroys a lambda's captured shared_ptr twice when the lambda is a
    // temporary of a co_await expression.
    auto* acks = env.cb->alarm_acks.get();
    auto waiting = wait_until(env.clock(), *env.cb->changed, kWait,
                              [acks] { return !acks->empty(); });
    if (!co_await std::move(waiting))
        co_return std::nullopt;
    co_return acks->at(0);
}

}  // namespace

TEST(EnvoyProtocol, ConnectTargetAndCloseReasons) {
    auto c = test_config();
    c.token = "secret";
    auto t = build_connect_target(c, "key-1");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->host, "127.0.0.1");
    EXPECT_EQ(t->port, "7420");
    EXPECT_EQ(t->target,
              "/envoys/connect?protocol_version=8&namespace=default&envoy_key=key-1&version=1"
              "&pool_name=cpp-pool");
    EXPECT_EQ(t->subprotocols, (std::vector<std::string>{"rivet", "rivet_token.secret"}));
    EXPECT_FALSE(t->tls);
    // TLS schemes: default port 443, a base path is kept.
    c.endpoint = "https://api.example.com";
    auto https = build_connect_target(c, "key-1");
    ASSERT_TRUE(https.ok());
    EXPECT_TRUE(https->tls);
    EXPECT_EQ(https->host, "api.example.com");
    EXPECT_EQ(https->port, "443");
    c.endpoint = "wss://engine.internal:8443/base/";
    auto wss = build_connect_target(c, "key-1");
    ASSERT_TRUE(wss.ok());
    EXPECT_TRUE(wss->tls);
    EXPECT_EQ(wss->port, "8443");
    EXPECT_EQ(wss->target.rfind("/base/envoys/connect?", 0), 0u) << wss->target;
    auto r = parse_close_reason("ws.eviction#abc");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->group, "ws");
    EXPECT_EQ(r->code, "eviction");
    EXPECT_EQ(r->ray_id, "abc");
    EXPECT_TRUE(is_eviction(r));
    EXPECT_FALSE(parse_close_reason("nodot"));
    EXPECT_FALSE(is_eviction(parse_close_reason("ws.closed")));
}

TEST(EnvoyProtocol, BackoffDoublesCapsAndJitters) {
    EXPECT_EQ(backoff_delay(0, 0.0), 1000ms);
    EXPECT_EQ(backoff_delay(1, 0.0), 2000ms);
    EXPECT_EQ(backoff_delay(4, 0.0), 16000ms);
    EXPECT_EQ(backoff_delay(5, 0.0), 30000ms);
    EXPECT_EQ(backoff_delay(100, 0.0), 30000ms);
    EXPECT_EQ(backoff_delay(0, 0.999), 1249ms);
    EXPECT_TRUE(index_after(1, 0));
    EXPECT_TRUE(index_after(0, 65535));
    EXPECT_FALSE(index_after(5, 5));
    EXPECT_FALSE(index_after(4, 5));
}

TEST(EnvoyConnection, SendsMetadataFirstAndAnswersPings) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        EnvoyHandle handle = start_envoy(ex, env.clock(), env.config, env.cb, env.engine);
        auto conn = co_await env.engine->accept(env.clock(), kWait);
        EXPECT_NE(conn->target.target.find("envoy_key=test-envoy-key"), std::string::npos);
        EXPECT_EQ(conn->target.subprotocols, std::vector<std::string>{"rivet"});
        auto first = co_await conn->next(env.clock(), kWait);
        auto* meta = first ? first->get_if<proto::ToRivetMetadata>() : nullptr;
        EXPECT_TRUE(meta);
        if (meta) {
            EXPECT_EQ(meta->prepopulate_actor_names->at(0).first, "counter");
            EXPECT_EQ(meta->metadata, R"({"impl":"cpp"})");
        }
        EXPECT_FALSE(handle.is_connected());
        conn->push(init_message(12'000));
        conn->push(proto::ToEnvoy{proto::ToEnvoyPing{1234}});
        auto pong = co_await conn->next_of<proto::ToRivetPong>(env.clock(), kWait);
        EXPECT_TRUE(pong && pong->ts == 1234);
        EXPECT_TRUE(handle.is_connected());
        EXPECT_EQ(handle.protocol_limits()->envoy_lost_threshold_ms, 12'000);
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyConnection, UndecodableFrameIsLoggedAndIgnored) {
    Env e;
    rivetkit::log::Capture capture;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->push_raw(Bytes{0xff, 0x01, 0x02});
        conn->push_raw(Bytes{0x05});  // a ping cut short
        conn->push(proto::ToEnvoy{proto::ToEnvoyPing{7}});
        auto pong = co_await conn->next_of<proto::ToRivetPong>(env.clock(), kWait);
        EXPECT_TRUE(pong && pong->ts == 7) << "the connection survives bad frames";
        EXPECT_EQ(env.engine->connection_count(), 1u);
        co_await finish(env, handle);
    }(e));
    auto records = capture.find("undecodable frame from engine ignored");
    ASSERT_EQ(records.size(), 2u);
    EXPECT_TRUE(records[0].field("error").has_value());
    EXPECT_EQ(records[0].field("head"), "ff0102");
}

TEST(EnvoyConnection, EvictionStopsWithoutReconnect) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->close_from_engine(1000, "ws.eviction#ray1");
        co_await handle.wait_stopped();
        auto again = co_await env.engine->accept(env.clock(), 120'000ms);
        EXPECT_FALSE(again) << "no reconnect after eviction";
        EXPECT_EQ(env.cb->shutdowns, 1);
    }(e));
}

TEST(EnvoyConnection, ReconnectsWithBackoffAndReplaysUnackedEvents) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        auto t0 = env.clock().now();
        conn->close_from_engine(1011, "ws.going_away#r");
        auto conn2 = co_await env.engine->accept(env.clock(), kWait);
        EXPECT_TRUE(conn2);
        auto waited = env.clock().now() - t0;
        EXPECT_GE(waited, 1000ms);
        EXPECT_LE(waited, 1250ms);
        conn2->push(init_message());
        auto replay = co_await conn2->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(replay && replay->value.size() == 1 && is_running(replay->value[0]) &&
                    replay->value[0].checkpoint.index == 0);
        // The engine replays the unacked start: acked again, not started twice.
        conn2->push(start_command(kActor, 1, 1));
        auto ack = co_await conn2->next_of<proto::ToRivetAckCommands>(env.clock(), kWait);
        EXPECT_TRUE(ack && ack->last_command_checkpoints.at(0).index == 1);
        EXPECT_EQ(env.cb->starts.size(), 1u);
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyConnection, SilentEngineIsDroppedAfterLivenessTimeout) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        auto t0 = env.clock().now();
        auto conn2 = co_await env.engine->accept(env.clock(), kWait);
        EXPECT_TRUE(conn2);
        EXPECT_GE(env.clock().now() - t0, env.config.liveness_timeout);
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyCommands, StartStopAckedWithIndexedEvents) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->push(start_command(kActor, 1, 1));
        auto ack = co_await conn->next_of<proto::ToRivetAckCommands>(env.clock(), kWait);
        EXPECT_TRUE(ack &&
                    ack->last_command_checkpoints.at(0) == (proto::ActorCheckpoint{kActor, 1, 1}));
        auto running = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(running && is_running(running->value.at(0)) &&
                    running->value[0].checkpoint.index == 0);
        EXPECT_EQ(env.cb->starts.at(0).config.name, "counter");
        EXPECT_EQ(env.cb->starts.at(0).config.key, "k1");
        EXPECT_EQ(env.cb->starts.at(0).config.input, to_bytes("input"));
        EXPECT_EQ(handle.active_actor_count(), 1u);

        handle.set_alarm(kActor, 1'700'000'060'000);
        auto alarm = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(alarm && alarm->value.at(0).checkpoint.index == 1 &&
                    alarm->value[0].inner.is<proto::EventActorSetAlarm>());

        conn->push(stop_command(kActor, 1, 2, proto::StopActorReason::SleepIntent));
        auto stopped = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(stopped && stopped->value.at(0).checkpoint.index == 2);
        auto s = stopped ? stopped_in(*stopped) : std::nullopt;
        EXPECT_TRUE(s && s->code == proto::StopCode::Ok);
        EXPECT_EQ(env.cb->stops.at(0).reason, StopReason::sleep_intent);
        EXPECT_EQ(handle.active_actor_count(), 0u);
        co_await finish(env, handle);
    }(e));
}

// The engine ignores the intents of an actor that is not running yet; one asked for during the
// start (a run handler sleeping its actor at once) goes out right after Running, not lost.
TEST(EnvoyCommands, AnIntentAskedForDuringTheStartFollowsRunning) {
    for (const char* intent : {"sleep", "destroy"}) {
        SCOPED_TRACE(intent);
        Env e;
        e.cb->intent_during_start = intent;
        e.rt.block_on([](Env& env, std::string want) -> asio::awaitable<void> {
            auto [handle, conn] = co_await connect(env);
            conn->push(start_command(kActor, 1, 1));
            std::vector<proto::EventWrapper> events;
            while (events.size() < 2) {
                auto batch = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
                if (!batch)
                    break;
                for (auto& ev : batch->value)
                    events.push_back(std::move(ev));
            }
            EXPECT_EQ(events.size(), 2u);
            auto* sent =
                events.size() == 2 ? events[1].inner.get_if<proto::EventActorIntent>() : nullptr;
            EXPECT_TRUE(events.size() == 2 && is_running(events[0]));
            EXPECT_NE(sent, nullptr);
            if (sent == nullptr)
                ;
            else if (want == "sleep")
                EXPECT_TRUE(std::holds_alternative<proto::ActorIntentSleep>(sent->intent.value));
            else
                EXPECT_TRUE(std::holds_alternative<proto::ActorIntentStop>(sent->intent.value));
            co_await finish(env, handle);
        }(e, intent));
    }
}

// The core syncs its alarm during the start. Upstream's envoy sends that alarm right after
// Running; this one sends both in one message, and the engine makes one workflow signal of it
// instead of two. The alarm's write resolves once it is on its way, not before.
TEST(EnvoyCommands, AnAlarmSetDuringTheStartGoesOutWithRunningInOneMessage) {
    Env e;
    e.cb->alarm_during_start = 1'700'000'060'000;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->push(start_command(kActor, 1, 1));
        auto batch = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(batch);
        if (batch) {
            EXPECT_EQ(batch->value.size(), 2u);
            EXPECT_TRUE(is_running(batch->value.at(0)));
            EXPECT_EQ(batch->value.at(0).checkpoint.index, 0);
            auto* alarm = batch->value.size() > 1
                              ? batch->value[1].inner.get_if<proto::EventActorSetAlarm>()
                              : nullptr;
            EXPECT_TRUE(alarm && alarm->alarm_ts == 1'700'000'060'000);
            EXPECT_EQ(batch->value.size() > 1 ? batch->value[1].checkpoint.index : -1, 1);
        }
        EXPECT_FALSE(env.cb->alarm_acked_during_start);
        auto ack = co_await alarm_set_during_start(env);
        EXPECT_TRUE(ack && ack->ok());
        co_await finish(env, handle);
    }(e));
}

// An alarm set during a start that then fails never goes out, and its write says so.
TEST(EnvoyCommands, AnAlarmSetDuringAFailedStartResolvesWithAnError) {
    Env e;
    e.cb->alarm_during_start = 1'700'000'060'000;
    e.cb->start_result = Error("user", "boom", "start failed");
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->push(start_command(kActor, 1, 1));
        auto events = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(events && events->value.size() == 1 && stopped_in(*events));
        auto ack = co_await alarm_set_during_start(env);
        EXPECT_TRUE(ack && !ack->ok());
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyCommands, FailedStartReportsStoppedError) {
    Env e;
    e.cb->start_result = Error("user", "boom", "start failed");
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->push(start_command(kActor, 1, 1));
        auto events = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        auto s = events ? stopped_in(*events) : std::nullopt;
        EXPECT_TRUE(s && s->code == proto::StopCode::Error);
        EXPECT_EQ(handle.active_actor_count(), 0u);
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyCommands, LostThresholdStopsActorsWhileDisconnected) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        env.engine->refuse_next(1000);
        auto t0 = env.clock().now();
        conn->drop();
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return !cb->stops.empty(); }));
        EXPECT_EQ(cb->stops.at(0).reason, StopReason::lost);
        EXPECT_GE(env.clock().now() - t0, 15'000ms);
        co_await finish(env, handle);
    }(e));
}

// An engine back within its lost threshold finds the envoy again before the threshold passes:
// while it holds actors the envoy retries at least every second instead of backing off to 8 s and
// more (the chaos runner saw an engine restart outlast the threshold that way, and the engine
// then took minutes to place the stopped actors again).
TEST(EnvoyConnection, WhileItHoldsActorsItRetriesAtLeastEverySecond) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        env.engine->refuse_next(6);
        auto t0 = env.clock().now();
        conn->drop();
        auto conn2 = co_await env.engine->accept(env.clock(), 60'000ms);
        EXPECT_TRUE(conn2);
        EXPECT_LE(env.clock().now() - t0, 7 * 1250ms) << "the 7th attempt came too late";
        EXPECT_TRUE(env.cb->stops.empty()) << "back within the lost threshold: the actor is kept";
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyKv, OversizeKeysAndValuesFailLocally) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        // 2047 raw bytes are 2049 tuple-encoded: over the engine's 2048.
        std::vector<KvEntry> big_key{{Bytes(2047, 'k'), to_bytes("v")}};
        auto s1 = co_await handle.kv_put(kActor, big_key);
        EXPECT_TRUE(!s1.ok() && s1.error().is("kv", "key_too_large"));
        std::vector<KvEntry> big_value{{to_bytes("k"), Bytes(128 * 1024 + 1, 'v')}};
        auto s2 = co_await handle.kv_put(kActor, big_value);
        EXPECT_TRUE(!s2.ok() && s2.error().is("kv", "value_too_large"));
        std::vector<Bytes> keys{Bytes(4096, 'k')};
        auto s3 = co_await handle.kv_get(kActor, keys);
        EXPECT_TRUE(!s3.ok() && s3.error().is("kv", "key_too_large"));
        auto sent = co_await conn->next_of<proto::ToRivetKvRequest>(env.clock(), 1000ms);
        EXPECT_FALSE(sent) << "nothing reaches the engine";
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyKv, GetReturnsValuesInRequestOrderAndTimesOut) {
    Env e;
    e.config.liveness_timeout = std::chrono::hours(1);
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        auto ex = co_await asio::this_coro::executor;
        std::vector<Bytes> keys{to_bytes("a"), to_bytes("b")};
        auto get = rt::spawn(ex, handle.kv_get(kActor, keys));
        auto req = co_await conn->next_of<proto::ToRivetKvRequest>(env.clock(), kWait);
        EXPECT_TRUE(req && req->actor_id == kActor && req->data.is<proto::KvGetRequest>());
        proto::KvGetResponse resp{
            {to_bytes("b")}, {to_bytes("vb")}, {proto::KvMetadata{to_bytes("2.3.19"), 1}}};
        conn->push(
            proto::ToEnvoy{proto::ToEnvoyKvResponse{req->request_id, proto::KvResponseData{resp}}});
        auto got = (co_await get.join()).value();
        EXPECT_TRUE(got.ok());
        if (got.ok()) {
            EXPECT_EQ(got->at(0), std::nullopt);
            EXPECT_EQ(got->at(1), to_bytes("vb"));
        }

        auto t0 = env.clock().now();
        auto lost = co_await handle.kv_delete(kActor, keys);
        EXPECT_TRUE(!lost.ok() && lost.error().is("kv", "timeout"));
        EXPECT_EQ(env.clock().now() - t0, env.config.kv_request_timeout);

        proto::KvErrorResponse err{"actor does not exist"};
        auto put = rt::spawn(ex, handle.kv_drop(kActor));
        // The timed-out delete went out first; the drop is the next request.
        std::optional<proto::ToRivetKvRequest> drop;
        do {
            drop = co_await conn->next_of<proto::ToRivetKvRequest>(env.clock(), kWait);
        } while (drop && !drop->data.is<proto::KvDropRequest>());
        conn->push(
            proto::ToEnvoy{proto::ToEnvoyKvResponse{drop->request_id, proto::KvResponseData{err}}});
        auto failed = (co_await put.join()).value();
        EXPECT_TRUE(!failed.ok() && failed.error().is("kv", "engine_error") &&
                    failed.error().message() == "actor does not exist");
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyKv, RequestsWhileDisconnectedGoOutAfterInit) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->close_from_engine(1011, "ws.going_away#r");
        RecordingCallbacks* cb = env.cb.get();
        co_await wait_until(env.clock(), *cb->changed, kWait,
                            [cb] { return cb->disconnects == 1; });
        auto ex = co_await asio::this_coro::executor;
        std::vector<KvEntry> entries{{to_bytes("k"), to_bytes("v")}};
        auto put = rt::spawn(ex, handle.kv_put(kActor, entries));
        auto conn2 = co_await env.engine->accept(env.clock(), kWait);
        conn2->push(init_message());
        auto req = co_await conn2->next_of<proto::ToRivetKvRequest>(env.clock(), kWait);
        EXPECT_TRUE(req && req->data.is<proto::KvPutRequest>());
        conn2->push(proto::ToEnvoy{proto::ToEnvoyKvResponse{
            req->request_id, proto::KvResponseData{proto::KvPutResponse{}}}});
        EXPECT_TRUE((co_await put.join()).value().ok());
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyTunnel, InlineRequestGetsInlineResponse) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        proto::ToEnvoyRequestStart start{kActor,       std::nullopt,      "POST", "/request/echo",
                                         {{"a", "b"}}, to_bytes("hello"), false,  false};
        conn->push(tunnel(kRequest, 0, proto::ToEnvoyTunnelMessageKind{start}));
        auto resp = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* rs = resp ? resp->message_kind.get_if<proto::ToRivetResponseStart>() : nullptr;
        EXPECT_TRUE(rs && rs->status == 200 && !rs->stream && rs->body == to_bytes("hello"));
        EXPECT_EQ(resp->message_id.message_index, 0);
        EXPECT_EQ(env.cb->requests.at(0).path, "/request/echo");

        proto::ToEnvoyRequestStart other{"unknownactor", std::nullopt, "GET", "/", {},
                                         std::nullopt,   false,        false};
        conn->push(tunnel(TunnelId{{9, 9, 9, 9}, {1, 1, 1, 1}}, 0,
                          proto::ToEnvoyTunnelMessageKind{other}));
        auto nf = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* nfs = nf ? nf->message_kind.get_if<proto::ToRivetResponseStart>() : nullptr;
        EXPECT_TRUE(nfs && nfs->status == 503);
        co_await finish(env, handle);
    }(e));
}

// A handler's response that repeats a header name (in any case) still leaves as a well-formed
// message: ResponseStart's headers are a map, so the name is there once, its values joined.
TEST(EnvoyTunnel, ARepeatedResponseHeaderIsFoldedIntoOne) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        proto::ToEnvoyRequestStart start{kActor, std::nullopt, "GET", "/request/repeated-headers",
                                         {},     std::nullopt, false, false};
        conn->push(tunnel(kRequest, 0, proto::ToEnvoyTunnelMessageKind{start}));
        // A repeated key would not decode (the decoder refuses maps that repeat a key).
        auto resp = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* rs = resp ? resp->message_kind.get_if<proto::ToRivetResponseStart>() : nullptr;
        EXPECT_TRUE(rs && rs->status == 200);
        if (rs) {
            std::vector<std::pair<std::string, std::string>> got(rs->headers.begin(),
                                                                 rs->headers.end());
            std::vector<std::pair<std::string, std::string>> want{
                {"x-path", "/request/repeated-headers"},
                {"x-method", "GET"},
                {"x-body-len", "0"},
                {"Vary", "accept, origin, cookie"},
                {"set-cookie", "a=1"}};
            EXPECT_EQ(got, want);
        }
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyTunnel, StreamedBodiesReturnCreditAndRespectTheResponseWindow) {
    Env e;
    e.config.response_window_bytes = 128 * 1024;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto connected = co_await connect(env);  // not a binding: next_chunk below captures conn
        auto& handle = connected.first;
        auto& conn = connected.second;
        co_await start_actor(env, *conn, 1);
        proto::ToEnvoyRequestStart start{kActor, 1u,           "POST", "/big/300000",
                                         {},     std::nullopt, true,   true};
        conn->push(tunnel(kRequest, 0, proto::ToEnvoyTunnelMessageKind{start}));
        conn->push(tunnel(
            kRequest, 1,
            proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyRequestChunk{to_bytes("abc"), false}}));
        auto credit = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* wu =
            credit ? credit->message_kind.get_if<proto::ToRivetRequestBodyWindowUpdate>() : nullptr;
        EXPECT_TRUE(wu && wu->consumed_bytes == 3);
        conn->push(tunnel(
            kRequest, 2,
            proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyRequestChunk{to_bytes("de"), true}}));

        auto head = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* rs = head ? head->message_kind.get_if<proto::ToRivetResponseStart>() : nullptr;
        EXPECT_TRUE(rs && rs->stream && !rs->body);
        // Un-acknowledged bytes stay one chunk (64 KiB) below the 128 KiB window: the gateway's
        // queue may still count a chunk it already credited.
        std::size_t received = 0;
        auto next_chunk = [&]() -> asio::awaitable<bool> {
            auto c = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
            auto* chunk = c ? c->message_kind.get_if<proto::ToRivetResponseChunk>() : nullptr;
            if (chunk)
                received += chunk->body.size();
            co_return chunk != nullptr;
        };
        EXPECT_TRUE(co_await next_chunk());
        EXPECT_EQ(received, 64u * 1024);
        auto stalled = co_await conn->next(env.clock(), 1000ms);
        EXPECT_FALSE(stalled) << "no second chunk until the gateway acknowledges";
        // Credit for half the chunk is not enough room for another one.
        conn->push(tunnel(
            kRequest, 3,
            proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyResponseBodyWindowUpdate{32 * 1024}}));
        stalled = co_await conn->next(env.clock(), 1000ms);
        EXPECT_FALSE(stalled) << "64 KiB in flight would exceed window minus one chunk";
        conn->push(tunnel(
            kRequest, 4,
            proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyResponseBodyWindowUpdate{64 * 1024}}));
        EXPECT_TRUE(co_await next_chunk());
        EXPECT_EQ(received, 128u * 1024);
        stalled = co_await conn->next(env.clock(), 1000ms);
        EXPECT_FALSE(stalled);
        conn->push(tunnel(
            kRequest, 5,
            proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyResponseBodyWindowUpdate{300000}}));
        bool finished = false;
        while (!finished) {
            auto c = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
            auto* chunk = c ? c->message_kind.get_if<proto::ToRivetResponseChunk>() : nullptr;
            if (!chunk)
                break;
            received += chunk->body.size();
            finished = chunk->finish;
        }
        EXPECT_TRUE(finished);
        EXPECT_EQ(received, 300000u);
        EXPECT_EQ(env.cb->requests.at(0).body, to_bytes("abcde"));
        co_await finish(env, handle);
    }(e));
}

// What the actor sends while its open hook runs (a welcome) reaches the gateway after the socket's
// open, not before it (where the gateway drops it).
TEST(EnvoyWebSocket, AMessageSentWhileTheSocketOpensFollowsTheOpen) {
    Env e;
    e.cb->welcome = "welcome";
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        auto opened = co_await open_socket(env, *conn);
        EXPECT_TRUE(opened.has_value()) << "the first tunnel message was not the open";
        auto next = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* m = next ? next->message_kind.get_if<proto::ToRivetWebSocketMessage>() : nullptr;
        EXPECT_TRUE(m != nullptr && m->data == to_bytes("welcome"));
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyWebSocket, HibernatesOnSleepAndRestoresOnWake) {
    Env e;
    e.cb->hibernate = true;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        auto opened = co_await open_socket(env, *conn);
        EXPECT_TRUE(opened && opened->can_hibernate);
        conn->push(client_message(1, "ping-1"));
        bool acked = false, echoed = false;
        for (int i = 0; i < 2; ++i) {
            auto m = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
            if (!m)
                break;
            if (auto* a = m->message_kind.get_if<proto::ToRivetWebSocketMessageAck>())
                acked = a->index == 1;
            if (auto* echo = m->message_kind.get_if<proto::ToRivetWebSocketMessage>())
                echoed = echo->data == to_bytes("echo:ping-1");
        }
        EXPECT_TRUE(acked && echoed);

        conn->push(stop_command(kActor, 1, 2, proto::StopActorReason::SleepIntent));
        auto stopped = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(stopped && stopped_in(*stopped));
        EXPECT_EQ(env.cb->ws->hibernations, 1);
        EXPECT_TRUE(env.cb->ws->closes.empty());

        std::vector<TunnelId> hibernating;
        hibernating.push_back(kRequest);
        co_await start_actor(env, *conn, 2, hibernating);
        auto reopened = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        EXPECT_TRUE(reopened && reopened->message_kind.is<proto::ToRivetWebSocketOpen>());
        EXPECT_EQ(env.cb->ws->restores, 1);
        conn->push(client_message(1, "dup"));
        conn->push(client_message(2, "ping-2"));
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->ws->received.size() >= 2; }));
        EXPECT_EQ(cb->ws->received, (std::vector<std::string>{"ping-1", "ping-2"}));
        co_await finish(env, handle);
    }(e));
}

// Found by upstream's actor-conn-hibernation ("closing connection during hibernation"): the
// client closed a hibernating socket while its actor slept; the gateway forgot it without telling
// this process, so the next start did not list it. This process still held the socket from the
// last generation and answered "live", so the actor kept a connection nobody could reach. Only
// the engine's list counts for a socket kept from an earlier generation.
TEST(EnvoyWebSocket, AHibernatingSocketTheEngineNoLongerListsIsNotLive) {
    Env e;
    e.cb->hibernate = true;
    e.cb->probe_live.push_back(kRequest);
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        EXPECT_TRUE(co_await open_socket(env, *conn));
        EXPECT_EQ(env.cb->probed_live, (std::vector<bool>{false})) << "before the socket opened";

        conn->push(stop_command(kActor, 1, 2, proto::StopActorReason::SleepIntent));
        auto stopped = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(stopped && stopped_in(*stopped));
        EXPECT_EQ(env.cb->ws->hibernations, 1);

        co_await start_actor(env, *conn, 2);  // the engine lists nothing
        EXPECT_EQ(env.cb->probed_live, (std::vector<bool>{false, false}));
        EXPECT_EQ(env.cb->ws->restores, 0);
        co_await finish(env, handle);
    }(e));
}

// A draining envoy (the engine stops the actor with GoingAway to move it) keeps a hibernatable
// socket open at the gateway, as on sleep: no close is sent and the socket hibernates. A destroy
// closes it (1011 actor.stopped).
TEST(EnvoyWebSocket, HibernatableSocketStaysOpenWhenItsActorMovesAndClosesOnDestroy) {
    for (auto reason : {proto::StopActorReason::GoingAway, proto::StopActorReason::Destroy}) {
        SCOPED_TRACE(reason == proto::StopActorReason::GoingAway ? "going_away" : "destroy");
        Env e;
        e.cb->hibernate = true;
        e.rt.block_on([reason](Env& env) -> asio::awaitable<void> {
            auto [handle, conn] = co_await connect(env);
            co_await start_actor(env, *conn, 1);
            EXPECT_TRUE(co_await open_socket(env, *conn));

            conn->push(stop_command(kActor, 1, 2, reason));
            auto stopped = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
            EXPECT_TRUE(stopped && stopped_in(*stopped));
            auto after = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), 2000ms);
            const auto* close =
                after ? after->message_kind.get_if<proto::ToRivetWebSocketClose>() : nullptr;
            if (reason == proto::StopActorReason::GoingAway) {
                EXPECT_FALSE(after) << "nothing is sent for the socket of a moving actor";
                EXPECT_EQ(env.cb->ws->hibernations, 1);
                EXPECT_TRUE(env.cb->ws->closes.empty());
            } else {
                EXPECT_TRUE(close && close->code == 1011u && close->reason == "actor.stopped");
                EXPECT_EQ(env.cb->ws->hibernations, 0);
            }
            co_await finish(env, handle);
        }(e));
    }
}

// The host process restarted while the actor slept: this envoy never saw the socket open. The
// engine lists it in StartActor; it counts as live while the actor starts, and is re-attached from
// the metadata the actor persisted (path, last durable client index). A listed socket with no
// persisted metadata is closed as upstream does.
TEST(EnvoyWebSocket, SocketOpenedByAnotherProcessIsRestoredFromPersistedMetadata) {
    Env e;
    e.cb->hibernate = true;
    const TunnelId unknown{{9, 9, 9, 9}, {1, 1, 1, 1}};
    e.cb->persisted_sockets.push_back(
        HibernatingWebSocketMeta{kRequest, 3, "/persisted", {{"x-test", "1"}}});
    e.rt.block_on([&unknown](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        std::vector<TunnelId> listed;
        listed.push_back(kRequest);
        listed.push_back(unknown);
        co_await start_actor(env, *conn, 1, listed);
        EXPECT_EQ(env.cb->listed_live, (std::vector<bool>{true, true}));

        bool opened = false, closed_unknown = false;
        for (int i = 0; i < 2; ++i) {
            auto m = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
            if (!m)
                break;
            TunnelId id{m->message_id.gateway_id, m->message_id.request_id};
            if (id == kRequest && m->message_kind.is<proto::ToRivetWebSocketOpen>())
                opened = true;
            if (auto* c = m->message_kind.get_if<proto::ToRivetWebSocketClose>()) {
                closed_unknown =
                    id == unknown && c->code == std::optional<std::uint16_t>(1000) &&
                    c->reason == std::optional<std::string>("ws.meta_not_found_during_restore");
            }
        }
        EXPECT_TRUE(opened);
        EXPECT_TRUE(closed_unknown);
        EXPECT_EQ(env.cb->ws->restores, 1);
        EXPECT_EQ(env.cb->ws->restored_paths, (std::vector<std::string>{"/persisted"}));

        // Index 3 was made durable before the restart: the gateway's re-send of it is a
        // duplicate, 4 is the next message.
        conn->push(client_message(3, "old"));
        conn->push(client_message(4, "next"));
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return !cb->ws->received.empty(); }));
        EXPECT_EQ(cb->ws->received, (std::vector<std::string>{"next"}));
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoyShutdown, GracefulSendsStoppingAndClosesAfterActorsStop) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        handle.shutdown();
        auto stopping = co_await conn->next_of<proto::ToRivetStopping>(env.clock(), kWait);
        EXPECT_TRUE(stopping);
        conn->push(stop_command(kActor, 1, 2, proto::StopActorReason::GoingAway));
        co_await handle.wait_stopped();
        EXPECT_EQ(env.cb->stops.at(0).reason, StopReason::going_away);
        EXPECT_TRUE(conn->closed_by_envoy && conn->closed_by_envoy->first == 1000 &&
                    conn->closed_by_envoy->second == "envoy.shutdown");
        EXPECT_EQ(env.cb->shutdowns, 1);
    }(e));
}

// A broadcast burst leaves through the token bucket (burst, then the configured rate), the paced
// part in groups of eight frames per wake of the writer, and a pong the engine asks for meanwhile
// does not wait behind it.
TEST(EnvoyWebSocket, TunnelBurstsArePacedAndControlFramesOvertakeThem) {
    Env e;
    e.config.write_burst_frames = 100;
    e.config.write_frames_per_second = 1'000;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        EXPECT_TRUE(co_await open_socket(env, *conn));

        constexpr int kMessages = 600;
        for (int i = 1; i <= kMessages; ++i) {
            conn->push(client_message(static_cast<std::uint16_t>(i), "m" + std::to_string(i)));
        }
        const auto started = env.clock().now();
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait, [cb] {
            return cb->ws->received.size() >= static_cast<std::size_t>(kMessages);
        }));
        conn->push(proto::ToEnvoy{proto::ToEnvoyPing{77}});

        int echoes_before_pong = -1;
        int echoes = 0;
        std::optional<rt::Clock::time_point> last_echo;
        std::set<rt::Clock::time_point> instants;  // when echoes arrived
        while (echoes < kMessages) {
            auto m = co_await conn->next(env.clock(), kWait);
            if (!m)
                break;
            if (auto* pong = m->get_if<proto::ToRivetPong>()) {
                EXPECT_EQ(pong->ts, 77);
                echoes_before_pong = echoes;
            }
            if (auto* t = m->get_if<proto::ToRivetTunnelMessage>();
                t && t->message_kind.is<proto::ToRivetWebSocketMessage>()) {
                ++echoes;
                last_echo = env.clock().now();
                instants.insert(*last_echo);
            }
        }
        EXPECT_EQ(echoes, kMessages);
        // The 500 paced frames left in ~63 groups, not one by one (500 wakes, each with a timer).
        EXPECT_LE(instants.size(), 80u);
        EXPECT_GE(instants.size(), 55u);
        // The pong left while most of the burst was still queued.
        EXPECT_GE(echoes_before_pong, 0);
        EXPECT_LT(echoes_before_pong, kMessages / 2);
        // 100 at once, the other 500 at 1,000/s: about half a second of (virtual) time.
        EXPECT_TRUE(last_echo.has_value());
        if (last_echo) {
            EXPECT_GE(*last_echo - started, std::chrono::milliseconds(490));
            EXPECT_LE(*last_echo - started, std::chrono::milliseconds(600));
        }
        co_await finish(env, handle);
    }(e));
}

// A socket whose frames queue faster than they leave (here: an engine taking 10 frames/s) is
// closed once its backlog would pass the limit, instead of growing the host's memory: the
// listener hears 1011 ws.outgoing_backlog_full, what the socket still had queued is skipped, and
// the gateway gets the close.
TEST(EnvoyWebSocket, ASocketWhoseBacklogPassesTheLimitIsClosedAndItsQueueSkipped) {
    Env e;
    e.config.write_burst_frames = 1;
    e.config.write_frames_per_second = 10;
    e.config.websocket_backlog_limit_bytes = 2'000;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        EXPECT_TRUE(co_await open_socket(env, *conn));

        constexpr int kMessages = 200;
        const std::string payload(40, 'x');
        for (int i = 1; i <= kMessages; ++i) {
            conn->push(client_message(static_cast<std::uint16_t>(i), payload));
        }
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return !cb->ws->closes.empty(); }));
        if (!cb->ws->closes.empty()) {
            EXPECT_EQ(cb->ws->closes.front().code, 1011);
            EXPECT_EQ(cb->ws->closes.front().reason, "ws.outgoing_backlog_full");
        }
        // The engine gets the close and nothing of the skipped backlog.
        int echoes = 0;
        std::optional<proto::ToRivetWebSocketClose> closed;
        while (!closed) {
            auto m = co_await conn->next(env.clock(), 30'000ms);
            if (!m)
                break;
            auto* t = m->get_if<proto::ToRivetTunnelMessage>();
            if (t == nullptr)
                continue;
            if (t->message_kind.is<proto::ToRivetWebSocketMessage>())
                ++echoes;
            if (auto* c = t->message_kind.get_if<proto::ToRivetWebSocketClose>())
                closed = *c;
        }
        EXPECT_TRUE(closed.has_value());
        if (closed) {
            EXPECT_EQ(closed->code, 1011);
            EXPECT_EQ(closed->reason, "ws.outgoing_backlog_full");
        }
        // At most what had left before the close (here none: the 200 arrived in one turn).
        EXPECT_LT(echoes, 2'000 / 40);
        auto after = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), 10'000ms);
        EXPECT_FALSE(after.has_value());
        co_await finish(env, handle);
    }(e));
}

// A listener that acks after persisting leaves a message un-acked when its actor is entering
// sleep; the gateway sends it again after the wake and it must be delivered then, not dropped as a
// duplicate of what the envoy had already handed over.
TEST(EnvoyWebSocket, UnackedMessageIsRedeliveredAfterWakeNotDroppedAsDuplicate) {
    Env e;
    e.cb->hibernate = true;
    e.cb->listener_acks = true;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        EXPECT_TRUE(co_await open_socket(env, *conn));
        conn->push(client_message(1, "one"));
        conn->push(client_message(2, "defer:two"));
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->ws->received.size() >= 2; }));

        conn->push(stop_command(kActor, 1, 2, proto::StopActorReason::SleepIntent));
        auto stopped = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(stopped && stopped_in(*stopped));

        std::vector<TunnelId> hibernating;
        hibernating.push_back(kRequest);
        co_await start_actor(env, *conn, 2, hibernating);
        // The gateway redelivers everything after the last ack: index 2.
        conn->push(client_message(2, "two"));
        conn->push(client_message(3, "three"));
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->ws->received.size() >= 4; }));
        EXPECT_EQ(cb->ws->received, (std::vector<std::string>{"one", "defer:two", "two", "three"}));
        co_await finish(env, handle);
    }(e));
}

namespace {

std::vector<std::int64_t> indexes_of(const proto::ToRivetEvents& events) {
    std::vector<std::int64_t> out;
    for (const auto& e : events.value)
        out.push_back(e.checkpoint.index);
    return out;
}

proto::ToEnvoy ack_events(std::uint32_t generation, std::int64_t index) {
    return proto::ToEnvoy{
        proto::ToEnvoyAckEvents{{proto::ActorCheckpoint{kActor, generation, index}}}};
}

// Accepts the envoy's next connection and completes its handshake.
asio::awaitable<std::shared_ptr<FakeConnection>> reconnect(Env& env) {
    auto conn = co_await env.engine->accept(env.clock(), kWait);
    EXPECT_TRUE(conn);
    if (!conn)
        co_return nullptr;
    auto meta = co_await conn->next_of<proto::ToRivetMetadata>(env.clock(), kWait);
    EXPECT_TRUE(meta);
    conn->push(init_message());
    co_return conn;
}

}  // namespace

// As upstream's envoy client: every event (alarm, intent, state update) stays in its actor's
// history until the engine acks it and is re-sent, in index order, after each reconnect; events
// made while disconnected go out after the next Init; a stopped generation's history is dropped
// once its Stopped event went out on a live connection.
TEST(EnvoyEvents, UnackedAlarmsIntentsAndOfflineEventsAreReplayedAfterReconnect) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);  // Running = index 0
        conn->push(ack_events(1, 0));
        handle.set_alarm(kActor, 1'700'000'060'000);  // 1
        handle.sleep_actor(kActor);                   // 2
        for (std::int64_t index : {1, 2}) {
            auto sent = co_await conn->next_of<proto::ToRivetEvents>(env.clock(), kWait);
            EXPECT_TRUE(sent && indexes_of(*sent) == std::vector<std::int64_t>{index});
        }
        conn->drop();
        // Made while disconnected: kept, sent after the next Init.
        handle.set_alarm(kActor, std::nullopt);  // 3

        auto conn2 = co_await reconnect(env);
        auto replay = co_await conn2->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(replay);
        if (replay) {
            // The acked Running event is not re-sent.
            EXPECT_EQ(indexes_of(*replay), (std::vector<std::int64_t>{1, 2, 3}));
            EXPECT_EQ(replay->value.at(0).inner,
                      proto::Event{proto::EventActorSetAlarm{1'700'000'060'000}});
            EXPECT_TRUE(replay->value.at(1).inner.is<proto::EventActorIntent>());
            EXPECT_EQ(replay->value.at(2).inner,
                      proto::Event{proto::EventActorSetAlarm{std::nullopt}});
        }

        // Acked up to 2: only 3 comes back after the next reconnect.
        conn2->push(ack_events(1, 2));
        handle.set_alarm(kActor, 1'700'000'090'000);  // 4, a separate round trip
        auto sent4 = co_await conn2->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(sent4 && indexes_of(*sent4) == std::vector<std::int64_t>{4});
        conn2->drop();
        auto conn3 = co_await reconnect(env);
        auto replay3 = co_await conn3->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(replay3 && indexes_of(*replay3) == (std::vector<std::int64_t>{3, 4}));
        conn3->push(ack_events(1, 4));

        // The engine's sleep stop: Stopped (5) goes out live. Its connection drops at once, so
        // it is sent again after the reconnect (the engine would otherwise keep the actor
        // stopping for its stop threshold); the engine's ack then drops the history.
        conn3->push(stop_command(kActor, 1, 2, proto::StopActorReason::SleepIntent));
        auto stopped = co_await conn3->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(stopped && stopped_in(*stopped) &&
                    indexes_of(*stopped) == std::vector<std::int64_t>{5});
        conn3->drop();
        auto conn4 = co_await reconnect(env);
        auto again = co_await conn4->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(again && stopped_in(*again) &&
                    indexes_of(*again) == std::vector<std::int64_t>{5})
            << "a Stopped event lost with its connection was not sent again";
        conn4->push(ack_events(1, 5));

        // Generation 2 is lost while the engine is unreachable: its Stopped(Error) is made
        // offline and replayed after each reconnect until a connection stayed up past the
        // engine's ping timeout after sending it (the engine acks only every 250 events).
        co_await start_actor(env, *conn4, 2);
        env.engine->refuse_next(1'000'000);
        conn4->drop();
        RecordingCallbacks* cb = env.cb.get();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->stops.size() >= 2; }));
        EXPECT_EQ(cb->stops.back().reason, StopReason::lost);
        env.engine->refuse_next(0);
        auto conn5 = co_await reconnect(env);
        auto replay5 = co_await conn5->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(replay5);
        if (replay5) {
            EXPECT_EQ(indexes_of(*replay5), (std::vector<std::int64_t>{0, 1}));  // Running, Stopped
            auto s = stopped_in(*replay5);
            EXPECT_TRUE(s && s->code == proto::StopCode::Error);
            EXPECT_EQ(replay5->value.at(1).checkpoint.generation, 2u);
        }
        conn5->drop();
        auto conn6 = co_await reconnect(env);
        auto replay6 = co_await conn6->next_of<proto::ToRivetEvents>(env.clock(), kWait);
        EXPECT_TRUE(replay6 && indexes_of(*replay6) == (std::vector<std::int64_t>{0, 1}))
            << "dropped before its connection proved it delivered";
        // The connection stays up (the engine pings) past 30 s: the history goes.
        for (int i = 0; i < 11; ++i) {
            co_await env.clock().sleep_for(3s);
            conn6->push(proto::ToEnvoy{proto::ToEnvoyPing{i}});
        }
        conn6->drop();
        auto conn7 = co_await reconnect(env);
        auto nothing7 = co_await conn7->next_of<proto::ToRivetEvents>(env.clock(), 5000ms);
        EXPECT_FALSE(nothing7) << "a lost generation's Stopped was replayed after it surely "
                                  "reached the engine";
        co_await finish(env, handle);
    }(e));
}

namespace {

proto::ToEnvoy request_chunk(const TunnelId& id, std::uint16_t index, std::string body,
                             bool finish) {
    return tunnel(
        id, index,
        proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyRequestChunk{to_bytes(body), finish}});
}

std::optional<std::uint64_t> credit_in(const std::optional<proto::ToRivetTunnelMessage>& m) {
    if (!m)
        return std::nullopt;
    if (auto* wu = m->message_kind.get_if<proto::ToRivetRequestBodyWindowUpdate>())
        return wu->consumed_bytes;
    return std::nullopt;
}

}  // namespace

// Streaming gateway, handler reading the body as it arrives: fetch starts at RequestStart, and
// the gateway is credited with what the handler took, not with what arrived.
TEST(EnvoyTunnel, StreamedRequestBodyIsReadByTheHandlerWithCreditAsItReads) {
    Env e;
    e.cb->stream_bodies = true;
    e.cb->read_gate = std::make_shared<rt::Notify>();
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        co_await start_actor(env, *conn, 1);
        RecordingCallbacks* cb = env.cb.get();
        rt::Notify& gate = *cb->read_gate;
        proto::ToEnvoyRequestStart start{kActor, 1u,           "POST", "/stream",
                                         {},     std::nullopt, true,   false};
        conn->push(tunnel(kRequest, 0, proto::ToEnvoyTunnelMessageKind{start}));
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait, [cb] {
            return cb->fetches_started == 1;
        })) << "fetch starts with the head, before any body";

        conn->push(request_chunk(kRequest, 1, std::string(100, 'a'), false));
        auto early = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), 1000ms);
        EXPECT_FALSE(early) << "no credit before the handler reads";
        gate.notify_one();
        auto credit1 = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        EXPECT_EQ(credit_in(credit1), std::optional<std::uint64_t>(100));
        EXPECT_EQ(cb->body_pieces.size(), 1u);

        conn->push(request_chunk(kRequest, 2, std::string(50, 'b'), false));
        gate.notify_one();
        auto credit2 = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        EXPECT_EQ(credit_in(credit2), std::optional<std::uint64_t>(150));
        // The last piece: the body is complete, so reading it returns no credit.
        conn->push(request_chunk(kRequest, 3, std::string(30, 'c'), true));
        gate.notify_one();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->body_pieces.size() == 3; }));
        gate.notify_one();  // end of body
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->requests.size() == 1; }));
        auto resp = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), kWait);
        auto* rs = resp ? resp->message_kind.get_if<proto::ToRivetResponseStart>() : nullptr;
        EXPECT_TRUE(rs && rs->status == 200 && rs->body &&
                    *rs->body == to_bytes(std::string(100, 'a') + std::string(50, 'b') +
                                          std::string(30, 'c')))
            << "unexpected response";
        EXPECT_EQ(cb->body_pieces.size(), 3u);
        EXPECT_TRUE(cb->body_errors.empty());

        // An aborted request: pieces that arrived are read, then the reader gets the abort and
        // no response goes out.
        const TunnelId second{{1, 2, 3, 4}, {9, 9, 9, 9}};
        conn->push(tunnel(second, 0, proto::ToEnvoyTunnelMessageKind{start}));
        conn->push(request_chunk(second, 1, "xyz", false));
        conn->push(
            tunnel(second, 2, proto::ToEnvoyTunnelMessageKind{proto::ToEnvoyRequestAbort{}}));
        gate.notify_one();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->body_pieces.size() == 4; }));
        gate.notify_one();
        EXPECT_TRUE(co_await wait_until(env.clock(), *cb->changed, kWait,
                                        [cb] { return cb->body_errors.size() == 1; }));
        EXPECT_TRUE(cb->body_errors.at(0).is("envoy", "request_aborted"))
            << cb->body_errors.at(0).to_string();
        auto after_abort = co_await conn->next_of<proto::ToRivetTunnelMessage>(env.clock(), 2000ms);
        EXPECT_FALSE(after_abort) << "nothing is sent for an aborted request";
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoySqlite, PageRequestsCarryTheFenceAndMapEngineErrors) {
    Env e;
    e.config.liveness_timeout = std::chrono::hours(1);
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        auto ex = co_await asio::this_coro::executor;
        std::vector<std::uint32_t> pgnos{1, 2};
        auto get = rt::spawn(ex, handle.sqlite_get_pages(kActor, pgnos, SqliteFence{3, 7}));
        auto req = co_await conn->next_of<proto::ToRivetSqliteGetPagesRequest>(env.clock(), kWait);
        EXPECT_TRUE(req && req->data.actor_id == kActor && req->data.pgnos == pgnos);
        EXPECT_TRUE(req && req->data.expected_generation == 3u &&
                    req->data.expected_head_txid == 7u);
        proto::SqliteGetPagesOk ok{{{1, Bytes(4096, 1)}, {2, std::nullopt}}, 8};
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteGetPagesResponse{
            req->request_id, proto::SqliteGetPagesResponse{ok}}});
        auto got = (co_await get.join()).value();
        EXPECT_TRUE(got.ok());
        if (got.ok()) {
            EXPECT_EQ(got->head_txid, 8u);
            EXPECT_EQ(got->pages.at(0).bytes, Bytes(4096, 1));
            EXPECT_FALSE(got->pages.at(1).bytes.has_value());
        }

        SqliteCommit commit{{{1, Bytes(4096, 2)}}, 1, 1234};
        auto put = rt::spawn(ex, handle.sqlite_commit(kActor, commit, SqliteFence{3, 8}));
        auto creq = co_await conn->next_of<proto::ToRivetSqliteCommitRequest>(env.clock(), kWait);
        EXPECT_TRUE(creq && creq->data.db_size_pages == 1u && creq->data.now_ms == 1234 &&
                    creq->data.dirty_pages.size() == 1u && creq->data.expected_head_txid == 8u);
        proto::SqliteErrorResponse err{"depot", "head_fence_mismatch", "expected 8, current 9"};
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteCommitResponse{
            creq->request_id, proto::SqliteCommitResponse{err}}});
        auto failed = (co_await put.join()).value();
        EXPECT_TRUE(!failed.ok() && failed.error().is("depot", "head_fence_mismatch"));

        // No answer: sqlite/timeout after the configured time (virtual).
        auto t0 = env.clock().now();
        auto unanswered = handle.sqlite_commit(kActor, commit, SqliteFence{3, 8});
        auto lost = co_await std::move(unanswered);
        EXPECT_TRUE(!lost.ok() && lost.error().is("sqlite", "timeout"));
        EXPECT_EQ(env.clock().now() - t0, env.config.sqlite_request_timeout);
        co_await finish(env, handle);
    }(e));
}

TEST(EnvoySqlite, RequestsWhileDisconnectedGoOutAfterInit) {
    Env e;
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        conn->close_from_engine(1011, "ws.going_away#r");
        RecordingCallbacks* cb = env.cb.get();
        co_await wait_until(env.clock(), *cb->changed, kWait,
                            [cb] { return cb->disconnects == 1; });
        auto ex = co_await asio::this_coro::executor;
        std::vector<std::uint32_t> pgnos{1};
        auto get = rt::spawn(ex, handle.sqlite_get_pages(kActor, pgnos, SqliteFence{1, {}}));
        auto conn2 = co_await env.engine->accept(env.clock(), kWait);
        conn2->push(init_message());
        auto req = co_await conn2->next_of<proto::ToRivetSqliteGetPagesRequest>(env.clock(), kWait);
        EXPECT_TRUE(req && !req->data.expected_head_txid);
        proto::SqliteErrorResponse missing{"depot", "database_not_found", "not found"};
        conn2->push(proto::ToEnvoy{proto::ToEnvoySqliteGetPagesResponse{
            req->request_id, proto::SqliteGetPagesResponse{missing}}});
        auto got = (co_await get.join()).value();
        EXPECT_TRUE(!got.ok() && got.error().is("depot", "database_not_found"));
        co_await finish(env, handle);
    }(e));
}

// The staged commit's three requests: each carries the fence it needs (begin: generation and
// head; segment and finalize: generation and the stage's txid), and each response — including
// an engine error half-way — reaches the request that asked, by request id.
TEST(EnvoySqlite, StagedCommitRequestsCarryTheirFenceAndGetTheirResponses) {
    Env e;
    e.config.liveness_timeout = std::chrono::hours(1);
    e.rt.block_on([](Env& env) -> asio::awaitable<void> {
        auto [handle, conn] = co_await connect(env);
        auto ex = co_await asio::this_coro::executor;

        auto begin = rt::spawn(ex, handle.sqlite_commit_stage_begin(kActor, SqliteFence{4, 10}));
        auto breq =
            co_await conn->next_of<proto::ToRivetSqliteCommitStageBeginRequest>(env.clock(), kWait);
        EXPECT_TRUE(breq && breq->data.actor_id == kActor && breq->data.expected_generation == 4u &&
                    breq->data.expected_head_txid == 10u);
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteCommitStageBeginResponse{
            breq->request_id,
            proto::SqliteCommitStageBeginResponse{proto::SqliteCommitStageBeginOk{11}}}});
        auto txid = (co_await begin.join()).value();
        EXPECT_TRUE(txid.ok() && *txid == 11u);

        std::vector<SqliteDirtyPage> pages{{64, Bytes(4096, 1)}, {65, Bytes(4096, 2)}};
        auto seg = rt::spawn(ex, handle.sqlite_commit_stage_segment(kActor, 4, 11, 64, pages));
        auto sreq = co_await conn->next_of<proto::ToRivetSqliteCommitStageSegmentRequest>(
            env.clock(), kWait);
        EXPECT_TRUE(sreq && sreq->data.expected_generation == 4u && sreq->data.txid == 11u &&
                    sreq->data.first_pgno == 64u && sreq->data.dirty_pages.size() == 2u &&
                    sreq->data.dirty_pages.at(1).pgno == 65u);
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteCommitStageSegmentResponse{
            sreq->request_id,
            proto::SqliteCommitStageSegmentResponse{proto::SqliteCommitStageSegmentOk{8300}}}});
        auto staged = (co_await seg.join()).value();
        EXPECT_TRUE(staged.ok() && *staged == 8300u);

        auto fin = rt::spawn(ex, handle.sqlite_commit_finalize(kActor, 4, 11, 70, 99,
                                                               std::vector<std::uint32_t>{0, 64}));
        auto freq =
            co_await conn->next_of<proto::ToRivetSqliteCommitFinalizeRequest>(env.clock(), kWait);
        EXPECT_TRUE(freq && freq->data.txid == 11u && freq->data.new_db_size_pages == 70u &&
                    freq->data.now_ms == 99 &&
                    freq->data.segment_first_pgnos == (std::vector<std::uint32_t>{0, 64}));
        proto::SqliteErrorResponse err{"depot", "head_fence_mismatch", "expected 10, current 11"};
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteCommitFinalizeResponse{
            freq->request_id, proto::SqliteCommitFinalizeResponse{err}}});
        auto finalized = (co_await fin.join()).value();
        EXPECT_TRUE(!finalized.ok() && finalized.error().is("depot", "head_fence_mismatch"));

        // A response of the wrong kind for a request id is not mistaken for the right one.
        auto begin2 = rt::spawn(ex, handle.sqlite_commit_stage_begin(kActor, SqliteFence{4, 10}));
        auto breq2 =
            co_await conn->next_of<proto::ToRivetSqliteCommitStageBeginRequest>(env.clock(), kWait);
        conn->push(proto::ToEnvoy{proto::ToEnvoySqliteCommitFinalizeResponse{
            breq2->request_id,
            proto::SqliteCommitFinalizeResponse{proto::SqliteCommitFinalizeOk{12}}}});
        auto wrong = (co_await begin2.join()).value();
        EXPECT_TRUE(!wrong.ok() && wrong.error().is("sqlite", "unexpected_response"))
            << (wrong.ok() ? "ok" : wrong.error().to_string());
        co_await finish(env, handle);
    }(e));
}

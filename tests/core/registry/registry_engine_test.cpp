// CoreRegistry on the real engine 2.3.19: the counter test actor served through the gateway,
// with requests shaped exactly as the official client sends them (client-protocol.md §6).

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/actor/metrics.hpp"
#include "counter_actor.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "test_websocket.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;

std::string query_target(const std::string& path, const std::string& key) {
    return gateway_target("counter", key, path);
}

class RegistryEngine : public ::testing::Test {
  protected:
    void SetUp() override {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            r.register_actor("counter", counter_factory());
            core::ActorConfig quiet;
            quiet.connection_events = false;  // no connection hooks, as a typed actor without any
            r.register_actor("counter-quiet", counter_factory(quiet));
        });
        ASSERT_TRUE(stack.ok()) << stack.error().to_string();
        stack_ = std::move(stack).value();
        engine_ = stack_.engine.get();
        host_ = stack_.host.get();
    }
    void TearDown() override { stack_ = {}; }

    HttpResult post(const std::string& target, std::string body, std::string encoding,
                    std::vector<std::pair<std::string, std::string>> extra = {}) {
        extra.emplace_back("x-rivet-encoding", std::move(encoding));
        auto r =
            http_request(engine_->guard_port(), "POST", target, std::move(body), std::move(extra));
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
        return r.ok() ? std::move(r).value() : HttpResult{};
    }

    LiveStack stack_;
    EngineHarness* engine_ = nullptr;
    LiveHost* host_ = nullptr;
};

TEST_F(RegistryEngine, HttpActionsInJsonCborAndBare) {
    auto r = post(query_target("/action/increment", "k1"), R"({"args":[2]})", "json");
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.body, R"({"output":2})");
    EXPECT_EQ(r.header("content-type").value_or(""), "application/json");
    EXPECT_EQ(r.header("x-rivet-actor-key").value_or(""), "k1");
    EXPECT_EQ(r.header("x-rivet-actor-generation").value_or(""), "1");
    EXPECT_FALSE(r.header("x-rivet-actor").value_or("").empty());

    const std::string cbor_body(
        "\xb9\x00\x01\x64"
        "args\x81\x03",
        10);
    r = post(query_target("/action/increment", "k1"), cbor_body, "cbor");
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, std::string("\xa1\x66output\x05", 9));

    r = post(query_target("/action/increment", "k1"), std::string("\x04\x00\x02\x81\x01", 5),
             "bare");
    ASSERT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, std::string("\x04\x00\x01\x06", 4));
    EXPECT_EQ(r.header("content-type").value_or(""), "application/octet-stream");

    // Non-array args are wrapped; conn params reach the action's connection.
    r = post(query_target("/action/increment", "k1"), R"({"args":4})", "json",
             {{"x-rivet-conn-params", R"({"user":"u1"})"}});
    EXPECT_EQ(r.body, R"({"output":10})");
}

TEST_F(RegistryEngine, ErrorsCarryGroupCodeMessageAndStatus) {
    auto r = post(query_target("/action/nope", "k2"), R"({"args":[]})", "json");
    EXPECT_EQ(r.status, 404u);
    // The actor's headers, once each (the envoy folds a repeated name into one, values joined).
    const std::optional<std::string> actor_id = r.header("x-rivet-actor");
    ASSERT_TRUE(actor_id);
    EXPECT_EQ(actor_id->find(','), std::string::npos) << *actor_id;
    EXPECT_EQ(r.header("x-rivet-actor-key"), "k2");
    EXPECT_EQ(r.header("x-rivet-actor-generation"), "1");
    auto body = json::parse(r.body, nullptr, false);
    EXPECT_EQ(body["group"], "actor");
    EXPECT_EQ(body["code"], "action_not_found");
    EXPECT_EQ(body["message"], "Action `nope` was not found.");
    EXPECT_EQ(body["actor"]["key"], "k2");

    r = post(query_target("/action/fail", "k2"), R"({"args":[]})", "json");
    body = json::parse(r.body, nullptr, false);
    EXPECT_EQ(body["group"], "user");
    EXPECT_EQ(body["code"], "deliberate_failure");
    EXPECT_EQ(body["message"], "counter failed on purpose");
    EXPECT_EQ(body["metadata"], json({{"reason", "test"}}));

    r = post(query_target("/action/increment", "k2"), "{", "json");
    EXPECT_EQ(r.status, 400u) << r.body;

    r = post(query_target("/action/increment", "k2"), R"({"args":[1]})", "json",
             {{"x-rivet-conn-params", "{not json"}});
    EXPECT_EQ(r.status, 400u) << r.body;

    std::string big(70'000, ' ');
    r = post(query_target("/action/increment", "k2"), R"({"args":[1]})" + big, "json");
    EXPECT_EQ(r.status, 400u);
    EXPECT_EQ(json::parse(r.body, nullptr, false)["code"], "incoming_too_long");

    auto get = http_request(engine_->guard_port(), "GET", query_target("/action/increment", "k2"));
    ASSERT_TRUE(get.ok());
    EXPECT_EQ(get->status, 405u) << get->body;
}

// An HTTP action's connection hooks see every header the client sent. An actor without hooks is
// not given them (CoreRegistry::fetch skips them), yet its encoding and connection params, which
// the framework reads, still apply.
TEST_F(RegistryEngine, AnHttpActionsHooksSeeItsHeadersAndAnActorWithoutHooksKeepsTheFrameworks) {
    auto r = post(query_target("/action/lastProbe", "k9"), R"({"args":[]})", "json",
                  {{"X-Probe", "P1"}, {"x-other", "o"}});
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.body, R"({"output":"P1"})");
    r = post(query_target("/action/lastProbe", "k9"), R"({"args":[]})", "json");
    EXPECT_EQ(r.body, R"({"output":"-"})");

    const std::string quiet = gateway_target("counter-quiet", "k9", "/action/increment");
    const std::string cbor_args("\xb9\x00\x01\x64"
                                "args\x81\x03",
                                10);
    r = post(quiet, cbor_args, "cbor",
             {{"X-Probe", "P2"}, {"x-rivet-conn-params", R"({"user":"u1"})"}});
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_EQ(r.body, std::string("\xa1\x66output\x03", 9));
    EXPECT_EQ(r.header("content-type").value_or(""), "application/octet-stream");
    EXPECT_EQ(r.header("x-rivet-actor-key").value_or(""), "k9");
    r = post(quiet, R"({"args":[1]})", "json", {{"X-Rivet-Conn-Params", "{not json"}});
    EXPECT_EQ(r.status, 400u) << r.body;
    EXPECT_EQ(json::parse(r.body, nullptr, false)["code"], "invalid_http_request") << r.body;
    r = post(gateway_target("counter-quiet", "k9", "/action/lastProbe"), R"({"args":[]})", "json",
             {{"X-Probe", "P3"}});
    EXPECT_EQ(r.body, R"({"output":"none"})") << "no preflight runs without connection hooks";
}

TEST_F(RegistryEngine, FrameworkRoutes) {
    auto health = http_request(engine_->guard_port(), "GET", query_target("/health", "k3"));
    ASSERT_TRUE(health.ok());
    EXPECT_EQ(health->status, 200u);
    EXPECT_EQ(health->body, "ok");
    auto meta = http_request(engine_->guard_port(), "GET", query_target("/metadata", "k3"));
    ASSERT_TRUE(meta.ok());
    auto meta_json = json::parse(meta->body, nullptr, false);
    EXPECT_EQ(meta_json["runtime"], "rivetkit");
    EXPECT_EQ(meta_json["version"], "2.3.19");
    auto root = http_request(engine_->guard_port(), "GET", query_target("/", "k3"));
    ASSERT_TRUE(root.ok());
    EXPECT_EQ(root->body, "This is an RivetKit actor.\n\nLearn more at https://rivetkit.org");
    auto missing = http_request(engine_->guard_port(), "GET", query_target("/nowhere", "k3"));
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->status, 404u);
    EXPECT_EQ(json::parse(missing->body, nullptr, false)["code"], "not_found");
    auto inspector =
        http_request(engine_->guard_port(), "GET", query_target("/inspector/state", "k3"));
    ASSERT_TRUE(inspector.ok());
    EXPECT_EQ(inspector->status, 401u);
    auto raw = http_request(engine_->guard_port(), "POST", query_target("/request/foo/bar", "k3"));
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->status, 200u);
    EXPECT_EQ(raw->body, "POST /foo/bar");
}

TEST_F(RegistryEngine, ActorConnectJsonDeliversInitEventsBeforeReplies) {
    auto ws = TestWebSocket::connect(engine_->guard_port(), query_target("/connect", "k4"),
                                     {"rivet", "rivet_encoding.json"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = (*ws)->read_text();
    ASSERT_TRUE(init.ok()) << init.error().to_string();
    auto init_json = json::parse(*init, nullptr, false);
    EXPECT_EQ(init_json["body"]["tag"], "Init");
    EXPECT_FALSE(init_json["body"]["val"]["connectionId"].get<std::string>().empty());

    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"SubscriptionRequest","val":{"eventName":"newCount","subscribe":true}}})")
            .ok());
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"ActionRequest","val":{"id":["$BigInt","0"],"name":"increment","args":[5]}}})")
            .ok());
    auto first = (*ws)->read_text();
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, R"({"body":{"tag":"Event","val":{"args":[5],"name":"newCount"}}})");
    auto second = (*ws)->read_text();
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(*second,
              R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt","0"],"output":5}}})");

    // An HTTP action's broadcast reaches the subscribed socket too.
    auto r = post(query_target("/action/increment", "k4"), R"({"args":[2]})", "json");
    EXPECT_EQ(r.body, R"({"output":7})");
    auto third = (*ws)->read_text();
    ASSERT_TRUE(third.ok());
    EXPECT_EQ(*third, R"({"body":{"tag":"Event","val":{"args":[7],"name":"newCount"}}})");

    // Unknown action: an Error frame with the action id.
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"ActionRequest","val":{"id":["$BigInt","8"],"name":"nope","args":[]}}})")
            .ok());
    auto err = (*ws)->read_text();
    ASSERT_TRUE(err.ok());
    auto err_json = json::parse(*err, nullptr, false);
    EXPECT_EQ(err_json["body"]["tag"], "Error");
    EXPECT_EQ(err_json["body"]["val"]["actionId"], json::array({"$BigInt", "8"}));
    EXPECT_EQ(err_json["body"]["val"]["code"], "action_not_found");
    (*ws)->close();
}

}  // namespace
}  // namespace rivetkit::testing

namespace rivetkit::testing {
namespace {

TEST_F(RegistryEngine, HibernatableConnectionSurvivesSleepAndWakesOnNextMessage) {
    auto ws = TestWebSocket::connect(engine_->guard_port(), query_target("/connect", "k5"),
                                     {"rivet", "rivet_encoding.json"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = (*ws)->read_text();
    ASSERT_TRUE(init.ok());
    auto init_json = json::parse(*init, nullptr, false);
    const std::string actor_id = init_json["body"]["val"]["actorId"];
    const std::string conn_id = init_json["body"]["val"]["connectionId"];
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"SubscriptionRequest","val":{"eventName":"newCount","subscribe":true}}})")
            .ok());
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"ActionRequest","val":{"id":0,"name":"increment","args":[1]}}})")
            .ok());
    EXPECT_EQ(*(*ws)->read_text(),
              R"({"body":{"tag":"Event","val":{"args":[1],"name":"newCount"}}})");
    EXPECT_EQ(*(*ws)->read_text(),
              R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt","0"],"output":1}}})");

    // The actor goes to sleep while the socket stays open at the gateway.
    auto r = post(query_target("/action/goToSleep", "k5"), R"({"args":[]})", "json");
    EXPECT_EQ(r.status, 200u) << r.body;
    ASSERT_TRUE(host_->wait_actor(actor_id, false)) << "actor never stopped";

    // The next client message wakes it: same connection (no new Init), subscription and state
    // restored, the message delivered once.
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"ActionRequest","val":{"id":1,"name":"increment","args":[2]}}})")
            .ok());
    auto first = (*ws)->read_text();
    ASSERT_TRUE(first.ok()) << first.error().to_string() << engine_->log_tail();
    EXPECT_EQ(*first, R"({"body":{"tag":"Event","val":{"args":[3],"name":"newCount"}}})");
    EXPECT_EQ(*(*ws)->read_text(),
              R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt","1"],"output":3}}})");
    EXPECT_TRUE(host_->wait_actor(actor_id, true, 2));
    EXPECT_EQ(host_->actor_events(actor_id, true), 2u);
    auto conns = host_->call([&] {
        auto ctx = host_->registry().actor_context(actor_id);
        std::vector<std::string> ids;
        if (ctx) {
            for (const auto& c : ctx->conns())
                ids.push_back(c.id());
        }
        return ids;
    });
    EXPECT_EQ(conns, std::vector<std::string>{conn_id});
    (*ws)->close();
}

// Actions on one hibernatable connection, one at a time and then many in flight: each is answered
// as soon as it ran, the message indexes they leave ride the actor's save tick (a few saves, not
// one per action, which serialised callers behind KV round trips), and the index saved before the
// sleep is the last one handled: after the wake nothing is delivered twice.
TEST_F(RegistryEngine, ActionsOnAHibernatableConnectionShareSaves) {
    auto ws = TestWebSocket::connect(engine_->guard_port(), query_target("/connect", "k8"),
                                     {"rivet", "rivet_encoding.json"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = (*ws)->read_text();
    ASSERT_TRUE(init.ok());
    const std::string actor_id = json::parse(*init, nullptr, false)["body"]["val"]["actorId"];
    auto saves = [&] {
        return host_->call([&]() -> std::uint64_t {
            auto ctx = host_->registry().actor_context(actor_id);
            return ctx ? core::metrics_ptr(*ctx)->state_saves() : 0;
        });
    };
    auto action = [](int id, const char* name) {
        return R"({"body":{"tag":"ActionRequest","val":{"id":)" + std::to_string(id) +
               R"(,"name":")" + name + R"(","args":[1]}}})";
    };

    // One at a time: a reply that waited for its own save made one KV write per action.
    constexpr int kSequential = 50;
    const std::uint64_t saves_before = saves();
    for (int i = 0; i < kSequential; ++i) {
        ASSERT_TRUE((*ws)->send_text(action(i, "increment")).ok());
        auto reply = (*ws)->read_text();
        ASSERT_TRUE(reply.ok()) << "reply " << i << ": " << reply.error().to_string();
        EXPECT_EQ(json::parse(*reply, nullptr, false)["body"]["val"]["output"], i + 1);
    }
    const std::uint64_t sequential_saves = saves() - saves_before;
    EXPECT_LT(sequential_saves, 10u) << "about one save per action: the bookkeeping is not batched";

    // Pipelined: actions finish in any order; the recorded index only covers a handled prefix.
    constexpr int kPipelined = 200;
    for (int i = 0; i < kPipelined; ++i)
        ASSERT_TRUE((*ws)->send_text(action(kSequential + i, "increment")).ok());
    std::set<std::int64_t> outputs;
    for (int i = 0; i < kPipelined; ++i) {
        auto reply = (*ws)->read_text();
        ASSERT_TRUE(reply.ok()) << "reply " << i << ": " << reply.error().to_string();
        auto body = json::parse(*reply, nullptr, false)["body"];
        ASSERT_EQ(body["tag"], "ActionResponse") << *reply;
        outputs.insert(body["val"]["output"].get<std::int64_t>());
    }
    constexpr int kActions = kSequential + kPipelined;
    EXPECT_EQ(outputs.size(), static_cast<std::size_t>(kPipelined));
    EXPECT_EQ(*outputs.rbegin(), kActions);

    auto r = post(query_target("/action/goToSleep", "k8"), R"({"args":[]})", "json");
    EXPECT_EQ(r.status, 200u) << r.body;
    ASSERT_TRUE(host_->wait_actor(actor_id, false)) << "actor never stopped";
    ASSERT_TRUE(
        (*ws)
            ->send_text(
                R"({"body":{"tag":"ActionRequest","val":{"id":1000,"name":"getCount","args":[]}}})")
            .ok());
    auto woke = (*ws)->read_text();
    ASSERT_TRUE(woke.ok()) << woke.error().to_string();
    EXPECT_EQ(*woke, R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt","1000"],"output":)" +
                         std::to_string(kActions) + "}}}")
        << "a redelivered increment ran twice, or one was lost";
    (*ws)->close();
}

// An action that puts the actor to sleep, called over a hibernatable connection: its reply is
// saved, acked and sent before the actor finishes sleeping (were the socket hibernating first,
// the reply would be dropped and the saved index would keep the gateway's redelivery from
// running the action again). The connection then wakes the actor as usual.
TEST_F(RegistryEngine, ActionThatSleepsTheActorIsAnsweredOnItsHibernatableConnection) {
    auto ws = TestWebSocket::connect(engine_->guard_port(), query_target("/connect", "k7"),
                                     {"rivet", "rivet_encoding.json"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = (*ws)->read_text();
    ASSERT_TRUE(init.ok());
    const std::string actor_id = json::parse(*init, nullptr, false)["body"]["val"]["actorId"];
    for (int round = 0; round < 3; ++round) {
        const std::string id = std::to_string(round * 2);
        ASSERT_TRUE((*ws)
                        ->send_text(R"({"body":{"tag":"ActionRequest","val":{"id":)" + id +
                                    R"(,"name":"goToSleep","args":[]}}})")
                        .ok());
        auto slept = (*ws)->read_text();
        ASSERT_TRUE(slept.ok()) << "round " << round << ": " << slept.error().to_string();
        EXPECT_EQ(*slept, R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt",")" + id +
                              R"("],"output":null}}})");
        ASSERT_TRUE(host_->wait_actor(actor_id, false, static_cast<std::size_t>(round) + 1))
            << "round " << round << ": actor never stopped";

        const std::string next = std::to_string(round * 2 + 1);
        ASSERT_TRUE((*ws)
                        ->send_text(R"({"body":{"tag":"ActionRequest","val":{"id":)" + next +
                                    R"(,"name":"getCount","args":[]}}})")
                        .ok());
        auto woke = (*ws)->read_text();
        ASSERT_TRUE(woke.ok()) << "round " << round << ": " << woke.error().to_string();
        EXPECT_EQ(*woke, R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt",")" + next +
                             R"("],"output":0}}})");
    }
    EXPECT_EQ(host_->actor_events(actor_id, true), 4u) << "one start, then one wake per sleep";
    (*ws)->close();
}

}  // namespace
}  // namespace rivetkit::testing

namespace rivetkit::testing {
namespace {

TEST_F(RegistryEngine, RawWebSocketPassesFramesThroughToTheActor) {
    auto ws = TestWebSocket::connect(engine_->guard_port(), query_target("/websocket/sock", "k6"),
                                     {"rivet", "rivet_encoding.bare"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    ASSERT_TRUE((*ws)->send_text("hello").ok());
    auto echoed = (*ws)->read_text();
    ASSERT_TRUE(echoed.ok()) << echoed.error().to_string();
    EXPECT_EQ(*echoed, "echo:hello");
    ASSERT_TRUE((*ws)->send_text("again").ok());
    EXPECT_EQ((*ws)->read_text().value(), "echo:again");
    (*ws)->close();
}

}  // namespace
}  // namespace rivetkit::testing

namespace rivetkit::testing {
namespace {

TEST_F(RegistryEngine, QueueSendAndInspectorWithItsToken) {
    // POST /queue/{name}: the runtime's QueueSend answer in the request's encoding.
    auto q = post(query_target("/queue/jobs", "k7"), R"({"body":{"a":1}})", "json");
    EXPECT_EQ(q.status, 200u) << q.body;
    EXPECT_EQ(q.body, R"({"status":"completed"})");
    auto bad = http_request(engine_->guard_port(), "GET", query_target("/queue/jobs", "k7"));
    ASSERT_TRUE(bad.ok());
    EXPECT_EQ(bad->status, 405u);

    // The inspector token is the random value the actor stored under KV key [3].
    auto inc = post(query_target("/action/increment", "k7"), R"({"args":[5]})", "json");
    const std::string actor_id = inc.header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor_id.empty());
    auto token = engine_->inspector_token(actor_id);
    ASSERT_TRUE(token.ok()) << token.error().to_string();
    const std::string value = *token;
    ASSERT_FALSE(value.empty());
    auto denied = http_request(engine_->guard_port(), "GET", query_target("/inspector/state", "k7"),
                               {}, {{"authorization", "Bearer wrong"}});
    ASSERT_TRUE(denied.ok());
    EXPECT_EQ(denied->status, 401u);
    auto state = http_request(engine_->guard_port(), "GET", query_target("/inspector/state", "k7"),
                              {}, {{"authorization", "Bearer " + value}});
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->status, 200u) << state->body;
    EXPECT_EQ(json::parse(state->body, nullptr, false)["state"], json({{"count", 5}}));

    // Reading the state for the inspector must not swallow the pending save: after a sleep the
    // actor wakes with the count it had.
    post(query_target("/action/goToSleep", "k7"), R"({"args":[]})", "json");
    ASSERT_TRUE(host_->wait_actor(actor_id, false));
    auto after = post(query_target("/action/getCount", "k7"), R"({"args":[]})", "json");
    EXPECT_EQ(after.body, R"({"output":5})");
}

}  // namespace
}  // namespace rivetkit::testing

// The inspector's HTTP routes on a typed actor, through the real engine 2.3.19's gateway with the
// actor's bearer token: PATCH /inspector/state (the running actor takes the patch over), the
// inspector RPC POST /inspector/action/{name}, GET /inspector/summary, the workflow and trace
// routes upstream answers for actors without them.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "live_stack.hpp"
#include "rivetkit/rivetkit.hpp"

namespace rivetkit::testing {
namespace {

struct TallyState {
    std::int64_t count = 0;
    std::string label;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TallyState, count, label)

Actor<TallyState> tally_actor() {
    using Action = ActionContext<TallyState>;
    return Actor<TallyState>()
        .action("add", [](Action& c, std::int64_t n) { return c.state().count += n; })
        .action("get", [](Action& c) { return Json(std::as_const(c).state()); })
        .action("fail",
                [](Action&) -> std::int64_t { throw UserError("nope", "failed on purpose"); })
        .action("goToSleep", [](Action& c) { c.sleep(); });
}

std::string tally_gateway(const std::string& path) {
    return gateway_target("tally", "t1", path);
}

}  // namespace

TEST(InspectorHttp, PatchActionSummaryAndWorkflowRoutesOnATypedActor) {
    auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
        r.register_actor("tally", tally_actor().factory());
    });
    ASSERT_TRUE(stack.ok()) << stack.error().to_string();
    EngineHarness& engine = *stack->engine;
    LiveHost& host = *stack->host;
    using nlohmann::json;

    auto action = [&](const std::string& name, json args) {
        auto r =
            http_request(engine.guard_port(), "POST", tally_gateway("/action/" + name),
                         json{{"args", std::move(args)}}.dump(), {{"x-rivet-encoding", "json"}});
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
        return r.ok() ? std::move(r).value() : HttpResult{};
    };
    auto first = action("add", json::array({2}));
    ASSERT_EQ(first.status, 200u) << first.body;
    const std::string actor_id = first.header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor_id.empty());
    auto token = engine.inspector_token(actor_id);
    ASSERT_TRUE(token.ok()) << token.error().to_string();
    auto inspector = [&](const std::string& method, const std::string& route,
                         std::string body = {}) {
        std::vector<std::pair<std::string, std::string>> headers{
            {"authorization", "Bearer " + *token}};
        if (!body.empty())
            headers.emplace_back("content-type", "application/json");
        auto r = http_request(engine.guard_port(), method, tally_gateway("/inspector/" + route),
                              std::move(body), std::move(headers));
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
        return r.ok() ? std::move(r).value() : HttpResult{};
    };
    auto body_of = [](const HttpResult& r) { return json::parse(r.body, nullptr, false); };

    // PATCH state: saved, and the running actor's next action works on it.
    auto patched = inspector("PATCH", "state", R"({"state":{"count":40,"label":"patched"}})");
    ASSERT_EQ(patched.status, 200u) << patched.body;
    EXPECT_EQ(body_of(patched), json({{"ok", true}}));
    EXPECT_EQ(body_of(inspector("GET", "state"))["state"],
              json({{"count", 40}, {"label", "patched"}}));
    auto added = action("add", json::array({1}));
    EXPECT_EQ(body_of(added)["output"], 41) << added.body;
    EXPECT_EQ(body_of(inspector("PATCH", "state", R"({"nope":1})"))["code"], "invalid_request");

    // The inspector RPC: output, a user error (500 with its group/code), an unknown action (404).
    auto rpc = inspector("POST", "action/add", R"({"args":[4]})");
    ASSERT_EQ(rpc.status, 200u) << rpc.body;
    EXPECT_EQ(body_of(rpc), json({{"output", 45}}));
    auto failed = inspector("POST", "action/fail", "{}");
    EXPECT_EQ(failed.status, 500u) << failed.body;
    EXPECT_EQ(body_of(failed)["group"], "user") << failed.body;
    EXPECT_EQ(body_of(failed)["code"], "nope") << failed.body;
    auto missing = inspector("POST", "action/missing", R"({"args":[]})");
    EXPECT_EQ(missing.status, 404u) << missing.body;
    EXPECT_EQ(body_of(missing)["code"], "action_not_found") << missing.body;

    // Summary, workflow and traces as upstream answers them for an actor without a workflow.
    auto summary = inspector("GET", "summary");
    ASSERT_EQ(summary.status, 200u) << summary.body;
    const json s = body_of(summary);
    EXPECT_EQ(s["state"], json({{"count", 45}, {"label", "patched"}})) << summary.body;
    EXPECT_EQ(s["isStateEnabled"], true);
    EXPECT_TRUE(s["connections"].is_array());
    EXPECT_EQ(s["rpcs"], json::array({"add", "fail", "get", "goToSleep"})) << summary.body;
    EXPECT_EQ(s["queueSize"], 0);
    EXPECT_EQ(s["isDatabaseEnabled"], true);  // the internal storage lives in SQLite
    EXPECT_EQ(s["isWorkflowEnabled"], false);
    EXPECT_TRUE(s["workflowHistory"].is_null());
    EXPECT_EQ(body_of(inspector("GET", "workflow-history")),
              json({{"history", nullptr}, {"isWorkflowEnabled", false}}));
    EXPECT_EQ(body_of(inspector("POST", "workflow/replay", R"({"entryId":"e1"})")),
              json({{"history", nullptr}, {"isWorkflowEnabled", false}}));
    EXPECT_EQ(body_of(inspector("GET", "traces")),
              json({{"otlp", json::array()}, {"clamped", false}}));
    EXPECT_EQ(inspector("GET", "nope").status, 404u);

    // The queue: POST injects a message as a sender would (its id as a string), DELETE clears it;
    // an empty name or a body that is not JSON is refused with 400 invalid_request.
    auto injected = inspector("POST", "queue", R"({"name":"greeting","body":{"hello":"world"}})");
    ASSERT_EQ(injected.status, 200u) << injected.body;
    const json message = body_of(injected);
    EXPECT_TRUE(message["id"].is_string()) << injected.body;
    EXPECT_EQ(message["name"], "greeting");
    EXPECT_TRUE(message["createdAtMs"].is_number());
    ASSERT_EQ(inspector("POST", "queue", R"({"name":"greeting"})").status, 200u);
    auto listed = body_of(inspector("GET", "queue"));
    EXPECT_EQ(listed["size"], 2) << listed.dump();
    EXPECT_EQ(listed["messages"][0]["id"].dump(), message["id"].get<std::string>());
    auto empty_name = inspector("POST", "queue", R"({"name":"","body":1})");
    EXPECT_EQ(empty_name.status, 400u) << empty_name.body;
    EXPECT_EQ(body_of(empty_name)["code"], "invalid_request");
    auto not_json = inspector("POST", "queue", "{nope");
    EXPECT_EQ(not_json.status, 400u) << not_json.body;
    EXPECT_EQ(body_of(not_json)["code"], "invalid_request");
    auto cleared = inspector("DELETE", "queue");
    ASSERT_EQ(cleared.status, 200u) << cleared.body;
    EXPECT_EQ(body_of(cleared), json::object());
    EXPECT_EQ(body_of(inspector("GET", "queue"))["size"], 0);

    // The patched state is what the actor saved: it wakes with it.
    ASSERT_EQ(action("goToSleep", json::array()).status, 200u);
    ASSERT_TRUE(host.wait_actor(actor_id, false)) << "the actor did not sleep";
    EXPECT_EQ(body_of(action("get", json::array()))["output"],
              json({{"count", 45}, {"label", "patched"}}));
}

}  // namespace rivetkit::testing

// The typed API's raw HTTP (on_request), raw WebSocket (on_websocket), vars (create_vars) and
// on_state_change, driven through a real ActorTask on virtual time.

#include <stdexcept>

#include "api_test_support.hpp"

namespace rivetkit::api_test {
namespace {

struct RawState {
    std::int64_t hits = 0;
    std::vector<std::string> seen;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RawState, hits, seen)

struct RawVars {
    int generation = 0;
    std::string made_for;
    std::vector<WebSocket> sockets;
};

using Ctx = ActorContext<RawState, RawVars>;
using Act = ActionContext<RawState, RawVars>;

// What the test observes from outside the actor.
struct RawProbe {
    int vars_made = 0;
    std::vector<Json> changes;  // the state on_state_change saw
};

Actor<RawState, RawVars> raw_actor(std::shared_ptr<RawProbe> probe) {
    return Actor<RawState, RawVars>()
        .create_vars([probe](Ctx& c) {
            return RawVars{++probe->vars_made, c.actor_id(), {}};
        })
        .on_state_change(
            [probe](Ctx&, const RawState& state) { probe->changes.push_back(Json(state)); })
        .on_request([](Ctx& c, const Request& req) -> Response {
            if (req.path == "/fail")
                throw UserError("teapot", "no coffee here", {{"path", req.path}});
            if (req.path == "/crash")
                throw std::runtime_error("boom");
            if (req.path == "/peek")
                return Response::text("hits=" + std::to_string(std::as_const(c).state().hits));
            c.state().hits += 1;
            Response r = Response::json({{"method", req.method},
                                         {"path", req.path},
                                         {"header", req.header("X-Test").value_or("")},
                                         {"body", std::string(req.body_text())},
                                         {"hits", std::as_const(c).state().hits},
                                         {"vars_for", c.vars().made_for}},
                                        201);
            r.headers["x-actor"] = "raw";
            return r;
        })
        .on_websocket([](Ctx& c, WebSocket ws, const Request& upgrade) -> Task<void> {
            if (upgrade.path == "/deny")
                throw UserError("forbidden", "not this path");
            c.vars().sockets.push_back(ws);
            ws.send_text("hello " + upgrade.path);
            while (auto message = co_await ws.recv()) {
                if (message->binary) {
                    Bytes reversed(message->data.rbegin(), message->data.rend());
                    ws.send_binary(reversed);
                    continue;
                }
                const std::string text(message->text());
                if (text == "bye") {
                    ws.close(4000, "bye");
                    break;
                }
                c.state().seen.push_back(text);
                ws.send_text("echo:" + text);
            }
        })
        .action("notifyAll",
                [](Act& c, std::string text) {
                    for (auto& ws : c.vars().sockets)
                        ws.send_text(text);
                    return c.vars().sockets.size();
                })
        .action("generation", [](Act& c) { return c.vars().generation; })
        .action("bump",
                [](Act& c, std::int64_t by) {
                    c.state().hits += by;
                    return std::as_const(c).state().hits;
                })
        .action("seen", [](Act& c) { return std::as_const(c).state().seen; });
}

// A core::RawWebSocket whose outbound frames land in `sent` and whose inbound side the test
// feeds through `inbound`.
struct FakeSocket {
    struct Frame {
        std::string data;
        bool binary = false;
        friend bool operator==(const Frame&, const Frame&) = default;
    };
    std::shared_ptr<std::vector<Frame>> sent = std::make_shared<std::vector<Frame>>();
    std::shared_ptr<std::optional<std::pair<std::uint16_t, std::string>>> closed =
        std::make_shared<std::optional<std::pair<std::uint16_t, std::string>>>();
    std::optional<rt::Sender<core::RawWebSocket::Inbound>> inbound;
    std::shared_ptr<core::RawWebSocket> socket;

    FakeSocket() {
        auto [tx, rx] = rt::unbounded_channel<core::RawWebSocket::Inbound>();
        inbound.emplace(std::move(tx));
        socket = std::make_shared<core::RawWebSocket>(
            [sent = sent](Bytes data, bool binary) {
                sent->push_back({std::string(data.begin(), data.end()), binary});
            },
            [closed = closed](std::uint16_t code, std::string reason) {
                *closed = std::pair(code, std::move(reason));
            },
            std::move(rx));
    }
    void text(std::string s) const {
        inbound->send(core::RawWebSocket::Message{Bytes(s.begin(), s.end()), false, std::nullopt});
    }
    void binary(Bytes b) const {
        inbound->send(core::RawWebSocket::Message{std::move(b), true, std::nullopt});
    }
    void peer_close(std::uint16_t code) const {
        inbound->send(core::RawWebSocket::Close{code, "peer"});
    }
};

core::HttpRequest http(std::string method, std::string path, std::string body = {}) {
    core::HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    r.headers["x-test"] = "yes";
    r.body = Bytes(body.begin(), body.end());
    return r;
}

Json body_json(const core::HttpResponse& r) {
    return Json::parse(std::string(r.body.begin(), r.body.end()));
}

TEST(TypedRaw, on_request_gets_the_request_and_answers_the_response) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto r = co_await h.request(http("POST", "/hello?x=1", "payload"));
        CO_ASSERT(r.ok());
        EXPECT_EQ(r->status, 201);
        EXPECT_EQ(r->headers["content-type"], "application/json");
        EXPECT_EQ(r->headers["x-actor"], "raw");
        EXPECT_EQ(body_json(*r), (Json{{"method", "POST"},
                                       {"path", "/hello?x=1"},
                                       {"header", "yes"},
                                       {"body", "payload"},
                                       {"hits", 1},
                                       {"vars_for", "actor-api"}}));
        // A state change made by on_request is saved like an action's.
        EXPECT_TRUE(h.ctx().save_requested());
        auto peek = co_await h.request(http("GET", "/peek"));
        CO_ASSERT(peek.ok());
        EXPECT_EQ(std::string(peek->body.begin(), peek->body.end()), "hits=1");
        EXPECT_EQ(peek->headers["content-type"], "text/plain; charset=utf-8");
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedRaw, on_request_exceptions_become_structured_errors) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto fail = co_await h.request(http("GET", "/fail"));
        CO_ASSERT(!fail.ok());
        EXPECT_EQ(fail.error(), errors::user("teapot", "no coffee here", R"({"path":"/fail"})"));
        auto crash = co_await h.request(http("GET", "/crash"));
        CO_ASSERT(!crash.ok());
        EXPECT_TRUE(crash.error().is("core", "internal_error")) << crash.error().to_string();
        EXPECT_FALSE(is_public(crash.error()));
        // Still serving.
        EXPECT_TRUE((co_await h.request(http("GET", "/peek"))).ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedRaw, actor_without_on_request_answers_404) {
    ActorHarness h(Actor<RawState>().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto r = co_await h.request(http("GET", "/x"));
        CO_ASSERT(r.ok());
        EXPECT_EQ(r->status, 404);
        FakeSocket ws;
        auto refused = co_await h.open_websocket(ws.socket);
        EXPECT_FALSE(refused.ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedRaw, on_websocket_coroutine_serves_the_socket_for_its_life) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        FakeSocket ws;
        CO_ASSERT((co_await h.open_websocket(ws.socket)).ok());
        using F = FakeSocket::Frame;
        EXPECT_EQ(*ws.sent, (std::vector<F>{{"hello /", false}}));
        ws.text("one");
        ws.binary(Bytes{1, 2, 3});
        co_await h.clock().sleep_for(1ms);
        EXPECT_EQ(*ws.sent,
                  (std::vector<F>{{"hello /", false}, {"echo:one", false}, {"\3\2\1", true}}));
        // Actions run while the hook is suspended in recv(), and reach the socket through vars.
        auto sent = co_await h.call("notifyAll", "from action");
        CO_ASSERT(sent.ok());
        EXPECT_EQ(*sent, Json(1));
        EXPECT_EQ(ws.sent->back(), (F{"from action", false}));
        ws.text("two");
        ws.text("bye");
        co_await h.clock().sleep_for(1ms);
        EXPECT_EQ(ws.sent->back(), (F{"echo:two", false}));
        CO_ASSERT(ws.closed->has_value());
        EXPECT_EQ(**ws.closed, std::pair(std::uint16_t{4000}, std::string("bye")));
        // The hook's state changes were synced (and notified) when it ended.
        auto seen = co_await h.call("seen");
        CO_ASSERT(seen.ok());
        EXPECT_EQ(*seen, Json::array({"one", "two"}));
        EXPECT_TRUE(h.ctx().save_requested());
        CO_ASSERT(!probe->changes.empty());
        EXPECT_EQ(probe->changes.back()["seen"], Json::array({"one", "two"}));
        // Sends after the close are dropped.
        const auto frames = ws.sent->size();
        CO_ASSERT((co_await h.call("notifyAll", "late")).ok());
        EXPECT_EQ(ws.sent->size(), frames);
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedRaw, on_websocket_refuses_by_throwing_and_ends_on_peer_close) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        // The upgrade request reaches the hook; throwing before the first suspension refuses.
        FakeSocket denied;
        core::HttpRequest upgrade;
        upgrade.path = "/deny";
        Status refused = co_await h.open_websocket(denied.socket, std::move(upgrade));
        CO_ASSERT(!refused.ok());
        EXPECT_EQ(refused.error(), errors::user("forbidden", "not this path"));

        FakeSocket ws;
        CO_ASSERT((co_await h.open_websocket(ws.socket)).ok());
        ws.peer_close(1001);
        co_await h.clock().sleep_for(1ms);
        EXPECT_FALSE(ws.closed->has_value()) << "the peer closed; nothing to send back";
        EXPECT_TRUE((co_await h.call("generation")).ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedVars, vars_are_made_per_generation_and_never_saved) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ(probe->vars_made, 1);
        auto first = co_await h.call("generation");
        CO_ASSERT(first.ok());
        EXPECT_EQ(*first, Json(1));
        FakeSocket ws;
        CO_ASSERT((co_await h.open_websocket(ws.socket)).ok());
        auto one = co_await h.call("notifyAll", "x");
        CO_ASSERT(one.ok());
        EXPECT_EQ(*one, Json(1));
        CO_ASSERT((co_await h.call("bump", 2)).ok());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        // Only the state was saved.
        EXPECT_EQ(h.stored_state(), (Json{{"hits", 2}, {"seen", Json::array()}}));

        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ(probe->vars_made, 2);
        auto second = co_await h.call("generation");
        CO_ASSERT(second.ok());
        EXPECT_EQ(*second, Json(2));
        auto none = co_await h.call("notifyAll", "y");
        CO_ASSERT(none.ok());
        EXPECT_EQ(*none, Json(0)) << "the woken generation starts with fresh vars";
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedVars, default_vars_without_create_vars) {
    struct Counter {
        int calls = 0;
    };
    auto actor = Actor<RawState, Counter>().action(
        "tick", [](ActionContext<RawState, Counter>& c) { return ++c.vars().calls; });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ((co_await h.call("tick")).value(), Json(1));
        EXPECT_EQ((co_await h.call("tick")).value(), Json(2));
        EXPECT_FALSE(h.ctx().save_requested()) << "vars changes are not state changes";
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedStateChange, runs_after_changing_handlers_only) {
    auto probe = std::make_shared<RawProbe>();
    ActorHarness h(raw_actor(probe).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_TRUE(probe->changes.empty()) << "creating the state is not a change";
        CO_ASSERT((co_await h.call("bump", 0)).ok());
        EXPECT_TRUE(probe->changes.empty()) << "an unchanged state is not a change";
        CO_ASSERT((co_await h.call("bump", 3)).ok());
        CO_ASSERT(probe->changes.size() == 1);
        EXPECT_EQ(probe->changes[0]["hits"], Json(3));
        CO_ASSERT((co_await h.request(http("GET", "/peek"))).ok());
        EXPECT_EQ(probe->changes.size(), 1u);
        CO_ASSERT((co_await h.request(http("GET", "/count"))).ok());
        CO_ASSERT(probe->changes.size() == 2);
        EXPECT_EQ(probe->changes[1]["hits"], Json(4));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// As upstream 2.3.19: on_state_change observes. Taking the mutable state inside it throws
// actor/state_mutation_reentrant and changes nothing; vars may change; a throw is logged.
TEST(TypedStateChange, mutating_state_inside_it_is_refused_and_throws_are_logged) {
    struct Seen {
        int calls = 0;
        std::vector<std::string> refusals;
    };
    auto seen = std::make_shared<Seen>();
    auto actor =
        Actor<RawState, std::vector<std::int64_t>>()
            .on_state_change(
                [seen](ActorContext<RawState, std::vector<std::int64_t>>& c, const RawState& s) {
                    ++seen->calls;
                    c.vars().push_back(s.hits);
                    try {
                        c.state().seen.push_back("observed " + std::to_string(s.hits));
                    } catch (const ErrorException& e) {
                        seen->refusals.push_back(e.error().id());
                    }
                    if (s.hits == 13)
                        throw std::runtime_error("unlucky");
                })
            .action("set", [](ActionContext<RawState, std::vector<std::int64_t>>& c,
                              std::int64_t v) { c.state().hits = v; })
            .action("get", [](ActionContext<RawState, std::vector<std::int64_t>>& c) {
                return Json{{"state", Json(std::as_const(c).state())}, {"vars", Json(c.vars())}};
            });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        CO_ASSERT((co_await h.call("set", 5)).ok());
        EXPECT_EQ(seen->calls, 1);
        CO_ASSERT((co_await h.call("set", 13)).ok());
        EXPECT_EQ(seen->calls, 2);
        EXPECT_EQ(seen->refusals, (std::vector<std::string>{"actor/state_mutation_reentrant",
                                                            "actor/state_mutation_reentrant"}));
        auto got = co_await h.call("get");
        CO_ASSERT(got.ok());
        EXPECT_EQ((*got)["state"]["seen"], Json::array());
        EXPECT_EQ((*got)["vars"], Json::array({5, 13}));
        // A read does not run it.
        EXPECT_EQ(seen->calls, 2);
        co_await h.clock().sleep_for(1100ms);
        EXPECT_EQ(h.stored_state(), (*got)["state"]);
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedRaw, coroutine_on_request_and_create_vars) {
    struct Slow {
        std::string tag;
    };
    auto actor =
        Actor<RawState, Slow>()
            .create_vars([](ActorContext<RawState, Slow>& c) -> Task<Slow> {
                co_await c.core_context().clock().sleep_for(5ms);
                co_return Slow{"made"};
            })
            .on_request([](ActorContext<RawState, Slow>& c, const Request& req) -> Task<Response> {
                co_await c.core_context().clock().sleep_for(50ms);
                c.state().hits += 1;
                co_return Response::text(c.vars().tag + " " + req.path, 202);
            });
    auto plain = Actor<RawState, Slow>().create_vars([] { return Slow{"plain"}; });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        const auto sent_at = h.clock().now();
        auto r = co_await h.request(http("GET", "/slow"));
        CO_ASSERT(r.ok());
        EXPECT_EQ(r->status, 202);
        EXPECT_EQ(std::string(r->body.begin(), r->body.end()), "made /slow");
        EXPECT_GE(h.clock().now() - sent_at, std::chrono::milliseconds(50));
        EXPECT_TRUE(h.ctx().save_requested()) << "a change after a suspension is still saved";
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
    ActorHarness p(plain.factory());
    p.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await p.start()).ok());
        EXPECT_TRUE((co_await p.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

namespace rivetkit::api_test {
namespace {

// The inspector's PatchState replaces the state in core; the typed runtime takes it over before
// its next event (that event sees it, on_state_change runs for it), and a patch that does not fit
// the state type is logged and overwritten by the next save of the current state.
TEST(TypedStateChange, inspector_patch_is_taken_over_before_the_next_event) {
    auto changes = std::make_shared<std::vector<std::int64_t>>();
    auto actor = Actor<RawState>()
                     .on_state_change([changes](ActorContext<RawState>&, const RawState& s) {
                         changes->push_back(s.hits);
                     })
                     .action("bump", [](ActionContext<RawState>& c) { return ++c.state().hits; })
                     .action("get", [](ActionContext<RawState>& c) {
                         return Json(std::as_const(c).state());
                     });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ((co_await h.call("bump")).value(), Json(1));
        const Json patch = Json::parse(R"({"hits":40,"seen":["x"]})");
        const Json after = Json::parse(R"({"hits":41,"seen":["x"]})");
        Status patched = co_await h.ctx().patch_state(to_cbor(patch));
        CO_ASSERT(patched.ok());
        EXPECT_EQ(h.stored_state().value()["hits"], Json(40)) << "the patch is saved at once";
        EXPECT_EQ((co_await h.call("bump")).value(), Json(41));
        EXPECT_EQ(*changes, (std::vector<std::int64_t>{1, 40, 41}));
        co_await h.clock().sleep_for(1100ms);
        EXPECT_EQ(h.stored_state(), after);

        // A patch of the wrong shape: the actor keeps its state and saves it back.
        const Json wrong("not a state");
        Status wrong_patched = co_await h.ctx().patch_state(to_cbor(wrong));
        CO_ASSERT(wrong_patched.ok());
        EXPECT_EQ(h.stored_state(), wrong);
        auto got = co_await h.call("get");
        EXPECT_EQ(got.value(), after);
        co_await h.clock().sleep_for(1100ms);
        EXPECT_EQ(h.stored_state(), after);
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

// access-control.ts, stateless.ts, state-zod-coercion.ts, save-state.ts

#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

// `params?.<field> === false`
bool is_false(const Json& params, const char* field) {
    if (!params.is_object())
        return false;
    auto it = params.find(field);
    return it != params.end() && it->is_boolean() && !it->get<bool>();
}

// `(await c.queue.tryNext(names ? { names } : undefined))?.body ?? null`
boost::asio::awaitable<Json> try_take(const Act& c, std::vector<std::string> names) {
    QueueReceiveOptions opts;
    opts.names = std::move(names);
    std::optional<QueueMessage> m = co_await c.queue().try_next(std::move(opts));
    co_return m ? m->body : Json();
}

JsonActor access_control_actor() {
    auto record = [](const char* field, bool allow) {
        return [field, allow](Ctx& c, const Conn& conn) {
            c.state()[field] = conn.id();
            return allow;
        };
    };
    auto broadcast = [](const char* event) {
        return [event](Act& c, std::string value) { c.broadcast(event, Json{{"value", value}}); };
    };
    return JsonActor()
        .state(Json{{"lastCanPublishConnId", ""}, {"lastCanSubscribeConnId", ""}})
        .event("allowedEvent", record("lastCanSubscribeConnId", true))
        .event("blockedEvent", record("lastCanSubscribeConnId", false))
        .queue("allowedQueue", record("lastCanPublishConnId", true))
        .queue("blockedQueue", record("lastCanPublishConnId", false))
        .on_before_connect([](Ctx&, Json params) {
            if (is_false(params, "allowRequest") || is_false(params, "allowWebSocket"))
                throw Forbidden();
        })
        .on_request([](Ctx&, Request& request) -> Response {
            const std::string path = request.path.substr(0, request.path.find('?'));
            if (path == "/status")
                return Response::json(Json{{"ok", true}});
            return Response::text("Not Found", 404);
        })
        .on_websocket([](Ctx&, WebSocket& ws) {
            ws.send_text(Json{{"type", "welcome"}}.dump());
        })
        .action("allowedAction", [](Act&, std::string value) { return "allowed:" + value; })
        .action("allowedGetLastCanPublishConnId",
                [](Act& c) { return std::as_const(c).state()["lastCanPublishConnId"]; })
        .action("allowedGetLastCanSubscribeConnId",
                [](Act& c) { return std::as_const(c).state()["lastCanSubscribeConnId"]; })
        .action("allowedReceiveQueue", [](Act& c) { return try_take(c, {"allowedQueue"}); })
        .action("allowedReceiveAnyQueue", [](Act& c) { return try_take(c, {}); })
        .action("allowedBroadcastAllowedEvent", broadcast("allowedEvent"))
        .action("allowedBroadcastBlockedEvent", broadcast("blockedEvent"))
        .action("allowedBroadcastUndefinedEvent", broadcast("undefinedEvent"));
}

JsonActor access_control_no_queues_actor() {
    return JsonActor().state(Json::object()).action("readAnyQueue", [](Act& c) {
        return try_take(c, {});
    });
}

// `try { touch(); return { success: true } } catch (e) { return { success: false, error } }`
template <typename F>
Json attempt(F touch) {
    try {
        touch();
        return Json{{"success", true}};
    } catch (const ErrorException& e) {
        return Json{{"success", false}, {"error", e.error().message()}};
    }
}

Actor<Stateless> stateless_actor() {
    using StatelessAction = ActionContext<Stateless>;
    ActorOptions options;
    options.database = false;  // the fixture declares no `db`
    return Actor<Stateless>()
        .options(options)
        .action("ping", [](StatelessAction&) { return std::string("pong"); })
        .action("echo", [](StatelessAction&, Json message) { return message; })
        .action("getActorId", [](StatelessAction& c) { return c.actor_id(); })
        .action("tryGetState", [](StatelessAction& c) { return attempt([&] { (void)c.state(); }); })
        .action("tryGetDb", [](StatelessAction& c) -> Task {
            Json out = Json{{"success", true}};
            try {
                (void)co_await c.db();
            } catch (const ErrorException& e) {
                out = Json{{"success", false}, {"error", e.error().message()}};
            }
            co_return out;
        });
}

// The fixture parses the state with a zod schema on wake: missing fields get their defaults.
JsonActor state_zod_coercion_actor() {
    return JsonActor()
        .state(Json{{"count", 0}, {"label", "default"}})
        .options(sleep_options(100ms))
        .on_wake([](Ctx& c) {
            Json& state = c.state();
            if (!state.contains("count") || state["count"].is_null())
                state["count"] = 0;
            if (!state.contains("label") || state["label"].is_null())
                state["label"] = "default";
        })
        .action("getState",
                [](Act& c) {
                    return pick(std::as_const(c).state(), {"count", "label"});
                })
        .action("setCount", [](Act& c, Json count) { c.state()["count"] = count; })
        .action("setLabel", [](Act& c, std::string label) { c.state()["label"] = label; })
        .action("triggerSleep", [](Act& c) { c.sleep(); });
}

JsonActor save_state_observer() {
    return JsonActor()
        .state(Json{{"phases", Json::object()}})
        .action("recordPhase", [](Act& c, std::string key,
                                  std::string phase) { c.state()["phases"][key] = phase; })
        .action("getPhase",
                [](Act& c, std::string key) {
                    return std::as_const(c).state()["phases"].value(key, Json());
                })
        .action("reset", [](Act& c, std::string key) { c.state()["phases"].erase(key); });
}

// Saves (now, or within maxWait), tells the observer, then never returns (until the actor stops).
Void save_then_block(Act& c, Json value, SaveStateOptions save, std::string phase) {
    c.state()["value"] = value;
    co_await c.save_state(save);
    // Named, not built inside the co_await (GCC 12 cannot initialise its array there).
    Json args = Json::array();
    args.push_back(join_key(c.key()));
    args.push_back(std::move(phase));
    std::vector<std::string> observer{"observer"};
    co_await call_actor("saveStateObserver", std::move(observer), "recordPhase", std::move(args));
    while (co_await c.sleep_for(1h)) {
    }
}

JsonActor save_state_actor() {
    return JsonActor()
        .state(Json{{"value", 0}})
        .action("getValue", [](Act& c) { return std::as_const(c).state()["value"]; })
        .action("saveImmediateAndBlock",
                [](Act& c, Json value) -> Void {
                    co_await save_then_block(c, std::move(value), SaveStateOptions{}, "immediate");
                })
        .action("saveDeferredAndBlock", [](Act& c, Json value, std::int64_t max_wait_ms) -> Void {
            SaveStateOptions save{false, std::chrono::milliseconds(max_wait_ms)};
            co_await save_then_block(c, std::move(value), save, "deferred");
        });
}

}  // namespace

void use_access_fixtures(Registry& registry) {
    registry.use("accessControlActor", access_control_actor());
    registry.use("accessControlNoQueuesActor", access_control_no_queues_actor());
    registry.use("statelessActor", stateless_actor());
    registry.use("stateZodCoercionActor", state_zod_coercion_actor());
    registry.use("saveStateObserver", save_state_observer());
    registry.use("saveStateActor", save_state_actor());
}

}  // namespace rivetkit::driver

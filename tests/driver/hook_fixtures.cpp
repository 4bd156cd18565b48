// lifecycle-hooks.ts, actor-onstatechange.ts, conn-error-serialization.ts

#include <stdexcept>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

JsonActor ping_actor() {
    return JsonActor().action("ping", [](Act&) { return "pong"; });
}

void use_lifecycle_hook_actors(Registry& registry) {
    ActorOptions slow_preflight;
    slow_preflight.on_before_connect_timeout = 100ms;
    registry.use("beforeConnectTimeoutActor",
                 ping_actor()
                     .options(slow_preflight)
                     .on_before_connect([](Ctx& c, Json) -> boost::asio::awaitable<void> {
                         co_await c.sleep_for(200ms);
                     }));
    registry.use("beforeConnectRejectActor", ping_actor().on_before_connect([](Ctx&, Json params) {
        if (truthy_field(params, "shouldReject"))
            throw UserError("connection_rejected", "Connection rejected by policy",
                            Json{{"reason", "test"}});
    }));
    registry.use("beforeConnectGenericErrorActor",
                 ping_actor().on_before_connect([](Ctx&, Json params) {
                     if (truthy_field(params, "shouldFail"))
                         throw std::runtime_error("internal failure in onBeforeConnect");
                 }));
    registry.use("stateChangeRecursionActor",
                 JsonActor()
                     .state(Json{{"value", 0}, {"derivedValue", 0}})
                     .create_vars([] {
                         return Json{{"onStateChangeCallCount", 0}, {"derivedValue", 0}};
                     })
                     .on_state_change([](Ctx& c, const Json& state) {
                         c.vars()["derivedValue"] = add(state["value"], state["value"]);
                         c.vars()["onStateChangeCallCount"] =
                             add(c.vars()["onStateChangeCallCount"], 1);
                     })
                     .action("setValue",
                             [](Act& c, Json v) {
                                 c.state()["value"] = v;
                                 return v;
                             })
                     .action("getDerivedValue", [](Act& c) { return c.vars()["derivedValue"]; })
                     .action("getOnStateChangeCallCount",
                             [](Act& c) { return c.vars()["onStateChangeCallCount"]; })
                     .action("getAll", [](Act& c) {
                         return Json{{"value", std::as_const(c).state()["value"]},
                                     {"derivedValue", c.vars()["derivedValue"]},
                                     {"callCount", c.vars()["onStateChangeCallCount"]}};
                     }));
    registry.use("stateChangeReentrantMutationActor",
                 JsonActor()
                     .state(Json{{"value", 0}, {"derivedValue", 0}})
                     .create_vars([] {
                         return Json{{"callCount", 0}, {"errorGroup", ""}, {"errorCode", ""}};
                     })
                     .on_state_change([](Ctx& c, const Json&) {
                         c.vars()["callCount"] = add(c.vars()["callCount"], 1);
                         try {
                             Json& state = c.state();
                             state["derivedValue"] = add(state["value"], state["value"]);
                         } catch (const ErrorException& e) {
                             c.vars()["errorGroup"] = e.error().group();
                             c.vars()["errorCode"] = e.error().code();
                         }
                     })
                     .action("setValue",
                             [](Act& c, Json v) {
                                 c.state()["value"] = v;
                                 return v;
                             })
                     .action("getResult", [](Act& c) {
                         const Json& s = std::as_const(c).state();
                         return Json{{"value", s["value"]},
                                     {"derivedValue", s["derivedValue"]},
                                     {"callCount", c.vars()["callCount"]},
                                     {"errorGroup", c.vars()["errorGroup"]},
                                     {"errorCode", c.vars()["errorCode"]}};
                     }));
}

void use_on_state_change_actor(Registry& registry) {
    registry.use(
        "onStateChangeActor",
        JsonActor()
            .state(Json{{"value", 0}, {"blob", Json::array()}})
            .create_vars([] {
                return Json{{"changeCount", 0}};
            })
            .on_state_change([](Ctx& c, const Json&) {
                c.vars()["changeCount"] = add(c.vars()["changeCount"], 1);
            })
            .action("setValue",
                    [](Act& c, Json v) {
                        c.state()["value"] = v;
                        return v;
                    })
            .action("incrementMultiple",
                    [](Act& c, std::int64_t times) {
                        for (std::int64_t i = 0; i < times; ++i)
                            c.state()["value"] = add(c.state()["value"], 1);
                        return c.state()["value"];
                    })
            .action("getValue", [](Act& c) { return std::as_const(c).state()["value"]; })
            .action("getDoubled",
                    [](Act& c) {
                        const Json& v = std::as_const(c).state()["value"];
                        return add(v, v);
                    })
            .action("getChangeCount", [](Act& c) { return c.vars()["changeCount"]; })
            .action("resetChangeCount", [](Act& c) { c.vars()["changeCount"] = 0; })
            .action("stateIdentityStable",
                    [](Act& c) { return &std::as_const(c).state() == &std::as_const(c).state(); })
            .action("seedLarge",
                    [](Act& c, std::int64_t size) {
                        Json blob = Json::array();
                        for (std::int64_t i = 0; i < size; ++i)
                            blob.push_back(i);
                        c.state()["blob"] = std::move(blob);
                        return size;
                    })
            .action("churn", [](Act& c, std::int64_t times) {
                const auto start = std::chrono::steady_clock::now();
                for (std::int64_t i = 0; i < times; ++i)
                    c.state()["value"] = add(c.state()["value"], 1);
                return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                 start)
                    .count();
            }));
}

void use_conn_error_serialization_actor(Registry& registry) {
    registry.use("connErrorSerializationActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .create_conn_state([](Ctx&, Json params) {
                         if (truthy_field(params, "shouldThrow"))
                             throw PublicError("connection", "custom_error",
                                               "Test error from createConnState");
                         return Json{{"initialized", true}};
                     })
                     .action("getValue", [](Act& c) { return std::as_const(c).state()["value"]; }));
}

}  // namespace

void use_hook_fixtures(Registry& registry) {
    use_lifecycle_hook_actors(registry);
    use_on_state_change_actor(registry);
    use_conn_error_serialization_actor(registry);
}

}  // namespace rivetkit::driver

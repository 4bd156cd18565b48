// action-timeout.ts, action-types.ts, large-payloads.ts, error-handling.ts

#include <stdexcept>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

ActorOptions action_timeout(std::chrono::milliseconds timeout) {
    ActorOptions options;
    options.action_timeout = timeout;
    return options;
}

// An action that waits `ms` and then answers `text`.
auto waits_then(std::chrono::milliseconds ms, std::string text) {
    return [ms, text](Act& c) -> Task {
        co_await c.sleep_for(ms);
        co_return text;
    };
}

void use_timeout_actors(Registry& registry) {
    registry.use("shortTimeoutActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .options(action_timeout(50ms))
                     .action("quickAction", [](Act&) { return "quick response"; })
                     .action("slowAction", waits_then(100ms, "slow response")));
    registry.use("longTimeoutActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .options(action_timeout(200ms))
                     .action("delayedAction", waits_then(100ms, "delayed response")));
    registry.use("defaultTimeoutActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .action("normalAction", waits_then(50ms, "normal response")));
    registry.use("syncTimeoutActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .options(action_timeout(50ms))
                     .action("syncAction", [](Act&) { return "sync response"; }));
}

Json amount_or_one(const std::optional<Json>& amount) {
    return amount && !amount->is_null() ? *amount : Json(1);
}

void use_action_type_actors(Registry& registry) {
    registry.use("syncActionActor",
                 JsonActor()
                     .state(Json{{"value", 0}})
                     .action("increment",
                             [](Act& c, std::optional<Json> amount) {
                                 c.state()["value"] =
                                     add(c.state()["value"], amount_or_one(amount));
                                 return c.state()["value"];
                             })
                     .action("getInfo",
                             [](Act& c) {
                                 return Json{{"currentValue", std::as_const(c).state()["value"]},
                                             {"timestamp", c.now_ms()}};
                             })
                     .action("reset", [](Act& c) { c.state()["value"] = 0; }));
    registry.use("asyncActionActor",
                 JsonActor()
                     .state(Json{{"value", 0}, {"data", nullptr}})
                     .action("delayedIncrement",
                             [](Act& c, std::optional<Json> amount) -> Task {
                                 co_await c.sleep_for(0ms);
                                 c.state()["value"] =
                                     add(c.state()["value"], amount_or_one(amount));
                                 co_return c.state()["value"];
                             })
                     .action("fetchData",
                             [](Act& c, Json id) -> Task {
                                 co_await c.sleep_for(0ms);
                                 Json data{{"id", id}, {"timestamp", c.now_ms()}};
                                 c.state()["data"] = data;
                                 co_return data;
                             })
                     .action("asyncWithError", [](Act& c, bool should_error) -> Task {
                         co_await c.sleep_for(0ms);
                         if (should_error)
                             throw UserError("user_error", "Intentional error");
                         co_return "Success";
                     }));
    // Actions on one actor run concurrently: a coroutine action yields while it waits.
    registry.use(
        "concurrentActionActor",
        JsonActor()
            .state(Json{{"events", Json::array()}})
            .action("runWithDelay",
                    [](Act& c, std::string label, std::int64_t delay_ms) -> Task {
                        c.state()["events"].push_back("start:" + label);
                        co_await c.sleep_for(std::chrono::milliseconds(delay_ms));
                        c.state()["events"].push_back("finish:" + label);
                        co_return label;
                    })
            .action("getEvents", [](Act& c) { return std::as_const(c).state()["events"]; }));
    // Dotted action names; `calculator.add` takes a number (the typed parameter is its schema:
    // anything else answers actor/validation_error).
    registry.use(
        "nestedActionActor",
        JsonActor()
            .state(Json{{"total", 0}})
            .action("calculator.add",
                    [](Act& c, double amount) {
                        c.state()["total"] = add(c.state()["total"], Json(amount));
                        return c.state()["total"];
                    })
            .action("calculator.read", [](Act& c) { return std::as_const(c).state()["total"]; }));
    registry.use(
        "promiseActor",
        JsonActor()
            .state(Json{{"results", Json::array()}})
            .action("resolvedPromise", [](Act&) -> Task { co_return "resolved value"; })
            .action("delayedPromise",
                    [](Act& c) -> Task {
                        c.state()["results"].push_back("delayed");
                        co_return "delayed value";
                    })
            .action("rejectedPromise",
                    [](Act&) -> Task {
                        throw UserError("user_error", "promised rejection");
                        co_return nullptr;
                    })
            .action("getResults", [](Act& c) { return std::as_const(c).state()["results"]; }));
}

Json process_large_request(const Json& data) {
    const Json& items = data.at("items");
    return Json{{"itemCount", items.size()},
                {"firstItem", items.empty() ? Json() : items.front()},
                {"lastItem", items.empty() ? Json() : items.back()}};
}

Json large_response(std::int64_t count) {
    Json items = Json::array();
    for (std::int64_t i = 0; i < count; ++i)
        items.push_back("Item " + std::to_string(i) +
                        " with some additional text to increase size");
    return Json{{"items", std::move(items)}};
}

void use_payload_actors(Registry& registry) {
    registry.use("largePayloadActor",
                 JsonActor()
                     .state(Json::object())
                     .action("processLargeRequest",
                             [](Act&, Json data) { return process_large_request(data); })
                     .action("getLargeResponse",
                             [](Act&, std::int64_t count) { return large_response(count); })
                     .action("echo", [](Act&, Json data) { return data; }));
    registry.use("largePayloadConnActor",
                 JsonActor()
                     .state(Json::object())
                     .create_conn_state([](Ctx&) {
                         return Json{{"lastRequestSize", 0}};
                     })
                     .action("processLargeRequest",
                             [](Act& c, Json data) {
                                 if (c.conn()) {
                                     Json state = c.conn()->state_json();
                                     state["lastRequestSize"] = data.at("items").size();
                                     c.conn()->set_state(state);
                                 }
                                 return process_large_request(data);
                             })
                     .action("getLargeResponse",
                             [](Act&, std::int64_t count) { return large_response(count); })
                     .action("echo", [](Act&, Json data) { return data; })
                     .action("getLastRequestSize", [](Act& c) {
                         return c.conn() ? c.conn()->state_json().value("lastRequestSize", Json(0))
                                         : Json(0);
                     }));
}

void use_error_actors(Registry& registry) {
    registry.use(
        "errorHandlingActor",
        JsonActor()
            .state(Json{{"errorLog", Json::array()}})
            .options(action_timeout(500ms))
            .action("throwSimpleError",
                    [](Act&) -> Json { throw UserError("user_error", "Simple error message"); })
            .action("throwDetailedError",
                    [](Act& c) -> Json {
                        throw UserError("detailed_error", "Detailed error message",
                                        Json{{"reason", "test"}, {"timestamp", c.now_ms()}});
                    })
            .action("throwInternalError",
                    [](Act&) -> Json { throw std::runtime_error("This is an internal error"); })
            .action("successfulAction", [](Act&) { return "success"; })
            .action("timeoutAction", waits_then(10s, "This should not be reached if timeout works"))
            .action("delayedAction",
                    [](Act& c, std::int64_t delay_ms) -> Task {
                        co_await c.sleep_for(std::chrono::milliseconds(delay_ms));
                        co_return "Completed after " + std::to_string(delay_ms) + "ms";
                    })
            .action("logError",
                    [](Act& c, Json error) {
                        c.state()["errorLog"].push_back(error);
                        return c.state()["errorLog"];
                    })
            .action("getErrorLog", [](Act& c) { return std::as_const(c).state()["errorLog"]; })
            .action("clearErrorLog", [](Act& c) {
                c.state()["errorLog"] = Json::array();
                return true;
            }));
    registry.use("customTimeoutActor",
                 JsonActor()
                     .state(Json::object())
                     .options(action_timeout(200ms))
                     .action("quickAction", waits_then(50ms, "Quick action completed"))
                     .action("slowAction", waits_then(300ms, "Slow action completed")));
}

}  // namespace

void use_action_fixtures(Registry& registry) {
    use_timeout_actors(registry);
    use_action_type_actors(registry);
    use_payload_actors(registry);
    use_error_actors(registry);
}

}  // namespace rivetkit::driver

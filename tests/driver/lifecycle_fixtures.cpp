// start-stop-race.ts (and lifecycleObserver), run.ts, destroy.ts

#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

constexpr auto kRunSleepTimeout = 1000ms;

// (No braced temporaries inside co_await expressions: GCC 12.)
Void record_event(std::string observer_key, std::string actor_key, std::string event) {
    Json record = Json::object();
    record["actorKey"] = std::move(actor_key);
    record["event"] = std::move(event);
    Json args = Json::array();
    args.push_back(std::move(record));
    std::vector<std::string> key;
    key.push_back(std::move(observer_key));
    std::string name = "lifecycleObserver";
    std::string action = "recordEvent";
    co_await call_actor(std::move(name), std::move(key), std::move(action), std::move(args));
}

JsonActor lifecycle_observer() {
    ActorOptions options;
    options.no_sleep = true;
    return JsonActor()
        .state(Json{{"events", Json::array()}})
        .options(options)
        .action(
            "recordEvent",
            [](Act& c, Json params) {
                c.state()["events"].push_back(Json{{"actorKey", params.value("actorKey", Json())},
                                                   {"event", params.value("event", Json())},
                                                   {"timestamp", c.now_ms()}});
            })
        .action("getEvents", [](Act& c) { return std::as_const(c).state()["events"]; })
        .action("clearEvents", [](Act& c) { c.state()["events"] = Json::array(); });
}

JsonActor start_stop_race_actor() {
    return JsonActor()
        .state(Json{{"initialized", false},
                    {"startTime", 0},
                    {"destroyCalled", false},
                    {"startCompleted", false}})
        .on_wake([](Ctx& c) -> Void {
            c.state()["startTime"] = c.now_ms();
            co_await plain_delay(c, 100ms);
            c.state()["initialized"] = true;
            c.state()["startCompleted"] = true;
            co_await record_event("observer", join_key(c.key()), "started");
        })
        .on_destroy([](Ctx& c) -> Void {
            c.state()["destroyCalled"] = true;
            co_await record_event("observer", join_key(c.key()), "destroy");
        })
        .action("getState",
                [](Act& c) {
                    return pick(std::as_const(c).state(),
                                {"initialized", "startTime", "destroyCalled", "startCompleted"});
                })
        .action("ping", [](Act&) { return "pong"; })
        .action("destroy", [](Act& c) { c.destroy(); });
}

void use_run_actors(Registry& registry) {
    registry.use(
        "runWithTicks",
        JsonActor()
            .state(Json{
                {"tickCount", 0}, {"lastTickAt", 0}, {"runStarted", false}, {"runExited", false}})
            .options(sleep_options(kRunSleepTimeout))
            .run([](Ctx& c) -> Void {
                c.state()["runStarted"] = true;
                while (!c.aborted()) {
                    bump(c.state(), "tickCount");
                    c.state()["lastTickAt"] = c.now_ms();
                    co_await c.sleep_for(50ms);
                }
                c.state()["runExited"] = true;
            })
            .action("getState", [](Act& c) {
                return pick(std::as_const(c).state(),
                            {"tickCount", "lastTickAt", "runStarted", "runExited"});
            }));
    registry.use(
        "runWithQueueConsumer",
        JsonActor()
            .state(
                Json{{"messagesReceived", Json::array()}, {"runStarted", false}, {"wakeCount", 0}})
            .options(sleep_options(kRunSleepTimeout))
            .queue("messages")
            .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
            .run([](Ctx& c) -> Void {
                c.state()["runStarted"] = true;
                Queue queue = c.queue();
                while (!c.aborted()) {
                    QueueReceiveOptions opts;
                    opts.names = {"messages"};
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    if (m)
                        c.state()["messagesReceived"].push_back(
                            Json{{"name", m->name}, {"body", m->body}});
                }
            })
            .action("getState",
                    [](Act& c) {
                        return pick(std::as_const(c).state(),
                                    {"messagesReceived", "runStarted", "wakeCount"});
                    })
            .action("sendMessage", [](Act& c, Json body) -> Task {
                Queue queue = c.queue();
                co_await queue.send("messages", std::move(body));
                co_return true;
            }));
    registry.use("runWithEarlyExit",
                 JsonActor()
                     .state(Json{{"runStarted", false},
                                 {"runExited", false},
                                 {"destroyCalled", false},
                                 {"sleepCount", 0},
                                 {"wakeCount", 0}})
                     .options(sleep_options(kRunSleepTimeout))
                     .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
                     .on_sleep([](Ctx& c) -> Void {
                         bump(c.state(), "sleepCount");
                         co_await record_event("run-with-early-exit", c.actor_id(), "sleep");
                     })
                     .run([](Ctx& c) -> Void {
                         c.state()["runStarted"] = true;
                         co_await plain_delay(c, 200ms);
                         c.state()["runExited"] = true;
                     })
                     .on_destroy([](Ctx& c) -> Void {
                         c.state()["destroyCalled"] = true;
                         co_await record_event("run-with-early-exit", c.actor_id(), "destroy");
                     })
                     .action("getState",
                             [](Act& c) {
                                 return pick(std::as_const(c).state(),
                                             {"runStarted", "runExited", "destroyCalled",
                                              "sleepCount", "wakeCount"});
                             })
                     .action("destroy", [](Act& c) { c.destroy(); }));
    registry.use("runWithError",
                 JsonActor()
                     .state(Json{{"runStarted", false},
                                 {"destroyCalled", false},
                                 {"sleepCount", 0},
                                 {"wakeCount", 0}})
                     .options(sleep_options(kRunSleepTimeout))
                     .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
                     .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); })
                     .run([](Ctx& c) -> Void {
                         c.state()["runStarted"] = true;
                         co_await plain_delay(c, 200ms);
                         throw std::runtime_error("intentional error in run handler");
                     })
                     .on_destroy([](Ctx& c) { c.state()["destroyCalled"] = true; })
                     .action("getState", [](Act& c) {
                         return pick(std::as_const(c).state(),
                                     {"runStarted", "destroyCalled", "sleepCount", "wakeCount"});
                     }));
    registry.use(
        "runSelfInitiatedSleep",
        JsonActor()
            .state(Json{{"runCount", 0}, {"wakeCount", 0}, {"sleepCount", 0}, {"marker", "new"}})
            .options(sleep_options(kRunSleepTimeout))
            .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
            .on_sleep([](Ctx& c) {
                bump(c.state(), "sleepCount");
                c.state()["marker"] = "slept";
            })
            .run([](Ctx& c) -> Void {
                bump(c.state(), "runCount");
                if (c.state()["runCount"] == 1) {
                    c.state()["marker"] = "sleep-requested";
                    c.sleep();
                }
                co_return;
            })
            .action("getState", [](Act& c) {
                return pick(std::as_const(c).state(),
                            {"runCount", "wakeCount", "sleepCount", "marker"});
            }));
    registry.use("runSelfInitiatedDestroy",
                 JsonActor()
                     .state(Json{{"runCount", 0}, {"destroyRequested", false}})
                     .run([](Ctx& c) -> Void {
                         bump(c.state(), "runCount");
                         if (!c.state()["destroyRequested"].get<bool>()) {
                             c.state()["destroyRequested"] = true;
                             c.destroy();
                         }
                         co_return;
                     })
                     .on_destroy([](Ctx& c) -> Void {
                         co_await record_event("self-initiated-destroy", c.actor_id(), "destroy");
                     })
                     .action("getState", [](Act& c) {
                         return pick(std::as_const(c).state(), {"runCount", "destroyRequested"});
                     }));
    ActorOptions stubborn = sleep_options(50ms);
    stubborn.sleep_grace_period = 100ms;
    registry.use(
        "runIgnoresAbortStopTimeout",
        JsonActor()
            .state(Json{{"wakeCount", 0}, {"destroyCount", 0}})
            .options(stubborn)
            .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
            .on_destroy([](Ctx& c) { bump(c.state(), "destroyCount"); })
            // Never returns, abort or not: the grace deadline has to end it.
            .run([](Ctx& c) -> Void { co_await plain_delay(c, std::chrono::hours(24)); })
            .action("getState",
                    [](Act& c) {
                        return pick(std::as_const(c).state(), {"wakeCount", "destroyCount"});
                    })
            .action("destroy", [](Act& c) { c.destroy(); }));
    registry.use("runWithoutHandler", JsonActor()
                                          .state(Json{{"wakeCount", 0}})
                                          .options(sleep_options(kRunSleepTimeout))
                                          .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
                                          .action("getState", [](Act& c) {
                                              return pick(std::as_const(c).state(), {"wakeCount"});
                                          }));
}

Void notify_destroyed(std::string key) {
    Json args = Json::array();
    args.push_back(std::move(key));
    std::vector<std::string> observer;
    observer.emplace_back("observer");
    std::string name = "destroyObserver";
    std::string action = "notifyDestroyed";
    co_await call_actor(std::move(name), std::move(observer), std::move(action), std::move(args));
}

void use_destroy_actors(Registry& registry) {
    registry.use(
        "destroyObserver",
        JsonActor()
            .state(Json{{"destroyedActors", Json::array()}})
            .action("notifyDestroyed",
                    [](Act& c, std::string key) { c.state()["destroyedActors"].push_back(key); })
            .action("wasDestroyed",
                    [](Act& c, std::string key) {
                        for (const auto& k : std::as_const(c).state()["destroyedActors"])
                            if (k == key)
                                return true;
                        return false;
                    })
            .action("reset", [](Act& c) { c.state()["destroyedActors"] = Json::array(); }));
    registry.use(
        "destroyActor",
        JsonActor()
            .state(Json{{"value", 0}, {"key", ""}})
            .queue("values")
            .create_vars([] {
                return Json{{"ephemeral", "fresh"}};
            })
            .on_wake([](Ctx& c) { c.state()["key"] = join_key(c.key()); })
            .on_request([](Ctx& c, Request& request) -> Response {
                const std::string path = request.path.substr(0, request.path.find('?'));
                if (path == "/state")
                    return Response::json(Json{{"key", std::as_const(c).state()["key"]},
                                               {"value", std::as_const(c).state()["value"]}});
                return Response::text("Not Found", 404);
            })
            .on_websocket([](Ctx& c, WebSocket& ws) {
                ws.send_text(Json{{"type", "welcome"},
                                  {"key", std::as_const(c).state()["key"]},
                                  {"value", std::as_const(c).state()["value"]}}
                                 .dump());
            })
            .on_destroy([](Ctx& c) -> Void {
                co_await notify_destroyed(std::as_const(c).state()["key"].get<std::string>());
            })
            .action("setValue",
                    [](Act& c, Json value) -> Task {
                        c.state()["value"] = value;
                        co_await c.save_state();
                        co_return c.state()["value"];
                    })
            .action("getValue", [](Act& c) { return std::as_const(c).state()["value"]; })
            .action("setEphemeral",
                    [](Act& c, std::string value) {
                        c.vars()["ephemeral"] = value;
                        return value;
                    })
            .action("getEphemeral", [](Act& c) { return c.vars()["ephemeral"]; })
            .action("receiveValue",
                    [](Act& c) -> Task {
                        Queue queue = c.queue();
                        QueueReceiveOptions opts;
                        opts.names = {"values"};
                        opts.timeout = 0ms;
                        std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                        co_return m ? m->body : Json(nullptr);
                    })
            .action("destroy", [](Act& c) { c.destroy(); }));
    registry.use(
        "destroyAbortSignalActor",
        JsonActor()
            .state(Json{{"abortEventCount", 0}})
            .on_destroy([](Ctx& c) -> Void { co_await notify_destroyed(join_key(c.key())); })
            .action("requestDestroy", [](Act& c) {
                const bool before = c.aborted();
                const bool before_signal = c.abort_signal().is_cancelled();
                c.wait_until([](Ctx s) -> Void {
                    co_await s.abort_signal().cancelled();
                    bump(s.state(), "abortEventCount");
                }(c));
                c.destroy();
                return Json{
                    {"beforeDestroyAborted", before},
                    {"beforeDestroySignalAborted", before_signal},
                    {"afterDestroyAborted", c.aborted()},
                    {"afterDestroySignalAborted", c.abort_signal().is_cancelled()},
                    {"abortEventCountAfterDestroy", std::as_const(c).state()["abortEventCount"]}};
            }));
}

}  // namespace

void use_lifecycle_fixtures(Registry& registry) {
    registry.use("lifecycleObserver", lifecycle_observer());
    registry.use("startStopRaceActor", start_stop_race_actor());
    use_run_actors(registry);
    use_destroy_actors(registry);
}

}  // namespace rivetkit::driver

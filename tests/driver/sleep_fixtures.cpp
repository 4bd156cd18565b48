// sleep.ts
//
// The TypeScript runtime tracks a raw WebSocket's async message/close listeners; in C++ the
// fixture says so with `c.keep_awake(...)` around that work, which is what it asks for.

#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

constexpr auto kSleepTimeout = 1000ms;

// state {startCount, sleepCount} counted by on_wake / on_sleep.
JsonActor counted(Json state) {
    return JsonActor()
        .state(std::move(state))
        .on_wake([](Ctx& c) { bump(c.state(), "startCount"); })
        .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); });
}

JsonActor sleep_actor() {
    return counted(Json{{"startCount", 0}, {"sleepCount", 0}})
        .options(sleep_options(kSleepTimeout))
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getCounts",
                [](Act& c) {
                    return pick(std::as_const(c).state(), {"startCount", "sleepCount"});
                })
        .action("setAlarm",
                [](Act& c, std::int64_t duration) {
                    c.schedule_after(std::chrono::milliseconds(duration), "onAlarm");
                })
        .action("onAlarm", [](Act&) {});
}

// The four sleepRawWs* actors: an async message (or close) handler must hold off sleep.
JsonActor async_raw_ws_actor(bool on_close) {
    return counted(Json{{"startCount", 0},
                        {"sleepCount", 0},
                        {"messageStarted", 0},
                        {"messageFinished", 0},
                        {"closeStarted", 0},
                        {"closeFinished", 0}})
        .options(sleep_options(kRawWsHandlerSleepTimeout))
        .on_websocket([on_close](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            socket.send_text(Json{{"type", "connected"}}.dump());
            Ctx self = c;
            while (auto message = co_await socket.recv()) {
                if (on_close || message->binary || message->text() != "track-message")
                    continue;
                bump(self.state(), "messageStarted");
                socket.send_text(Json{{"type", "message-started"}}.dump());
                co_await self.keep_awake(plain_delay(self, kRawWsHandlerDelay));
                bump(self.state(), "messageFinished");
            }
            if (on_close) {
                bump(self.state(), "closeStarted");
                co_await self.keep_awake(plain_delay(self, kRawWsHandlerDelay));
                bump(self.state(), "closeFinished");
            }
        })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "messageStarted", "messageFinished",
                         "closeStarted", "closeFinished"});
        });
}

// A long RPC: waits until finishLongRunningRpc (the vars hold the waker).
struct LongRpcVars {
    std::shared_ptr<rt::CancellationToken> release;
};

Actor<Json, LongRpcVars> sleep_with_long_rpc() {
    using LCtx = ActionContext<Json, LongRpcVars>;
    return Actor<Json, LongRpcVars>()
        .state(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_wake([](ActorContext<Json, LongRpcVars>& c) { bump(c.state(), "startCount"); })
        .on_sleep([](ActorContext<Json, LongRpcVars>& c) { bump(c.state(), "sleepCount"); })
        .options(sleep_options(kSleepTimeout))
        .action("getCounts",
                [](LCtx& c) {
                    return pick(std::as_const(c).state(), {"startCount", "sleepCount"});
                })
        .action("longRunningRpc",
                [](LCtx& c) -> Task {
                    auto release = std::make_shared<rt::CancellationToken>();
                    c.vars().release = release;
                    c.broadcast("waiting");
                    co_await release->cancelled();
                    co_return nullptr;
                })
        .action("finishLongRunningRpc", [](LCtx& c) {
            if (c.vars().release)
                c.vars().release->cancel();
        });
}

JsonActor sleep_with_wait_until_message() {
    return counted(Json{{"startCount", 0}, {"sleepCount", 0}, {"waitUntilMessageCount", 0}})
        .options(sleep_options(kSleepTimeout))
        .action("triggerSleep",
                [](Act& c) {
                    Ctx self = c;
                    std::optional<Conn> caller = c.conn();
                    c.wait_until([](Ctx s, std::optional<Conn> conn) -> Void {
                        co_await plain_delay(s, 10ms);
                        bump(s.state(), "waitUntilMessageCount");
                        if (conn)
                            conn->send("sleeping", Json{{"sleepCount", s.state()["sleepCount"]},
                                                        {"startCount", s.state()["startCount"]}});
                    }(self, caller));
                    c.sleep();
                })
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "waitUntilMessageCount"});
        });
}

JsonActor sleep_with_raw_http() {
    return counted(Json{{"startCount", 0}, {"sleepCount", 0}, {"requestCount", 0}})
        .options(sleep_options(kSleepTimeout))
        .on_request([](Ctx& c, Request& request) -> boost::asio::awaitable<Response> {
            bump(c.state(), "requestCount");
            const std::string path = request.path.substr(0, request.path.find('?'));
            if (path == "/long-request") {
                std::int64_t duration = 1000;
                if (auto at = request.path.find("duration="); at != std::string::npos)
                    duration = std::atoll(request.path.c_str() + at + 9);
                co_await plain_delay(c, std::chrono::milliseconds(duration));
                co_return Response::json(Json{{"completed", true}});
            }
            co_return Response::text("Not Found", 404);
        })
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount", "requestCount"});
        });
}

JsonActor sleep_with_raw_websocket() {
    return counted(Json{{"startCount", 0}, {"sleepCount", 0}, {"connectionCount", 0}})
        .options(sleep_options(kSleepTimeout))
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            bump(self.state(), "connectionCount");
            socket.send_text(
                Json{{"type", "connected"}, {"connectionCount", self.state()["connectionCount"]}}
                    .dump());
            while (auto message = co_await socket.recv()) {
                if (message->binary)
                    continue;
                Json parsed = Json::parse(message->text(), nullptr, false);
                if (parsed.is_discarded()) {
                    socket.send_text(message->text());
                    continue;
                }
                const std::string type = parsed.is_object() ? parsed.value("type", "") : "";
                if (type == "getCounts") {
                    Json counts =
                        pick(self.state(), {"startCount", "sleepCount", "connectionCount"});
                    counts["type"] = "counts";
                    socket.send_text(counts.dump());
                } else if (type == "keepAlive") {
                    socket.send_text(Json{{"type", "ack"}}.dump());
                }
            }
            self.state()["connectionCount"] = add(self.state()["connectionCount"], -1);
        })
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount", "connectionCount"});
        });
}

struct SocketsVars {
    std::vector<WebSocket> sockets;
};

// onSleep sends {type: "sleeping"} on every open socket (after `delay`, then waits `delay`).
Actor<Json, SocketsVars> sleep_raw_ws_send_on_sleep(std::chrono::milliseconds delay) {
    using SCtx = ActorContext<Json, SocketsVars>;
    using SAct = ActionContext<Json, SocketsVars>;
    return Actor<Json, SocketsVars>()
        .state(Json{{"startCount", 0}, {"sleepCount", 0}})
        .options(sleep_options(kSleepTimeout))
        .on_wake([](SCtx& c) { bump(c.state(), "startCount"); })
        .on_sleep([delay](SCtx& c) -> Void {
            bump(c.state(), "sleepCount");
            if (delay.count() > 0)
                co_await plain_delay(c, delay);
            const std::string text =
                Json{{"type", "sleeping"}, {"sleepCount", c.state()["sleepCount"]}}.dump();
            for (const WebSocket& ws : c.vars().sockets)
                ws.send_text(text);
            if (delay.count() > 0)
                co_await plain_delay(c, delay);
        })
        .on_websocket([](SCtx& c, WebSocket& ws) {
            c.vars().sockets.push_back(ws);
            ws.send_text(Json{{"type", "connected"}}.dump());
        })
        .action("triggerSleep", [](SAct& c) { c.sleep(); })
        .action("getCounts", [](SAct& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount"});
        });
}

JsonActor sleep_with_wait_until_in_on_wake() {
    return JsonActor()
        .state(Json{{"startCount", 0},
                    {"sleepCount", 0},
                    {"waitUntilCalled", false},
                    {"waitUntilCompleted", false}})
        .options(sleep_options(kSleepTimeout))
        .on_wake([](Ctx& c) {
            bump(c.state(), "startCount");
            c.wait_until([](Ctx s) -> Void {
                s.state()["waitUntilCompleted"] = true;
                co_return;
            }(c));
            c.state()["waitUntilCalled"] = true;
        })
        .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "waitUntilCalled", "waitUntilCompleted"});
        });
}

Void resolved() {
    co_return;
}

Void rejected() {
    throw std::runtime_error("reject-with-error-ok");
    co_return;
}

JsonActor counter_wait_until_probe() {
    auto count_then = [](bool reject) {
        return [reject](Act& c) {
            bump(c.state(), "count");
            c.wait_until(reject ? rejected() : resolved());
            return c.state()["count"];
        };
    };
    auto keep_awake_then = [](Act& c) -> Task {
        bump(c.state(), "count");
        co_await c.keep_awake(resolved());
        co_return c.state()["count"];
    };
    return JsonActor()
        .state(Json{{"count", 0}})
        .options(sleep_options(kSleepTimeout))
        .action("triggerWaitUntilVoid", count_then(false))
        .action("triggerWaitUntilWithValue", count_then(false))
        .action("triggerWaitUntilRejectVoid", count_then(true))
        .action("triggerKeepAwakeVoid", keep_awake_then)
        .action("triggerKeepAwakeWithValue", keep_awake_then)
        .action("getCount", [](Act& c) { return std::as_const(c).state()["count"]; });
}

// An abort listener registered in on_wake sees the vars when the actor starts stopping.
JsonActor sleep_abort_listener_vars_actor() {
    return JsonActor()
        .state(Json{{"startCount", 0}, {"sleepCount", 0}, {"abortVarsSeenPerWake", Json::array()}})
        .options(sleep_options(kSleepTimeout))
        .create_vars([] {
            return Json{{"isStopping", false}};
        })
        .on_wake([](Ctx& c) {
            bump(c.state(), "startCount");
            const std::size_t wake = c.state()["startCount"].get<std::size_t>();
            c.vars()["isStopping"] = c.aborted();
            Json& seen = c.state()["abortVarsSeenPerWake"];
            while (seen.size() < wake)
                seen.push_back(nullptr);
            seen[wake - 1] = "unset";
            if (c.aborted())
                return;
            c.wait_until([](Ctx s, std::size_t index) -> Void {
                co_await s.abort_signal().cancelled();
                std::string observation = "object";
                try {
                    s.vars()["isStopping"] = true;
                } catch (const std::exception& e) {
                    observation = std::string("error:") + e.what();
                }
                s.state()["abortVarsSeenPerWake"][index] = observation;
            }(c, wake - 1));
        })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            for (int i = 0; i < 5; ++i)
                co_await plain_delay(c, 0ms);
        })
        .on_websocket([](Ctx&, WebSocket& ws) {
            ws.send_text(Json{{"type", "connected"}}.dump());
        })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "abortVarsSeenPerWake"});
        });
}

JsonActor sleep_with_no_sleep_option() {
    ActorOptions options = sleep_options(kSleepTimeout);
    options.no_sleep = true;
    return counted(Json{{"startCount", 0}, {"sleepCount", 0}})
        .options(options)
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount"});
        });
}

JsonActor sleep_wait_until_vars_during_grace() {
    ActorOptions options = sleep_options(100ms);
    options.sleep_grace_period = 1000ms;
    return JsonActor()
        .state(Json{{"startCount", 0}, {"sleepCount", 0}, {"waitUntilStarted", 0}})
        .options(options)
        .create_vars([] {
            return Json{{"dirty", false}};
        })
        .on_wake([](Ctx& c) { bump(c.state(), "startCount"); })
        .on_sleep([](Ctx& c) {
            bump(c.state(), "sleepCount");
            c.wait_until([](Ctx s) -> Void {
                bump(s.state(), "waitUntilStarted");
                co_await plain_delay(s, 150ms);
                s.vars()["dirty"] = true;
            }(c));
        })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount", "waitUntilStarted"});
        });
}

JsonActor sleep_raw_ws_vars_exceeds_grace() {
    ActorOptions options = sleep_options(100ms);
    options.sleep_grace_period = 200ms;
    return counted(Json{{"startCount", 0},
                        {"sleepCount", 0},
                        {"handlerStarted", 0},
                        {"handlerFinished", 0}})
        .options(options)
        .create_vars([] {
            return Json{{"dirty", false}};
        })
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            socket.send_text(Json{{"type", "connected"}}.dump());
            while (auto message = co_await socket.recv()) {
                if (message->binary || message->text() != "slow-vars-work")
                    continue;
                bump(self.state(), "handlerStarted");
                socket.send_text(Json{{"type", "started"}}.dump());
                co_await self.keep_awake(plain_delay(self, 2000ms));
                self.vars()["dirty"] = true;
                bump(self.state(), "handlerFinished");
            }
        })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "handlerStarted", "handlerFinished"});
        });
}

}  // namespace

void use_sleep_fixtures(Registry& registry) {
    registry.use("sleep", sleep_actor());
    registry.use("sleepRawWsAddEventListenerMessage", async_raw_ws_actor(false));
    registry.use("sleepRawWsOnMessage", async_raw_ws_actor(false));
    registry.use("sleepRawWsAddEventListenerClose", async_raw_ws_actor(true));
    registry.use("sleepRawWsOnClose", async_raw_ws_actor(true));
    registry.use("sleepWithLongRpc", sleep_with_long_rpc());
    registry.use("sleepWithWaitUntilMessage", sleep_with_wait_until_message());
    registry.use("sleepWithRawHttp", sleep_with_raw_http());
    registry.use("sleepWithRawWebSocket", sleep_with_raw_websocket());
    registry.use("sleepRawWsSendOnSleep", sleep_raw_ws_send_on_sleep(0ms));
    registry.use("sleepRawWsDelayedSendOnSleep", sleep_raw_ws_send_on_sleep(100ms));
    registry.use("sleepWithWaitUntilInOnWake", sleep_with_wait_until_in_on_wake());
    registry.use("counterWaitUntilProbe", counter_wait_until_probe());
    registry.use("sleepAbortListenerVarsActor", sleep_abort_listener_vars_actor());
    registry.use("sleepWithNoSleepOption", sleep_with_no_sleep_option());
    registry.use("sleepWaitUntilVarsDuringGrace", sleep_wait_until_vars_during_grace());
    registry.use("sleepRawWsVarsExceedsGrace", sleep_raw_ws_vars_exceeds_grace());
}

}  // namespace rivetkit::driver

// sleep-db.ts: actors that use their SQLite database around sleep (onSleep/onWake writes,
// waitUntil, keepAwake, scheduled work, raw sockets and connections closing during sleep).
//
// Differences from the TypeScript fixtures:
// - every actor: `db({ onMigrate })` is `on_migrate`; SQL values are bound as parameters instead
//   of being spliced into the statement text (same rows).
// - `c.keepAwake(promise)` without awaiting it (sleepKeepAwakeUntilIdle, sleepScheduleAfter) is
//   `c.wait_until(c.keep_awake(work))`: the typed API's keep_awake wraps work to be awaited, and
//   wait_until is what runs it detached (tracked, aborted at the grace deadline like keepAwake).
// - raw WebSocket listeners that are async in TypeScript (sleepWithRawWsCloseDb*,
//   sleepWs*ExceedsGrace) hold their work in `c.keep_awake(...)`, as in sleep_fixtures.cpp; the
//   message listeners run detached (wait_until + keep_awake) so that several run at once, as
//   JavaScript's do (sleepWsConcurrentDbExceedsGrace, the permits of
//   sleepWsActiveDbExceedsGrace).
// - sleepWithRawWsCloseDb and sleepWithRawWsCloseDbListener are the same C++ actor (`onclose`
//   and `addEventListener("close")` have one C++ form: code after the socket's recv loop).
// - `c.log.warn` is rivetkit's log::warn; `setTimeout` delays are `plain_delay` (the actor
//   clock, not cut short by the abort signal).

#include <chrono>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "db_support.hpp"
#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

constexpr auto kSleepDbTimeout = 1000ms;
constexpr auto kScheduleAfterOnSleepDelay = 3000ms;
constexpr auto kKeepAwakeGracePeriod = 2000ms;
constexpr auto kKeepAwakeSingleWork = 300ms;
constexpr auto kKeepAwakeNestedFirst = 100ms;
constexpr auto kKeepAwakeNestedSecond = 350ms;
constexpr std::int64_t kExceedsGraceHandlerDelayMs = 2000;
constexpr auto kExceedsGracePeriod = 200ms;
constexpr auto kExceedsGraceSleepTimeout = 100ms;
constexpr int kActiveDbWriteCount = 500;
constexpr auto kActiveDbGracePeriod = 50ms;
constexpr auto kActiveDbSleepTimeout = 500ms;

constexpr const char* kCreateSleepLog =
    "CREATE TABLE IF NOT EXISTS sleep_log ("
    "id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "event TEXT NOT NULL, "
    "created_at INTEGER NOT NULL)";
constexpr const char* kInsertLog = "INSERT INTO sleep_log (event, created_at) VALUES (?, ?)";
constexpr const char* kSelectLog = "SELECT * FROM sleep_log ORDER BY id";

// `error instanceof Error ? error.message : String(error)`.
std::string error_message(const std::exception& e) {
    if (const auto* error = dynamic_cast<const ErrorException*>(&e))
        return error->error().message();
    return e.what();
}

// A JavaScript number or string as a template literal renders it.
std::string js_string(const Json& value) {
    if (value.is_string())
        return value.get<std::string>();
    if (value.is_number_integer())
        return std::to_string(value.get<std::int64_t>());
    if (value.is_number()) {
        const double d = value.get<double>();
        if (d == static_cast<double>(static_cast<std::int64_t>(d)))
            return std::to_string(static_cast<std::int64_t>(d));
    }
    return value.dump();
}

std::chrono::milliseconds ms_of(double value) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(value));
}

// `INSERT INTO sleep_log (event, created_at) VALUES ('<event>', Date.now())`.
Void log_event(const Ctx& c, std::string event) {
    co_await execute(c, kInsertLog, std::move(event), c.now_ms());
}

// The same as detached work (what the fixtures hand to waitUntil / keepAwake).
Void log_detached(Ctx c, std::string event) {
    co_await log_event(c, std::move(event));
}

// An async listener of a raw socket: runs beside the socket's other messages and keeps the actor
// awake until it settles (the TypeScript runtime's tracked websocket callback).
void track_listener(const Ctx& c, Void work) {
    (void)c.wait_until(c.keep_awake(std::move(work)));
}

ActorOptions db_options(std::chrono::milliseconds sleep_timeout) {
    ActorOptions options = sleep_options(sleep_timeout);
    options.database = true;
    return options;
}

ActorOptions db_options(std::chrono::milliseconds sleep_timeout,
                        std::chrono::milliseconds grace) {
    ActorOptions options = db_options(sleep_timeout);
    options.sleep_grace_period = grace;
    return options;
}

// What every sleep-db actor has: its state, options, the sleep_log table, triggerSleep and
// getLogEntries.
JsonActor sleep_db_actor(Json state, ActorOptions options) {
    return JsonActor()
        .state(std::move(state))
        .options(std::move(options))
        .on_migrate([](Ctx& c) -> Void { co_await execute_script(c, kCreateSleepLog); })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getLogEntries", [](Act& c) { return execute(c, kSelectLog); });
}

// onWake: startCount += 1 and a 'wake' row.
Void wake_and_log(Ctx& c) {
    bump(c.state(), "startCount");
    co_await log_event(c, "wake");
}

Void sleep_and_log(Ctx& c) {
    bump(c.state(), "sleepCount");
    co_await log_event(c, "sleep");
}

Json counts(const Act& c) {
    return pick(c.state(), {"startCount", "sleepCount"});
}

// MARK: sleepWithDb

JsonActor sleep_with_db() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"onSleepDbWriteSuccess", false},
                               {"onSleepDbWriteError", nullptr}},
                          db_options(kSleepDbTimeout))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            try {
                co_await log_event(c, "sleep");
                c.state()["onSleepDbWriteSuccess"] = true;
            } catch (const std::exception& e) {
                c.state()["onSleepDbWriteError"] = error_message(e);
            }
        })
        .action("triggerSleepTwice",
                [](Act& c) {
                    c.sleep();
                    c.sleep();
                })
        .action("getCounts",
                [](Act& c) {
                    return pick(std::as_const(c).state(),
                                {"startCount", "sleepCount", "onSleepDbWriteSuccess",
                                 "onSleepDbWriteError"});
                })
        .action("insertLogEntry",
                [](Act& c, std::string event) -> Void { co_await log_event(c, std::move(event)); })
        .action("setAlarm",
                [](Act& c, double delay_ms) { c.schedule_after(ms_of(delay_ms), "onAlarm"); })
        .action("onAlarm", [](Act& c) -> Void { co_await log_event(c, "alarm"); });
}

// MARK: sleepWithSlowScheduledDb

JsonActor sleep_with_slow_scheduled_db() {
    return sleep_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}},
                          db_options(kSleepDbTimeout))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void { co_await sleep_and_log(c); })
        .action("scheduleSlowAlarm",
                [](Act& c, double delay_ms, Json work_ms) {
                    c.schedule_after(ms_of(delay_ms), "onSlowAlarm", work_ms);
                })
        .action("getCounts", [](Act& c) { return counts(c); })
        .action("onSlowAlarm", [](Act& c, double work_ms) -> Void {
            co_await log_event(c, "slow-alarm-start");
            co_await plain_delay(c, ms_of(work_ms));
            co_await log_event(c, "slow-alarm-finish");
        });
}

// MARK: sleepKeepAwakeUntilIdle

Void single_keep_awake_work(Ctx c) {
    co_await log_event(c, "single-start");
    co_await plain_delay(c, kKeepAwakeSingleWork);
    co_await log_event(c, "single-finish");
    bump(c.state(), "singleFinished");
}

Void nested_second_work(Ctx c) {
    co_await log_event(c, "nested-second-start");
    co_await plain_delay(c, kKeepAwakeNestedSecond);
    co_await log_event(c, "nested-second-finish");
    bump(c.state(), "nestedSecondFinished");
}

Void nested_first_work(Ctx c) {
    co_await log_event(c, "nested-first-start");
    co_await plain_delay(c, kKeepAwakeNestedFirst);
    (void)c.wait_until(c.keep_awake(nested_second_work(c)));
    co_await log_event(c, "nested-first-finish");
    bump(c.state(), "nestedFirstFinished");
}

JsonActor sleep_keep_awake_until_idle() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"singleFinished", 0},
                               {"nestedFirstFinished", 0},
                               {"nestedSecondFinished", 0}},
                          db_options(kSleepDbTimeout, kKeepAwakeGracePeriod))
        .on_wake([](Ctx& c) -> Void {
            bump(c.state(), "startCount");
            std::string event = "wake-" + js_string(std::as_const(c).state()["startCount"]);
            co_await log_event(c, std::move(event));
        })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            std::string event = "sleep-" + js_string(std::as_const(c).state()["sleepCount"]);
            co_await log_event(c, std::move(event));
        })
        .action("startSingleKeepAwake",
                [](Act& c) {
                    Ctx self = c;
                    (void)c.wait_until(c.keep_awake(single_keep_awake_work(self)));
                })
        .action("startNestedKeepAwake",
                [](Act& c) {
                    Ctx self = c;
                    (void)c.wait_until(c.keep_awake(nested_first_work(self)));
                })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "singleFinished", "nestedFirstFinished",
                         "nestedSecondFinished"});
        });
}

// MARK: sleepWithDbConn, sleepWithDbAction

// The actions both share besides triggerSleep and getLogEntries.
JsonActor with_conn_actions(JsonActor actor) {
    return actor.create_conn_state([](Ctx&) { return Json::object(); })
        .action("triggerSleepTwice",
                [](Act& c) {
                    c.sleep();
                    c.sleep();
                })
        .action("getCounts", [](Act& c) { return counts(c); })
        .action("insertLogEntry",
                [](Act& c, std::string event) -> Void { co_await log_event(c, std::move(event)); });
}

void warn_failure(const Ctx& c, std::string_view msg, const std::exception& e) {
    const std::string error = error_message(e);
    log::warn(msg, {{"actor_id", std::string_view(c.actor_id())},
                    {"error", std::string_view(error)}});
}

JsonActor sleep_with_db_conn() {
    return with_conn_actions(
        sleep_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}}, db_options(kSleepDbTimeout))
            .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
            .on_disconnect([](Ctx& c, Conn&) -> Void {
                try {
                    co_await log_event(c, "disconnect");
                } catch (const std::exception& e) {
                    warn_failure(c, "onDisconnect db write failed", e);
                }
            })
            .on_sleep([](Ctx& c) -> Void {
                bump(c.state(), "sleepCount");
                try {
                    co_await log_event(c, "sleep");
                } catch (const std::exception& e) {
                    warn_failure(c, "onSleep db write failed", e);
                }
            }));
}

JsonActor sleep_with_db_action() {
    return with_conn_actions(
        sleep_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}}, db_options(kSleepDbTimeout))
            .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
            .on_sleep([](Ctx& c) -> Void {
                bump(c.state(), "sleepCount");
                try {
                    co_await log_event(c, "sleep-start");
                    c.broadcast("sleeping");
                    co_await plain_delay(c, 500ms);
                    co_await log_event(c, "sleep-end");
                } catch (const std::exception& e) {
                    warn_failure(c, "onSleep error", e);
                }
            }));
}

// MARK: sleepWaitUntil, sleepNestedWaitUntil, sleepWaitUntilRejects, sleepWaitUntilState

JsonActor counting_db_actor(Json state) {
    return sleep_db_actor(std::move(state), db_options(kSleepDbTimeout))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .action("getCounts", [](Act& c) { return counts(c); });
}

JsonActor sleep_wait_until() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            co_await log_event(c, "sleep-start");
            (void)c.wait_until(log_detached(c, "waituntil-write"));
        });
}

Void outer_wait_until(Ctx c) {
    co_await log_event(c, "outer-waituntil");
    // Nested waitUntil inside a waitUntil callback.
    (void)c.wait_until(log_detached(c, "nested-waituntil"));
}

JsonActor sleep_nested_wait_until() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            co_await log_event(c, "sleep-start");
            (void)c.wait_until(outer_wait_until(c));
        });
}

Void rejecting(std::string message) {
    throw std::runtime_error(message);
    co_return;
}

JsonActor sleep_wait_until_rejects() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            co_await log_event(c, "sleep");
            // A waitUntil that rejects: shutdown still completes.
            (void)c.wait_until(rejecting("waitUntil intentional rejection"));
            // And one that succeeds, which still runs.
            (void)c.wait_until(log_detached(c, "waituntil-after-reject"));
        });
}

Void wait_until_state_work(Ctx c) {
    c.state()["waitUntilRan"] = true;
    co_await log_event(c, "waituntil-state");
}

JsonActor sleep_wait_until_state() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}, {"waitUntilRan", false}})
        .on_sleep([](Ctx& c) {
            bump(c.state(), "sleepCount");
            (void)c.wait_until(wait_until_state_work(c));
        })
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(), {"startCount", "sleepCount", "waitUntilRan"});
        });
}

// MARK: sleepEnqueue

JsonActor sleep_enqueue() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"enqueueSuccess", false},
                               {"enqueueError", nullptr}},
                          db_options(kSleepDbTimeout))
        .queue("work")
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            try {
                Queue queue = c.queue();
                Json body = "enqueued-during-sleep";
                co_await queue.send("work", std::move(body));
                c.state()["enqueueSuccess"] = true;
            } catch (const std::exception& e) {
                c.state()["enqueueError"] = error_message(e);
            }
            co_await log_event(c, "sleep");
        })
        .action("getCounts", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "enqueueSuccess", "enqueueError"});
        });
}

// MARK: sleepScheduleAfter

// The module-level `scheduleAfterKeepAwakeResolvers` map: actor id → the release of the
// keep-awake taken in onWake. Actors run on several threads, hence the mutex.
struct KeepAwakeResolvers {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<rt::CancellationToken>> by_actor;
};

KeepAwakeResolvers& schedule_after_keep_awake_resolvers() {
    static KeepAwakeResolvers resolvers;
    return resolvers;
}

Void until_released(std::shared_ptr<rt::CancellationToken> release) {
    co_await release->cancelled();
}

JsonActor sleep_schedule_after() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"scheduledActionCount", 0},
                               {"holdAfterWake", false}},
                          db_options(kSleepDbTimeout))
        .on_wake([](Ctx& c) -> Void {
            bump(c.state(), "startCount");
            if (std::as_const(c).state().value("holdAfterWake", false)) {
                // Keep the alarm wake observable before idle sleep can run again.
                auto release = std::make_shared<rt::CancellationToken>();
                {
                    KeepAwakeResolvers& resolvers = schedule_after_keep_awake_resolvers();
                    std::lock_guard lock(resolvers.mutex);
                    resolvers.by_actor[c.actor_id()] = release;
                }
                (void)c.wait_until(c.keep_awake(until_released(release)));
            }
            co_await log_event(c, "wake");
        })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            c.state()["holdAfterWake"] = true;
            // An alarm scheduled during onSleep: persisted, it fires after the test has woken
            // the actor explicitly.
            c.schedule_after(kScheduleAfterOnSleepDelay, "onScheduledAction");
            co_await log_event(c, "sleep");
        })
        .action("getCounts",
                [](Act& c) {
                    Json out = pick(std::as_const(c).state(),
                                    {"startCount", "sleepCount", "scheduledActionCount"});
                    const Json& scheduled = out["scheduledActionCount"];
                    if (scheduled.is_number() && scheduled.get<double>() > 0) {
                        c.state()["holdAfterWake"] = false;
                        std::shared_ptr<rt::CancellationToken> release;
                        {
                            KeepAwakeResolvers& resolvers = schedule_after_keep_awake_resolvers();
                            std::lock_guard lock(resolvers.mutex);
                            auto it = resolvers.by_actor.find(c.actor_id());
                            if (it != resolvers.by_actor.end()) {
                                release = std::move(it->second);
                                resolvers.by_actor.erase(it);
                            }
                        }
                        if (release)
                            release->cancel();
                    }
                    return out;
                })
        .action("onScheduledAction", [](Act& c) -> Void {
            bump(c.state(), "scheduledActionCount");
            co_await log_event(c, "scheduled-action");
        });
}

// MARK: sleepOnSleepThrows

JsonActor sleep_on_sleep_throws() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            co_await log_event(c, "sleep-before-throw");
            throw std::runtime_error("onSleep intentional error");
        });
}

// MARK: sleepWithRawWs

JsonActor sleep_with_raw_ws() {
    return counting_db_actor(Json{{"startCount", 0}, {"sleepCount", 0}})
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            co_await log_event(c, "sleep");
            // A window to attempt a raw WebSocket connection during shutdown.
            co_await plain_delay(c, 500ms);
        })
        .on_websocket([](Ctx&, WebSocket& ws) {
            ws.send_text(Json{{"type", "connected"}}.dump());
        });
}

// MARK: sleepWithRawWsCloseDb, sleepWithRawWsCloseDbListener

Void close_db_work(Ctx c) {
    bump(c.state(), "closeStarted");
    co_await log_event(c, "close-start");
    co_await plain_delay(c, kRawWsHandlerDelay);
    co_await log_event(c, "close-finish");
    bump(c.state(), "closeFinished");
}

JsonActor sleep_with_raw_ws_close_db() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"closeStarted", 0},
                               {"closeFinished", 0}},
                          db_options(kRawWsHandlerSleepTimeout))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void { co_await sleep_and_log(c); })
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            socket.send_text(Json{{"type", "connected"}}.dump());
            while (co_await socket.recv()) {
            }
            // The close listener.
            co_await self.keep_awake(close_db_work(self));
        })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "closeStarted", "closeFinished"});
        });
}

// MARK: sleepWsActiveDbExceedsGrace

// The handler's write permits: one per "continue-write" message, taken before each write.
struct WritePermits {
    int queued = 0;
    std::shared_ptr<rt::CancellationToken> pending;
};

void release_write_permit(WritePermits& permits) {
    if (permits.pending) {
        std::shared_ptr<rt::CancellationToken> resolve = std::move(permits.pending);
        permits.pending.reset();
        resolve->cancel();
    } else {
        permits.queued += 1;
    }
}

Void wait_for_write_permit(std::shared_ptr<WritePermits> permits) {
    if (permits->queued > 0) {
        permits->queued -= 1;
        co_return;
    }
    auto resolve = std::make_shared<rt::CancellationToken>();
    permits->pending = resolve;
    co_await resolve->cancelled();
}

// Many sequential DB writes, each waiting for a permit first; shutdown lands between two.
Void active_db_writes(Ctx c, WebSocket ws, std::shared_ptr<WritePermits> permits) {
    for (int i = 0; i < kActiveDbWriteCount; ++i) {
        co_await wait_for_write_permit(permits);
        std::string failure;
        bool failed = false;
        try {
            std::string event = "write-" + std::to_string(i);
            co_await log_event(c, std::move(event));
            c.state()["writesCompleted"] = i + 1;
            ws.send_text(Json{{"type", "write"},
                              {"index", i},
                              {"writesCompleted", std::as_const(c).state()["writesCompleted"]}}
                             .dump());
        } catch (const std::exception& e) {
            failed = true;
            failure = error_message(e);
        }
        if (failed) {
            c.state()["writeError"] = failure;
            ws.send_text(Json{{"type", "error"}, {"index", i}, {"error", failure}}.dump());
            co_return;
        }
    }
    ws.send_text(Json{{"type", "finished"}}.dump());
}

JsonActor sleep_ws_active_db_exceeds_grace() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"writesCompleted", 0},
                               {"writeError", nullptr}},
                          db_options(kActiveDbSleepTimeout, kActiveDbGracePeriod))
        .on_wake([](Ctx& c) { bump(c.state(), "startCount"); })
        .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); })
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            auto permits = std::make_shared<WritePermits>();
            socket.send_text(Json{{"type", "connected"}}.dump());
            while (auto message = co_await socket.recv()) {
                if (message->binary)
                    continue;
                const Json parsed = Json::parse(message->text(), nullptr, false);
                const std::string type = string_field(parsed, "type", "");
                if (type == "continue-write") {
                    release_write_permit(*permits);
                    continue;
                }
                if (type != "start-writes")
                    continue;
                socket.send_text(Json{{"type", "started"}}.dump());
                track_listener(self, active_db_writes(self, socket, permits));
            }
        })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "writesCompleted", "writeError"});
        });
}

// MARK: sleepWsMessageExceedsGrace

Void slow_db_message(Ctx c, WebSocket ws) {
    bump(c.state(), "messageStarted");
    co_await log_event(c, "msg-start");
    ws.send_text(Json{{"type", "started"}}.dump());
    // Longer than the grace period: shutdown times out while this still runs.
    co_await plain_delay(c, std::chrono::milliseconds(kExceedsGraceHandlerDelayMs));
    co_await log_event(c, "msg-finish");
    bump(c.state(), "messageFinished");
}

JsonActor sleep_ws_message_exceeds_grace() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"messageStarted", 0},
                               {"messageFinished", 0}},
                          db_options(kExceedsGraceSleepTimeout, kExceedsGracePeriod))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void { co_await sleep_and_log(c); })
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            socket.send_text(Json{{"type", "connected"}}.dump());
            while (auto message = co_await socket.recv()) {
                if (message->binary || message->text() != "slow-db-work")
                    continue;
                track_listener(self, slow_db_message(self, socket));
            }
        })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "messageStarted", "messageFinished"});
        });
}

// MARK: sleepWsConcurrentDbExceedsGrace

// `dbRef.execute(...)` on a database reference taken before the handler's delay.
Void insert_with(std::shared_ptr<Database> db, std::string event, std::int64_t now) {
    std::vector<SqlValue> params;
    params.emplace_back(std::move(event));
    params.emplace_back(now);
    (void)or_throw(co_await db->query(kInsertLog, std::move(params)));
}

Void concurrent_db_message(Ctx c, WebSocket ws, Json index) {
    bump(c.state(), "handlerStarted");
    // Each handler captures the db reference before awaiting.
    std::shared_ptr<Database> db_ref = co_await c.db();
    const std::string name = "handler-" + js_string(index);
    co_await insert_with(db_ref, name + "-start", c.now_ms());
    ws.send_text(Json{{"type", "started"}, {"index", index}}.dump());
    // Staggered per index so the handlers resume at different times relative to teardown.
    const double stagger = index.is_number() ? index.get<double>() * 50 : 0.0;
    co_await plain_delay(c, std::chrono::milliseconds(kExceedsGraceHandlerDelayMs +
                                                      static_cast<std::int64_t>(stagger)));
    // Not caught: a failure ends the handler (logged by the runtime).
    co_await insert_with(db_ref, name + "-finish", c.now_ms());
    bump(c.state(), "handlerFinished");
}

JsonActor sleep_ws_concurrent_db_exceeds_grace() {
    return sleep_db_actor(Json{{"startCount", 0},
                               {"sleepCount", 0},
                               {"handlerStarted", 0},
                               {"handlerFinished", 0},
                               {"handlerErrors", Json::array()}},
                          db_options(kExceedsGraceSleepTimeout, kExceedsGracePeriod))
        .on_wake([](Ctx& c) -> Void { co_await wake_and_log(c); })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            try {
                co_await log_event(c, "sleep");
            } catch (const std::exception&) {
                // The database may already be torn down.
            }
        })
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            socket.send_text(Json{{"type", "connected"}}.dump());
            while (auto message = co_await socket.recv()) {
                if (message->binary)
                    continue;
                const Json data = Json::parse(message->text(), nullptr, false);
                if (string_field(data, "type", "") != "slow-db-work")
                    continue;
                Json index = data.value("index", Json(nullptr));
                if (index.is_null())
                    index = 0;
                track_listener(self, concurrent_db_message(self, socket, std::move(index)));
            }
        })
        .action("getStatus", [](Act& c) {
            return pick(std::as_const(c).state(),
                        {"startCount", "sleepCount", "handlerStarted", "handlerFinished",
                         "handlerErrors"});
        });
}

}  // namespace

void use_sleep_db_fixtures(Registry& registry) {
    registry.use("sleepWithDb", sleep_with_db());
    registry.use("sleepWithSlowScheduledDb", sleep_with_slow_scheduled_db());
    registry.use("sleepKeepAwakeUntilIdle", sleep_keep_awake_until_idle());
    registry.use("sleepWithDbConn", sleep_with_db_conn());
    registry.use("sleepWithDbAction", sleep_with_db_action());
    registry.use("sleepWaitUntil", sleep_wait_until());
    registry.use("sleepNestedWaitUntil", sleep_nested_wait_until());
    registry.use("sleepEnqueue", sleep_enqueue());
    registry.use("sleepScheduleAfter", sleep_schedule_after());
    registry.use("sleepOnSleepThrows", sleep_on_sleep_throws());
    registry.use("sleepWaitUntilRejects", sleep_wait_until_rejects());
    registry.use("sleepWaitUntilState", sleep_wait_until_state());
    registry.use("sleepWithRawWs", sleep_with_raw_ws());
    registry.use("sleepWithRawWsCloseDb", sleep_with_raw_ws_close_db());
    registry.use("sleepWsActiveDbExceedsGrace", sleep_ws_active_db_exceeds_grace());
    registry.use("sleepWsMessageExceedsGrace", sleep_ws_message_exceeds_grace());
    registry.use("sleepWsConcurrentDbExceedsGrace", sleep_ws_concurrent_db_exceeds_grace());
    registry.use("sleepWithRawWsCloseDbListener", sleep_with_raw_ws_close_db());
}

}  // namespace rivetkit::driver

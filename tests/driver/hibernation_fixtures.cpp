// hibernation.ts, file-system-hibernation-cleanup.ts

#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

constexpr auto kHibernationSleepTimeout = 500ms;

// conn.state.<field> += 1 (the connection's state lives in core, as CBOR).
Json bump_conn(Conn& conn, const char* field) {
    Json state = conn.state_json();
    if (!state.is_object())
        state = Json::object();
    bump(state, field);
    conn.set_state(state);
    return state[field];
}

Json actor_counts(const Json& state) {
    return Json{{"sleepCount", state["sleepCount"]}, {"wakeCount", state["wakeCount"]}};
}

JsonActor hibernation_actor() {
    return JsonActor()
        .state(Json{{"sleepCount", 0}, {"wakeCount", 0}})
        .options(sleep_options(kHibernationSleepTimeout))
        .create_conn_state([](Ctx&) {
            return Json{{"count", 0}, {"connectCount", 0}, {"disconnectCount", 0}};
        })
        .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
        .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); })
        .on_connect([](Ctx&, Conn& conn) { bump_conn(conn, "connectCount"); })
        .on_disconnect([](Ctx&, Conn& conn) { bump_conn(conn, "disconnectCount"); })
        .action("ping", [](Act&) { return "pong"; })
        .action("connIncrement",
                [](Act& c) {
                    Conn conn = *c.conn();
                    return bump_conn(conn, "count");
                })
        .action("getConnCount",
                [](Act& c) { return c.conn()->state_json().value("count", Json(0)); })
        .action("getConnLifecycleCounts",
                [](Act& c) {
                    const Json state = c.conn()->state_json();
                    return Json{{"connectCount", state.value("connectCount", Json(0))},
                                {"disconnectCount", state.value("disconnectCount", Json(0))}};
                })
        .action("getConnectionIds",
                [](Act& c) {
                    Json ids = Json::array();
                    for (const Conn& conn : c.conns())
                        ids.push_back(conn.id());
                    return ids;
                })
        .action("getActorCounts", [](Act& c) { return actor_counts(std::as_const(c).state()); })
        .action("triggerSleep", [](Act& c) { c.sleep(); });
}

JsonActor hibernation_sleep_window_actor() {
    return JsonActor()
        .state(Json{{"sleepCount", 0}, {"wakeCount", 0}})
        .options(sleep_options(kHibernationSleepTimeout))
        .create_conn_state([](Ctx&) { return Json::object(); })
        .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
        .on_sleep([](Ctx& c) -> Void {
            bump(c.state(), "sleepCount");
            c.broadcast("sleeping");
            co_await plain_delay(c, 500ms);
        })
        .action("getActorCounts", [](Act& c) { return actor_counts(std::as_const(c).state()); })
        .action("triggerSleep", [](Act& c) { c.sleep(); });
}

JsonActor file_system_hibernation_cleanup_actor() {
    return JsonActor()
        .state(Json{{"wakeCount", 0}, {"sleepCount", 0}, {"disconnectWakeCounts", Json::array()}})
        .options(sleep_options(500ms))
        .create_conn_state([](Ctx&) { return Json::object(); })
        .on_wake([](Ctx& c) { bump(c.state(), "wakeCount"); })
        .on_sleep([](Ctx& c) { bump(c.state(), "sleepCount"); })
        .on_disconnect([](Ctx& c, Conn& conn) {
            if (conn.is_hibernatable())
                c.state()["disconnectWakeCounts"].push_back(c.state()["wakeCount"]);
        })
        .action("ping", [](Act&) { return "pong"; })
        .action("triggerSleep", [](Act& c) { c.sleep(); })
        .action("getCounts",
                [](Act& c) {
                    const Json& s = std::as_const(c).state();
                    return Json{{"wakeCount", s["wakeCount"]}, {"sleepCount", s["sleepCount"]}};
                })
        .action("getDisconnectWakeCounts",
                [](Act& c) { return std::as_const(c).state()["disconnectWakeCounts"]; });
}

}  // namespace

void use_hibernation_fixtures(Registry& registry) {
    registry.use("hibernationActor", hibernation_actor());
    registry.use("hibernationSleepWindowActor", hibernation_sleep_window_actor());
    registry.use("fileSystemHibernationCleanupActor", file_system_hibernation_cleanup_actor());
}

}  // namespace rivetkit::driver

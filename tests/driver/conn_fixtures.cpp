// conn-state.ts, conn-preflight-visibility.ts, scheduled.ts

#include <algorithm>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

std::optional<Conn> find_conn(const Ctx& c, const std::string& id) {
    for (Conn& conn : c.conns())
        if (conn.id() == id)
            return conn;
    return std::nullopt;
}

Json with_id(const Conn& conn) {
    Json out{{"id", conn.id()}};
    Json state = conn.state_json();
    if (state.is_object())
        out.update(state);
    return out;
}

JsonActor conn_state_actor() {
    return JsonActor()
        .state(Json{{"sharedCounter", 0}, {"disconnectionCount", 0}})
        .create_conn_state([](Ctx& c, Json params) {
            std::string username = string_field(params, "username", "");
            std::string role = string_field(params, "role", "");
            bool no_count = params.is_object() && params.value("noCount", false);
            return Json{{"username", username.empty() ? "anonymous" : username},
                        {"role", role.empty() ? "user" : role},
                        {"counter", 0},
                        {"createdAt", c.now_ms()},
                        {"noCount", no_count}};
        })
        .on_connect([](Ctx& c, Conn& conn) {
            const Json state = conn.state_json();
            const Json hello{{"id", conn.id()}, {"username", state.value("username", Json())}};
            conn.send("connectedFromOnConnect", hello);
            std::optional<Conn> listed = find_conn(c, conn.id());
            if (!listed)
                throw std::runtime_error("connection missing from c.conns in onConnect");
            listed->send("connectedFromOnConnectConns", hello);
            c.broadcast("userConnected",
                        Json{{"id", conn.id()}, {"username", "anonymous"}, {"role", "user"}});
        })
        .on_disconnect([](Ctx& c, Conn& conn) {
            if (truthy_field(conn.state_json(), "noCount"))
                return;
            c.state()["disconnectionCount"] = add(c.state()["disconnectionCount"], 1);
            c.broadcast("userDisconnected", Json{{"id", conn.id()}});
        })
        .action("incrementConnCounter",
                [](Act& c, std::optional<Json> amount) {
                    if (!c.conn())
                        return;
                    Json state = c.conn()->state_json();
                    state["counter"] = add(state.value("counter", Json(0)),
                                           amount && !amount->is_null() ? *amount : Json(1));
                    c.conn()->set_state(state);
                })
        .action("incrementSharedCounter",
                [](Act& c, std::optional<Json> amount) {
                    c.state()["sharedCounter"] =
                        add(c.state()["sharedCounter"],
                            amount && !amount->is_null() ? *amount : Json(1));
                    return c.state()["sharedCounter"];
                })
        .action("getConnectionState",
                [](Act& c) { return c.conn() ? with_id(*c.conn()) : Json(nullptr); })
        .action("getConnectionIds",
                [](Act& c) {
                    Json ids = Json::array();
                    for (const Conn& conn : c.conns())
                        if (!truthy_field(conn.state_json(), "noCount"))
                            ids.push_back(conn.id());
                    return ids;
                })
        .action("getDisconnectionCount",
                [](Act& c) { return std::as_const(c).state()["disconnectionCount"]; })
        .action("getAllConnectionStates",
                [](Act& c) {
                    Json all = Json::array();
                    for (const Conn& conn : c.conns())
                        all.push_back(with_id(conn));
                    return all;
                })
        .action("sendToConnection",
                [](Act& c, std::string target, Json message) {
                    std::optional<Conn> conn = find_conn(c, target);
                    if (!conn)
                        return false;
                    conn->send("directMessage",
                               Json{{"from", c.conn() ? Json(c.conn()->id()) : Json()},
                                    {"message", message}});
                    return true;
                })
        .action("updateConnection",
                [](Act& c, Json updates) {
                    if (!c.conn())
                        return Json(nullptr);
                    Json state = c.conn()->state_json();
                    for (const char* field : {"username", "role"}) {
                        std::string value = string_field(updates, field, "");
                        if (!value.empty())
                            state[field] = value;
                    }
                    c.conn()->set_state(state);
                    return state;
                })
        .action("disconnectSelf", [](Act& c, std::optional<std::string> reason) -> Task {
            if (c.conn()) {
                Conn self = *c.conn();
                co_await self.disconnect(reason.value_or("test.disconnect"));
            }
            co_return true;
        });
}

Json visible_labels(const Ctx& c) {
    Json labels = Json::array();
    for (const Conn& conn : c.conns()) {
        Json state = conn.state_json();
        labels.push_back(state.is_object() ? state.value("label", Json()) : Json());
    }
    return labels;
}

std::int64_t int_field(const Json& object, const char* field) {
    if (object.is_object() && object.contains(field) && object[field].is_number())
        return object[field].get<std::int64_t>();
    return 0;
}

// A connection is visible in conns() only after both preflight hooks finished; a refused one
// never reaches on_disconnect.
JsonActor conn_preflight_visibility_actor() {
    return JsonActor()
        .state(Json{{"beforeStarted", 0},
                    {"createStarted", 0},
                    {"beforeVisibleLabels", Json::array()},
                    {"createVisibleLabels", Json::array()},
                    {"connectSnapshots", Json::array()},
                    {"disconnectSnapshots", Json::array()}})
        .on_before_connect([](Ctx& c, Json params) -> boost::asio::awaitable<void> {
            c.state()["beforeStarted"] = add(c.state()["beforeStarted"], 1);
            c.state()["beforeVisibleLabels"].push_back(visible_labels(c));
            if (const auto delay = int_field(params, "beforeDelayMs"); delay > 0)
                co_await c.sleep_for(std::chrono::milliseconds(delay));
            if (truthy_field(params, "rejectBefore"))
                throw std::runtime_error("rejected before connect");
        })
        .create_conn_state([](Ctx& c, Json params) -> Task {
            c.state()["createStarted"] = add(c.state()["createStarted"], 1);
            c.state()["createVisibleLabels"].push_back(visible_labels(c));
            if (const auto delay = int_field(params, "createDelayMs"); delay > 0)
                co_await c.sleep_for(std::chrono::milliseconds(delay));
            if (truthy_field(params, "rejectCreate"))
                throw std::runtime_error("rejected create conn state");
            co_return Json{{"label", string_field(params, "label", "anonymous")}};
        })
        .on_connect([](Ctx& c, Conn& conn) {
            bool own_visible = find_conn(c, conn.id()).has_value();
            c.state()["connectSnapshots"].push_back(
                Json{{"label", conn.state_json().value("label", Json())},
                     {"ownVisible", own_visible},
                     {"visibleLabels", visible_labels(c)}});
        })
        .on_disconnect([](Ctx& c, Conn& conn) {
            Json others = Json::array();
            for (const Conn& other : c.conns()) {
                if (other.id() == conn.id())
                    continue;
                Json state = other.state_json();
                others.push_back(state.is_object() ? state.value("label", Json()) : Json());
            }
            Json state = conn.state_json();
            c.state()["disconnectSnapshots"].push_back(
                Json{{"label", state.is_object() ? state.value("label", Json()) : Json()},
                     {"otherLabels", others}});
        })
        .action("snapshot", [](Act& c) {
            Json out = std::as_const(c).state();
            out["visibleLabels"] = visible_labels(c);
            return out;
        });
}

void scheduled_run(Act& c, const char* event, std::optional<std::string> task_id) {
    c.state()["lastRun"] = c.now_ms();
    c.state()["scheduledCount"] = add(c.state()["scheduledCount"], 1);
    Json payload{{"time", c.state()["lastRun"]}, {"count", c.state()["scheduledCount"]}};
    if (task_id) {
        c.state()["taskHistory"].push_back(*task_id);
        payload["taskId"] = *task_id;
    }
    c.broadcast(event, payload);
}

JsonActor scheduled_actor() {
    return JsonActor()
        .state(Json{{"lastRun", 0}, {"scheduledCount", 0}, {"taskHistory", Json::array()}})
        .action("scheduleTaskAt",
                [](Act& c, std::int64_t timestamp) {
                    c.schedule_at(timestamp, "onScheduledTask");
                    return timestamp;
                })
        .action("scheduleTaskAfter",
                [](Act& c, std::int64_t delay_ms) {
                    c.schedule_after(std::chrono::milliseconds(delay_ms), "onScheduledTask");
                    return c.now_ms() + delay_ms;
                })
        .action("scheduleTaskAfterWithId",
                [](Act& c, std::string task_id, std::int64_t delay_ms) {
                    c.schedule_after(std::chrono::milliseconds(delay_ms), "onScheduledTaskWithId",
                                     task_id);
                    return Json{{"taskId", task_id}, {"scheduledFor", c.now_ms() + delay_ms}};
                })
        .action("scheduleTask",
                [](Act& c, std::int64_t delay_ms) {
                    const std::int64_t timestamp = c.now_ms() + delay_ms;
                    c.schedule_at(timestamp, "onScheduledTask");
                    return timestamp;
                })
        .action("getLastRun", [](Act& c) { return std::as_const(c).state()["lastRun"]; })
        .action("getScheduledCount",
                [](Act& c) { return std::as_const(c).state()["scheduledCount"]; })
        .action("getTaskHistory", [](Act& c) { return std::as_const(c).state()["taskHistory"]; })
        .action("clearHistory",
                [](Act& c) {
                    c.state()["taskHistory"] = Json::array();
                    c.state()["scheduledCount"] = 0;
                    c.state()["lastRun"] = 0;
                    return true;
                })
        .action("onScheduledTask", [](Act& c) { scheduled_run(c, "scheduled", std::nullopt); })
        .action("onScheduledTaskWithId",
                [](Act& c, std::string task_id) { scheduled_run(c, "scheduledWithId", task_id); });
}

}  // namespace

void use_conn_fixtures(Registry& registry) {
    registry.use("connStateActor", conn_state_actor());
    registry.use("connPreflightVisibilityActor", conn_preflight_visibility_actor());
    registry.use("scheduled", scheduled_actor());
}

}  // namespace rivetkit::driver

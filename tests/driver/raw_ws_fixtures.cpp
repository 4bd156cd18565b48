// raw-websocket.ts

#include <algorithm>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

std::string search_of(const std::string& path) {
    auto q = path.find('?');
    if (q == std::string::npos || q + 1 == path.size())
        return "";
    return path.substr(q);
}

JsonActor raw_websocket_actor() {
    ActorOptions options;
    options.can_hibernate_websocket = true;
    options.sleep_timeout = 250ms;
    return JsonActor()
        .state(Json{
            {"connectionCount", 0}, {"messageCount", 0}, {"indexedMessageOrder", Json::array()}})
        .options(options)
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            Ctx self = c;
            const std::string upgrade_path =
                c.request() != nullptr ? c.request()->path : "/websocket";
            self.state()["connectionCount"] = add(self.state()["connectionCount"], 1);
            socket.send_text(
                Json{{"type", "welcome"}, {"connectionCount", self.state()["connectionCount"]}}
                    .dump());
            while (auto message = co_await socket.recv()) {
                self.state()["messageCount"] = add(self.state()["messageCount"], 1);
                if (message->binary) {
                    socket.send_binary(message->data);
                    continue;
                }
                const std::string text(message->text());
                Json parsed = Json::parse(text, nullptr, false);
                const std::string type =
                    parsed.is_object() && parsed.contains("type") && parsed["type"].is_string()
                        ? parsed["type"].get<std::string>()
                        : std::string();
                const Json index = message->index ? Json(*message->index) : Json(nullptr);
                if (type == "ping") {
                    socket.send_text(Json{{"type", "pong"}, {"timestamp", self.now_ms()}}.dump());
                } else if (type == "getStats") {
                    socket.send_text(Json{{"type", "stats"},
                                          {"connectionCount", self.state()["connectionCount"]},
                                          {"messageCount", self.state()["messageCount"]}}
                                         .dump());
                } else if (type == "getRequestInfo") {
                    const std::string path = upgrade_path.substr(0, upgrade_path.find('?'));
                    socket.send_text(Json{{"type", "requestInfo"},
                                          {"url", "http://actor" + upgrade_path},
                                          {"pathname", path},
                                          {"search", search_of(upgrade_path)}}
                                         .dump());
                } else if (type == "indexedEcho") {
                    self.state()["indexedMessageOrder"].push_back(index);
                    socket.send_text(Json{
                        {"type", "indexedEcho"},
                        {"payload", parsed.value("payload", Json())},
                        {"rivetMessageIndex",
                         index}}.dump());
                } else if (type == "indexedAckProbe") {
                    self.state()["indexedMessageOrder"].push_back(index);
                    const Json& payload = parsed.value("payload", Json());
                    socket.send_text(Json{
                        {"type", "indexedAckProbe"},
                        {"rivetMessageIndex", index},
                        {"payloadSize",
                         payload.is_string()
                             ? payload.get<std::string>().size()
                             : 0}}.dump());
                } else if (type == "getIndexedMessageOrder") {
                    socket.send_text(Json{{"type", "indexedMessageOrder"},
                                          {"order", self.state()["indexedMessageOrder"]}}
                                         .dump());
                } else if (type == "scheduleSleep") {
                    socket.send_text(Json{{"type", "sleepScheduled"}}.dump());
                    self.wait_until([](Ctx s) -> Void {
                        co_await plain_delay(s, 25ms);
                        s.sleep();
                    }(self));
                } else {
                    socket.send_text(text);
                }
            }
            // A close from the peer (not the actor going to sleep with the socket kept).
            if (socket.close_code())
                self.state()["connectionCount"] = add(self.state()["connectionCount"], -1);
        })
        .action("triggerSleep",
                [](Act& c) {
                    c.sleep();
                    return true;
                })
        .action("getStats", [](Act& c) {
            const Json& s = std::as_const(c).state();
            return Json{{"connectionCount", s["connectionCount"]},
                        {"messageCount", s["messageCount"]}};
        });
}

JsonActor raw_websocket_binary_actor() {
    return JsonActor().on_websocket([](Ctx&, WebSocket& ws) -> Void {
        WebSocket socket = ws;
        while (auto message = co_await socket.recv()) {
            if (!message->binary)
                continue;
            Bytes reversed(message->data.rbegin(), message->data.rend());
            socket.send_binary(reversed);
        }
    });
}

JsonActor raw_websocket_async_open_actor() {
    ActorOptions options;
    options.can_hibernate_websocket = false;
    options.sleep_grace_period = 2000ms;
    return JsonActor()
        .state(Json{{"openCount", 0}})
        .options(options)
        .on_websocket([](Ctx& c, WebSocket& ws) -> Void {
            WebSocket socket = ws;
            c.state()["openCount"] = add(c.state()["openCount"], 1);
            co_await plain_delay(c, 10ms);
            socket.send_text(
                Json{{"type", "async-open"}, {"openCount", c.state()["openCount"]}}.dump());
        })
        .action("getOpenCount", [](Act& c) { return std::as_const(c).state()["openCount"]; });
}

JsonActor raw_websocket_conn_context_actor() {
    return JsonActor().on_websocket([](Ctx&, WebSocket& ws) {
        std::optional<Conn> conn = ws.conn();
        const std::string id = conn ? conn->id() : std::string();
        Json state{{"opened", true}, {"connId", id}};
        if (conn)
            conn->set_state(state);
        ws.send_text(Json{{"type", "conn-context"}, {"connId", id}, {"state", state}}.dump());
    });
}

}  // namespace

void use_raw_ws_fixtures(Registry& registry) {
    registry.use("rawWebSocketActor", raw_websocket_actor());
    registry.use("rawWebSocketBinaryActor", raw_websocket_binary_actor());
    registry.use("rawWebSocketAsyncOpenActor", raw_websocket_async_open_actor());
    registry.use("rawWebSocketConnContextActor", raw_websocket_conn_context_actor());
}

}  // namespace rivetkit::driver

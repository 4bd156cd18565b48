// raw-http.ts, raw-http-request-properties.ts, request-access.ts

#include <boost/url/parse.hpp>
#include <cctype>
#include <regex>
#include <stdexcept>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

using Ctx = ActorContext<Json, Json>;
using Act = ActionContext<Json, Json>;
using JsonActor = Actor<Json, Json>;

// The request as JavaScript's `new Request("http://actor" + path)` shows it.
std::string url_of(const Request& r) {
    return "http://actor" + (r.path.empty() || r.path.front() != '/' ? "/" + r.path : r.path);
}

std::string lower(std::string s) {
    for (char& ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

Json headers_object(const Request& r) {
    Json out = Json::object();
    for (const auto& [k, v] : r.headers)
        out[lower(k)] = v;
    return out;
}

struct ParsedUrl {
    std::string pathname = "/";
    std::string search;  // "?..." or ""
    Json search_params = Json::object();
};

ParsedUrl parse_url(const Request& r) {
    ParsedUrl out;
    auto parsed = boost::urls::parse_uri_reference(r.path);
    if (!parsed) {
        out.pathname = r.path;
        return out;
    }
    out.pathname = std::string(parsed->encoded_path());
    if (out.pathname.empty())
        out.pathname = "/";
    if (parsed->has_query()) {
        const std::string query(parsed->encoded_query());
        if (!query.empty())
            out.search = "?" + query;
        boost::urls::encoding_opts opts;
        opts.space_as_plus = true;
        for (auto param : parsed->params(opts))
            out.search_params[std::string(param.key)] = std::string(param.value);
    }
    return out;
}

Response json_response(const Json& body, std::uint16_t status = 200) {
    Response r = Response::json(body, status);
    return r;
}

JsonActor raw_http_actor() {
    return JsonActor()
        .state(Json{{"requestCount", 0}})
        .on_request([](Ctx& c, Request& request) -> Response {
            const ParsedUrl url = parse_url(request);
            c.state()["requestCount"] = add(c.state()["requestCount"], 1);
            if (url.pathname == "/api/hello")
                return json_response(Json{{"message", "Hello from actor!"}});
            if (url.pathname == "/api/echo" && request.method == "POST") {
                Response echo;
                echo.headers = request.headers;
                echo.body = request.body;
                return echo;
            }
            if (url.pathname == "/api/state")
                return json_response(Json{{"requestCount", c.state()["requestCount"]}});
            if (url.pathname == "/api/headers")
                return json_response(headers_object(request));
            return Response::text("Not Found", 404);
        });
}

// The fixture's Hono router: six JSON routes.
JsonActor raw_http_hono_actor() {
    return JsonActor().on_request([](Ctx&, Request& request) -> Response {
        const ParsedUrl url = parse_url(request);
        static const std::regex user_path("^/users/([^/]+)$");
        std::smatch m;
        const std::string& path = url.pathname;
        const std::string& method = request.method;
        auto body_json = [&] {
            Json body = Json::parse(request.body_text(), nullptr, false);
            return body.is_discarded() ? Json::object() : body;
        };
        auto id_number = [](const std::string& id) -> Json {
            try {
                return std::stoll(id);
            } catch (...) {
                return nullptr;
            }
        };
        if (method == "GET" && path == "/")
            return json_response(Json{{"message", "Welcome to Hono actor!"}});
        if (method == "GET" && path == "/users")
            return json_response(
                Json::array({{{"id", 1}, {"name", "Alice"}}, {{"id", 2}, {"name", "Bob"}}}));
        if (method == "POST" && path == "/users") {
            Json out{{"id", 3}};
            out.update(body_json());
            return json_response(out, 201);
        }
        if (std::regex_match(path, m, user_path)) {
            const std::string id = m[1].str();
            if (method == "GET")
                return json_response(
                    Json{{"id", id_number(id)}, {"name", id == "1" ? "Alice" : "Bob"}});
            if (method == "PUT") {
                Json out{{"id", id_number(id)}};
                out.update(body_json());
                return json_response(out);
            }
            if (method == "DELETE")
                return json_response(Json{{"message", "User " + id + " deleted"}});
        }
        return Response::text("404 Not Found", 404);
    });
}

JsonActor raw_http_request_properties_actor() {
    return JsonActor().on_request([](Ctx&, Request& request) -> Response {
        if (request.method == "HEAD")
            return Response::text("", 200);
        if (request.method == "OPTIONS")
            return Response::text("", 204);
        const ParsedUrl url = parse_url(request);
        const bool has_body = !request.body.empty();
        Json body = nullptr;
        if (has_body) {
            const std::string content_type = request.header("content-type").value_or("");
            const std::string text(request.body_text());
            if (content_type.find("application/json") != std::string::npos) {
                Json parsed = Json::parse(text, nullptr, false);
                body = parsed.is_discarded() ? Json(nullptr) : parsed;
            } else {
                body = text;
            }
        }
        Json body_text = nullptr;
        if (body.is_string())
            body_text = body;
        else if (body.is_null() && has_body)
            body_text = "";
        return json_response(Json{{"url", url_of(request)},
                                  {"pathname", url.pathname},
                                  {"search", url.search},
                                  {"searchParams", url.search_params},
                                  {"hash", ""},
                                  {"method", request.method},
                                  {"headers", headers_object(request)},
                                  {"body", body},
                                  {"bodyText", body_text},
                                  {"cache", "default"},
                                  {"credentials", "same-origin"},
                                  {"mode", "cors"},
                                  {"redirect", "follow"},
                                  {"referrer", "about:client"}});
    });
}

Json request_record(const Request* request) {
    if (request == nullptr)
        return Json{{"hasRequest", false},
                    {"requestUrl", nullptr},
                    {"requestMethod", nullptr},
                    {"requestHeaders", Json::object()}};
    return Json{{"hasRequest", true},
                {"requestUrl", url_of(*request)},
                {"requestMethod", request->method},
                {"requestHeaders", headers_object(*request)}};
}

// Records the request each hook sees (c.request()).
JsonActor request_access_actor() {
    const Json none = request_record(nullptr);
    return JsonActor()
        .state(Json{{"onBeforeConnectRequest", none},
                    {"createConnStateRequest", none},
                    {"onRequestRequest", none},
                    {"onWebSocketRequest", none}})
        .create_conn_state([](Ctx& c, Json params) {
            const bool track = truthy_field(params, "trackRequest");
            return Json{{"trackRequest", track},
                        {"requestInfo", track && c.request() != nullptr
                                            ? request_record(c.request())
                                            : Json(nullptr)}};
        })
        .on_connect([](Ctx& c, Conn& conn) {
            Json state = conn.state_json();
            if (state.is_object() && state["requestInfo"].is_object())
                c.state()["createConnStateRequest"] = state["requestInfo"];
        })
        .on_before_connect([](Ctx& c, Json params) {
            if (truthy_field(params, "trackRequest")) {
                if (c.request() != nullptr)
                    c.state()["onBeforeConnectRequest"] = request_record(c.request());
                else
                    c.state()["onBeforeConnectRequest"]["hasRequest"] = false;
            }
        })
        .on_request([](Ctx& c, Request& request) -> Response {
            Json record = request_record(&request);
            c.state()["onRequestRequest"] = record;
            return json_response(record);
        })
        .on_websocket([](Ctx& c, WebSocket& ws) -> boost::asio::awaitable<void> {
            if (c.request() == nullptr)
                throw std::runtime_error("Missing request");
            Json record = request_record(c.request());
            c.state()["onWebSocketRequest"] = record;
            ws.send_text(record.dump());
            WebSocket socket = ws;
            while (auto message = co_await socket.recv()) {
                if (message->binary)
                    socket.send_binary(message->data);
                else
                    socket.send_text(message->text());
            }
        })
        .action("ping", [](Act&) { return "pong"; })
        .action("getRequestInfo", [](Act& c) {
            const Json& s = std::as_const(c).state();
            return Json{{"onBeforeConnect", s["onBeforeConnectRequest"]},
                        {"createConnState", s["createConnStateRequest"]},
                        {"onRequest", s["onRequestRequest"]},
                        {"onWebSocket", s["onWebSocketRequest"]}};
        });
}

}  // namespace

void use_http_fixtures(Registry& registry) {
    registry.use("rawHttpActor", raw_http_actor());
    registry.use("rawHttpNoHandlerActor", JsonActor());
    // C++ cannot return "nothing" from on_request; the failure it stands for is the same 500.
    registry.use("rawHttpVoidReturnActor", JsonActor().on_request([](Ctx&, Request&) -> Response {
        throw std::runtime_error("onRequest handler must return a Response");
    }));
    registry.use("rawHttpHonoActor", raw_http_hono_actor());
    registry.use("rawHttpRequestPropertiesActor", raw_http_request_properties_actor());
    registry.use("requestAccessActor", request_access_actor());
}

}  // namespace rivetkit::driver

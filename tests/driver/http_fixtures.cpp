// raw-http.ts, raw-http-request-properties.ts, request-access.ts

#include <cctype>
#include <regex>
#include <stdexcept>
#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

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

// application/x-www-form-urlencoded decoding as URLSearchParams does it ('+' is a space; a bad
// escape is kept as written).
std::string form_decode(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    auto hex = [](char ch) -> int {
        if (ch >= '0' && ch <= '9')
            return ch - '0';
        if (ch >= 'a' && ch <= 'f')
            return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
            return ch - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '+') {
            out += ' ';
        } else if (in[i] == '%' && i + 2 < in.size() && hex(in[i + 1]) >= 0 &&
                   hex(in[i + 2]) >= 0) {
            out += static_cast<char>(hex(in[i + 1]) * 16 + hex(in[i + 2]));
            i += 2;
        } else {
            out += in[i];
        }
    }
    return out;
}

// Lenient, as a browser's URL is: the path up to '?', the query up to '#'.
ParsedUrl parse_url(const Request& r) {
    ParsedUrl out;
    std::string_view target = r.path;
    if (auto hash = target.find('#'); hash != std::string_view::npos)
        target = target.substr(0, hash);
    const auto q = target.find('?');
    out.pathname = std::string(target.substr(0, q));
    if (out.pathname.empty() || out.pathname.front() != '/')
        out.pathname = "/" + out.pathname;
    if (q == std::string_view::npos)
        return out;
    std::string_view query = target.substr(q + 1);
    if (!query.empty())
        out.search = "?" + std::string(query);
    while (!query.empty()) {
        const auto amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty())
            continue;
        const auto eq = pair.find('=');
        const std::string key = form_decode(pair.substr(0, eq));
        const std::string value =
            eq == std::string_view::npos ? std::string() : form_decode(pair.substr(eq + 1));
        out.search_params[key] = value;
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
            return Json{
                {"trackRequest", track},
                {"requestInfo",
                 track && c.request() != nullptr ? request_record(c.request()) : Json(nullptr)}};
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

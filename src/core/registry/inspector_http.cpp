// CoreRegistry: the inspector's HTTP routes (after the bearer token was checked) and /metrics.

#include <fmt/format.h>

#include <boost/url/parse.hpp>
#include <charconv>
#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "core/actor/metrics.hpp"
#include "core/actor/queue.hpp"
#include "core/inspector/database.hpp"
#include "core/inspector/state.hpp"
#include "core/registry/actor_requests.hpp"
#include "core/registry/encoding.hpp"
#include "core/registry/registry.hpp"
#include "core/registry/routes.hpp"

namespace rivetkit::core::registry {

namespace asio = boost::asio;

namespace {

envoy::HttpResponse json_response(std::uint16_t status, std::string body) {
    envoy::HttpResponse r;
    r.status = status;
    r.headers.emplace_back("content-type", "application/json");
    r.body.assign(body.begin(), body.end());
    return r;
}

std::string cbor_json_or_null(BytesView cbor) {
    auto text = cbor_to_json_text(cbor);
    return text.ok() ? std::move(text).value() : std::string("null");
}

// Query parameter `key` of `path`, percent-decoded ('+' as space); nullopt when absent or when
// the request target does not parse.
std::optional<std::string> query_param(std::string_view path, std::string_view key) {
    auto url = boost::urls::parse_origin_form(path);
    if (!url)
        return std::nullopt;
    auto params = url->params();
    auto it = params.find(key);
    if (it == params.end())
        return std::nullopt;
    return std::string((*it).value);
}

// The `key` query parameter of `path` as u32: `fallback` when absent, nullopt when malformed.
std::optional<std::uint32_t> query_u32(std::string_view path, std::string_view key,
                                       std::uint32_t fallback) {
    auto value = query_param(path, key);
    if (!value)
        return fallback;
    std::uint32_t n = 0;
    const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
    if (value->empty() || ec != std::errc{} || end != value->data() + value->size())
        return std::nullopt;
    return n;
}

envoy::HttpResponse error_json(const Error& e) {
    std::uint16_t status = 500;
    if (e.is("database", "not_enabled") || e.code() == "invalid_request")
        status = 400;
    else if (is_public(e))
        status = static_cast<std::uint16_t>(public_http_status(e));
    return json_response(
        status,
        fmt::format(R"({{"group":{},"code":{},"message":{},"metadata":{}}})", json_quote(e.group()),
                    json_quote(e.code()), json_quote(e.message()), e.metadata().value_or("null")));
}

envoy::HttpResponse invalid_request(std::string_view message) {
    return error_json(Error("actor", "invalid_request", std::string(message)));
}

// A JSON scalar as an SQLite value (booleans as 0/1, as SQLite stores them); nullopt otherwise.
std::optional<sqlite::Value> sql_value(const nlohmann::json& v) {
    if (v.is_null())
        return sqlite::Value{std::monostate{}};
    if (v.is_boolean())
        return sqlite::Value{std::int64_t{v.get<bool>() ? 1 : 0}};
    if (v.is_number_integer() &&
        !(v.is_number_unsigned() && v.get<std::uint64_t>() > 0x7fffffffffffffffull))
        return sqlite::Value{v.get<std::int64_t>()};
    if (v.is_number())
        return sqlite::Value{v.get<double>()};
    if (v.is_string())
        return sqlite::Value{v.get<std::string>()};
    return std::nullopt;
}

struct ExecuteBody {
    std::string sql;
    std::vector<sqlite::Value> args;
    std::optional<sqlite::NamedValues> properties;
};

// POST /inspector/database/execute's body: {"sql": str, "args"?: [values],
// "properties"?: {name: value}}.
Result<ExecuteBody> parse_execute_body(const Bytes& body) {
    using nlohmann::json;
    json root = json::parse(body.begin(), body.end(), nullptr, false);
    if (root.is_discarded() || !root.is_object())
        return Error("actor", "invalid_request", "Invalid inspector JSON body");
    auto sql = root.find("sql");
    if (sql == root.end() || !sql->is_string())
        return Error("actor", "invalid_request",
                     "Invalid inspector request `sql`: must be a string");
    ExecuteBody out;
    out.sql = sql->get<std::string>();
    const char* scalar_only = "values must be null, booleans, numbers or strings";
    if (auto a = root.find("args"); a != root.end() && !a->is_null()) {
        if (!a->is_array())
            return Error("actor", "invalid_request",
                         "Invalid inspector request `args`: must be an array");
        for (const auto& v : *a) {
            auto value = sql_value(v);
            if (!value)
                return Error("actor", "invalid_request",
                             std::string("Invalid inspector request `args`: ") + scalar_only);
            out.args.push_back(std::move(*value));
        }
    }
    if (auto p = root.find("properties"); p != root.end() && !p->is_null()) {
        if (!p->is_object())
            return Error("actor", "invalid_request",
                         "Invalid inspector request `properties`: must be an object");
        sqlite::NamedValues named;
        for (const auto& [key, v] : p->items()) {
            auto value = sql_value(v);
            if (!value)
                return Error("actor", "invalid_request",
                             std::string("Invalid inspector request `properties`: ") + scalar_only);
            named.emplace_back(key, std::move(*value));
        }
        out.properties = std::move(named);
    }
    return out;
}

// GET /inspector/connections' items (also the summary's).
std::string connections_json(const ActorContext& ctx) {
    std::string list;
    for (const auto& conn : ctx.conns()) {
        if (!list.empty())
            list += ',';
        list += fmt::format(
            R"({{"id":{},"details":{{"params":{},"state":{},"subscriptions":{},"isHibernatable":{}}}}})",
            json_quote(conn.id()), cbor_json_or_null(conn.params()),
            cbor_json_or_null(conn.state()), conn.subscriptions().size(),
            conn.is_hibernatable() ? "true" : "false");
    }
    return "[" + list + "]";
}

std::string rpcs_json(const CoreRegistry::Instance& instance) {
    std::string list;
    for (const auto& action : instance.factory->config().actions) {
        if (!list.empty())
            list += ',';
        list += json_quote(action.name);
    }
    return "[" + list + "]";
}

// {"history": JSON or null, "isWorkflowEnabled": bool}, as the workflow routes answer.
std::string workflow_json(const WorkflowAnswer& answer) {
    std::string history = answer.history ? cbor_json_or_null(*answer.history) : "null";
    return fmt::format(R"({{"history":{},"isWorkflowEnabled":{}}})", history,
                       answer.enabled ? "true" : "false");
}

// A JSON request body's member `key` as CBOR (compat-tagged values decoded as the client
// protocol's JSON encoding does); `fallback` when the member is absent or null.
Result<Bytes> json_member_as_cbor(const Bytes& body, std::string_view key,
                                  std::string_view fallback, bool required) {
    using nlohmann::json;
    json root = json::parse(body.begin(), body.end(), nullptr, false);
    if (root.is_discarded() || !root.is_object())
        return Error("actor", "invalid_request", "Invalid inspector JSON body");
    auto member = root.find(key);
    if (member == root.end() || member->is_null()) {
        if (required)
            return Error("actor", "invalid_request",
                         fmt::format("Invalid inspector request `{}`: missing", key));
        return json_text_to_cbor(fallback);
    }
    return json_text_to_cbor(member->dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_inspector_authorized(
    std::shared_ptr<Instance> instance, HttpRequest request, Route route) {
    const ActorContext& ctx = instance->ctx;
    if (request.method == "GET" && route.segment == "state") {
        Bytes state = co_await inspector::current_state(ctx);
        co_return json_response(
            200, fmt::format(R"({{"state":{},"isStateEnabled":true}})", cbor_json_or_null(state)));
    }
    if (request.method == "GET" && route.segment == "connections")
        co_return json_response(200, "{\"connections\":" + connections_json(ctx) + "}");
    if (request.method == "PATCH" && route.segment == "state") {
        // Upstream's PATCH /inspector/state: {"state": value} replaces the state and saves it.
        auto state = json_member_as_cbor(request.body, "state", "null", true);
        if (!state.ok())
            co_return error_json(state.error());
        Status saved = co_await ctx.patch_state(std::move(state).value());
        if (!saved.ok())
            co_return error_json(saved.error());
        co_return json_response(200, R"({"ok":true})");
    }
    if (request.method == "GET" && route.segment == "queue") {
        // Upstream's GET /inspector/queue: size, maxSize, truncated and the first `limit`
        // messages (id, name, createdAtMs), FIFO.
        const auto limit = query_u32(request.path, "limit", 100);
        if (!limit)
            co_return json_response(
                400,
                R"({"group":"actor","code":"invalid_request","message":"Invalid query parameter `limit`."})");
        ActorQueue queue(ctx);
        auto messages = co_await queue.inspect_messages();
        if (!messages.ok()) {
            log::warn("inspector queue listing failed",
                      {{"actor_id", ctx.actor_id()}, {"error", messages.error().to_string()}});
            co_return json_response(500, fmt::format(R"({{"group":{},"code":{},"message":{}}})",
                                                     json_quote(messages.error().group()),
                                                     json_quote(messages.error().code()),
                                                     json_quote(messages.error().message())));
        }
        std::string list;
        std::size_t shown = 0;
        for (const auto& m : *messages) {
            if (shown++ >= *limit)
                break;
            if (!list.empty())
                list += ',';
            list += fmt::format(R"({{"id":{},"name":{},"createdAtMs":{}}})", m.id,
                                json_quote(m.name), m.created_at);
        }
        co_return json_response(
            200, fmt::format(R"({{"size":{},"maxSize":{},"truncated":{},"messages":[{}]}})",
                             messages->size(), queue.max_size(),
                             messages->size() > *limit ? "true" : "false", list));
    }
    if (request.method == "DELETE" && route.segment == "queue") {
        // Upstream's DELETE /inspector/queue: every message removed; {}.
        ActorQueue queue(ctx);
        Status reset = co_await queue.reset();
        if (!reset.ok())
            co_return error_json(reset.error());
        co_return json_response(200, "{}");
    }
    if (request.method == "POST" && route.segment == "queue") {
        // Upstream's POST /inspector/queue {"name", "body"?}: enqueues a message as a sender
        // would; {"id" (a string), "name", "createdAtMs"}.
        using nlohmann::json;
        json root = json::parse(request.body.begin(), request.body.end(), nullptr, false);
        if (root.is_discarded() || !root.is_object())
            co_return invalid_request("Invalid inspector JSON body");
        auto name_member = root.find("name");
        if (name_member != root.end() && !name_member->is_null() && !name_member->is_string())
            co_return invalid_request("Invalid inspector request `name`: must be a string");
        const std::string name = name_member != root.end() && name_member->is_string()
                                     ? name_member->get<std::string>()
                                     : std::string();
        if (name.empty())
            co_return invalid_request("Queue message name must not be empty");
        auto body_member = root.find("body");
        auto body = json_text_to_cbor(
            body_member == root.end()
                ? std::string("null")
                : body_member->dump(-1, ' ', false, json::error_handler_t::replace));
        if (!body.ok())
            co_return error_json(body.error());
        ActorQueue queue(ctx);
        auto sent = co_await queue.send(name, std::move(body).value());
        if (!sent.ok())
            co_return error_json(sent.error());
        co_return json_response(200, fmt::format(R"({{"id":{},"name":{},"createdAtMs":{}}})",
                                                 json_quote(std::to_string(sent->id)),
                                                 json_quote(sent->name), sent->created_at));
    }
    const std::string_view segment =
        std::string_view(route.segment).substr(0, route.segment.find('?'));
    if (request.method == "GET" && segment == "database/schema") {
        auto op = inspector::database_schema(ctx);
        auto schema = co_await std::move(op);
        if (!schema.ok())
            co_return error_json(schema.error());
        co_return json_response(200, R"({"schema":)" + cbor_json_or_null(*schema) + "}");
    }
    if (request.method == "GET" && segment == "database/rows") {
        auto table = query_param(request.path, "table");
        if (!table)
            co_return invalid_request("Missing or invalid query parameter `table`.");
        const auto limit = query_u32(request.path, "limit", 100);
        if (!limit)
            co_return invalid_request("Invalid query parameter `limit`.");
        const auto offset = query_u32(request.path, "offset", 0);
        if (!offset)
            co_return invalid_request("Invalid query parameter `offset`.");
        auto op = inspector::database_rows(ctx, std::move(*table), *limit, *offset);
        auto rows = co_await std::move(op);
        if (!rows.ok())
            co_return error_json(rows.error());
        co_return json_response(200, R"({"rows":)" + cbor_json_or_null(*rows) + "}");
    }
    if (request.method == "POST" && segment == "database/execute") {
        auto body = parse_execute_body(request.body);
        if (!body.ok())
            co_return error_json(body.error());
        auto op = inspector::database_execute(ctx, std::move(body->sql), std::move(body->args),
                                              std::move(body->properties));
        auto rows = co_await std::move(op);
        if (!rows.ok())
            co_return error_json(rows.error());
        co_return json_response(200, R"({"rows":)" + cbor_json_or_null(*rows) + "}");
    }
    if (request.method == "GET" && route.segment == "rpcs")
        co_return json_response(200, "{\"rpcs\":" + rpcs_json(*instance) + "}");
    if (request.method == "POST" && segment.rfind("action/", 0) == 0) {
        // Upstream's inspector RPC over HTTP: {"args": [...]} → {"output": value}; an unknown
        // action is a 404, any other failure a 500, with the client-facing error.
        std::string name(segment.substr(std::string_view("action/").size()));
        auto args = json_member_as_cbor(request.body, "args", "[]", false);
        if (!args.ok())
            co_return error_json(args.error());
        auto op = run_transient_action(instance, clock_, ConnectOptions{}, std::move(name),
                                       std::move(args).value());
        auto output = co_await std::move(op);
        if (!output.ok()) {
            const ClientError e = client_error(output.error());
            co_return json_response(
                output.error().code() == "action_not_found" ? 404 : 500,
                fmt::format(R"({{"group":{},"code":{},"message":{},"metadata":{}}})",
                            json_quote(e.group), json_quote(e.code), json_quote(e.message),
                            e.metadata_json.value_or("null")));
        }
        co_return json_response(200, R"({"output":)" + cbor_json_or_null(*output) + "}");
    }
    if ((request.method == "GET" && segment == "workflow-history") ||
        (request.method == "POST" && segment == "workflow/replay")) {
        const bool replay = request.method == "POST";
        std::optional<std::string> entry_id;
        if (replay) {
            using nlohmann::json;
            json root = json::parse(request.body.begin(), request.body.end(), nullptr, false);
            if (root.is_discarded() || !root.is_object())
                co_return invalid_request("Invalid inspector JSON body");
            if (auto e = root.find("entryId"); e != root.end() && e->is_string())
                entry_id = e->get<std::string>();
        }
        auto op = ask_workflow(instance, replay, std::move(entry_id));
        auto answer = co_await std::move(op);
        if (!answer.ok())
            co_return error_json(answer.error());
        if (replay && answer->enabled)
            ctx.record_inspector_signal(InspectorSignal::WorkflowHistoryUpdated);
        co_return json_response(200, workflow_json(*answer));
    }
    if (request.method == "GET" && segment == "traces") {
        // Upstream answers an empty OTLP payload here too (no traces are recorded).
        co_return json_response(200, R"({"otlp":[],"clamped":false})");
    }
    if (request.method == "GET" && segment == "summary") {
        Bytes state = co_await inspector::current_state(ctx);
        ActorQueue queue(ctx);
        auto messages = co_await queue.inspect_messages();
        if (!messages.ok())
            co_return error_json(messages.error());
        auto op = ask_workflow(instance, false, std::nullopt);
        auto workflow = co_await std::move(op);
        if (!workflow.ok())
            co_return error_json(workflow.error());
        co_return json_response(
            200,
            fmt::format(
                R"({{"state":{},"isStateEnabled":{},"connections":{},"rpcs":{},"queueSize":{},"isDatabaseEnabled":{},"isWorkflowEnabled":{},"workflowHistory":{}}})",
                cbor_json_or_null(state), ctx.config().has_state ? "true" : "false",
                connections_json(ctx), rpcs_json(*instance), messages->size(),
                inspector::database_enabled(ctx) ? "true" : "false",
                workflow->enabled ? "true" : "false",
                workflow->history ? cbor_json_or_null(*workflow->history) : "null"));
    }
    co_return json_response(
        404,
        fmt::format(
            R"({{"group":"actor","code":"not_found","message":"Actor route '{}' was not found."}})",
            route.path));
}

// Process-wide, per actor name, with upstream's metric names (core/actor/metrics.hpp).
std::string CoreRegistry::render_metrics() const {
    return render_prometheus_metrics();
}

}  // namespace rivetkit::core::registry

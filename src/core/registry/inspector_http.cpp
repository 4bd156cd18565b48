// CoreRegistry: the inspector's HTTP routes (after the bearer token was checked) and /metrics.

#include <fmt/format.h>

#include "base/log.hpp"

#include "core/actor/metrics.hpp"
#include "core/actor/queue.hpp"
#include "core/inspector/state.hpp"
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

// The `key` query parameter of `path` as u32: `fallback` when absent, nullopt when malformed.
std::optional<std::uint32_t> query_u32(std::string_view path, std::string_view key,
                                       std::uint32_t fallback) {
    const auto q = path.find('?');
    if (q == std::string_view::npos)
        return fallback;
    std::string_view rest = path.substr(q + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) != key)
            continue;
        std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
        if (value.empty() || value.size() > 10)
            return std::nullopt;
        std::uint64_t n = 0;
        for (char c : value) {
            if (c < '0' || c > '9')
                return std::nullopt;
            n = n * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (n > 0xffffffffu)
            return std::nullopt;
        return static_cast<std::uint32_t>(n);
    }
    return fallback;
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
    if (request.method == "GET" && route.segment == "connections") {
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
        co_return json_response(200, "{\"connections\":[" + list + "]}");
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
            co_return json_response(
                500, fmt::format(R"({{"group":{},"code":{},"message":{}}})",
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
    if (request.method == "GET" && route.segment == "rpcs") {
        std::string list;
        for (const auto& action : instance->factory->config().actions) {
            if (!list.empty())
                list += ',';
            list += json_quote(action.name);
        }
        co_return json_response(200, "{\"rpcs\":[" + list + "]}");
    }
    co_return json_response(
        404, fmt::format(R"({{"group":"actor","code":"not_found","message":"Actor route '{}' was not found."}})",
                         route.path));
}

// Process-wide, per actor name, with upstream's metric names (core/actor/metrics.hpp).
std::string CoreRegistry::render_metrics() const {
    return render_prometheus_metrics();
}

}  // namespace rivetkit::core::registry

// CoreRegistry: the inspector's HTTP routes (after the bearer token was checked) and /metrics.

#include <fmt/format.h>

#include "core/actor/metrics.hpp"
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

}  // namespace

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_inspector_authorized(
    std::shared_ptr<Instance> instance, HttpRequest request, Route route) {
    const ActorContext& ctx = instance->ctx;
    if (request.method == "GET" && route.segment == "state") {
        // The runtime holds the live state; ask it (as the inspector overlay does) and fall back
        // to the last saved bytes when it has nothing newer.
        Bytes state = ctx.state();
        auto [reply, rx] = Reply<std::vector<StateDelta>>::make();
        if (ctx.try_send_actor_event(event::SerializeState{SerializeStateReason::Inspector,
                                                           std::move(reply)},
                                     "inspector_state")
                .ok()) {
            auto got = co_await rx.recv();
            if (got && got->ok()) {
                for (auto& delta : got->value()) {
                    if (delta.kind == StateDelta::Kind::ActorState)
                        state = std::move(delta.bytes);
                }
            }
        }
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

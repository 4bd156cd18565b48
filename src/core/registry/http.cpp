// CoreRegistry: tunneled HTTP requests. Paths arrive as the gateway forwards them (no /gateway
// prefix, no rvt-* query parameters); the query string is kept for raw /request handlers.

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "core/actor/metrics.hpp"
#include "core/inspector/auth.hpp"
#include "core/registry/actor_requests.hpp"
#include "core/registry/encoding.hpp"
#include "core/registry/registry.hpp"
#include "core/registry/routes.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core::registry {

namespace asio = boost::asio;

namespace {

constexpr std::string_view kRootText =
    "This is an RivetKit actor.\n\nLearn more at https://rivetkit.org";

envoy::HttpResponse text_response(std::uint16_t status, std::string_view content_type,
                                  std::string_view body) {
    envoy::HttpResponse r;
    r.status = status;
    r.headers.emplace_back("content-type", std::string(content_type));
    r.body.assign(body.begin(), body.end());
    return r;
}

// The headers every actor response carries after its own.
constexpr std::size_t kActorHeaders = 3;

// Sets `name` (lowercase) to `value`, replacing a header of that name in any case (a raw
// handler's own x-rivet-actor, say): the framework's value is the one the client reads.
void set_header(envoy::Headers& headers, std::string_view name, std::string value) {
    for (auto& [have, old] : headers) {
        if (ascii_iequals(have, name)) {
            have = name;
            old = std::move(value);
            return;
        }
    }
    headers.emplace_back(std::string(name), std::move(value));
}

// Once per answer of an actor that was served (CoreRegistry::fetch), errors included.
void attach_actor_headers(envoy::HttpResponse& response, const std::string& actor_id,
                          std::uint32_t generation, const std::string& key) {
    response.headers.reserve(response.headers.size() + kActorHeaders);
    set_header(response.headers, "x-rivet-actor", actor_id);
    set_header(response.headers, "x-rivet-actor-generation", std::to_string(generation));
    if (key.find_first_of("\r\n") == std::string::npos)
        set_header(response.headers, "x-rivet-actor-key", key);
}

// A framework answer (an action's output, a queue send's result) in the request's encoding, with
// room for the actor's headers.
envoy::HttpResponse encoded_response(Encoding encoding, Bytes body) {
    envoy::HttpResponse r;
    r.status = 200;
    r.headers.reserve(1 + kActorHeaders);
    r.headers.emplace_back("content-type", std::string(content_type(encoding)));
    r.body = std::move(body);
    return r;
}

envoy::HttpResponse error_response(Encoding encoding, const Error& error, bool from_runtime,
                                   const std::optional<ActorSpecifier>& actor) {
    const ClientError shown = from_runtime ? client_error(error) : ClientError{
        error.group(), error.code(), error.message(), error.metadata()};
    envoy::HttpResponse r;
    r.status = framework_status(error);
    r.headers.emplace_back("content-type", std::string(content_type(encoding)));
    r.body = encode_http_error(encoding, shown, actor);
    // The actor's headers are not attached here: fetch attaches them to whatever serve_http
    // answers (attached here too, an error carried each of them twice).
    if (actor) {
        log::warn("actor http error response", {{"actor_id", actor->actor_id},
                                                {"generation", static_cast<std::uint64_t>(actor->generation)},
                                                {"group", error.group()},
                                                {"code", error.code()}});
    }
    return r;
}

// The actor's specifier is built only for an error: the answer that carries it is rare.
envoy::HttpResponse error_response(Encoding encoding, const Error& error, bool from_runtime,
                                   const CoreRegistry::Instance& instance) {
    return error_response(encoding, error, from_runtime, std::optional(instance.specifier()));
}

// The headers the framework itself reads; the rest only matter to code that sees the request.
constexpr std::array<std::string_view, 2> kFrameworkHeaders = {"x-rivet-encoding",
                                                                "x-rivet-conn-params"};

enum class Headers : std::uint8_t { All, FrameworkOnly };

// Takes the method, headers and body out of `request` (moved, not copied: this runs per request).
// With Headers::FrameworkOnly the request keeps only kFrameworkHeaders: for a request no user
// code will see, which spares a map node per forwarded header.
HttpRequest to_core_request(envoy::HttpRequest& request, std::string path, Headers which) {
    HttpRequest out;
    out.method = std::move(request.method);
    out.path = std::move(path);
    for (auto& [name, value] : request.headers) {
        for (char& c : name)
            c = ascii_lower(c);
        if (which == Headers::FrameworkOnly &&
            std::find(kFrameworkHeaders.begin(), kFrameworkHeaders.end(), name) ==
                kFrameworkHeaders.end())
            continue;
        out.headers.insert_or_assign(std::move(name), std::move(value));
    }
    request.headers.clear();
    out.body = std::move(request.body);
    return out;
}

std::optional<std::string_view> header(const HttpRequest& request, const std::string& name) {
    auto it = request.headers.find(name);
    if (it == request.headers.end())
        return std::nullopt;
    return std::string_view(it->second);
}

Error method_not_allowed(const HttpRequest& request, std::string_view path) {
    return Error("actor", "method_not_allowed", "Method not allowed",
                 fmt::format(R"({{"method":{},"path":{}}})", json_quote(request.method),
                             json_quote(path)));
}

// Every request holds the actor awake; when the last one ends the idle timer is re-armed.
class HttpInFlight {
  public:
    explicit HttpInFlight(std::shared_ptr<CoreRegistry::Instance> instance)
        : instance_(std::move(instance)) {
        ++instance_->http_in_flight;
        instance_->ctx.signal_activity();
    }
    HttpInFlight(const HttpInFlight&) = delete;
    HttpInFlight& operator=(const HttpInFlight&) = delete;
    ~HttpInFlight() {
        --instance_->http_in_flight;
        instance_->ctx.signal_activity();
    }

  private:
    std::shared_ptr<CoreRegistry::Instance> instance_;
};

template <typename T>
asio::awaitable<Result<T>> await_reply(rt::OneshotReceiver<Result<T>> rx) {
    auto got = co_await rx.recv();
    if (!got)
        co_return errors::actor_dropped_reply();
    co_return std::move(*got);
}

}  // namespace

asio::awaitable<envoy::HttpResponse> CoreRegistry::fetch(envoy::EnvoyHandle,
                                                         envoy::HttpRequest request) {
    auto self = shared_from_this();
    Route route = classify_http_path(request.path);
    // /metrics is the host's, no actor's.
    auto admitted = route.kind == Route::Kind::Metrics
                        ? Result<std::shared_ptr<Instance>>(std::shared_ptr<Instance>())
                        : admit(request.actor_id);
    // An action's request reaches user code only through the connection hooks: an actor without
    // them is given the framework's headers only.
    const bool framework_only = route.kind == Route::Kind::Action && admitted.ok() &&
                                !(*admitted)->factory->config().connection_events;
    HttpRequest core_request =
        to_core_request(request, std::move(route.request_path),
                        framework_only ? Headers::FrameworkOnly : Headers::All);
    const Encoding encoding = http_encoding(header(core_request, "x-rivet-encoding"));

    if (route.kind == Route::Kind::Metrics) {
        if (core_request.method != "GET")
            co_return error_response(encoding, method_not_allowed(core_request, route.path), false,
                                     std::nullopt);
        co_return text_response(200, kPrometheusContentType, render_metrics());
    }
    if (!admitted.ok())
        co_return error_response(encoding, admitted.error(), false, std::nullopt);
    auto instance = std::move(admitted).value();
    HttpInFlight in_flight(instance);
    envoy::HttpResponse response =
        co_await serve_http(instance, std::move(core_request), std::move(route), encoding);
    attach_actor_headers(response, instance->actor_id, instance->generation, instance->key);
    co_return response;
}

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_http(std::shared_ptr<Instance> instance,
                                                              HttpRequest request,
                                                              Route route, Encoding encoding) {
    auto self = shared_from_this();
    const ActorConfig& config = instance->factory->config();
    const CoreRegistry::Instance& actor = *instance;

    switch (route.kind) {
        case Route::Kind::Raw: {
            auto [tx, rx] = rt::oneshot<Result<HttpResponse>>();
            instance->dispatch.send(dispatch::Http{std::move(request), std::move(tx)});
            Result<HttpResponse> got = co_await await_reply(std::move(rx));
            if (!got.ok()) {
                log::error("actor request callback failed",
                           {{"actor_id", actor.actor_id}, {"error", got.error().to_string()}});
                co_return error_response(encoding, got.error(), true, actor);
            }
            envoy::HttpResponse out;
            out.status = got->status;
            for (auto& [name, value] : got->headers)
                out.headers.emplace_back(name, value);
            out.body = std::move(got->body);
            co_return out;
        }
        case Route::Kind::Inspector:
            co_return co_await serve_inspector(instance, std::move(request), std::move(route));
        case Route::Kind::Action:
        case Route::Kind::Queue: {
            if (request.method != "POST")
                co_return error_response(encoding, method_not_allowed(request, route.path), false,
                                         actor);
            if (!route.segment_ok)
                co_return error_response(
                    encoding, errors::protocol_invalid_http_request(route.segment_error), false,
                    actor);
            if (request.body.size() > config.max_incoming_message_size)
                co_return error_response(encoding, errors::message_incoming_too_long(), false,
                                         actor);
            Bytes params;
            if (auto raw = header(request, "x-rivet-conn-params")) {
                auto parsed = json_text_to_cbor(*raw);
                if (!parsed.ok())
                    co_return error_response(
                        encoding,
                        errors::protocol_invalid_http_request("invalid x-rivet-conn-params"),
                        false, actor);
                params = std::move(parsed).value();
            }
            if (route.kind == Route::Kind::Action)
                co_return co_await serve_action(instance, std::move(request), route.segment,
                                                encoding, std::move(params));
            co_return co_await serve_queue(instance, std::move(request), route.segment, encoding,
                                           std::move(params));
        }
        case Route::Kind::Metadata: {
            if (request.method != "GET")
                co_return error_response(encoding, method_not_allowed(request, route.path), false,
                                         actor);
            const char* env = std::getenv("NODE_ENV");
            const bool production = env != nullptr && std::string_view(env) == "production";
            co_return text_response(
                200, "application/json",
                fmt::format(R"({{"runtime":"rivetkit","version":"{}","type":"{}"}})",
                            kRivetkitCompatVersion, production ? "deployed" : "local"));
        }
        case Route::Kind::Health:
            if (request.method != "GET")
                co_return error_response(encoding, method_not_allowed(request, route.path), false,
                                         actor);
            co_return text_response(200, "text/plain; charset=utf-8", "ok");
        case Route::Kind::Root:
            if (request.method != "GET")
                co_return error_response(encoding, method_not_allowed(request, route.path), false,
                                         actor);
            co_return text_response(200, "text/plain; charset=utf-8", kRootText);
        case Route::Kind::Metrics:
        case Route::Kind::NotFound:
            break;
    }
    co_return error_response(
        encoding,
        Error("actor", "not_found", fmt::format("Actor route '{}' was not found.", route.path),
              fmt::format(R"({{"id":{},"resource":"route"}})", json_quote(route.path))),
        false, actor);
}

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_action(std::shared_ptr<Instance> instance,
                                                                HttpRequest request,
                                                                std::string name,
                                                                Encoding encoding, Bytes params) {
    auto self = shared_from_this();
    const CoreRegistry::Instance& actor = *instance;
    const ActorConfig& config = instance->factory->config();
    auto args = decode_http_action_args(encoding, request.body);
    if (!args.ok())
        co_return error_response(encoding, args.error(), false, actor);

    ConnectOptions options;
    options.params = std::move(params);
    options.request = std::move(request);
    auto op = run_transient_action(instance, clock_, std::move(options), std::move(name),
                                   std::move(args).value());
    Result<Bytes> output = co_await std::move(op);
    if (!output.ok())
        co_return error_response(encoding, output.error(), true, actor);
    auto body = encode_http_action_output(encoding, *output);
    if (!body.ok())
        co_return error_response(encoding, body.error(), false, actor);
    if (body->size() > config.max_outgoing_message_size)
        co_return error_response(encoding, errors::message_outgoing_too_long(), false, actor);
    co_return encoded_response(encoding, std::move(body).value());
}

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_queue(std::shared_ptr<Instance> instance,
                                                               HttpRequest request,
                                                               std::string name, Encoding encoding,
                                                               Bytes params) {
    auto self = shared_from_this();
    const CoreRegistry::Instance& actor = *instance;
    auto decoded = decode_http_queue_request(encoding, request.body);
    if (!decoded.ok())
        co_return error_response(encoding, decoded.error(), false, actor);

    ConnectOptions options;
    options.params = std::move(params);
    options.request = request;
    auto connected = co_await instance->ctx.connect_conn(std::move(options));
    if (!connected.ok())
        co_return error_response(encoding, connected.error(), true, actor);
    ConnHandle conn = std::move(connected).value();

    auto [tx, rx] = rt::oneshot<Result<QueueSendResult>>();
    Result<QueueSendResult> result = errors::actor_not_ready();
    if (instance->dispatch.send(dispatch::QueueSend{decoded->name.value_or(name),
                                                    std::move(decoded->body), conn,
                                                    std::move(request), decoded->wait,
                                                    decoded->timeout_ms, std::move(tx)})) {
        result = co_await await_reply(std::move(rx));
    }
    Status disconnected = co_await conn.disconnect(std::nullopt);
    (void)disconnected;
    if (!result.ok())
        co_return error_response(encoding, result.error(), true, actor);
    auto body = encode_http_queue_response(encoding, *result);
    if (!body.ok())
        co_return error_response(encoding, body.error(), false, actor);
    co_return encoded_response(encoding, std::move(body).value());
}

// MARK: inspector (bearer token from KV [3])

asio::awaitable<envoy::HttpResponse> CoreRegistry::serve_inspector(
    std::shared_ptr<Instance> instance, HttpRequest request, Route route) {
    auto self = shared_from_this();
    if (inspector::is_ui_bundle_path(request.method, route.path))
        co_return inspector::serve_ui_bundle(options_.inspector_ui, route.path);
    auto token = bearer_token(header(request, "authorization").value_or(""));
    Status authorized = co_await inspector::verify_token(instance->ctx, std::move(token));
    if (!authorized.ok()) {
        co_return text_response(
            401, "application/json",
            R"({"group":"inspector","code":"unauthorized","message":"Inspector request requires a valid bearer token","metadata":null})");
    }
    co_return co_await serve_inspector_authorized(instance, std::move(request), std::move(route));
}

}  // namespace rivetkit::core::registry

#include <fmt/format.h>

#include <boost/asio/this_coro.hpp>
#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "base/base64.hpp"
#include "base/log.hpp"
#include "client/state.hpp"

namespace rivetkit::client {

namespace asio = boost::asio;
using detail::ClientState;

std::string_view encoding_name(Encoding encoding) noexcept {
    return wire::encoding_name(detail::to_wire(encoding));
}

std::optional<Encoding> parse_encoding(std::string_view name) noexcept {
    if (name == "bare")
        return Encoding::bare;
    if (name == "json")
        return Encoding::json;
    if (name == "cbor")
        return Encoding::cbor;
    return std::nullopt;
}

ClientConfig ClientConfig::from_env() {
    ClientConfig c;
    auto env = [](const char* name) -> std::optional<std::string> {
        const char* v = std::getenv(name);
        if (v == nullptr || *v == '\0')
            return std::nullopt;
        return std::string(v);
    };
    if (auto v = env("RIVET_ENDPOINT"))
        c.endpoint = *v;
    else if (auto e = env("RIVET_ENGINE"))
        c.endpoint = *e;
    if (auto v = env("RIVET_NAMESPACE"))
        c.ns = *v;
    if (auto v = env("RIVET_TOKEN"))
        c.token = *v;
    if (auto v = env("RIVET_POOL"))
        c.pool = *v;
    if (auto v = env("RIVET_ENCODING")) {
        if (auto e = parse_encoding(*v))
            c.encoding = *e;
    }
    return c;
}

namespace detail {

wire::Encoding to_wire(Encoding encoding) noexcept {
    switch (encoding) {
        case Encoding::json:
            return wire::Encoding::json;
        case Encoding::cbor:
            return wire::Encoding::cbor;
        case Encoding::bare:
            return wire::Encoding::bare;
    }
    return wire::Encoding::bare;
}

Headers ClientState::gateway_headers() const {
    Headers h = config.headers;
    if (config.token)
        h.emplace_back("x-rivet-token", *config.token);
    return h;
}

Headers ClientState::api_headers() const {
    Headers h = config.headers;
    if (config.token)
        h.emplace_back("authorization", "Bearer " + *config.token);
    return h;
}

Result<std::string> ClientState::gateway_target(ActorHandle::Method method,
                                                const std::string& name, const Key& key,
                                                const std::string& actor_id,
                                                const std::optional<Json>& input,
                                                const std::optional<std::string>& region,
                                                const std::string& path) const {
    if (!endpoint.ok())
        return endpoint.error();
    const std::string& base = endpoint->base_path;
    if (method == ActorHandle::Method::ForId) {
        std::string target = base + "/gateway/" + percent_encode(actor_id);
        if (config.token)
            target += "@" + percent_encode(*config.token);
        return target + path;
    }
    if (name.empty())
        return Error("client", "invalid_query", "the actor name is empty");
    std::string q = "rvt-namespace=" + percent_encode(config.ns);
    std::string joined_key;
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (key[i].find(',') != std::string::npos)
            return Error("client", "invalid_key",
                         fmt::format("key part `{}` contains ',', which the gateway's query form "
                                     "cannot carry; use create/get_for_id",
                                     key[i]));
        joined_key += (i > 0 ? "," : "") + key[i];
    }
    if (method == ActorHandle::Method::Get) {
        q += "&rvt-method=get";
        if (!key.empty())
            q += "&rvt-key=" + percent_encode(joined_key);
    } else {
        q += "&rvt-method=getOrCreate&rvt-runner=" + percent_encode(config.pool);
        if (!key.empty())
            q += "&rvt-key=" + percent_encode(joined_key);
        if (input) {
            auto cbor = wire::value_to_cbor(*input);
            if (!cbor.ok())
                return std::move(cbor).error();
            if (cbor->size() > 4096)
                return Error("client", "input_too_large",
                             fmt::format("getOrCreate input is {} bytes of CBOR (max 4096 in the "
                                         "gateway query); use create",
                                         cbor->size()));
            q += "&rvt-input=" + base64::encode_url_no_pad(*cbor);
        }
        if (region)
            q += "&rvt-region=" + percent_encode(*region);
        q += "&rvt-crash-policy=sleep";
    }
    if (config.token)
        q += "&rvt-token=" + percent_encode(*config.token);
    const char sep = path.find('?') == std::string::npos ? '?' : '&';
    return base + "/gateway/" + percent_encode(name) + path + sep + q;
}

asio::awaitable<Result<Json>> ClientState::api(std::string method, std::string path_and_query,
                                               std::optional<Json> body) {
    if (!endpoint.ok())
        co_return endpoint.error();
    Headers headers = api_headers();
    std::string text;
    if (body) {
        headers.emplace_back("content-type", "application/json");
        text = body->dump();
    }
    Endpoint ep = *endpoint;
    std::string target = endpoint->base_path + path_and_query;
    auto res = co_await http_exchange(executor, std::move(ep), std::move(method),
                                      std::move(target), std::move(headers), std::move(text));
    if (!res.ok())
        co_return std::move(res).error();
    if (res->status < 200 || res->status >= 300)
        co_return wire::decode_api_error(res->status, res->body);
    Json v = Json::parse(res->body, nullptr, false);
    if (v.is_discarded())
        co_return Error("client", "malformed_response", "engine API answered non-JSON");
    co_return v;
}

bool ClientState::on_executor_thread() const {
    if (own_io)
        return std::this_thread::get_id() == thread.get_id();
    if (const auto* ex = executor.target<asio::io_context::executor_type>())
        return ex->running_in_this_thread();
    return false;
}

void dispose_connection(ConnectionState& state, bool immediate);
void abort_raw_sockets(ClientState& state);

}  // namespace detail

// MARK: Client

namespace {
std::shared_ptr<ClientState> make_state(ClientConfig config) {
    auto state = std::make_shared<ClientState>();
    state->endpoint = detail::parse_endpoint(config.endpoint);
    state->config = std::move(config);
    return state;
}
}  // namespace

Client::Client(ClientConfig config) : state_(make_state(std::move(config))) {
    state_->own_io = std::make_unique<asio::io_context>(1);
    state_->work.emplace(state_->own_io->get_executor());
    state_->executor = state_->own_io->get_executor();
    state_->thread = std::thread([io = state_->own_io.get()] { io->run(); });
}

Client::Client(ClientConfig config, asio::any_io_executor executor)
    : state_(make_state(std::move(config))) {
    state_->executor = std::move(executor);
}

Client::~Client() {
    std::vector<std::shared_ptr<detail::ConnectionState>> live;
    {
        std::lock_guard lock(state_->mutex);
        for (auto& w : state_->connections) {
            if (auto s = w.lock())
                live.push_back(std::move(s));
        }
        state_->connections.clear();
    }
    // Connections stop at once (their sockets dropped, no close handshake to wait for), raw
    // sockets too; with its own thread the io_context then runs dry and the thread ends.
    for (auto& c : live)
        detail::dispose_connection(*c, /*immediate=*/true);
    live.clear();
    detail::abort_raw_sockets(*state_);
    if (state_->own_io) {
        state_->work.reset();
        if (state_->thread.joinable())
            state_->thread.join();
        state_->closed = true;
    }
}

namespace {
std::mutex g_host_mutex;
std::optional<ClientConfig> g_host_config;
}  // namespace

void set_host_config(ClientConfig config) {
    std::lock_guard lock(g_host_mutex);
    g_host_config = std::move(config);
}

ClientConfig host_config() {
    std::lock_guard lock(g_host_mutex);
    return g_host_config ? *g_host_config : ClientConfig::from_env();
}

asio::awaitable<std::unique_ptr<Client>> actor_client() {
    auto executor = co_await asio::this_coro::executor;
    co_return std::make_unique<Client>(host_config(), executor);
}

const ClientConfig& Client::config() const { return state_->config; }
asio::any_io_executor Client::executor() const { return state_->executor; }

ActorHandle Client::get(std::string name, Key key, GetOptions options) const {
    return ActorHandle(state_, ActorHandle::Method::Get, std::move(name), std::move(key), {},
                       std::nullopt, std::nullopt, std::move(options.params));
}

ActorHandle Client::get_or_create(std::string name, Key key, GetOrCreateOptions options) const {
    return ActorHandle(state_, ActorHandle::Method::GetOrCreate, std::move(name), std::move(key),
                       {}, std::move(options.input), std::move(options.region),
                       std::move(options.params));
}

ActorHandle Client::get_for_id(std::string name, std::string actor_id, GetOptions options) const {
    return ActorHandle(state_, ActorHandle::Method::ForId, std::move(name), {},
                       std::move(actor_id), std::nullopt, std::nullopt,
                       std::move(options.params));
}

namespace {
Json actor_body(const ClientConfig& config, const std::string& name, const Key& key,
                const std::optional<Json>& input, const std::optional<std::string>& region,
                Result<Bytes>& input_cbor) {
    Json body{{"name", name},
              {"key", wire::serialize_key(key)},
              {"runner_name_selector", config.pool},
              {"crash_policy", "sleep"}};
    if (input) {
        input_cbor = wire::value_to_cbor(*input);
        if (input_cbor.ok())
            body["input"] = base64::encode(*input_cbor);
    }
    if (region)
        body["datacenter"] = *region;
    return body;
}

Result<std::string> actor_id_of(const Json& v) {
    if (v.is_object() && v.contains("actor") && v["actor"].is_object() &&
        v["actor"].contains("actor_id") && v["actor"]["actor_id"].is_string())
        return v["actor"]["actor_id"].get<std::string>();
    return Error("client", "malformed_response", "engine API answer has no actor.actor_id");
}
}  // namespace

Result<ActorHandle> Client::create(std::string name, Key key, CreateOptions options) const {
    return detail::block_on(*state_, create_async(std::move(name), std::move(key),
                                                  std::move(options)));
}

asio::awaitable<Result<ActorHandle>> Client::create_async(std::string name, Key key,
                                                          CreateOptions options) const {
    Result<Bytes> input_cbor = Bytes{};
    Json body = actor_body(state_->config, name, key, options.input, options.region, input_cbor);
    if (!input_cbor.ok())
        co_return std::move(input_cbor).error();
    std::string method = "POST";
    std::string path = "/actors?namespace=" + detail::percent_encode(state_->config.ns);
    std::optional<Json> payload = std::move(body);
    auto res = co_await state_->api(std::move(method), std::move(path), std::move(payload));
    if (!res.ok())
        co_return std::move(res).error();
    auto id = actor_id_of(*res);
    if (!id.ok())
        co_return std::move(id).error();
    co_return ActorHandle(state_, ActorHandle::Method::ForId, std::move(name), std::move(key),
                          std::move(id).value(), std::nullopt, std::nullopt,
                          std::move(options.params));
}

// MARK: ActorHandle

ActorHandle::ActorHandle(std::shared_ptr<ClientState> client, Method method, std::string name,
                         Key key, std::string actor_id, std::optional<Json> input,
                         std::optional<std::string> region, Json params)
    : client_(std::move(client)),
      method_(method),
      name_(std::move(name)),
      key_(std::move(key)),
      actor_id_(std::move(actor_id)),
      input_(std::move(input)),
      region_(std::move(region)),
      params_(std::move(params)) {}

Result<std::string> ActorHandle::resolve() const {
    return detail::block_on(*client_, resolve_async());
}

asio::awaitable<Result<std::string>> ActorHandle::resolve_async() const {
    const std::string ns = "?namespace=" + detail::percent_encode(client_->config.ns);
    switch (method_) {
        case Method::ForId:
            co_return actor_id_;
        case Method::GetOrCreate: {
            Result<Bytes> input_cbor = Bytes{};
            Json body = actor_body(client_->config, name_, key_, input_, region_, input_cbor);
            if (!input_cbor.ok())
                co_return std::move(input_cbor).error();
            std::string method = "PUT";
            std::string path = "/actors" + ns;
            std::optional<Json> payload = std::move(body);
            auto res = co_await client_->api(std::move(method), std::move(path), std::move(payload));
            if (!res.ok())
                co_return std::move(res).error();
            co_return actor_id_of(*res);
        }
        case Method::Get: {
            std::string method = "GET";
            std::string path = "/actors" + ns + "&name=" + detail::percent_encode(name_) +
                               "&key=" + detail::percent_encode(wire::serialize_key(key_));
            std::optional<Json> payload;
            auto res = co_await client_->api(std::move(method), std::move(path), std::move(payload));
            if (!res.ok())
                co_return std::move(res).error();
            const Json& v = *res;
            if (!v.is_object() || !v.contains("actors") || !v["actors"].is_array())
                co_return Error("client", "malformed_response", "engine API answer has no actors");
            for (const auto& a : v["actors"]) {
                if (a.is_object() && a.contains("actor_id") && a["actor_id"].is_string())
                    co_return a["actor_id"].get<std::string>();
            }
            co_return Error("actor", "not_found", "The actor does not exist or was destroyed.",
                            Json{{"name", name_}, {"key", wire::serialize_key(key_)}}.dump());
        }
    }
    co_return Error("client", "invalid_query", "unknown method");
}

Result<Json> ActorHandle::action(std::string name, Json args) const {
    return detail::block_on(*client_, action_async(std::move(name), std::move(args)));
}

asio::awaitable<Result<Json>> ActorHandle::action_async(std::string name, Json args) const {
    const auto encoding = detail::to_wire(client_->config.encoding);
    auto target = client_->gateway_target(method_, name_, key_, actor_id_, input_, region_,
                                          "/action/" + detail::percent_encode(name));
    if (!target.ok())
        co_return std::move(target).error();
    auto body = wire::encode_http_action_request(encoding, args);
    if (!body.ok())
        co_return std::move(body).error();
    detail::Headers headers = client_->gateway_headers();
    headers.emplace_back("content-type", encoding == wire::Encoding::json
                                             ? "application/json"
                                             : "application/octet-stream");
    headers.emplace_back("x-rivet-encoding", std::string(wire::encoding_name(encoding)));
    if (!params_.is_null())
        headers.emplace_back("x-rivet-conn-params", params_.dump());
    std::string method = "POST";
    std::string text(body->begin(), body->end());
    detail::Endpoint endpoint = *client_->endpoint;
    std::string path = std::move(target).value();
    auto res = co_await detail::http_exchange(client_->executor, std::move(endpoint),
                                              std::move(method), std::move(path),
                                              std::move(headers), std::move(text));
    if (!res.ok())
        co_return std::move(res).error();
    const BytesView bytes(reinterpret_cast<const std::uint8_t*>(res->body.data()),
                          res->body.size());
    if (res->status != 200)
        co_return wire::decode_http_error(encoding, res->status, bytes);
    co_return wire::decode_http_action_response(encoding, bytes);
}

Result<QueueSendResult> ActorHandle::send(std::string name, Json body,
                                          QueueSendOptions options) const {
    return detail::block_on(*client_, send_async(std::move(name), std::move(body), options));
}

asio::awaitable<Result<QueueSendResult>> ActorHandle::send_async(std::string name, Json body,
                                                                 QueueSendOptions options) const {
    const auto encoding = detail::to_wire(client_->config.encoding);
    auto target = client_->gateway_target(method_, name_, key_, actor_id_, input_, region_,
                                          "/queue/" + detail::percent_encode(name));
    if (!target.ok())
        co_return std::move(target).error();
    std::optional<std::uint64_t> timeout_ms;
    if (options.timeout)
        timeout_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(0, options.timeout->count()));
    auto request = wire::encode_http_queue_send_request(encoding, name, body, options.wait,
                                                        timeout_ms);
    if (!request.ok())
        co_return std::move(request).error();
    detail::Headers headers = client_->gateway_headers();
    headers.emplace_back("content-type", encoding == wire::Encoding::json
                                             ? "application/json"
                                             : "application/octet-stream");
    headers.emplace_back("x-rivet-encoding", std::string(wire::encoding_name(encoding)));
    if (!params_.is_null())
        headers.emplace_back("x-rivet-conn-params", params_.dump());
    std::string method = "POST";
    std::string text(request->begin(), request->end());
    detail::Endpoint endpoint = *client_->endpoint;
    std::string path = std::move(target).value();
    auto res = co_await detail::http_exchange(client_->executor, std::move(endpoint),
                                              std::move(method), std::move(path),
                                              std::move(headers), std::move(text));
    if (!res.ok())
        co_return std::move(res).error();
    const BytesView bytes(reinterpret_cast<const std::uint8_t*>(res->body.data()),
                          res->body.size());
    if (res->status != 200)
        co_return wire::decode_http_error(encoding, res->status, bytes);
    auto reply = wire::decode_http_queue_send_response(encoding, bytes);
    if (!reply.ok())
        co_return std::move(reply).error();
    co_return QueueSendResult{std::move(reply->status), std::move(reply->response)};
}

Result<HttpResponse> ActorHandle::fetch(HttpRequest request) const {
    return detail::block_on(*client_, fetch_async(std::move(request)));
}

asio::awaitable<Result<HttpResponse>> ActorHandle::fetch_async(HttpRequest request) const {
    std::string path = request.path.empty() ? "/" : request.path;
    if (path.front() != '/')
        path.insert(path.begin(), '/');
    auto target = client_->gateway_target(method_, name_, key_, actor_id_, input_, region_,
                                          "/request" + path);
    if (!target.ok())
        co_return std::move(target).error();
    detail::Headers headers = client_->gateway_headers();
    for (auto& h : request.headers)
        headers.push_back(std::move(h));
    if (!params_.is_null())
        headers.emplace_back("x-rivet-conn-params", params_.dump());
    detail::Endpoint endpoint = *client_->endpoint;
    std::string path_out = std::move(target).value();
    auto res = co_await detail::http_exchange(client_->executor, std::move(endpoint),
                                              std::move(request.method), std::move(path_out),
                                              std::move(headers), std::move(request.body));
    co_return res;
}

}  // namespace rivetkit::client

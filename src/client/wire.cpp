#include "client/wire.hpp"

#include <fmt/format.h>

#include <limits>

#include "bare/codec.hpp"
#include "base/cbor.hpp"
#include "base/cbor_builder.hpp"
#include "core/registry/encoding.hpp"
#include "proto/client_v4.hpp"

namespace rivetkit::client::wire {

namespace c4 = proto::client_v4;

namespace {

Error malformed(std::string_view what, std::string_view detail) {
    return Error("client", "malformed_frame", fmt::format("{}: {}", what, detail));
}

Error malformed_response(std::string_view detail) {
    return Error("client", "malformed_response", std::string(detail));
}

std::string dump(const Json& v) {
    return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

std::optional<Json> parse(BytesView data) {
    Json v = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded())
        return std::nullopt;
    return v;
}

Json normalize_args(const Json& args) {
    if (args.is_array())
        return args;
    if (args.is_null())
        return Json::array();
    return Json::array({args});
}

Json bigint(std::uint64_t v) { return Json::array({"$BigInt", std::to_string(v)}); }

std::optional<std::uint64_t> json_id(const Json& v) {
    if (v.is_number_unsigned())
        return v.get<std::uint64_t>();
    if (v.is_number_integer()) {
        auto i = v.get<std::int64_t>();
        if (i < 0)
            return std::nullopt;
        return static_cast<std::uint64_t>(i);
    }
    if (v.is_array() && v.size() == 2 && v[0] == "$BigInt" && v[1].is_string()) {
        const auto& s = v[1].get_ref<const std::string&>();
        if (s.empty() || s.size() > 20)
            return std::nullopt;
        std::uint64_t out = 0;
        for (char c : s) {
            if (c < '0' || c > '9')
                return std::nullopt;
            const auto digit = static_cast<std::uint64_t>(c - '0');
            if (out > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
                return std::nullopt;
            out = out * 10 + digit;
        }
        return out;
    }
    return std::nullopt;
}

std::optional<ActorSpecifier> json_actor(const Json& v) {
    if (!v.is_object() || !v.contains("actorId") || !v["actorId"].is_string())
        return std::nullopt;
    ActorSpecifier a;
    a.actor_id = v["actorId"].get<std::string>();
    if (auto g = v.find("generation"); g != v.end()) {
        if (auto n = json_id(*g); n && *n <= std::numeric_limits<std::uint32_t>::max())
            a.generation = static_cast<std::uint32_t>(*n);
    }
    if (auto k = v.find("key"); k != v.end() && k->is_string())
        a.key = k->get<std::string>();
    return a;
}

// {group, code, message, metadata?, actor?} as json (compat form) → Error.
std::optional<Error> json_error(const Json& v) {
    if (!v.is_object())
        return std::nullopt;
    auto str = [&](const char* k) -> std::optional<std::string> {
        auto it = v.find(k);
        if (it == v.end() || !it->is_string())
            return std::nullopt;
        return it->get<std::string>();
    };
    auto group = str("group");
    auto code = str("code");
    if (!group || !code)
        return std::nullopt;
    std::optional<std::string> metadata;
    if (auto it = v.find("metadata"); it != v.end() && !it->is_null())
        metadata = dump(*it);
    Error e(*group, *code, str("message").value_or(""), std::move(metadata));
    if (auto it = v.find("actor"); it != v.end()) {
        if (auto a = json_actor(*it))
            e.with_actor(std::move(*a));
    }
    return e;
}

Error bare_error(std::string group, std::string code, std::string message,
                 const std::optional<c4::Cbor>& metadata,
                 const std::optional<c4::ActorSpecifier>& actor) {
    std::optional<std::string> meta;
    if (metadata) {
        auto v = value_from_cbor(*metadata);
        meta = v.ok() ? dump(*v) : std::string("null");
    }
    Error e(std::move(group), std::move(code), std::move(message), std::move(meta));
    if (actor) {
        e.with_actor(ActorSpecifier{
            actor->actor_id,
            static_cast<std::uint32_t>(
                std::min<std::uint64_t>(actor->generation, std::numeric_limits<std::uint32_t>::max())),
            actor->key.value_or("")});
    }
    return e;
}

template <typename T>
Result<T> decode_bare(BytesView data, std::string_view what) {
    auto view = bare::split_versioned(data);
    if (!view.ok())
        return malformed(what, view.error().message());
    if (view->version != kClientProtocolVersion)
        return malformed(what, fmt::format("unsupported client protocol version {}", view->version));
    auto out = bare::decode_versioned_body<T>(*view);
    if (!out.ok())
        return malformed(what, out.error().message());
    return out;
}

Result<ToClientFrame> decode_envelope(const Json& root) {
    if (!root.is_object() || !root.contains("body") || !root["body"].is_object())
        return malformed("frame", "expected {body: {tag, val}}");
    const Json& body = root["body"];
    if (!body.contains("tag") || !body["tag"].is_string() || !body.contains("val") ||
        !body["val"].is_object())
        return malformed("frame", "expected {body: {tag, val}}");
    const auto& tag = body["tag"].get_ref<const std::string&>();
    const Json& val = body["val"];
    auto str = [&](const char* k) -> std::optional<std::string> {
        auto it = val.find(k);
        if (it == val.end() || !it->is_string())
            return std::nullopt;
        return it->get<std::string>();
    };
    if (tag == "Init") {
        auto actor = str("actorId");
        auto conn = str("connectionId");
        if (!actor || !conn)
            return malformed("Init", "needs actorId and connectionId");
        return ToClientFrame{InitFrame{*actor, *conn}};
    }
    if (tag == "ActionResponse") {
        auto it = val.find("id");
        std::optional<std::uint64_t> id = it == val.end() ? std::nullopt : json_id(*it);
        if (!id)
            return malformed("ActionResponse", "needs a uint id");
        auto out = val.find("output");
        return ToClientFrame{ActionResponseFrame{*id, out == val.end() ? Json(nullptr) : *out}};
    }
    if (tag == "Event") {
        auto name = str("name");
        if (!name)
            return malformed("Event", "needs a name");
        auto args = val.find("args");
        Json a = args == val.end() ? Json::array() : normalize_args(*args);
        return ToClientFrame{EventFrame{*name, std::move(a)}};
    }
    if (tag == "Error") {
        auto e = json_error(val);
        if (!e)
            return malformed("Error", "needs group and code");
        std::optional<std::uint64_t> action_id;
        if (auto it = val.find("actionId"); it != val.end() && !it->is_null()) {
            action_id = json_id(*it);
            if (!action_id)
                return malformed("Error", "actionId is not a uint");
        }
        return ToClientFrame{ErrorFrame{std::move(*e), action_id}};
    }
    return malformed("frame", fmt::format("unknown tag `{}`", tag));
}

}  // namespace

std::string_view encoding_name(Encoding encoding) noexcept {
    switch (encoding) {
        case Encoding::bare:
            return "bare";
        case Encoding::json:
            return "json";
        case Encoding::cbor:
            return "cbor";
    }
    return "bare";
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

Result<Bytes> value_to_cbor(const Json& value) {
    return core::registry::json_text_to_cbor(dump(value));
}

Result<Json> value_from_cbor(BytesView cbor) {
    auto text = core::registry::cbor_to_json_text(cbor);
    if (!text.ok())
        return malformed("value", text.error().message());
    Json v = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded())
        return malformed("value", "compat JSON did not parse");
    return v;
}

// MARK: HTTP

Result<Bytes> encode_http_action_request(Encoding encoding, const Json& args) {
    const Json array = normalize_args(args);
    switch (encoding) {
        case Encoding::json:
            return text_bytes(dump(Json{{"args", array}}));
        case Encoding::cbor: {
            auto value = value_to_cbor(array);
            if (!value.ok())
                return std::move(value).error();
            CborBuilder w;
            w.head(5, 1);
            w.text("args");
            w.raw(*value);
            return w.take();
        }
        case Encoding::bare: {
            auto value = value_to_cbor(array);
            if (!value.ok())
                return std::move(value).error();
            return bare::encode_versioned(kClientProtocolVersion,
                                          c4::HttpActionRequest{std::move(value).value()});
        }
    }
    return Error("client", "invalid_encoding", "unknown encoding");
}

Result<Json> decode_http_action_response(Encoding encoding, BytesView body) {
    switch (encoding) {
        case Encoding::json: {
            auto v = parse(body);
            if (!v || !v->is_object())
                return malformed_response("action response is not a JSON object");
            auto it = v->find("output");
            return it == v->end() ? Json(nullptr) : *it;
        }
        case Encoding::cbor: {
            auto v = value_from_cbor(body);
            if (!v.ok() || !v->is_object())
                return malformed_response("action response is not a CBOR map");
            auto it = v->find("output");
            return it == v->end() ? Json(nullptr) : *it;
        }
        case Encoding::bare: {
            auto r = decode_bare<c4::HttpActionResponse>(body, "HttpActionResponse");
            if (!r.ok())
                return malformed_response(r.error().message());
            auto v = value_from_cbor(r->output);
            if (!v.ok())
                return malformed_response(v.error().message());
            return v;
        }
    }
    return malformed_response("unknown encoding");
}

Result<Bytes> encode_http_queue_send_request(Encoding encoding, std::string_view name,
                                             const Json& body, bool wait,
                                             std::optional<std::uint64_t> timeout_ms) {
    if (encoding == Encoding::json) {
        Json out{{"body", body}, {"wait", wait}, {"name", std::string(name)}};
        if (timeout_ms)
            out["timeout"] = *timeout_ms;
        return text_bytes(dump(out));
    }
    auto value = value_to_cbor(body);
    if (!value.ok())
        return std::move(value).error();
    if (encoding == Encoding::bare) {
        c4::HttpQueueSendRequest request;
        request.body = std::move(value).value();
        request.name = std::string(name);
        request.wait = wait;
        request.timeout = timeout_ms;
        return bare::encode_versioned(kClientProtocolVersion, request);
    }
    CborBuilder w;
    w.head(5, timeout_ms ? 4 : 3);
    w.text("body");
    w.raw(*value);
    w.text("wait");
    w.boolean(wait);
    w.text("name");
    w.text(name);
    if (timeout_ms) {
        w.text("timeout");
        w.head(0, *timeout_ms);
    }
    return w.take();
}

Result<QueueSendReply> decode_http_queue_send_response(Encoding encoding, BytesView body) {
    Json root;
    if (encoding == Encoding::bare) {
        auto r = decode_bare<c4::HttpQueueSendResponse>(body, "HttpQueueSendResponse");
        if (!r.ok())
            return malformed_response(r.error().message());
        QueueSendReply out{std::move(r->status), std::nullopt};
        if (r->response) {
            auto v = value_from_cbor(*r->response);
            if (!v.ok())
                return malformed_response(v.error().message());
            out.response = std::move(v).value();
        }
        return out;
    }
    if (encoding == Encoding::json) {
        auto v = parse(body);
        if (!v)
            return malformed_response("queue response is not JSON");
        root = std::move(*v);
    } else {
        auto v = value_from_cbor(body);
        if (!v.ok())
            return malformed_response("queue response is not CBOR");
        root = std::move(v).value();
    }
    if (!root.is_object() || !root.contains("status") || !root["status"].is_string())
        return malformed_response("queue response has no status");
    QueueSendReply out{root["status"].get<std::string>(), std::nullopt};
    if (auto it = root.find("response"); it != root.end())
        out.response = *it;
    return out;
}

Error decode_http_error(Encoding encoding, unsigned status, BytesView body) {
    std::optional<Error> out;
    switch (encoding) {
        case Encoding::json:
            if (auto v = parse(body))
                out = json_error(*v);
            break;
        case Encoding::cbor:
            if (auto v = value_from_cbor(body); v.ok())
                out = json_error(*v);
            break;
        case Encoding::bare:
            if (auto r = decode_bare<c4::HttpResponseError>(body, "HttpResponseError"); r.ok())
                out = bare_error(r->group, r->code, r->message, r->metadata, r->actor);
            break;
    }
    // Guard answers some errors itself, in JSON whatever the request's encoding.
    if (!out && encoding != Encoding::json) {
        if (auto v = parse(body))
            out = json_error(*v);
    }
    if (out)
        return std::move(*out);
    std::string text(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(
                                                      std::min<std::size_t>(body.size(), 200)));
    return Error("client", "http_error", fmt::format("HTTP {}: {}", status, text),
                 dump(Json{{"status", status}}));
}

Error decode_api_error(unsigned status, std::string_view body) {
    Json v = Json::parse(body, nullptr, false);
    if (!v.is_discarded()) {
        if (auto e = json_error(v))
            return std::move(*e);
    }
    return Error("client", "http_error",
                 fmt::format("HTTP {}: {}", status, body.substr(0, 200)),
                 dump(Json{{"status", status}}));
}

// MARK: actor-connect

Result<ToClientFrame> decode_to_client(Encoding encoding, BytesView data) {
    switch (encoding) {
        case Encoding::json: {
            auto v = parse(data);
            if (!v)
                return malformed("frame", "not JSON");
            return decode_envelope(*v);
        }
        case Encoding::cbor: {
            auto v = value_from_cbor(data);
            if (!v.ok())
                return malformed("frame", "not CBOR");
            return decode_envelope(*v);
        }
        case Encoding::bare: {
            auto r = decode_bare<c4::ToClient>(data, "ToClient");
            if (!r.ok())
                return std::move(r).error();
            auto& body = r->body.value;
            if (auto* init = std::get_if<c4::Init>(&body))
                return ToClientFrame{InitFrame{std::move(init->actor_id),
                                               std::move(init->connection_id)}};
            if (auto* e = std::get_if<c4::Error>(&body)) {
                return ToClientFrame{ErrorFrame{
                    bare_error(std::move(e->group), std::move(e->code), std::move(e->message),
                               e->metadata, e->actor),
                    e->action_id}};
            }
            if (auto* resp = std::get_if<c4::ActionResponse>(&body)) {
                auto out = value_from_cbor(resp->output);
                if (!out.ok())
                    return std::move(out).error();
                return ToClientFrame{ActionResponseFrame{resp->id, std::move(out).value()}};
            }
            auto& ev = std::get<c4::Event>(body);
            auto args = value_from_cbor(ev.args);
            if (!args.ok())
                return std::move(args).error();
            return ToClientFrame{EventFrame{std::move(ev.name), normalize_args(*args)}};
        }
    }
    return malformed("frame", "unknown encoding");
}

Result<Bytes> encode_action_request(Encoding encoding, std::uint64_t id, std::string_view name,
                                    const Json& args) {
    const Json array = normalize_args(args);
    switch (encoding) {
        case Encoding::json:
            return text_bytes(dump(Json{
                {"body",
                 {{"tag", "ActionRequest"},
                  {"val", {{"id", bigint(id)}, {"name", name}, {"args", array}}}}}}));
        case Encoding::cbor: {
            auto value = value_to_cbor(array);
            if (!value.ok())
                return std::move(value).error();
            CborBuilder w;
            w.envelope("ActionRequest", 3);
            w.text("id");
            w.u64_fixed(id);
            w.text("name");
            w.text(name);
            w.text("args");
            w.raw(*value);
            return w.take();
        }
        case Encoding::bare: {
            auto value = value_to_cbor(array);
            if (!value.ok())
                return std::move(value).error();
            return bare::encode_versioned(
                kClientProtocolVersion,
                c4::ToServer{c4::ToServerBody{
                    c4::ActionRequest{id, std::string(name), std::move(value).value()}}});
        }
    }
    return Error("client", "invalid_encoding", "unknown encoding");
}

Bytes encode_subscription_request(Encoding encoding, std::string_view event, bool subscribe) {
    switch (encoding) {
        case Encoding::json:
            return text_bytes(dump(Json{
                {"body",
                 {{"tag", "SubscriptionRequest"},
                  {"val", {{"eventName", event}, {"subscribe", subscribe}}}}}}));
        case Encoding::cbor: {
            CborBuilder w;
            w.envelope("SubscriptionRequest", 2);
            w.text("eventName");
            w.text(event);
            w.text("subscribe");
            w.boolean(subscribe);
            return w.take();
        }
        case Encoding::bare:
            return bare::encode_versioned(
                kClientProtocolVersion,
                c4::ToServer{c4::ToServerBody{c4::SubscriptionRequest{std::string(event), subscribe}}});
    }
    return {};
}

std::string serialize_key(const std::vector<std::string>& key) {
    if (key.empty())
        return "/";
    std::string out;
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (i > 0)
            out += '/';
        if (key[i].empty()) {
            out += "\\0";
            continue;
        }
        for (char c : key[i]) {
            if (c == '\\' || c == '/')
                out += '\\';
            out += c;
        }
    }
    return out;
}

}  // namespace rivetkit::client::wire

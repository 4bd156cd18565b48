#include "core/registry/encoding.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "bare/codec.hpp"
#include "base/base64.hpp"
#include "base/cbor.hpp"
#include "base/cbor_builder.hpp"
#include "proto/client_v4.hpp"

namespace rivetkit::core::registry {

using json = nlohmann::json;
namespace c4 = proto::client_v4;

namespace {

// Deeper values are refused rather than walked recursively (input is at most a few MiB, so an
// adversary could otherwise nest tens of thousands of levels).
constexpr int kMaxDepth = 128;
// Largest integer a JS number holds exactly; beyond it the JSON side uses ["$BigInt", "n"].
constexpr std::uint64_t kMaxSafeInteger = (std::uint64_t{1} << 53) - 1;

Error invalid(std::string_view what, std::string_view detail) {
    return errors::protocol_invalid_actor_connect_request(fmt::format("{}: {}", what, detail));
}

std::optional<json> parse_json(std::string_view text) {
    json v = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (v.is_discarded())
        return std::nullopt;
    return v;
}

std::optional<json> parse_cbor(BytesView bytes) {
    return read_cbor(bytes);
}

Bytes to_cbor(const json& v) {
    Bytes out;
    write_cbor(v, out);
    return out;
}

// MARK: compat tags

// Decimal text of a big-endian unsigned magnitude (CBOR bignum content), by long division.
std::string magnitude_decimal(std::vector<std::uint8_t> digits) {
    std::string out;
    while (!digits.empty()) {
        unsigned remainder = 0;
        std::vector<std::uint8_t> quotient;
        quotient.reserve(digits.size());
        for (auto d : digits) {
            const unsigned cur = (remainder << 8) | d;
            const auto q = static_cast<std::uint8_t>(cur / 10);
            remainder = cur % 10;
            if (!quotient.empty() || q != 0)
                quotient.push_back(q);
        }
        out.insert(out.begin(), static_cast<char>('0' + remainder));
        digits = std::move(quotient);
    }
    return out.empty() ? std::string("0") : out;
}

std::vector<std::uint8_t> plus_one(std::vector<std::uint8_t> digits) {
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        if (++*it != 0)
            return digits;
    }
    digits.insert(digits.begin(), 1);
    return digits;
}

Result<json> to_compat(const json& v, int depth) {
    if (depth > kMaxDepth)
        return invalid("value", "nesting too deep");
    switch (v.type()) {
        case json::value_t::binary: {
            const auto& bin = v.get_binary();
            // CBOR bignums (tag 2: n, tag 3: -1 - n); longer than 64 bytes stays bytes.
            if (bin.has_subtype() && (bin.subtype() == 2 || bin.subtype() == 3) &&
                bin.size() <= 64) {
                std::vector<std::uint8_t> digits(bin.begin(), bin.end());
                std::string text = bin.subtype() == 2 ? magnitude_decimal(std::move(digits))
                                                      : "-" + magnitude_decimal(plus_one(std::move(digits)));
                return json::array({"$BigInt", std::move(text)});
            }
            return json::array({"$Uint8Array", base64::encode(bin)});
        }
        case json::value_t::number_unsigned:
            if (v.get<std::uint64_t>() > kMaxSafeInteger)
                return json::array({"$BigInt", std::to_string(v.get<std::uint64_t>())});
            return v;
        case json::value_t::number_integer: {
            const auto n = v.get<std::int64_t>();
            if (n < -static_cast<std::int64_t>(kMaxSafeInteger) ||
                n > static_cast<std::int64_t>(kMaxSafeInteger))
                return json::array({"$BigInt", std::to_string(n)});
            return v;
        }
        case json::value_t::number_float:
            // A JavaScript number is an integer when it has no fraction; its CBOR encoders write
            // those beyond 32 bits as float64 (a millisecond timestamp from the official client).
            if (auto n = js_integer(v.get<double>()))
                return json(*n);
            return v;
        case json::value_t::array: {
            json out = json::array();
            for (const auto& item : v) {
                auto c = to_compat(item, depth + 1);
                if (!c.ok())
                    return c;
                out.push_back(std::move(c).value());
            }
            if (out.size() == 2 && out[0].is_string()) {
                const auto& s = out[0].get_ref<const std::string&>();
                if (!s.empty() && s[0] == '$')
                    out[0] = "$" + s;
            }
            return out;
        }
        case json::value_t::object: {
            json out = json::object();
            for (auto it = v.begin(); it != v.end(); ++it) {
                auto c = to_compat(it.value(), depth + 1);
                if (!c.ok())
                    return c;
                out[it.key()] = std::move(c).value();
            }
            return out;
        }
        default:
            return v;
    }
}

Result<json> from_compat(const json& v, int depth) {
    if (depth > kMaxDepth)
        return invalid("value", "nesting too deep");
    if (v.is_array()) {
        if (v.size() == 2 && v[0].is_string()) {
            const auto& tag = v[0].get_ref<const std::string&>();
            if (tag == "$BigInt" && v[1].is_string()) {
                const auto& s = v[1].get_ref<const std::string&>();
                if (!s.empty() && s[0] == '-') {
                    std::int64_t n = 0;
                    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
                    if (ec != std::errc{} || p != s.data() + s.size())
                        return invalid("$BigInt", "not a 64-bit integer");
                    return json(n);
                }
                std::uint64_t n = 0;
                auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
                if (ec != std::errc{} || p != s.data() + s.size())
                    return invalid("$BigInt", "not a 64-bit integer");
                return json(n);
            }
            if ((tag == "$Uint8Array" || tag == "$ArrayBuffer") && v[1].is_string()) {
                auto bytes = base64::decode(v[1].get_ref<const std::string&>());
                if (!bytes)
                    return invalid(tag, "invalid base64");
                return json::binary(std::move(*bytes));
            }
            if (tag == "$Undefined")
                return json(nullptr);
            if (tag == "$Set" && v[1].is_array())
                return from_compat(v[1], depth + 1);
            if (tag.size() >= 2 && tag[0] == '$' && tag[1] == '$') {
                auto second = from_compat(v[1], depth + 1);
                if (!second.ok())
                    return second;
                return json::array({tag.substr(1), std::move(second).value()});
            }
        }
        json out = json::array();
        for (const auto& item : v) {
            auto c = from_compat(item, depth + 1);
            if (!c.ok())
                return c;
            out.push_back(std::move(c).value());
        }
        return out;
    }
    if (v.is_object()) {
        json out = json::object();
        for (auto it = v.begin(); it != v.end(); ++it) {
            auto c = from_compat(it.value(), depth + 1);
            if (!c.ok())
                return c;
            out[it.key()] = std::move(c).value();
        }
        return out;
    }
    return v;
}

// A JSON value (already compat-decoded or native CBOR) as the args array core expects.
json normalize_args(const json& args) {
    if (args.is_array())
        return args;
    if (args.is_null())
        return json::array();
    return json::array({args});
}

Result<json> cbor_value_to_compat(BytesView cbor) {
    if (cbor.empty())
        return json(nullptr);
    auto v = parse_cbor(cbor);
    if (!v)
        return invalid("value", "invalid CBOR");
    return to_compat(*v, 0);
}

Bytes dump(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    return to_bytes(s);
}

json json_envelope(std::string_view tag, json val) {
    return json{{"body", json{{"tag", tag}, {"val", std::move(val)}}}};
}

json bigint_json(std::uint64_t v) {
    return json::array({"$BigInt", std::to_string(v)});
}

std::optional<Bytes> metadata_cbor(const std::optional<std::string>& metadata_json) {
    if (!metadata_json)
        return std::nullopt;
    auto parsed = parse_json(*metadata_json);
    if (!parsed)
        return std::nullopt;
    return to_cbor(*parsed);
}

Result<std::uint64_t> json_id(const json& v) {
    if (v.is_number_unsigned())
        return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0)
        return static_cast<std::uint64_t>(v.get<std::int64_t>());
    if (v.is_number_float()) {
        const double d = v.get<double>();
        if (d >= 0 && d <= static_cast<double>(kMaxSafeInteger) &&
            d == static_cast<double>(static_cast<std::uint64_t>(d)))
            return static_cast<std::uint64_t>(d);
    }
    if (v.is_array()) {
        auto c = from_compat(v, 0);
        if (c.ok() && c->is_number_integer() && c->get<std::int64_t>() >= 0)
            return static_cast<std::uint64_t>(c->get<std::int64_t>());
        if (c.ok() && c->is_number_unsigned())
            return c->get<std::uint64_t>();
    }
    if (v.is_binary()) {  // a CBOR bignum
        const auto& bin = v.get_binary();
        if (bin.has_subtype() && bin.subtype() == 2 && bin.size() <= 8) {
            std::uint64_t n = 0;
            for (auto b : bin)
                n = (n << 8) | b;
            return n;
        }
    }
    return invalid("id", "not a non-negative integer");
}

Result<ToServerFrame> decode_envelope(const json& root, bool from_json) {
    if (!root.is_object() || !root.contains("body") || !root["body"].is_object())
        return invalid("message", "missing body");
    const json& body = root["body"];
    if (!body.contains("tag") || !body["tag"].is_string() || !body.contains("val") ||
        !body["val"].is_object())
        return invalid("message", "body needs tag and val");
    const auto& tag = body["tag"].get_ref<const std::string&>();
    const json& val = body["val"];
    if (tag == "ActionRequest") {
        if (!val.contains("id") || !val.contains("name") || !val["name"].is_string())
            return invalid("ActionRequest", "needs id and name");
        auto id = json_id(val["id"]);
        if (!id.ok())
            return std::move(id).error();
        json args = val.contains("args") ? val["args"] : json(nullptr);
        if (from_json) {
            auto decoded = from_compat(args, 0);
            if (!decoded.ok())
                return std::move(decoded).error();
            args = std::move(decoded).value();
        }
        return ToServerFrame{ActionRequestFrame{*id, val["name"].get<std::string>(),
                                                to_cbor(normalize_args(args))}};
    }
    if (tag == "SubscriptionRequest") {
        if (!val.contains("eventName") || !val["eventName"].is_string() ||
            !val.contains("subscribe") || !val["subscribe"].is_boolean())
            return invalid("SubscriptionRequest", "needs eventName and subscribe");
        return ToServerFrame{SubscriptionRequestFrame{val["eventName"].get<std::string>(),
                                                      val["subscribe"].get<bool>()}};
    }
    return invalid("message", fmt::format("unknown tag `{}`", tag));
}

template <typename T>
Result<T> decode_bare(BytesView data, std::uint16_t min_version, std::string_view what) {
    auto view = bare::split_versioned(data);
    if (!view.ok())
        return std::move(view).error();
    if (view->version < min_version || view->version > kClientProtocolVersion) {
        return errors::protocol_invalid_actor_connect_request(
            fmt::format("{}: unsupported client protocol version {}", what, view->version));
    }
    return bare::decode_versioned_body<T>(*view);
}

c4::ActorSpecifier bare_actor(const ActorSpecifier& a) {
    return c4::ActorSpecifier{a.actor_id, a.generation, a.key};
}

json json_actor(const ActorSpecifier& a) {
    return json{{"actorId", a.actor_id}, {"generation", a.generation}, {"key", a.key}};
}

}  // namespace

std::optional<std::int64_t> js_integer(double d) noexcept {
    constexpr double kMax = static_cast<double>(kMaxSafeInteger);
    if (!(d >= -kMax && d <= kMax) || d != std::trunc(d))
        return std::nullopt;
    return static_cast<std::int64_t>(d);
}

bool js_writes_as_float(std::int64_t n) noexcept {
    constexpr auto kMax = static_cast<std::int64_t>(kMaxSafeInteger);
    return (n > std::int64_t{0xFFFFFFFF} && n <= kMax) || (n < -std::int64_t{0x100000000} && n >= -kMax);
}

// MARK: names

std::string_view encoding_name(Encoding encoding) noexcept {
    switch (encoding) {
        case Encoding::Json:
            return "json";
        case Encoding::Cbor:
            return "cbor";
        case Encoding::Bare:
            return "bare";
    }
    return "json";
}

Encoding http_encoding(std::optional<std::string_view> header) noexcept {
    if (header == "cbor")
        return Encoding::Cbor;
    if (header == "bare")
        return Encoding::Bare;
    return Encoding::Json;
}

std::optional<Encoding> websocket_encoding(std::string_view name) noexcept {
    if (name == "json")
        return Encoding::Json;
    if (name == "cbor")
        return Encoding::Cbor;
    if (name == "bare")
        return Encoding::Bare;
    return std::nullopt;
}

std::string_view content_type(Encoding encoding) noexcept {
    return encoding == Encoding::Json ? "application/json" : "application/octet-stream";
}

// MARK: values

Result<Bytes> json_text_to_cbor(std::string_view text) {
    auto parsed = parse_json(text);
    if (!parsed)
        return errors::protocol_invalid_http_request("invalid JSON");
    auto v = from_compat(*parsed, 0);
    if (!v.ok())
        return std::move(v).error();
    return to_cbor(*v);
}

Result<std::string> cbor_to_json_text(BytesView cbor) {
    auto v = cbor_value_to_compat(cbor);
    if (!v.ok())
        return std::move(v).error();
    return v->dump(-1, ' ', false, json::error_handler_t::replace);
}

// MARK: HTTP

Result<Bytes> decode_http_action_args(Encoding encoding, BytesView body) {
    if (encoding == Encoding::Bare) {
        auto req = decode_bare<c4::HttpActionRequest>(body, 1, "HttpActionRequest");
        if (!req.ok())
            return errors::protocol_invalid_http_request(req.error().message());
        if (req->args.empty())
            return Bytes{0x80};
        if (!cbor_well_formed(req->args))
            return errors::protocol_invalid_http_request("args are not valid CBOR");
        return std::move(req->args);
    }
    std::optional<json> root;
    if (encoding == Encoding::Json) {
        if (body.empty())
            return errors::protocol_invalid_http_request("empty JSON body");
        root = parse_json(as_chars(body));
    } else {
        root = parse_cbor(body);
    }
    if (!root || !root->is_object())
        return errors::protocol_invalid_http_request(
            fmt::format("{} action body must be an object", encoding_name(encoding)));
    json args = root->contains("args") ? (*root)["args"] : json(nullptr);
    if (encoding == Encoding::Json) {
        auto decoded = from_compat(args, 0);
        if (!decoded.ok())
            return errors::protocol_invalid_http_request(decoded.error().message());
        args = std::move(decoded).value();
    }
    return to_cbor(normalize_args(args));
}

Result<Bytes> encode_http_action_output(Encoding encoding, BytesView output_cbor) {
    if (encoding == Encoding::Bare) {
        c4::HttpActionResponse resp;
        if (output_cbor.empty())
            resp.output = Bytes{0xf6};
        else
            resp.output.assign(output_cbor.begin(), output_cbor.end());
        return bare::encode_versioned(kClientProtocolVersion, resp);
    }
    if (encoding == Encoding::Json) {
        auto v = cbor_value_to_compat(output_cbor);
        if (!v.ok())
            return std::move(v).error();
        return dump(json{{"output", std::move(v).value()}});
    }
    CborBuilder w;
    w.map(1);
    w.text("output");
    if (!output_cbor.empty() && !cbor_well_formed(output_cbor))
        return invalid("output", "invalid CBOR");
    w.raw_or_null(output_cbor);
    return w.take();
}

Result<HttpQueueRequest> decode_http_queue_request(Encoding encoding, BytesView body) {
    if (encoding == Encoding::Bare) {
        auto req = decode_bare<c4::HttpQueueSendRequest>(body, 3, "HttpQueueSendRequest");
        if (!req.ok())
            return errors::protocol_invalid_http_request(req.error().message());
        return HttpQueueRequest{std::move(req->body), std::move(req->name), req->wait.value_or(false),
                                req->timeout};
    }
    std::optional<json> root;
    if (encoding == Encoding::Json)
        root = parse_json(as_chars(body));
    else
        root = parse_cbor(body);
    if (!root || !root->is_object())
        return errors::protocol_invalid_http_request("queue body must be an object");
    json value = root->contains("body") ? (*root)["body"] : json(nullptr);
    if (encoding == Encoding::Json) {
        auto decoded = from_compat(value, 0);
        if (!decoded.ok())
            return errors::protocol_invalid_http_request(decoded.error().message());
        value = std::move(decoded).value();
    }
    HttpQueueRequest out;
    out.body = to_cbor(value);
    if (root->contains("name") && (*root)["name"].is_string())
        out.name = (*root)["name"].get<std::string>();
    if (root->contains("wait") && (*root)["wait"].is_boolean())
        out.wait = (*root)["wait"].get<bool>();
    if (root->contains("timeout") && (*root)["timeout"].is_number_unsigned())
        out.timeout_ms = (*root)["timeout"].get<std::uint64_t>();
    return out;
}

Result<Bytes> encode_http_queue_response(Encoding encoding, const QueueSendResult& result) {
    const std::string status =
        result.status == QueueSendResult::Status::Completed ? "completed" : "timedOut";
    if (encoding == Encoding::Bare) {
        c4::HttpQueueSendResponse resp{status, result.response};
        return bare::encode_versioned(kClientProtocolVersion, resp);
    }
    json value{{"status", status}};
    if (result.response) {
        auto v = cbor_value_to_compat(*result.response);
        if (!v.ok())
            return std::move(v).error();
        value["response"] = std::move(v).value();
    }
    if (encoding == Encoding::Json)
        return dump(value);
    return to_cbor(value);
}

ClientError client_error(const Error& error) {
    if (to_public(error) == error)  // public, or RIVET_EXPOSE_ERRORS=1
        return {error.group(), error.code(), error.message(), error.metadata()};
    return {error.group(), error.code(), "An internal error occurred", std::nullopt};
}

Bytes encode_http_error(Encoding encoding, const ClientError& error,
                        const std::optional<ActorSpecifier>& actor) {
    if (encoding == Encoding::Bare) {
        c4::HttpResponseError body{error.group, error.code, error.message,
                                   metadata_cbor(error.metadata_json), std::nullopt};
        if (actor)
            body.actor = bare_actor(*actor);
        return bare::encode_versioned(kClientProtocolVersion, body);
    }
    json body{{"group", error.group}, {"code", error.code}, {"message", error.message}};
    if (error.metadata_json) {
        if (auto m = parse_json(*error.metadata_json))
            body["metadata"] = std::move(*m);
    }
    if (actor)
        body["actor"] = json_actor(*actor);
    if (encoding == Encoding::Json)
        return dump(body);
    return to_cbor(body);
}

// MARK: actor-connect

Result<ToServerFrame> decode_to_server(Encoding encoding, BytesView data) {
    switch (encoding) {
        case Encoding::Bare: {
            auto msg = decode_bare<c4::ToServer>(data, 1, "ToServer");
            if (!msg.ok())
                return errors::protocol_invalid_actor_connect_request(msg.error().message());
            if (auto* a = msg->body.get_if<c4::ActionRequest>()) {
                if (!a->args.empty() && !cbor_well_formed(a->args))
                    return invalid("ActionRequest", "args are not valid CBOR");
                Bytes args = a->args.empty() ? Bytes{0x80} : std::move(a->args);
                return ToServerFrame{ActionRequestFrame{a->id, std::move(a->name), std::move(args)}};
            }
            auto& s = std::get<c4::SubscriptionRequest>(msg->body.value);
            return ToServerFrame{SubscriptionRequestFrame{std::move(s.event_name), s.subscribe}};
        }
        case Encoding::Json: {
            auto root =
                parse_json(as_chars(data));
            if (!root)
                return invalid("message", "invalid JSON");
            return decode_envelope(*root, true);
        }
        case Encoding::Cbor: {
            auto root = parse_cbor(data);
            if (!root)
                return invalid("message", "invalid CBOR");
            return decode_envelope(*root, false);
        }
    }
    return invalid("message", "unknown encoding");
}

Bytes encode_init(Encoding encoding, std::string_view actor_id, std::string_view connection_id) {
    switch (encoding) {
        case Encoding::Bare:
            return bare::encode_versioned(
                kClientProtocolVersion,
                c4::ToClient{c4::ToClientBody{
                    c4::Init{std::string(actor_id), std::string(connection_id)}}});
        case Encoding::Json:
            return dump(json_envelope(
                "Init", json{{"actorId", actor_id}, {"connectionId", connection_id}}));
        case Encoding::Cbor: {
            CborBuilder w;
            w.envelope("Init", 2);
            w.text("actorId");
            w.text(actor_id);
            w.text("connectionId");
            w.text(connection_id);
            return w.take();
        }
    }
    return {};
}

Bytes encode_action_response(Encoding encoding, std::uint64_t id, BytesView output_cbor) {
    switch (encoding) {
        case Encoding::Bare: {
            // What encode_versioned(ToClient{ActionResponse{id, output}}) writes, without
            // copying the output into a message first: the answer to every action.
            static const Bytes kNull{0xf6};
            const BytesView output = output_cbor.empty() ? BytesView(kNull) : output_cbor;
            Bytes buffer;
            buffer.reserve(2 + 1 + 10 + 10 + output.size());
            bare::Writer w(std::move(buffer));
            w.write_u16(kClientProtocolVersion);
            w.write_tag(c4::ToClientBody::kTags[2]);  // ActionResponse
            w.write_uint(id);
            w.write_data(output);
            return w.take();
        }
        case Encoding::Json: {
            auto out = cbor_value_to_compat(output_cbor);
            return dump(json_envelope(
                "ActionResponse",
                json{{"id", bigint_json(id)}, {"output", out.ok() ? *out : json(nullptr)}}));
        }
        case Encoding::Cbor: {
            CborBuilder w;
            w.envelope("ActionResponse", 2);
            w.text("id");
            w.u64_fixed(id);
            w.text("output");
            w.raw_or_null(output_cbor);
            return w.take();
        }
    }
    return {};
}

Bytes encode_event(Encoding encoding, std::string_view name, BytesView args_cbor) {
    switch (encoding) {
        case Encoding::Bare: {
            c4::Event e{std::string(name), args_cbor.empty()
                                               ? Bytes{0x80}
                                               : Bytes(args_cbor.begin(), args_cbor.end())};
            return bare::encode_versioned(kClientProtocolVersion,
                                          c4::ToClient{c4::ToClientBody{std::move(e)}});
        }
        case Encoding::Json: {
            auto args = cbor_value_to_compat(args_cbor);
            json a = args.ok() ? std::move(args).value() : json::array();
            if (a.is_null())
                a = json::array();
            return dump(json_envelope("Event", json{{"name", name}, {"args", std::move(a)}}));
        }
        case Encoding::Cbor: {
            CborBuilder w;
            w.envelope("Event", 2);
            w.text("name");
            w.text(name);
            w.text("args");
            if (args_cbor.empty())
                w.head(4, 0);
            else
                w.raw_or_null(args_cbor);
            return w.take();
        }
    }
    return {};
}

Bytes encode_connect_error(Encoding encoding, const ClientError& error,
                           std::optional<std::uint64_t> action_id,
                           const std::optional<ActorSpecifier>& actor) {
    auto metadata = metadata_cbor(error.metadata_json);
    switch (encoding) {
        case Encoding::Bare: {
            c4::Error e{error.group, error.code, error.message, std::move(metadata), action_id,
                        std::nullopt};
            if (actor)
                e.actor = bare_actor(*actor);
            return bare::encode_versioned(kClientProtocolVersion,
                                          c4::ToClient{c4::ToClientBody{std::move(e)}});
        }
        case Encoding::Json: {
            json val{{"group", error.group},
                     {"code", error.code},
                     {"message", error.message},
                     {"actionId", action_id ? bigint_json(*action_id) : json(nullptr)}};
            if (error.metadata_json) {
                if (auto m = parse_json(*error.metadata_json))
                    val["metadata"] = std::move(*m);
            }
            if (actor)
                val["actor"] = json_actor(*actor);
            return dump(json_envelope("Error", std::move(val)));
        }
        case Encoding::Cbor: {
            CborBuilder w;
            w.envelope("Error", std::size_t{4} + (metadata ? 1U : 0U) + (actor ? 1U : 0U));
            w.text("group");
            w.text(error.group);
            w.text("code");
            w.text(error.code);
            w.text("message");
            w.text(error.message);
            if (metadata) {
                w.text("metadata");
                w.raw_or_null(*metadata);
            }
            w.text("actionId");
            if (action_id)
                w.u64_fixed(*action_id);
            else
                w.null();
            if (actor) {
                w.text("actor");
                w.map(3);
                w.text("actorId");
                w.text(actor->actor_id);
                w.text("generation");
                w.u64_fixed(actor->generation);
                w.text("key");
                w.text(actor->key);
            }
            return w.take();
        }
    }
    return {};
}

}  // namespace rivetkit::core::registry

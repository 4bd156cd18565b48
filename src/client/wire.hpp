#pragma once
// The client side of the client protocol: HTTP action bodies, error bodies and actor-connect
// frames in json, cbor and bare (the inverse of core/registry/encoding's host side). Values are
// rivetkit::Json in the client compat form (["$BigInt","n"], ["$Uint8Array",b64], ...), the same
// form the typed actor API uses, so a value round-trips unchanged through any encoding.
//
// Every decoder takes untrusted bytes from the network: it returns a structured error
// (group "client", code "malformed_response" / "malformed_frame"), never throws and never reads
// past its input.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/result.hpp"

namespace rivetkit::client::wire {

using Json = nlohmann::json;  // NOLINT

enum class Encoding : std::uint8_t { bare, json, cbor };

inline constexpr std::uint16_t kClientProtocolVersion = 4;

std::string_view encoding_name(Encoding encoding) noexcept;
std::optional<Encoding> parse_encoding(std::string_view name) noexcept;

// Compat-form JSON value ↔ CBOR (tags understood both ways).
Result<Bytes> value_to_cbor(const Json& value);
Result<Json> value_from_cbor(BytesView cbor);

// MARK: HTTP

Result<Bytes> encode_http_action_request(Encoding encoding, const Json& args);
Result<Json> decode_http_action_response(Encoding encoding, BytesView body);
// POST /queue/<name>: the message body (a compat-form value), whether to wait for the actor to
// complete it, and how long (ms; the actor's default when absent).
Result<Bytes> encode_http_queue_send_request(Encoding encoding, std::string_view name,
                                             const Json& body, bool wait,
                                             std::optional<std::uint64_t> timeout_ms);
struct QueueSendReply {
    std::string status;  // "completed" or "timedOut"
    std::optional<Json> response;
};
Result<QueueSendReply> decode_http_queue_send_response(Encoding encoding, BytesView body);
// An error body (json/cbor map or bare HttpResponseError) → structured Error with the actor
// specifier when the body names one. Falls back to `status`-based client/http_error when the
// body is not an error body in `encoding` (e.g. a plain-text proxy error).
Error decode_http_error(Encoding encoding, unsigned status, BytesView body);
// An engine API error body (always JSON).
Error decode_api_error(unsigned status, std::string_view body);

// MARK: actor-connect frames

struct InitFrame {
    std::string actor_id;
    std::string connection_id;
};
struct ErrorFrame {
    Error error;
    std::optional<std::uint64_t> action_id;
};
struct ActionResponseFrame {
    std::uint64_t id = 0;
    Json output;
};
struct EventFrame {
    std::string name;
    Json args;  // always an array
};
using ToClientFrame = std::variant<InitFrame, ErrorFrame, ActionResponseFrame, EventFrame>;

Result<ToClientFrame> decode_to_client(Encoding encoding, BytesView data);
Result<Bytes> encode_action_request(Encoding encoding, std::uint64_t id, std::string_view name,
                                    const Json& args);
Bytes encode_subscription_request(Encoding encoding, std::string_view event, bool subscribe);

// Engine-API key form: parts joined by '/', '\' and '/' escaped, empty part "\0", empty key "/".
std::string serialize_key(const std::vector<std::string>& key);

}  // namespace rivetkit::client::wire

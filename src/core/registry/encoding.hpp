#pragma once
// The client protocol's three encodings (json, cbor, bare) for HTTP bodies and actor-connect
// frames. Values inside (action args and outputs, event args, error metadata, conn params) are
// kept as CBOR everywhere in core; JSON crosses over with the client's compat tags
// (["$BigInt","n"], ["$Uint8Array",b64], ["$ArrayBuffer",b64], ["$Undefined",0], ["$Set",[…]],
// and "$"-escaping of literal two-element arrays whose first string starts with "$").
//
// Every decoder here takes untrusted bytes: it returns a structured error, never reads past its
// input and never throws.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/bytes.hpp"
#include "base/error.hpp"
#include "base/result.hpp"
#include "core/actor/messages.hpp"

namespace rivetkit::core::registry {

enum class Encoding : std::uint8_t { Json, Cbor, Bare };

// The client-protocol schema version the host writes (readers accept 1..4).
inline constexpr std::uint16_t kClientProtocolVersion = 4;

std::string_view encoding_name(Encoding encoding) noexcept;
// `x-rivet-encoding`: cbor | bare, anything else (or missing) is json.
Encoding http_encoding(std::optional<std::string_view> header) noexcept;
// `rivet_encoding.<name>`: json | cbor | bare; nullopt for anything else.
std::optional<Encoding> websocket_encoding(std::string_view name) noexcept;
std::string_view content_type(Encoding encoding) noexcept;

// MARK: value bridging

// The integer a JavaScript number `d` is, when it is one: no fraction and within ±(2^53 - 1).
// JS has one number type; its CBOR encoders (cbor-x, the official client's) write integers beyond
// 32 bits as float64, and they mean integers.
std::optional<std::int64_t> js_integer(double d) noexcept;
// Whether a JS CBOR encoder would write integer `n` as a float64: beyond what a CBOR integer of at
// most 4 argument bytes holds (-2^32 .. 2^32 - 1) and within ±(2^53 - 1). cbor-x decodes 8-byte
// integers as BigInt, so a value meant as a number must travel as a float, as a TypeScript actor's
// does.
bool js_writes_as_float(std::int64_t n) noexcept;

// JSON text (compat tags understood) → CBOR.
Result<Bytes> json_text_to_cbor(std::string_view json);
// CBOR → JSON text with compat tags; empty input is null.
Result<std::string> cbor_to_json_text(BytesView cbor);

// MARK: HTTP bodies

// POST /action/{name} body → the CBOR args array. json/cbor `{"args": …}`: an array as-is,
// null or missing → [], any other value → [value].
Result<Bytes> decode_http_action_args(Encoding encoding, BytesView body);
Result<Bytes> encode_http_action_output(Encoding encoding, BytesView output_cbor);

struct HttpQueueRequest {
    Bytes body;  // CBOR
    std::optional<std::string> name;
    bool wait = false;
    std::optional<std::uint64_t> timeout_ms;
};
Result<HttpQueueRequest> decode_http_queue_request(Encoding encoding, BytesView body);
Result<Bytes> encode_http_queue_response(Encoding encoding, const QueueSendResult& result);

// The client-facing error: group and code kept, message and metadata masked unless public.
struct ClientError {
    std::string group;
    std::string code;
    std::string message;
    std::optional<std::string> metadata_json;
};
ClientError client_error(const Error& error);

Bytes encode_http_error(Encoding encoding, const ClientError& error,
                        const std::optional<ActorSpecifier>& actor);

// MARK: actor-connect frames

struct ActionRequestFrame {
    std::uint64_t id = 0;
    std::string name;
    Bytes args;  // CBOR array
};
struct SubscriptionRequestFrame {
    std::string event_name;
    bool subscribe = false;
};
using ToServerFrame = std::variant<ActionRequestFrame, SubscriptionRequestFrame>;

Result<ToServerFrame> decode_to_server(Encoding encoding, BytesView data);

Bytes encode_init(Encoding encoding, std::string_view actor_id, std::string_view connection_id);
Bytes encode_action_response(Encoding encoding, std::uint64_t id, BytesView output_cbor);
Bytes encode_event(Encoding encoding, std::string_view name, BytesView args_cbor);
Bytes encode_connect_error(Encoding encoding, const ClientError& error,
                           std::optional<std::uint64_t> action_id,
                           const std::optional<ActorSpecifier>& actor);

}  // namespace rivetkit::core::registry

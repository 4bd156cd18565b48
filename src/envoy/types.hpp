#pragma once
// Value types the envoy hands to the core and takes back: actor start/stop, tunneled HTTP and
// WebSocket. Plain data, no protocol structs, so the core never includes the generated codec.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/shared_string.hpp"

namespace rivetkit::envoy {

using Headers = std::vector<std::pair<std::string, std::string>>;
using KvEntry = std::pair<Bytes, Bytes>;

// gatewayId ‖ requestId: identifies one tunneled HTTP request or WebSocket.
struct TunnelId {
    std::array<std::uint8_t, 4> gateway_id{};
    std::array<std::uint8_t, 4> request_id{};
    friend bool operator==(const TunnelId&, const TunnelId&) = default;
    std::uint64_t key() const noexcept;
    std::string to_hex() const;
};

struct ActorConfig {
    std::string name;
    std::optional<std::string> key;
    std::int64_t create_ts = 0;  // ms since the Unix epoch, when this generation was allocated
    std::optional<Bytes> input;
};

struct PreloadedKvEntry {
    Bytes key;
    Bytes value;
};

// Present only for serverless starts; lets the core tell "missing" from "not preloaded".
struct PreloadedKv {
    std::vector<PreloadedKvEntry> entries;
    std::vector<Bytes> requested_get_keys;
    std::vector<Bytes> requested_prefixes;
};

struct ActorStart {
    SharedString actor_id;  // shared with the envoy's key for this generation
    std::uint32_t generation = 0;
    ActorConfig config;
    std::vector<TunnelId> hibernating_requests;
    std::optional<PreloadedKv> preloaded_kv;
};

// What an actor persisted about one of its hibernatable WebSockets, handed to the envoy during
// start so a socket the engine lists can be re-attached by a process that never saw it open
// (the host restarted while the actor slept).
struct HibernatingWebSocketMeta {
    TunnelId id;
    // Index of the last client message the actor persisted; the gateway re-sends later ones.
    std::uint16_t last_client_index = 0;
    std::string path;
    Headers headers;
};

enum class StopReason : std::uint8_t { sleep_intent, stop_intent, destroy, going_away, lost };
const char* to_string(StopReason reason) noexcept;

struct ActorStop {
    std::string actor_id;
    std::uint32_t generation = 0;
    StopReason reason = StopReason::sleep_intent;
};

class HttpBodyStream;  // envoy/body_stream.hpp

struct HttpRequest {
    std::string actor_id;
    TunnelId id;
    std::string method;
    std::string path;
    Headers headers;
    Bytes body;
    // Set instead of `body` when the callbacks chose to stream this request's body
    // (EnvoyCallbacks::stream_request_body): the body is read from here as it arrives.
    std::shared_ptr<HttpBodyStream> body_stream;
};

struct HttpResponse {
    std::uint16_t status = 200;
    Headers headers;
    Bytes body;
};

struct WebSocketOpen {
    std::string actor_id;
    TunnelId id;
    std::string path;
    Headers headers;
    // True when this re-attaches a socket that hibernated while its actor slept.
    bool restoring = false;
    // The gateway keeps this socket open while its actor sleeps (the callbacks' can_hibernate
    // said so, or it is being restored).
    bool can_hibernate = false;
};

struct WebSocketMessage {
    Bytes data;
    bool binary = false;
    std::uint16_t index = 0;
};

// SQLite page store (engine-side pages of an actor's database, envoy protocol v8). Pages are
// 1-based; a page the engine has never stored comes back without bytes.
struct SqlitePage {
    std::uint32_t pgno = 0;
    std::optional<Bytes> bytes;
};

struct SqliteDirtyPage {
    std::uint32_t pgno = 0;
    Bytes bytes;
};

// Every page request names the actor generation that owns the database (the engine refuses a
// request without it) and, once known, the head transaction the caller last saw, so a stale
// writer fails instead of overwriting a newer head.
struct SqliteFence {
    std::uint32_t generation = 0;
    std::optional<std::uint64_t> head_txid;
};

struct SqliteGetPagesResult {
    std::vector<SqlitePage> pages;
    std::optional<std::uint64_t> head_txid;
};

struct SqliteCommit {
    std::vector<SqliteDirtyPage> dirty_pages;
    std::uint32_t db_size_pages = 0;
    std::int64_t now_ms = 0;
};

struct CloseFrame {
    std::optional<std::uint16_t> code;
    std::optional<std::string> reason;
};

}  // namespace rivetkit::envoy

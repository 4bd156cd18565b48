#pragma once
// What an envoy needs to know to connect, and the timing rules it follows. Every duration runs on
// the rt::Clock given to the envoy, so tests drive them on virtual time.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rivetkit::envoy {

// TLS for wss:// / https:// endpoints. The peer is verified by default: its chain against the
// system's CA paths (or `ca_file`) and its name against the endpoint's host (DNS name or IP
// address). SNI carries the host unless it is an IP literal.
struct TlsOptions {
    // PEM bundle of trusted CAs used instead of the system's default paths; empty = system.
    std::string ca_file;
    // No certificate or host name verification at all. For tests against throwaway certs only.
    bool insecure_skip_verify = false;
};

struct EnvoyConfig {
    // http(s):// or ws(s):// base of the engine's guard, e.g. "http://127.0.0.1:6420".
    std::string endpoint;
    std::optional<std::string> token;
    std::string namespace_name = "default";
    std::string pool_name;
    // Unique per process start (a restarted process must not reuse its predecessor's key);
    // empty = generate a random one.
    std::string envoy_key;
    std::uint32_t version = 1;
    // Actor name → metadata JSON object, upserted into the namespace's actor names.
    std::vector<std::pair<std::string, std::string>> prepopulate_actor_names;
    // Free-form JSON stored with the envoy (visible in GET /envoys).
    std::optional<std::string> metadata_json;
    TlsOptions tls;

    // Seeds the envoy's randomness (reconnect jitter, a generated envoy key), so a simulation
    // replays its seed; unset: seeded from the system.
    std::optional<std::uint64_t> rng_seed;

    std::chrono::milliseconds connect_timeout{10'000};
    // The engine pings every ~3 s; with nothing received for this long the socket is presumed
    // dead (half-open TCP) and is dropped so the reconnect loop can take over.
    std::chrono::milliseconds liveness_timeout{20'000};
    // Used until ToEnvoyInit tells the real threshold (upstream's fallback).
    std::chrono::milliseconds default_envoy_lost_threshold{10'000};
    std::chrono::milliseconds kv_request_timeout{30'000};
    std::chrono::milliseconds sqlite_request_timeout{30'000};
    // How long a graceful shutdown waits for the engine to stop every actor.
    std::chrono::milliseconds shutdown_timeout{30'000};
    // Un-acknowledged response bytes allowed in flight on a streamed tunnel response.
    std::uint64_t response_window_bytes = 1024 * 1024;
    // Outgoing tunnel frames are paced by a token bucket (control frames never wait): up to `write_burst_frames` leave at once,
    // beyond that at `write_frames_per_second`. The engine fans tunnel messages out to its
    // gateway through an in-memory pub/sub channel of 1024 entries per subject that silently
    // drops what a busy subscriber has not read yet (universalpubsub: "Skip lagged"), so an
    // unpaced burst of thousands of WebSocket messages (one broadcast to many connections) loses
    // most of them. 0 disables pacing.
    std::size_t write_burst_frames = 512;
    // The most bytes one WebSocket may have queued in the envoy, not yet written to the engine;
    // a message beyond it closes that socket (1011 "ws.outgoing_backlog_full", logged with the
    // actor id) instead of letting a slow reader grow the host's memory. 0: no limit.
    std::size_t websocket_backlog_limit_bytes = 32 * 1024 * 1024;
    double write_frames_per_second = 5'000;
    std::size_t response_chunk_bytes = 64 * 1024;
};

}  // namespace rivetkit::envoy

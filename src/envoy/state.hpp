#pragma once
// Internal: the one state object every envoy concern works on (upstream's EnvoyContext). The
// behaviour is split by file — connection.cpp, commands.cpp, events.cpp, kv.cpp,
// tunnel_http.cpp, tunnel_websocket.cpp — not by object.
//
// Invariants:
//  - Everything runs on `executor`'s single thread; nothing here is locked.
//  - `connected` is true only between ToEnvoyInit and the end of that connection. Frames are put
//    on `outbox` only while connected; events, KV requests and tunnel frames produced while
//    disconnected wait (history / pending / offline_tunnel) and go out right after the next
//    ToEnvoyInit, events first.
//  - Actors are keyed by (actor id, generation); commands are deduplicated per key by index.

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "base/shared_string.hpp"
#include "envoy/body_stream.hpp"
#include "envoy/callbacks.hpp"
#include "envoy/config.hpp"
#include "envoy/handle.hpp"
#include "envoy/transport.hpp"
#include "envoy/types.hpp"
#include "proto/envoy_v8.hpp"
#include "runtime/clock.hpp"
#include "runtime/notify.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/task_tracker.hpp"

namespace rivetkit::envoy::detail {

namespace proto = rivetkit::proto::envoy_v8;

// The id is shared with what the actor keeps of it (base/shared_string.hpp).
struct ActorKey {
    SharedString actor_id;
    std::uint32_t generation = 0;
    friend auto operator<=>(const ActorKey&, const ActorKey&) = default;
};

// An ActorKey to look one up by, made without a copy of the id (the maps' comparator is
// transparent).
struct ActorKeyRef {
    std::string_view actor_id;
    std::uint32_t generation = 0;
    friend std::strong_ordering operator<=>(const ActorKey& a, const ActorKeyRef& b) noexcept {
        if (auto order = a.actor_id.view() <=> b.actor_id; order != 0)
            return order;
        return a.generation <=> b.generation;
    }
    friend bool operator==(const ActorKey& a, const ActorKeyRef& b) noexcept {
        return a.generation == b.generation && a.actor_id.view() == b.actor_id;
    }
};

enum class ActorPhase : std::uint8_t { starting, running, stopping };

struct ActorEntry {
    ActorPhase phase = ActorPhase::starting;
    // Set once on_actor_start finished; a stop command waits for it.
    rt::Notify start_done;
    bool started = false;
    // Hibernating WebSockets the engine listed in StartActor: live for this generation even when
    // this process never saw them open.
    std::vector<TunnelId> listed_hibernating;
    // A sleep or destroy the actor asked for while starting (from its run handler, say): the
    // engine ignores intents of an actor not yet running, so it is sent right after Running.
    // Destroy wins over sleep.
    std::optional<proto::ActorIntent> deferred_intent;
    // Alarms set while starting (the core syncs its alarm during the start), each with the sender
    // its write waits on. They go out with Running, in its message, as upstream's envoy sends them
    // right after Running: the engine makes one workflow signal per actor per events message, and
    // an actor's signals are read back on every poll of its workflow while it is awake.
    struct DeferredAlarm {
        std::optional<std::int64_t> alarm_ts;
        rt::OneshotSender<Status> sent;
    };
    std::unique_ptr<std::vector<DeferredAlarm>> deferred_alarms;
};

// An event kept until the engine acknowledges it. Its checkpoint's actor and generation are the
// history's key, so they are not stored again: engine 2.3.19 acknowledges only every 250 events,
// so an awake actor keeps its first events (Running, ...) as long as it lives, and a copy of its
// 30-character id in each was a heap block per event.
struct PendingEvent {
    std::int64_t index = 0;
    proto::Event inner;
};

struct EventHistory {
    std::int64_t next_index = 0;
    // A vector, not a deque: an empty deque still holds a 512-byte block, for every actor.
    std::vector<PendingEvent> unacked;
    // The actor generation reported Stopped. The history stays (replayed after every reconnect)
    // until the engine acknowledges it or the connection its events last went out on stayed up
    // past the engine's ping timeout after that (`sent_at`, `sent_on`): the engine acks only every
    // 250 events, and a Stopped event lost with its connection would leave the actor stopping in
    // the engine for its stop threshold (30 min).
    bool finished = false;
    std::optional<rt::Clock::time_point> sent_at;
    std::uint64_t sent_on = 0;
};

struct CommandDedup {
    std::int64_t last_index = -1;
    // When the generation stopped; entries are pruned a while after that.
    std::optional<rt::Clock::time_point> finished_at;
};

struct PendingKv {
    std::string actor_id;
    rt::OneshotSender<Result<proto::KvResponseData>> reply;
    Bytes frame;
};

using SqliteResponse =
    std::variant<proto::SqliteGetPagesResponse, proto::SqliteCommitResponse,
                 proto::SqliteCommitStageBeginResponse, proto::SqliteCommitStageSegmentResponse,
                 proto::SqliteCommitFinalizeResponse>;

struct PendingSqlite {
    std::string actor_id;
    rt::OneshotSender<Result<SqliteResponse>> reply;
    Bytes frame;
};

struct HttpStream {
    std::string actor_id;
    std::uint32_t generation = 0;
    HttpRequest request;
    bool streaming_request = false;
    // The handler reads the body as it arrives (EnvoyCallbacks::stream_request_body).
    std::shared_ptr<HttpBodyStream> body;
    bool response_stream = false;
    bool dispatched = false;
    bool aborted = false;
    std::uint64_t request_consumed = 0;
    std::uint16_t next_out_index = 0;
    std::uint64_t response_sent = 0;
    std::uint64_t response_acked = 0;
    rt::Notify window;  // response credit came back, or the request was aborted
};

// Bytes of one WebSocket's frames queued in the envoy and not yet written to the engine; shared
// by the socket and its queued frames (which outlive a closed socket). `dropped`: the socket was
// closed for its backlog and what it still has queued is skipped, not written.
struct WsBacklog {
    std::size_t bytes = 0;
    bool dropped = false;
};

// A tunnel frame waiting for the writer, with its socket's backlog (null for HTTP frames).
struct TunnelFrame {
    Bytes bytes;
    std::shared_ptr<WsBacklog> backlog;
};

struct WsStream {
    std::string actor_id;
    std::uint32_t generation = 0;
    TunnelId id;
    std::string path;
    Headers headers;
    bool can_hibernate = false;
    bool hibernating = false;
    std::shared_ptr<WebSocketListener> listener;
    // Messages that arrived before the listener was attached.
    std::deque<WebSocketMessage> early;
    // Until the gateway is told the socket is open (the listener accepted it), what the actor
    // sends waits here (a welcome sent from the open hook), then follows the open in order.
    bool awaiting_open = false;
    std::vector<std::pair<Bytes, bool>> pending_out;
    std::uint16_t next_out_index = 0;
    std::optional<std::uint16_t> last_in_index;
    // The last index acked to the gateway; a hibernating socket resumes from here.
    std::optional<std::uint16_t> last_acked_index;
    std::shared_ptr<WsBacklog> backlog = std::make_shared<WsBacklog>();
};

struct EnvoyState : std::enable_shared_from_this<EnvoyState> {
    EnvoyState(boost::asio::any_io_executor ex, rt::Clock& c, EnvoyConfig cfg,
               std::shared_ptr<EnvoyCallbacks> cb, std::shared_ptr<TransportFactory> tf);

    boost::asio::any_io_executor executor;
    rt::Clock& clock;
    EnvoyConfig config;
    std::shared_ptr<EnvoyCallbacks> callbacks;
    std::shared_ptr<TransportFactory> transports;
    std::mt19937_64 rng;

    // Connection.
    Transport* transport = nullptr;
    bool connected = false;
    // Counts the engine's Init messages: which connection a frame went out on.
    std::uint64_t connection_serial = 0;
    bool registered = false;  // the engine's first ping on this connection came (on_registered)
    std::optional<proto::ProtocolMetadata> metadata;
    rt::Clock::time_point last_received{};
    std::deque<Bytes> outbox;         // control frames, written first
    std::deque<TunnelFrame> tunnel_outbox;  // tunnel frames, paced (EnvoyConfig::write_frames_per_second)
    std::vector<Bytes> spare_buffers;
    rt::Notify outbox_ready;
    rt::JoinHandle<void> lost_timer;
    bool lost_timer_running = false;
    // Set to end the connection cleanly: the writer sends this close after draining the outbox.
    std::optional<std::pair<std::uint16_t, std::string>> close_request;

    // Lifecycle.
    bool shutting_down = false;
    bool stopped = false;
    bool evicted = false;
    rt::Notify stop_requested;
    rt::Notify stopped_notify;  // notify_waiters on stop
    rt::Notify actors_changed;
    rt::TaskTracker tasks;

    // Actors, commands, events.
    std::map<ActorKey, std::shared_ptr<ActorEntry>, std::less<>> actors;
    // Persisted socket metadata the actor handed over during start (by actor id), consumed when
    // its hibernating sockets are restored.
    std::map<std::string, std::vector<HibernatingWebSocketMeta>, std::less<>> pending_restores;
    std::map<ActorKey, CommandDedup, std::less<>> command_dedup;
    std::map<ActorKey, EventHistory, std::less<>> events;

    // KV.
    std::uint32_t next_kv_request_id = 0;
    std::map<std::uint32_t, PendingKv> kv_pending;

    // SQLite page requests (one id space, like upstream's envoy client).
    std::uint32_t next_sqlite_request_id = 0;
    std::map<std::uint32_t, PendingSqlite> sqlite_pending;

    // Tunnel.
    std::map<std::uint64_t, std::shared_ptr<HttpStream>> http;
    std::map<std::uint64_t, std::shared_ptr<WsStream>> websockets;
    std::deque<TunnelFrame> offline_tunnel;

    EnvoyHandle handle() { return EnvoyHandle(shared_from_this()); }

    // Encodes and queues a frame for the current connection; false (dropped) when disconnected.
    bool send(const proto::ToRivet& message);
    Bytes encode(const proto::ToRivet& message);
    void recycle(Bytes buffer);
    // Tunnel frames wait for the next connection instead of being dropped. A WebSocket's frames
    // count in its `backlog` until written.
    void send_tunnel(proto::ToRivetTunnelMessage message,
                     std::shared_ptr<WsBacklog> backlog = nullptr);
    // Drops queued tunnel frames (a connection's end), releasing their sockets' backlogs.
    static void discard_tunnel_frames(std::deque<TunnelFrame>& frames);

    // The newest generation of `actor_id` on this envoy, or `generation` if given and known.
    std::optional<ActorKey> find_actor(const std::string& actor_id,
                                       std::optional<std::uint32_t> generation) const;
};

// connection.cpp
boost::asio::awaitable<void> run_envoy(std::shared_ptr<EnvoyState> st);
void handle_to_envoy(EnvoyState& st, proto::ToEnvoy message);
void on_connection_lost(EnvoyState& st);
void on_init(EnvoyState& st, const proto::ToEnvoyInit& init);
void request_shutdown(EnvoyState& st, bool immediate);

// commands.cpp
void handle_commands(EnvoyState& st, proto::ToEnvoyCommands commands);
// Stops every local actor with `reason` without an engine command (lost / immediate shutdown).
void stop_all_actors_locally(EnvoyState& st, StopReason reason);

// events.cpp
void push_event(EnvoyState& st, const ActorKey& key, proto::Event event);
// Several events of one actor in one ToRivetEvents message.
void push_events(EnvoyState& st, const ActorKey& key, std::vector<proto::Event> events);
void handle_ack_events(EnvoyState& st, const proto::ToEnvoyAckEvents& ack);
void replay_events(EnvoyState& st);
void mark_history_finished(EnvoyState& st, const ActorKey& key);
// Drops finished histories the engine has surely received (see EventHistory::finished).
void prune_finished_histories(EnvoyState& st);

// kv.cpp
void handle_kv_response(EnvoyState& st, proto::ToEnvoyKvResponse response);
void resend_pending_kv(EnvoyState& st);
void fail_pending_kv(EnvoyState& st, const Error& error);
boost::asio::awaitable<Result<proto::KvResponseData>> kv_request(std::shared_ptr<EnvoyState> st,
                                                                 std::string actor_id,
                                                                 proto::KvRequestData data);

// sqlite.cpp
void handle_sqlite_response(EnvoyState& st, std::uint32_t request_id, SqliteResponse response);
void resend_pending_sqlite(EnvoyState& st);
void fail_pending_sqlite(EnvoyState& st, const Error& error);
boost::asio::awaitable<Result<SqliteResponse>> sqlite_request(std::shared_ptr<EnvoyState> st,
                                                              std::string actor_id,
                                                              proto::ToRivet message);

// tunnel_http.cpp / tunnel_websocket.cpp
void handle_tunnel_message(EnvoyState& st, proto::ToEnvoyTunnelMessage message);
void handle_http_message(EnvoyState& st, const TunnelId& id, std::uint16_t index,
                         proto::ToEnvoyTunnelMessageKind kind);
void handle_websocket_message(EnvoyState& st, const TunnelId& id, std::uint16_t index,
                              proto::ToEnvoyTunnelMessageKind kind);
void on_actor_stopped_tunnels(EnvoyState& st, const ActorKey& key, StopReason reason);
// A streamed request body's reader has taken `total_read` bytes: credit the gateway.
void credit_request_body(EnvoyState& st, const TunnelId& id, std::uint64_t total_read);
void restore_hibernating_websockets(EnvoyState& st, const ActorKey& key,
                                    const std::vector<TunnelId>& requests);
void send_websocket_frame(EnvoyState& st, const TunnelId& id, Bytes data, bool binary);
void close_websocket_locally(EnvoyState& st, const TunnelId& id, CloseFrame frame);
void ack_websocket_message(EnvoyState& st, const TunnelId& id, std::uint16_t index);

Error envoy_error(std::string code, std::string message);

}  // namespace rivetkit::envoy::detail

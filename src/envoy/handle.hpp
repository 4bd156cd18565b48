#pragma once
// EnvoyHandle: what the core holds to talk to the engine — actor intents, alarms, KV and
// shutdown. Cheap to copy; every call is made on the envoy's io thread.
//
// KV errors: kv/key_too_large, kv/value_too_large, kv/too_many_keys, kv/payload_too_large
// (checked locally, nothing sent), kv/timeout, kv/engine_error (the engine's message),
// envoy/shutdown, envoy/lost.
//
// SQLite page errors: the engine's SqliteErrorResponse group/code as is (e.g. depot/
// commit_too_large), sqlite/timeout, sqlite/unexpected_response, envoy/shutdown, envoy/lost.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "envoy/types.hpp"
#include "runtime/oneshot.hpp"

namespace rivetkit::envoy {

namespace detail {
struct EnvoyState;
}

struct KvListOptions {
    bool reverse = false;
    std::optional<std::uint64_t> limit;
};

// Upstream's KV limits (engine/packages/actor-kv); the engine enforces them too.
inline constexpr std::size_t kKvMaxKeys = 128;          // keys per get / put / delete request
// Keys are measured as the engine stores them, tuple-encoded: 2 bytes more than the raw key, so
// the longest raw key is 2046 bytes (the engine fails a longer one as "transaction failed").
inline constexpr std::size_t kKvMaxKeySize = 2048;
inline constexpr std::size_t kKvKeyEncodingOverhead = 2;
inline constexpr std::size_t kKvMaxValueSize = 128 * 1024;
inline constexpr std::size_t kKvMaxPutPayload = 976 * 1024;  // encoded keys + values of one put

// The per-key / per-value limits alone (kv/key_too_large, kv/value_too_large), for callers that
// split large batches into several requests and must reject the whole batch before sending any.
Status check_kv_key_sizes(const std::vector<Bytes>& keys);
Status check_kv_entry_sizes(const std::vector<KvEntry>& entries);

struct ProtocolLimits {
    std::int64_t envoy_lost_threshold_ms = 0;
    std::int64_t actor_stop_threshold_ms = 0;
    std::uint64_t max_response_payload_size = 0;
};

class EnvoyHandle {
  public:
    explicit EnvoyHandle(std::shared_ptr<detail::EnvoyState> state) : state_(std::move(state)) {}

    const std::string& envoy_key() const;
    // True between ToEnvoyInit and the connection's end.
    bool is_connected() const;
    std::optional<ProtocolLimits> protocol_limits() const;
    std::size_t active_actor_count() const;
    // Tunneled HTTP requests of this actor still in flight (an actor should not sleep meanwhile).
    std::size_t active_http_request_count(const std::string& actor_id) const;
    // Whether a hibernatable WebSocket of this actor is still known (open or hibernating).
    // Listed by the engine in the starting generation's StartActor also counts.
    bool is_hibernating_request_live(const std::string& actor_id, const TunnelId& id) const;
    // During on_actor_start: the actor's persisted metadata of its hibernatable sockets, so the
    // ones the engine lists can be restored although this process never saw them open.
    void restore_hibernating_requests(const std::string& actor_id,
                                      std::vector<HibernatingWebSocketMeta> metas) const;

    // Intents: the engine answers with a stop command (SleepIntent / StopIntent). v8 has no
    // separate destroy intent: an actor that stops after a stop intent is destroyed.
    // `generation` defaults to the newest generation of the actor on this envoy.
    void sleep_actor(std::string actor_id, std::optional<std::uint32_t> generation = {}) const;
    void stop_actor(std::string actor_id, std::optional<std::uint32_t> generation = {}) const;
    void destroy_actor(std::string actor_id, std::optional<std::uint32_t> generation = {}) const;
    // Absolute wake time (ms since the Unix epoch) for while the actor sleeps; nullopt clears.
    // Resolves once the event is on its way (queued on the connection, replayed after a reconnect
    // until acknowledged): at once for a running actor; for one still starting, when Running goes
    // out with it; an error for an actor this envoy does not hold or whose start failed.
    rt::OneshotReceiver<Status> set_alarm(std::string actor_id,
                                          std::optional<std::int64_t> alarm_ts,
                                          std::optional<std::uint32_t> generation = {}) const;

    // Values in the order of `keys`; nullopt for a missing key.
    boost::asio::awaitable<Result<std::vector<std::optional<Bytes>>>> kv_get(
        std::string actor_id, std::vector<Bytes> keys) const;
    boost::asio::awaitable<Result<std::vector<KvEntry>>> kv_list_all(std::string actor_id,
                                                                     KvListOptions opts) const;
    boost::asio::awaitable<Result<std::vector<KvEntry>>> kv_list_prefix(std::string actor_id,
                                                                        Bytes prefix,
                                                                        KvListOptions opts) const;
    // [start, end), or [start, end] when !exclusive.
    boost::asio::awaitable<Result<std::vector<KvEntry>>> kv_list_range(std::string actor_id,
                                                                       Bytes start, Bytes end,
                                                                       bool exclusive,
                                                                       KvListOptions opts) const;
    boost::asio::awaitable<Status> kv_put(std::string actor_id, std::vector<KvEntry> entries) const;
    boost::asio::awaitable<Status> kv_delete(std::string actor_id, std::vector<Bytes> keys) const;
    // Deletes [start, end).
    boost::asio::awaitable<Status> kv_delete_range(std::string actor_id, Bytes start,
                                                   Bytes end) const;
    boost::asio::awaitable<Status> kv_drop(std::string actor_id) const;

    // The actor's database pages stored by the engine (see SqliteFence).
    boost::asio::awaitable<Result<SqliteGetPagesResult>> sqlite_get_pages(
        std::string actor_id, std::vector<std::uint32_t> pgnos, SqliteFence fence) const;
    // Atomically stores `commit.dirty_pages` and sets the database size; the new head txid.
    boost::asio::awaitable<Result<std::optional<std::uint64_t>>> sqlite_commit(
        std::string actor_id, SqliteCommit commit, SqliteFence fence) const;
    // A commit too large for one request, in three steps: begin opens a stage fenced like a
    // commit and answers the txid it will publish as; each segment stores pages of one
    // shard-aligned range starting at `first_pgno` (invisible to readers); finalize publishes
    // every staged segment, listed by first page, atomically and answers the new head txid.
    // A stage never finalized is discarded by the engine when the next commit claims its txid.
    boost::asio::awaitable<Result<std::uint64_t>> sqlite_commit_stage_begin(
        std::string actor_id, SqliteFence fence) const;
    boost::asio::awaitable<Result<std::uint64_t>> sqlite_commit_stage_segment(
        std::string actor_id, std::uint32_t generation, std::uint64_t txid,
        std::uint32_t first_pgno, std::vector<SqliteDirtyPage> pages) const;
    boost::asio::awaitable<Result<std::optional<std::uint64_t>>> sqlite_commit_finalize(
        std::string actor_id, std::uint32_t generation, std::uint64_t txid,
        std::uint32_t db_size_pages, std::int64_t now_ms,
        std::vector<std::uint32_t> segment_first_pgnos) const;

    // Graceful: tells the engine (ToRivetStopping), waits for it to stop every actor (bounded by
    // EnvoyConfig::shutdown_timeout), then closes. Immediate: closes now.
    void shutdown(bool immediate = false) const;
    bool is_stopped() const;
    boost::asio::awaitable<void> wait_stopped() const;

    detail::EnvoyState& state() const noexcept { return *state_; }

  private:
    std::shared_ptr<detail::EnvoyState> state_;
};

// Sends on one tunneled WebSocket. Copyable; calls after the socket ended are ignored.
class WebSocketSender {
  public:
    WebSocketSender(std::weak_ptr<detail::EnvoyState> state, TunnelId id)
        : state_(std::move(state)), id_(id) {}
    void send(Bytes data, bool binary) const;
    void close(CloseFrame frame) const;
    // Tells the gateway that client messages up to `index` are durable (hibernatable sockets
    // whose listener acks_messages()); ignored for sockets that cannot hibernate.
    void ack(std::uint16_t index) const;
    const TunnelId& id() const noexcept { return id_; }

  private:
    std::weak_ptr<detail::EnvoyState> state_;
    TunnelId id_;
};

}  // namespace rivetkit::envoy

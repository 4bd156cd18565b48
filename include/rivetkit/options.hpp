#pragma once
// Actor and action options, with upstream rivetkit's option names in snake_case. Anything left
// unset keeps core's default (core/actor/config.hpp lists them).

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/actor/config.hpp"

namespace rivetkit {

struct Request;  // rivetkit/raw.hpp

struct ActorOptions {
    std::optional<std::string> name;  // display name
    std::optional<std::string> icon;
    std::optional<std::chrono::milliseconds> state_save_interval;
    std::optional<std::chrono::milliseconds> create_conn_state_timeout;
    std::optional<std::chrono::milliseconds> on_before_connect_timeout;
    std::optional<std::chrono::milliseconds> on_connect_timeout;
    std::optional<std::chrono::milliseconds> action_timeout;
    std::optional<std::chrono::milliseconds> sleep_timeout;
    std::optional<bool> no_sleep;
    std::optional<std::chrono::milliseconds> sleep_grace_period;
    std::optional<std::chrono::milliseconds> connection_liveness_timeout;
    std::optional<std::chrono::milliseconds> connection_liveness_interval;
    std::optional<std::uint32_t> max_queue_size;
    std::optional<std::uint32_t> max_queue_message_size;
    std::optional<std::uint32_t> max_incoming_message_size;
    std::optional<std::uint32_t> max_outgoing_message_size;
    // Per-actor limits (defaults 10,000 / 1,000 / 10,000): a connection, subscription or
    // scheduled event past one is refused with actor/too_many_connections,
    // actor/too_many_subscriptions (the connection is closed with it) or
    // actor/too_many_scheduled_events (thrown by schedule_at/schedule_after).
    std::optional<std::uint32_t> max_connections;
    std::optional<std::uint32_t> max_subscriptions_per_connection;
    std::optional<std::uint32_t> max_scheduled_events;
    // The actor uses its SQLite database (c.db()): true shows the inspector's database tab from
    // the start instead of only once the database was opened; false declares that it has none,
    // and c.db() then throws actor/database_not_configured (upstream's actor without `db`).
    // Unset: the database opens on first use.
    std::optional<bool> database;
    // Upstream's canHibernateWebSocket, for raw sockets (on_websocket): such a socket stays open
    // at the gateway while the actor sleeps. Its connection is persisted, a message on it wakes
    // the actor, and on_websocket runs again with the same connection (same conn id, params and
    // state); the socket's messages are acked only once saved. Sockets on /connect always
    // hibernate. The predicate decides per upgrade request (what on_websocket gets as `upgrade`)
    // and wins over the flag.
    std::optional<bool> can_hibernate_websocket;
    std::function<bool(const Request&)> can_hibernate_websocket_if;
};

// ActorContext::save_state: `immediate` saves now; otherwise the save comes with the debounced
// ones, but no later than `max_wait` after the call (upstream's `saveState({ maxWait })`).
struct SaveStateOptions {
    bool immediate = true;
    std::optional<std::chrono::milliseconds> max_wait;
};

struct ActionOptions {
    // Reply only once a save that includes this action's state change is durable in KV (an
    // immediate save, awaited). Without it the reply goes out at once and the save is debounced
    // by state_save_interval, like upstream.
    bool reply_after_durable = false;
};

// The core config for a typed actor: options applied over the defaults, has_state set, the
// action names listed.
core::ActorConfig to_actor_config(const ActorOptions& options,
                                  const std::vector<std::string>& action_names);

}  // namespace rivetkit

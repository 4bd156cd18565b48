#pragma once
// Actor configuration with upstream's names and defaults.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rivetkit::core {

using Millis = std::chrono::milliseconds;

struct HttpRequest;  // core/actor/messages.hpp

// Whether a raw websocket may hibernate: a fixed answer or a decision per upgrade request (GET,
// the path after the actor's gateway prefix, lower-cased headers).
using CanHibernateWebSocket = std::variant<bool, std::function<bool(const HttpRequest&)>>;

struct ActorConfigOverrides {
    std::optional<Millis> sleep_grace_period;
};

struct ActionDefinition {
    std::string name;
};

struct ActorConfig {
    std::optional<std::string> name;
    std::optional<std::string> icon;
    bool has_database = false;
    bool remote_sqlite = false;
    bool has_state = false;
    CanHibernateWebSocket can_hibernate_websocket = false;
    Millis state_save_interval{1'000};
    Millis create_vars_timeout{5'000};
    Millis create_conn_state_timeout{5'000};
    Millis on_before_connect_timeout{5'000};
    Millis on_connect_timeout{5'000};
    Millis on_migrate_timeout{30'000};
    Millis action_timeout{60'000};
    Millis sleep_timeout{30'000};
    bool no_sleep = false;
    Millis sleep_grace_period{15'000};
    bool sleep_grace_period_overridden = false;
    Millis connection_liveness_timeout{2'500};
    Millis connection_liveness_interval{5'000};
    std::uint32_t max_queue_size = 1'000;
    std::uint32_t max_queue_message_size = 65'536;
    std::uint32_t max_incoming_message_size = 65'536;
    std::uint32_t max_outgoing_message_size = 1'048'576;
    // Per-actor resource limits (rivetkit-cpp's own; rivetkit 2.3.19 has none): past one, the new
    // connection, subscription or scheduled event is refused with a structured error
    // (actor/too_many_connections, actor/too_many_subscriptions, actor/too_many_scheduled_events)
    // and everything already accepted is untouched.
    std::uint32_t max_connections = 10'000;
    std::uint32_t max_subscriptions_per_connection = 1'000;
    std::uint32_t max_scheduled_events = 10'000;
    std::optional<std::uint64_t> preload_max_workflow_bytes;
    std::optional<std::uint64_t> preload_max_connections_bytes;
    std::optional<ActorConfigOverrides> overrides;
    std::vector<ActionDefinition> actions;
    // Whether the runtime handles a connection's preflight, open and close (ConnectionPreflight,
    // ConnectionOpen, ConnectionClosed). A runtime without connection hooks sets it to false and
    // connections join and leave without a round trip to it; every HTTP action makes one.
    bool connection_events = true;

    // The grace budget for sleep and destroy: the configured period, capped by an override.
    Millis effective_sleep_grace_period() const {
        if (overrides && overrides->sleep_grace_period) {
            return std::min(sleep_grace_period, *overrides->sleep_grace_period);
        }
        return sleep_grace_period;
    }
};

// The sparse millisecond form used at runtime boundaries (config files, foreign runtimes).
struct ActorConfigInput {
    std::optional<std::string> name;
    std::optional<std::string> icon;
    std::optional<bool> has_database;
    std::optional<bool> remote_sqlite;
    std::optional<bool> has_state;
    std::optional<bool> can_hibernate_websocket;
    std::optional<std::uint32_t> state_save_interval_ms;
    std::optional<std::uint32_t> create_vars_timeout_ms;
    std::optional<std::uint32_t> create_conn_state_timeout_ms;
    std::optional<std::uint32_t> on_before_connect_timeout_ms;
    std::optional<std::uint32_t> on_connect_timeout_ms;
    std::optional<std::uint32_t> on_migrate_timeout_ms;
    std::optional<std::uint32_t> action_timeout_ms;
    std::optional<std::uint32_t> sleep_timeout_ms;
    std::optional<bool> no_sleep;
    std::optional<std::uint32_t> sleep_grace_period_ms;
    std::optional<std::uint32_t> connection_liveness_timeout_ms;
    std::optional<std::uint32_t> connection_liveness_interval_ms;
    std::optional<std::uint32_t> max_queue_size;
    std::optional<std::uint32_t> max_queue_message_size;
    std::optional<std::uint32_t> max_incoming_message_size;
    std::optional<std::uint32_t> max_outgoing_message_size;
    std::optional<std::uint32_t> max_connections;
    std::optional<std::uint32_t> max_subscriptions_per_connection;
    std::optional<std::uint32_t> max_scheduled_events;
    std::optional<double> preload_max_workflow_bytes;
    std::optional<double> preload_max_connections_bytes;
    std::optional<std::vector<ActionDefinition>> actions;
};

// Absent fields keep the defaults; an explicit sleep grace period marks it overridden.
ActorConfig actor_config_from_input(ActorConfigInput input);

// The config of an actor configured with none (one instance, shared).
const std::shared_ptr<const ActorConfig>& default_actor_config();

}  // namespace rivetkit::core

#include "rivetkit/options.hpp"

#include "rivetkit/raw.hpp"

#include <algorithm>
#include <limits>

namespace rivetkit {
namespace {

std::optional<std::uint32_t> millis(const std::optional<std::chrono::milliseconds>& d) {
    if (!d)
        return std::nullopt;
    const auto clamped = std::clamp<std::chrono::milliseconds::rep>(
        d->count(), 0, std::numeric_limits<std::uint32_t>::max());
    return static_cast<std::uint32_t>(clamped);
}

}  // namespace

core::ActorConfig to_actor_config(const ActorOptions& options,
                                  const std::vector<std::string>& action_names) {
    core::ActorConfigInput input;
    input.name = options.name;
    input.icon = options.icon;
    input.has_state = true;
    input.has_database = options.database;
    input.state_save_interval_ms = millis(options.state_save_interval);
    input.create_conn_state_timeout_ms = millis(options.create_conn_state_timeout);
    input.on_before_connect_timeout_ms = millis(options.on_before_connect_timeout);
    input.on_connect_timeout_ms = millis(options.on_connect_timeout);
    input.action_timeout_ms = millis(options.action_timeout);
    input.sleep_timeout_ms = millis(options.sleep_timeout);
    input.no_sleep = options.no_sleep;
    input.sleep_grace_period_ms = millis(options.sleep_grace_period);
    input.connection_liveness_timeout_ms = millis(options.connection_liveness_timeout);
    input.connection_liveness_interval_ms = millis(options.connection_liveness_interval);
    input.max_queue_size = options.max_queue_size;
    input.max_queue_message_size = options.max_queue_message_size;
    input.max_incoming_message_size = options.max_incoming_message_size;
    input.max_outgoing_message_size = options.max_outgoing_message_size;
    input.max_connections = options.max_connections;
    input.max_subscriptions_per_connection = options.max_subscriptions_per_connection;
    input.max_scheduled_events = options.max_scheduled_events;
    input.can_hibernate_websocket = options.can_hibernate_websocket;
    std::vector<core::ActionDefinition> actions;
    actions.reserve(action_names.size());
    for (const auto& name : action_names)
        actions.push_back({name});
    input.actions = std::move(actions);
    core::ActorConfig config = core::actor_config_from_input(std::move(input));
    if (options.can_hibernate_websocket_if) {
        config.can_hibernate_websocket =
            [decide = options.can_hibernate_websocket_if](const core::HttpRequest& head) {
                return decide(Request{head.method, head.path, head.headers, head.body});
            };
    }
    return config;
}

}  // namespace rivetkit

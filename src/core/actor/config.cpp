#include "core/actor/config.hpp"

namespace rivetkit::core {
namespace {

void set_ms(Millis& field, const std::optional<std::uint32_t>& ms) {
    if (ms)
        field = Millis(*ms);
}

template <typename T>
void set(T& field, const std::optional<T>& value) {
    if (value)
        field = *value;
}

std::optional<std::uint64_t> to_u64(const std::optional<double>& v) {
    if (!v || !(*v >= 0.0))
        return std::nullopt;
    if (*v >= 18446744073709551615.0)
        return UINT64_MAX;
    return static_cast<std::uint64_t>(*v);
}

}  // namespace

const std::shared_ptr<const ActorConfig>& default_actor_config() {
    static const auto* config = new std::shared_ptr<const ActorConfig>(
        std::make_shared<const ActorConfig>());  // never destroyed: contexts may outlive statics
    return *config;
}

ActorConfig actor_config_from_input(ActorConfigInput input) {
    ActorConfig c;
    c.name = std::move(input.name);
    c.icon = std::move(input.icon);
    set(c.has_database, input.has_database);
    set(c.remote_sqlite, input.remote_sqlite);
    set(c.has_state, input.has_state);
    if (input.can_hibernate_websocket)
        c.can_hibernate_websocket = *input.can_hibernate_websocket;
    set_ms(c.state_save_interval, input.state_save_interval_ms);
    set_ms(c.create_vars_timeout, input.create_vars_timeout_ms);
    set_ms(c.create_conn_state_timeout, input.create_conn_state_timeout_ms);
    set_ms(c.on_before_connect_timeout, input.on_before_connect_timeout_ms);
    set_ms(c.on_connect_timeout, input.on_connect_timeout_ms);
    set_ms(c.on_migrate_timeout, input.on_migrate_timeout_ms);
    set_ms(c.action_timeout, input.action_timeout_ms);
    set_ms(c.sleep_timeout, input.sleep_timeout_ms);
    set(c.no_sleep, input.no_sleep);
    if (input.sleep_grace_period_ms) {
        c.sleep_grace_period = Millis(*input.sleep_grace_period_ms);
        c.sleep_grace_period_overridden = true;
    }
    set_ms(c.connection_liveness_timeout, input.connection_liveness_timeout_ms);
    set_ms(c.connection_liveness_interval, input.connection_liveness_interval_ms);
    set(c.max_queue_size, input.max_queue_size);
    set(c.max_queue_message_size, input.max_queue_message_size);
    set(c.max_incoming_message_size, input.max_incoming_message_size);
    set(c.max_outgoing_message_size, input.max_outgoing_message_size);
    set(c.max_connections, input.max_connections);
    set(c.max_subscriptions_per_connection, input.max_subscriptions_per_connection);
    set(c.max_scheduled_events, input.max_scheduled_events);
    c.preload_max_workflow_bytes = to_u64(input.preload_max_workflow_bytes);
    c.preload_max_connections_bytes = to_u64(input.preload_max_connections_bytes);
    if (input.actions)
        c.actions = std::move(*input.actions);
    return c;
}

}  // namespace rivetkit::core

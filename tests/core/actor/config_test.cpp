#include "core/actor/config.hpp"

#include <gtest/gtest.h>

namespace rivetkit::core {
namespace {

using std::chrono::seconds;

TEST(ActorConfigTest, actor_config_from_input_applies_overrides) {
    ActorConfigInput input;
    input.name = "demo";
    input.on_migrate_timeout_ms = 30'000;
    input.sleep_grace_period_ms = 12'000;
    input.max_queue_size = 42;
    input.preload_max_workflow_bytes = 1024.0;
    auto config = actor_config_from_input(input);
    EXPECT_EQ(config.name, "demo");
    EXPECT_EQ(config.on_migrate_timeout, seconds(30));
    EXPECT_EQ(config.sleep_grace_period, seconds(12));
    EXPECT_TRUE(config.sleep_grace_period_overridden);
    EXPECT_EQ(config.max_queue_size, 42u);
    EXPECT_EQ(config.preload_max_workflow_bytes, 1024u);
}

TEST(ActorConfigTest, actor_config_from_input_keeps_defaults_for_missing_fields) {
    auto config = actor_config_from_input({});
    ActorConfig d;
    EXPECT_EQ(config.name, d.name);
    EXPECT_EQ(config.state_save_interval, seconds(1));
    EXPECT_EQ(config.create_vars_timeout, d.create_vars_timeout);
    EXPECT_EQ(config.create_conn_state_timeout, d.create_conn_state_timeout);
    EXPECT_EQ(config.on_before_connect_timeout, d.on_before_connect_timeout);
    EXPECT_EQ(config.on_connect_timeout, d.on_connect_timeout);
    EXPECT_EQ(config.on_migrate_timeout, seconds(30));
    EXPECT_EQ(config.action_timeout, seconds(60));
    EXPECT_EQ(config.sleep_timeout, seconds(30));
    EXPECT_FALSE(config.no_sleep);
    EXPECT_EQ(config.sleep_grace_period, seconds(15));
    EXPECT_FALSE(config.sleep_grace_period_overridden);
    EXPECT_EQ(config.connection_liveness_timeout, Millis(2'500));
    EXPECT_EQ(config.connection_liveness_interval, seconds(5));
    EXPECT_EQ(config.max_queue_size, 1'000u);
    EXPECT_EQ(config.max_queue_message_size, 65'536u);
    EXPECT_EQ(config.max_incoming_message_size, 65'536u);
    EXPECT_EQ(config.max_outgoing_message_size, 1'048'576u);
    EXPECT_FALSE(config.preload_max_workflow_bytes.has_value());
    EXPECT_FALSE(config.preload_max_connections_bytes.has_value());
    ASSERT_TRUE(std::holds_alternative<bool>(config.can_hibernate_websocket));
    EXPECT_FALSE(std::get<bool>(config.can_hibernate_websocket));
    EXPECT_FALSE(config.overrides.has_value());
}

TEST(ActorConfigTest, actor_config_effective_sleep_grace_period_uses_default) {
    EXPECT_EQ(ActorConfig{}.effective_sleep_grace_period(), seconds(15));
}

TEST(ActorConfigTest, actor_config_effective_sleep_grace_period_uses_explicit_value) {
    ActorConfig config;
    config.sleep_grace_period = seconds(20);
    config.sleep_grace_period_overridden = true;
    EXPECT_EQ(config.effective_sleep_grace_period(), seconds(20));
}

TEST(ActorConfigTest, override_caps_grace_period) {
    ActorConfig config;
    config.overrides = ActorConfigOverrides{Millis(2'000)};
    EXPECT_EQ(config.effective_sleep_grace_period(), seconds(2));
    config.overrides = ActorConfigOverrides{seconds(60)};
    EXPECT_EQ(config.effective_sleep_grace_period(), seconds(15));
}

TEST(ActorConfigTest, negative_or_nan_preload_hints_are_ignored) {
    ActorConfigInput input;
    input.preload_max_connections_bytes = -1.0;
    input.preload_max_workflow_bytes = std::numeric_limits<double>::quiet_NaN();
    auto config = actor_config_from_input(input);
    EXPECT_FALSE(config.preload_max_connections_bytes.has_value());
    EXPECT_FALSE(config.preload_max_workflow_bytes.has_value());
}

}  // namespace
}  // namespace rivetkit::core

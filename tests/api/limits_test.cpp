// Per-actor resource limits (ActorOptions::max_connections, max_subscriptions_per_connection,
// max_scheduled_events): past one, the new connection, subscription or scheduled event is
// refused with a public structured error, and what was already accepted keeps working.

#include "api_test_support.hpp"

namespace rivetkit::api_test {
namespace {

struct LimitedState {
    std::int64_t planned = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LimitedState, planned)

Actor<LimitedState> limited() {
    ActorOptions options;
    options.max_connections = 2;
    options.max_subscriptions_per_connection = 1;
    options.max_scheduled_events = 2;
    return Actor<LimitedState>()
        .options(options)
        .action("plan",
                [](ActionContext<LimitedState>& c) {
                    c.schedule_after(std::chrono::minutes(1), "tick");
                    return ++c.state().planned;
                })
        .action("planned", [](ActionContext<LimitedState>& c) { return c.state().planned; })
        .action("tick", [](ActionContext<LimitedState>&) { return 0; });
}

TEST(ActorLimits, a_connection_past_the_limit_is_refused_and_the_others_keep_working) {
    ActorHarness h(limited().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        auto first = co_await h.connect(nullptr, inbox);
        auto second = co_await h.connect(nullptr, inbox);
        CO_ASSERT(first.ok() && second.ok());
        auto third = co_await h.connect(nullptr, inbox);
        CO_ASSERT(!third.ok());
        EXPECT_TRUE(third.error().is("actor", "too_many_connections")) << third.error().to_string();
        EXPECT_TRUE(is_public(third.error()));
        EXPECT_EQ(h.ctx().conns().size(), 2u);
        // A slot freed is a slot usable.
        CO_ASSERT((co_await h.ctx().disconnect_conn(second->id())).ok());
        auto again = co_await h.connect(nullptr, inbox);
        EXPECT_TRUE(again.ok());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorLimits, a_subscription_past_the_limit_is_refused_and_resubscribing_is_not_a_new_one) {
    ActorHarness h(limited().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        auto conn = co_await h.connect(nullptr, inbox, "first");
        CO_ASSERT(conn.ok());
        EXPECT_TRUE(h.ctx().admit_subscription(*conn, "first").ok());
        Status refused = h.ctx().admit_subscription(*conn, "second");
        CO_ASSERT(!refused.ok());
        EXPECT_TRUE(refused.error().is("actor", "too_many_subscriptions"))
            << refused.error().to_string();
        EXPECT_EQ(refused.error().metadata().value_or(""), R"({"limit":1})");
        EXPECT_EQ(conn->subscriptions(), std::vector<std::string>{"first"});
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorLimits, a_scheduled_event_past_the_limit_fails_the_action_with_a_structured_error) {
    ActorHarness h(limited().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        CO_ASSERT((co_await h.call("plan")).ok());
        CO_ASSERT((co_await h.call("plan")).ok());
        auto third = co_await h.call("plan");
        CO_ASSERT(!third.ok());
        EXPECT_TRUE(third.error().is("actor", "too_many_scheduled_events"))
            << third.error().to_string();
        // The refused call changed nothing; the two accepted events are still pending.
        auto planned = co_await h.call("planned");
        CO_ASSERT(planned.ok());
        EXPECT_EQ(*planned, Json(2));
        EXPECT_TRUE(h.ctx().next_event().has_value());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

// The issue 6 example actors (examples/), through core on virtual time.

#include "api_test_support.hpp"
#include "chat_room/chat_room.hpp"
#include "counter/counter.hpp"
#include "rate_limiter/rate_limiter.hpp"
#include "reminder/reminder.hpp"

namespace rivetkit::api_test {
namespace {

TEST(ExampleCounter, increment_broadcasts_new_count_and_fail_is_a_user_error) {
    ActorHarness h(examples::counter_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        auto conn = co_await h.connect(nullptr, inbox, "newCount");
        CO_ASSERT(conn.ok());
        auto one = co_await h.call("increment", 1);
        auto three = co_await h.call("increment", 2);
        EXPECT_EQ(one.ok() ? *one : Json(), Json(1));
        EXPECT_EQ(three.ok() ? *three : Json(), Json(3));
        auto count = co_await h.call("getCount");
        EXPECT_EQ(count.ok() ? *count : Json(), Json(3));
        EXPECT_EQ(*inbox, (std::vector<ReceivedEvent>{{"newCount", Json::array({1})},
                                                      {"newCount", Json::array({3})}}));
        auto failed = co_await h.call("fail");
        CO_ASSERT(!failed.ok());
        EXPECT_EQ(failed.error(), errors::user("deliberate_failure", "counter failed on purpose",
                                               R"({"reason":"test"})"));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(ExampleChatRoom, send_message_appends_broadcasts_and_returns_it) {
    ActorHarness h(examples::chat_room_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        CO_ASSERT((co_await h.connect(nullptr, inbox, "newMessage")).ok());
        const std::int64_t now = h.clock().wall_now_ms();
        auto sent = co_await h.call("sendMessage", "ann", "hello");
        CO_ASSERT(sent.ok());
        const Json expected{{"sender", "ann"}, {"text", "hello"}, {"timestamp", now}};
        EXPECT_EQ(*sent, expected);
        CO_ASSERT((co_await h.call("sendMessage", "bob", "hi")).ok());
        auto history = co_await h.call("getHistory");
        CO_ASSERT(history.ok());
        CO_ASSERT(history->size() == 2);
        EXPECT_EQ((*history)[0], expected);
        EXPECT_EQ((*history)[1]["sender"], "bob");
        CO_ASSERT(inbox->size() == 2);
        EXPECT_EQ(inbox->front(), (ReceivedEvent{"newMessage", Json::array({expected})}));
        auto bad = co_await h.call("sendMessage", "ann");
        EXPECT_FALSE(bad.ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(ExampleReminder, remind_in_fires_the_reminder_when_due) {
    ActorHarness h(examples::reminder_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        CO_ASSERT((co_await h.connect(nullptr, inbox, "reminder")).ok());
        auto scheduled = co_await h.call("remindIn", 1000, "stretch");
        CO_ASSERT(scheduled.ok());
        EXPECT_EQ(*scheduled, Json(nullptr));
        co_await h.clock().sleep_for(1000ms);
        CO_ASSERT((co_await h.fire_alarm()).ok());
        Json fired;
        for (int i = 0; i < 20 && fired != Json{"stretch"}; ++i) {
            co_await h.clock().sleep_for(10ms);
            auto got = co_await h.call("getFired");
            fired = got.ok() ? *got : Json();
        }
        EXPECT_EQ(fired, Json{"stretch"});
        EXPECT_EQ(*inbox, (std::vector<ReceivedEvent>{{"reminder", Json::array({"stretch"})}}));
        auto negative = co_await h.call("remindIn", -1, "x");
        CO_ASSERT(!negative.ok());
        EXPECT_TRUE(negative.error().is("user", "invalid_delay"));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(ExampleRateLimiter, allows_the_limit_per_key_and_window) {
    ActorHarness h(examples::rate_limiter_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        const std::int64_t reset_at = h.clock().wall_now_ms() + examples::kRateWindowMs;
        for (std::int64_t i = 1; i <= examples::kRateLimit; ++i) {
            auto r = co_await h.call("check", "alice");
            CO_ASSERT(r.ok());
            EXPECT_EQ(*r, (Json{{"allowed", true},
                                {"remaining", examples::kRateLimit - i},
                                {"resetAt", reset_at}}));
        }
        auto denied = co_await h.call("check", "alice");
        CO_ASSERT(denied.ok());
        EXPECT_EQ(*denied, (Json{{"allowed", false}, {"remaining", 0}, {"resetAt", reset_at}}));
        auto other = co_await h.call("check", "bob");
        CO_ASSERT(other.ok());
        EXPECT_EQ((*other)["allowed"], true);

        co_await h.clock().sleep_for(std::chrono::milliseconds(examples::kRateWindowMs));
        auto fresh = co_await h.call("check", "alice");
        CO_ASSERT(fresh.ok());
        EXPECT_EQ((*fresh)["allowed"], true);
        EXPECT_EQ((*fresh)["remaining"], examples::kRateLimit - 1);
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

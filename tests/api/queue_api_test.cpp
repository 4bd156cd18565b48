// The typed queue (c.queue()) and POST /queue/{name} dispatch on virtual time: a run handler
// consuming completable messages, send with wait answered by complete(), the wait timing out as
// status timedOut, messages surviving sleep, and a run handler waiting in next() not keeping the
// actor awake.

#include "api_test_support.hpp"

namespace rivetkit::api_test {
namespace {

struct JobsState {
    std::int64_t total = 0;
    std::vector<std::string> seen;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JobsState, total, seen)

using Jobs = ActorContext<JobsState>;
using JobsAction = ActionContext<JobsState>;

Actor<JobsState> consumer() {
    return Actor<JobsState>()
        .queue("add")
        .run([](Jobs& c) -> Task<void> {
            Queue queue = c.queue();
            for (;;) {
                QueueReceiveOptions opts;
                opts.names = {"add"};
                opts.completable = true;
                std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                if (!m)
                    break;
                c.state().total += m->body_as<std::int64_t>();
                Json reply = c.state().total;
                co_await m->complete(std::move(reply));
            }
        })
        .action("total", [](JobsAction& c) { return std::as_const(c).state().total; });
}

Actor<JobsState> inbox() {
    return Actor<JobsState>()
        .queue("job")
        .action("push",
                [](JobsAction& c, std::string text) -> Task<std::uint64_t> {
                    Queue queue = c.queue();
                    std::uint64_t id = co_await queue.send("note", Json(std::move(text)));
                    co_return id;
                })
        .action("drain", [](JobsAction& c) -> Task<std::vector<std::string>> {
            Queue queue = c.queue();
            std::vector<std::string> out;
            for (;;) {
                std::optional<QueueMessage> m = co_await queue.try_next();
                if (!m)
                    break;
                out.push_back(m->name + ":" + m->body.dump());
            }
            co_return out;
        });
}

TEST(TypedQueue, run_handler_consumes_sends_and_completes_waiting_senders) {
    ActorHarness h(consumer().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        co_await h.clock().sleep_for(1ms);
        // Waiting in next() does not hold the actor awake.
        EXPECT_NE(h.ctx().can_sleep(), core::CanSleep::ActiveRunHandler);

        auto sent = co_await h.queue_send("add", Json(5), false, std::nullopt);
        CO_ASSERT(sent.ok());
        EXPECT_EQ(sent->status, core::QueueSendResult::Status::Completed);
        EXPECT_FALSE(sent->response);

        auto waited = co_await h.queue_send("add", Json(7), true, 1000);
        CO_ASSERT(waited.ok());
        EXPECT_EQ(waited->status, core::QueueSendResult::Status::Completed);
        CO_ASSERT(waited->response.has_value());
        EXPECT_EQ(from_cbor(*waited->response).value(), Json(12));

        auto total = co_await h.call("total");
        EXPECT_EQ(total.ok() ? *total : Json(), Json(12));
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        EXPECT_EQ(h.stored_state().value_or(Json())["total"], Json(12));
        // Both messages were completed, so the queue is empty in KV.
        EXPECT_FALSE(h.kv().peek(core::keys::queue_message_key(1)));
        EXPECT_FALSE(h.kv().peek(core::keys::queue_message_key(2)));
    }());
}

TEST(TypedQueue, send_with_wait_times_out_as_status_timed_out) {
    ActorHarness h(inbox().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        const auto start = h.clock().now();
        auto waited = co_await h.queue_send("job", Json("x"), true, 250);
        CO_ASSERT(waited.ok());
        EXPECT_EQ(waited->status, core::QueueSendResult::Status::TimedOut);
        EXPECT_EQ(h.clock().now() - start, 250ms);
        // The message itself stays queued.
        auto drained = co_await h.call("drain");
        EXPECT_EQ(drained.ok() ? *drained : Json(), (Json{"job:\"x\""}));
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedQueue, messages_survive_sleep_in_fifo_order) {
    ActorHarness h(inbox().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        const std::string a = "a", c = "c";
        auto first = co_await h.call("push", a);
        EXPECT_EQ(first.ok() ? *first : Json(), Json(1));
        Json body = Json::object();
        body["n"] = 2;
        auto second = co_await h.queue_send("job", std::move(body), false, std::nullopt);
        CO_ASSERT(second.ok());
        auto third = co_await h.call("push", c);
        EXPECT_EQ(third.ok() ? *third : Json(), Json(3));
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());

        CO_ASSERT((co_await h.start()).ok());
        auto drained = co_await h.call("drain");
        EXPECT_EQ(drained.ok() ? *drained : Json(),
                  (Json{"note:\"a\"", "job:{\"n\":2}", "note:\"c\""}));
        auto again = co_await h.call("drain");
        EXPECT_EQ(again.ok() ? *again : Json(), Json::array());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedQueue, a_waiting_sender_is_answered_when_the_actor_shuts_down) {
    ActorHarness h(inbox().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto waiting =
            rt::spawn(h.runtime().executor(), h.queue_send("job", Json("x"), true, std::nullopt));
        co_await h.clock().sleep_for(10ms);
        EXPECT_FALSE(waiting.is_finished());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
        auto joined = co_await waiting.join();
        CO_ASSERT(joined.is_ok());
        CO_ASSERT(!joined.value().ok());
        EXPECT_TRUE(joined.value().error().is("actor", "aborted"));
    }());
}

TEST(TypedQueue, queue_full_is_a_structured_error_for_the_sender) {
    ActorOptions options;
    options.max_queue_size = 1;
    ActorHarness h(inbox().options(options).factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto first = co_await h.queue_send("job", Json(1), false, std::nullopt);
        EXPECT_TRUE(first.ok());
        auto second = co_await h.queue_send("job", Json(2), false, std::nullopt);
        CO_ASSERT(!second.ok());
        EXPECT_TRUE(second.error().is("queue", "full"));
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// As upstream's runtime: within one handler call, a completable message received and not yet
// completed blocks the next receive (queue/previous_message_not_completed, public 400) on every
// Queue view of that call; complete() lifts it; a later call sees the uncompleted message again.
TEST(TypedQueue, a_pending_completable_message_blocks_the_next_receive_of_its_call) {
    auto actor =
        Actor<JobsState>()
            .queue("job")
            .action("takeTwice",
                    [](JobsAction& c, bool complete_first) -> Task<Json> {
                        Queue queue = c.queue();
                        QueueReceiveOptions opts;
                        opts.completable = true;
                        std::optional<QueueMessage> m = co_await queue.try_next(std::move(opts));
                        if (!m)
                            co_return nullptr;
                        if (complete_first)
                            co_await m->complete();
                        Queue other_view = c.queue();
                        try {
                            std::optional<QueueMessage> again = co_await other_view.try_next();
                            co_return Json{{"first", m->body},
                                           {"second", again ? again->body : Json()}};
                        } catch (const ErrorException& e) {
                            co_return Json{{"first", m->body},
                                           {"error", e.error().id()},
                                           {"public", is_public(e.error())}};
                        }
                    });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        CO_ASSERT((co_await h.queue_send("job", Json(1), false, std::nullopt)).ok());
        CO_ASSERT((co_await h.queue_send("job", Json(2), false, std::nullopt)).ok());
        auto blocked = co_await h.call("takeTwice", false);
        CO_ASSERT(blocked.ok());
        EXPECT_EQ((*blocked)["first"], 1);
        EXPECT_EQ((*blocked)["error"], "queue/previous_message_not_completed");
        EXPECT_EQ((*blocked)["public"], true);
        // The next call sees the uncompleted message again; completing it lets the call go on.
        auto completed = co_await h.call("takeTwice", true);
        CO_ASSERT(completed.ok());
        EXPECT_EQ((*completed)["first"], 1);
        EXPECT_EQ((*completed)["second"], 2);
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

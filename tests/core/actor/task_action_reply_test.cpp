// In-flight actions are tracked through their reply slot (no task per action): what the caller
// receives for answered, failed, dropped and abandoned replies, and how the slot counts as
// tracked work for sleep and shutdown.

#include <gtest/gtest.h>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

using namespace std::chrono_literals;

// Answers "ok" with its args, fails "fail", drops "drop", and parks everything else until the
// test releases the parked replies (or never does).
struct Parked {
    std::vector<Reply<Bytes>> replies;
};

std::shared_ptr<ActorFactory> reply_factory(ActorConfig config, std::shared_ptr<Parked> parked) {
    return make_factory(std::move(config), [parked](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                if (a->name == "ok") {
                    a->reply.send(std::move(a->args));
                } else if (a->name == "fail") {
                    a->reply.send(Error("user", "boom", "failed on purpose"));
                } else if (a->name == "drop") {
                    // destroyed unanswered with the event
                } else {
                    parked->replies.push_back(std::move(a->reply));
                }
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            } else if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                s->reply.send(std::vector<StateDelta>{});
            }
        }
        co_return Status{};
    });
}

// GCC 12: no destructible temporaries inside co_await, so commands are built first.
Task<std::optional<Result<Bytes>>> call(ActorTask& task, const char* name, Bytes args) {
    auto [tx, rx] = rt::oneshot<Result<Bytes>>();
    DispatchCommand command = dispatch::Action{name, std::move(args),
                                               ConnHandle("conn", {}, {}, false), std::move(tx)};
    co_await task.handle_dispatch(std::move(command));
    co_return co_await rx.recv();
}

TEST(ActorTaskActionReply, moved_from_reply_answers_nothing_and_the_moved_to_reply_delivers) {
    auto [reply, rx] = Reply<Bytes>::make();
    {
        Reply<Bytes> moved(std::move(reply));
        EXPECT_TRUE(reply.answered());
        EXPECT_FALSE(moved.answered());
        reply = Reply<Bytes>::make().first;  // assigning over a spent reply answers nothing
        EXPECT_TRUE(moved.send(Bytes{4}));
        EXPECT_TRUE(moved.answered());
    }
    auto got = rx.try_recv();
    ASSERT_TRUE(got.has_value());
    ASSERT_TRUE(got->ok());
    EXPECT_EQ(got->value(), Bytes{4});
}

TEST(ActorTaskActionReply, answers_failures_and_dropped_replies_reach_the_caller_with_the_actor) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-replies", "task-replies", std::make_shared<InMemoryKv>());
    ctx.configure_envoy(nullptr, 3);
    auto parked = std::make_shared<Parked>();
    auto task = new_task_with_factory(ctx, reply_factory({}, parked));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());

        const Bytes ok_args{1, 2};
        auto ok = co_await call(*task, "ok", ok_args);
        CO_ASSERT(ok.has_value() && ok->ok());
        EXPECT_EQ(ok->value(), (Bytes{1, 2}));

        auto failed = co_await call(*task, "fail", {});
        CO_ASSERT(failed.has_value() && !failed->ok());
        EXPECT_EQ(failed->error().code(), "boom");
        CO_ASSERT(failed->error().actor().has_value());
        EXPECT_EQ(failed->error().actor()->actor_id, "actor-replies");
        EXPECT_EQ(failed->error().actor()->generation, 3u);

        auto dropped = co_await call(*task, "drop", {});
        CO_ASSERT(dropped.has_value() && !dropped->ok());
        EXPECT_EQ(dropped->error().group(), "actor");
        EXPECT_EQ(dropped->error().code(), "dropped_reply");
        EXPECT_TRUE(dropped->error().actor().has_value());

        EXPECT_EQ(ctx.shutdown_task_count(), 0u);
        EXPECT_EQ(ctx.internal_keep_awake_count(), 0u);
        EXPECT_EQ(ctx.can_sleep(), CanSleep::Yes);
        EXPECT_TRUE((co_await task->handle_stop(ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorTaskActionReply, parked_actions_hold_the_actor_and_are_dropped_at_the_grace_deadline) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-parked", "task-parked", std::make_shared<InMemoryKv>());
    auto parked = std::make_shared<Parked>();
    auto task = new_task_with_factory(ctx, reply_factory(grace_config(100ms), parked));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        std::vector<rt::OneshotReceiver<Result<Bytes>>> callers;
        for (int i = 0; i < 3; ++i) {
            auto [tx, rx] = rt::oneshot<Result<Bytes>>();
            DispatchCommand command =
                dispatch::Action{"park", {}, ConnHandle("conn", {}, {}, false), std::move(tx)};
            co_await task->handle_dispatch(std::move(command));
            callers.push_back(std::move(rx));
        }
        for (int i = 0; i < 10 && parked->replies.size() < 3; ++i)
            co_await rt::yield_now();
        CO_ASSERT(parked->replies.size() == 3u);
        EXPECT_EQ(ctx.shutdown_task_count(), 3u);
        EXPECT_EQ(ctx.internal_keep_awake_count(), 3u);
        EXPECT_EQ(ctx.can_sleep(), CanSleep::ActiveInternalKeepAwake);

        // One answer releases one slot; the caller gets it.
        EXPECT_TRUE(parked->replies[0].send(Bytes{8}));
        auto first = callers[0].try_recv();
        CO_ASSERT(first.has_value() && first->ok());
        EXPECT_EQ(ctx.shutdown_task_count(), 2u);

        auto stop = rt::spawn(rt.executor(), task->handle_stop(ShutdownKind::Sleep));
        co_await rt::yield_now();
        EXPECT_FALSE(stop.is_finished()) << "sleep waits for in-flight actions until the deadline";
        co_await rt.clock().advance(100ms);
        auto joined = co_await stop.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());

        // The abandoned callers observe a dropped reply; late answers go nowhere.
        for (std::size_t i = 1; i < callers.size(); ++i) {
            auto late = callers[i].try_recv();
            EXPECT_FALSE(late.has_value());
            EXPECT_EQ(late.error(), rt::TryRecvError::disconnected);
        }
        EXPECT_EQ(ctx.shutdown_task_count(), 0u);
        EXPECT_FALSE(parked->replies[1].send(Bytes{9}));
        parked->replies.clear();
        EXPECT_EQ(ctx.internal_keep_awake_count(), 0u);
    }());
}

}  // namespace
}  // namespace rivetkit::core::test

// Spec group I (loop termination and logging) of upstream tests/task.rs. Group J (the
// event-driven-drain grep gate) is scripts/check-event-driven-drains.sh, registered in CTest.

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

struct ClosedChannelWarning {
    std::string actor_id;
    std::string channel;
    std::string reason;
    std::string message;
    friend bool operator==(const ClosedChannelWarning&, const ClosedChannelWarning&) = default;
};

enum class ClosedChannelCase { LifecycleInbox, LifecycleEvents, DispatchInbox };

std::vector<ClosedChannelWarning> closed_channel_warnings(const log::Capture& capture) {
    std::vector<ClosedChannelWarning> out;
    for (const auto& record : capture.records()) {
        if (record.level != log::Level::warn ||
            !record.has_field("reason", "all senders dropped")) {
            continue;
        }
        out.push_back({record.field("actor_id").value_or(""), record.field("channel").value_or(""),
                       record.field("reason").value_or(""), record.message});
    }
    return out;
}

// Run as a coroutine (run()) or spawned (ActorTask::spawn, whose loop parks when idle).
std::vector<ClosedChannelWarning> run_task_with_closed_channel(ClosedChannelCase which,
                                                               bool spawned = false) {
    const std::string actor_id =
        which == ClosedChannelCase::LifecycleInbox    ? "actor-channel-lifecycle"
        : which == ClosedChannelCase::LifecycleEvents ? "actor-channel-events"
                                                      : "actor-channel-dispatch";
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, actor_id, "task-run", std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    log::Capture capture;
    switch (which) {
        case ClosedChannelCase::LifecycleInbox: {
            auto dropped = std::move(parts.lifecycle_tx);
            break;
        }
        case ClosedChannelCase::LifecycleEvents: {
            auto dropped = std::move(parts.events_tx);
            break;
        }
        case ClosedChannelCase::DispatchInbox: {
            parts.task->lifecycle = LifecycleState::Started;
            auto dropped = std::move(parts.dispatch_tx);
            break;
        }
    }
    const auto started = rt.clock().now();
    Status result;
    if (spawned) {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        auto joined = rt.block_on(run.join());
        EXPECT_TRUE(joined.is_ok());
        if (joined.is_ok())
            result = std::move(joined.value());
    } else {
        result = rt.block_on(parts.task->run());
    }
    EXPECT_TRUE(result.ok()) << "task run should exit cleanly";
    EXPECT_EQ(rt.clock().now(), started)
        << "task run should exit immediately after the channel closes";
    return closed_channel_warnings(capture);
}

TEST(ActorTask, run_logs_and_terminates_when_lifecycle_inbox_closes) {
    EXPECT_EQ(run_task_with_closed_channel(ClosedChannelCase::LifecycleInbox),
              (std::vector<ClosedChannelWarning>{
                  {"actor-channel-lifecycle", "lifecycle_inbox", "all senders dropped",
                   "actor task terminating because lifecycle command inbox closed"}}));
}

TEST(ActorTask, run_logs_and_terminates_when_lifecycle_events_close) {
    EXPECT_EQ(run_task_with_closed_channel(ClosedChannelCase::LifecycleEvents),
              (std::vector<ClosedChannelWarning>{
                  {"actor-channel-events", "lifecycle_events", "all senders dropped",
                   "actor task terminating because lifecycle event inbox closed"}}));
}

TEST(ActorTask, run_logs_and_terminates_when_dispatch_inbox_closes) {
    EXPECT_EQ(run_task_with_closed_channel(ClosedChannelCase::DispatchInbox),
              (std::vector<ClosedChannelWarning>{
                  {"actor-channel-dispatch", "dispatch_inbox", "all senders dropped",
                   "actor task terminating because dispatch inbox closed"}}));
}

// The same three exits with the task spawned, its channels closed before it first runs; then a
// channel closing while the task is parked, which ends it from the parked wake.
TEST(ActorTaskParked, SpawnedTaskTerminatesWhenAnInboxCloses) {
    auto expect_one = [](ClosedChannelCase which, std::string_view channel) {
        auto warnings = run_task_with_closed_channel(which, true);
        ASSERT_EQ(warnings.size(), 1u);
        EXPECT_EQ(warnings[0].channel, channel);
    };
    expect_one(ClosedChannelCase::LifecycleInbox, "lifecycle_inbox");
    expect_one(ClosedChannelCase::LifecycleEvents, "lifecycle_events");
    expect_one(ClosedChannelCase::DispatchInbox, "dispatch_inbox");

    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-parked-close", "task-run", std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    ActorTask* task = parts.task.get();
    log::Capture capture;
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        co_await rt.clock().sleep_for(10ms);
        EXPECT_TRUE(task->parked()) << "a task with nothing to do waits parked";
        {
            auto dropped = std::move(parts.events_tx);
        }
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
    auto warnings = closed_channel_warnings(capture);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0].channel, "lifecycle_events");
}

// Sends the answering factory's `ping` and expects its answer.
Task<void> expect_ping(const rt::Sender<DispatchCommand>& tx, std::string conn_id) {
    auto [action_tx, action_rx] = rt::oneshot<Result<Bytes>>();
    DispatchCommand action = dispatch::Action{
        "ping", {}, ConnHandle(std::move(conn_id), {}, {}, false), std::move(action_tx)};
    EXPECT_TRUE(tx.send(std::move(action)));
    auto reply = co_await action_rx.recv();
    CO_ASSERT(reply.has_value() && reply->ok());
    EXPECT_EQ(reply->value(), Bytes{1});
}

// An answering actor's task, spawned and started, once it has nothing left to do.
struct StartedActor {
    StartedActor(rt::TestRuntime& rt, const std::string& actor_id)
        : ctx(new_with_kv(rt, actor_id, "task-parked", std::make_shared<InMemoryKv>())),
          wired(new_wired_task(actor_id, ctx, answering_factory())),
          task(wired.task.get()),
          run(ActorTask::spawn(rt.executor(), std::move(wired.task))) {}

    Task<void> start(rt::Clock& clock) {
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        co_await clock.sleep_for(10ms);
    }

    ActorContext ctx;
    WiredTask wired;
    ActorTask* task;  // owned by `run`'s task
    rt::JoinHandle<Status> run;
};

// A started actor with nothing to do holds no coroutine of its task: it waits parked, a wake
// serves the action from a posted handler and parks again, and a Stop resumes the coroutine for
// the shutdown.
TEST(ActorTaskParked, IdleActorParksBetweenActionsAndStopsFromParked) {
    rt::TestRuntime rt;
    StartedActor actor(rt, "actor-parked");
    rt.block_on([&]() -> Task<void> {
        co_await actor.start(rt.clock());
        EXPECT_TRUE(actor.task->parked());
        for (int i = 0; i < 3; ++i) {
            co_await expect_ping(actor.wired.dispatch_tx, "conn-parked");
            co_await rt.clock().sleep_for(1ms);  // the wakes the action's end caused are served
            EXPECT_TRUE(actor.task->parked()) << "parked again after serving action " << i;
        }
        CO_ASSERT((co_await send_and_wait(actor.wired.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());
        auto joined = co_await actor.run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

// Aborting a parked task ends it at once: the join says aborted and the task (with its inboxes)
// is gone, so nothing can be sent to it any more.
TEST(ActorTaskParked, AbortWhileParkedDestroysTheTask) {
    rt::TestRuntime rt;
    StartedActor actor(rt, "actor-parked-abort");
    rt.block_on([&]() -> Task<void> {
        co_await actor.start(rt.clock());
        CO_ASSERT(actor.task->parked());
        EXPECT_FALSE(actor.wired.dispatch_tx.is_closed());
        actor.run.abort();
        auto joined = co_await actor.run.join();
        EXPECT_TRUE(joined.is_aborted());
        EXPECT_TRUE(actor.wired.dispatch_tx.is_closed());
        EXPECT_TRUE(actor.wired.lifecycle_tx.is_closed());
    }());
}

// An awake actor's inboxes keep their queues' storage while commands keep coming, and give it
// back once none came for a quiet period (2 s, checked every 2 s: gone 2 to 4 s after the last
// command); the next command allocates again.
TEST(ActorTaskParked, QuietInboxesGiveTheirQueueStorageBack) {
    rt::TestRuntime rt;
    StartedActor actor(rt, "actor-quiet-inboxes");
    auto& dispatch = actor.wired.dispatch_tx;
    rt.block_on([&]() -> Task<void> {
        co_await actor.start(rt.clock());
        co_await expect_ping(dispatch, "conn-quiet");
        EXPECT_GT(dispatch.queue_capacity(), 0u) << "the action's slot";
        for (int i = 0; i < 4; ++i) {
            co_await rt.clock().sleep_for(1300ms);
            co_await expect_ping(dispatch, "conn-quiet");
            EXPECT_GT(dispatch.queue_capacity(), 0u) << "given back while in use, round " << i;
        }
        co_await rt.clock().sleep_for(1900ms);
        EXPECT_GT(dispatch.queue_capacity(), 0u) << "given back before a quiet period";
        co_await rt.clock().sleep_for(2200ms);
        EXPECT_EQ(dispatch.queue_capacity(), 0u) << "kept 4 s after the last command";
        EXPECT_EQ(actor.wired.lifecycle_tx.queue_capacity(), 0u);
        EXPECT_TRUE(actor.task->parked());
        co_await expect_ping(dispatch, "conn-quiet");  // served as before
        EXPECT_GT(dispatch.queue_capacity(), 0u);
        CO_ASSERT((co_await send_and_wait(actor.wired.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());
        auto joined = co_await actor.run.join();
        CO_ASSERT(joined.is_ok());
    }());
}

TEST(ActorTask, actor_task_logs_lifecycle_dispatch_and_actor_event_flow) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-log-flow", "task-log-flow", std::make_shared<InMemoryKv>());
    auto factory = answering_factory();
    auto wired = new_wired_task("actor-log-flow", ctx, factory);
    log::Capture capture;
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(wired.task));
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        co_await expect_ping(wired.dispatch_tx, "conn-log-flow");
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());

    auto has = [&](std::string_view message, std::string_view field, std::string_view value) {
        for (const auto& record : capture.find(message)) {
            if (record.level == log::Level::debug &&
                record.has_field("actor_id", "actor-log-flow") && record.has_field(field, value)) {
                return true;
            }
        }
        return false;
    };
    EXPECT_TRUE(has("actor lifecycle command received", "command", "start"));
    EXPECT_TRUE(has("actor event enqueued", "event", "action"));
    EXPECT_TRUE(has("actor event drained", "event", "action"));
}

}  // namespace
// A runtime whose coroutine throws (upstream: its future panicked) ends the run handler, logged
// with the actor and the error; the actor stays up for its stop, as after a clean exit. So does
// an entry that throws before it made its coroutine.
void run_with_throwing_entry(const std::string& actor_id, ActorEntry entry) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, actor_id, "task-throw", std::make_shared<InMemoryKv>());
    auto wired = new_wired_task(actor_id, ctx, make_factory({}, std::move(entry)));
    log::Capture capture;
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(wired.task));
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        co_await rt.clock().sleep_for(10ms);
        auto failed = capture.find("actor run handler join failed");
        EXPECT_EQ(failed.size(), 1u);
        if (!failed.empty()) {
            EXPECT_TRUE(failed[0].has_field("actor_id", actor_id));
            EXPECT_TRUE(failed[0].has_field("error", "boom"));
        }
        Status stopped = co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                                ShutdownKind::Destroy);
        EXPECT_TRUE(stopped.ok()) << stopped.error().to_string();
        auto joined = co_await run.join();
        EXPECT_TRUE(joined.is_ok());
    }());
}

TEST(ActorTask, run_handler_exception_is_logged_and_actor_stays_up_for_its_stop) {
    run_with_throwing_entry("actor-entry-throws", [](ActorStart) -> Task<Status> {
        co_await rt::yield_now();
        throw std::runtime_error("boom");
    });
    run_with_throwing_entry("actor-entry-throws-at-once", [](ActorStart) -> Task<Status> {
        throw std::runtime_error("boom");
    });
}

}  // namespace rivetkit::core::test

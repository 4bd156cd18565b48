// Spec groups G (grace, drain, deadlines) and H (failure paths, ordering, run-handler exit) of
// upstream tests/task.rs.

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

constexpr std::string_view kRefusedWarning =
    "shutdown task spawned after teardown; aborting immediately";
constexpr std::string_view kDrainWarning = "actor shutdown drain is taking longer than expected";

std::shared_ptr<ActorFactory> shutdown_ack_factory(ActorConfig config) {
    return make_factory(std::move(config), [](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                s->reply.send(std::vector<StateDelta>{});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
                break;
            }
        }
        co_return Status{};
    });
}

struct GraceCounts {
    std::size_t begin_sleep = 0;
    std::size_t destroy = 0;
    std::size_t actions = 0;
};

std::shared_ptr<ActorFactory> sleep_grace_factory(ActorConfig config,
                                                  std::shared_ptr<GraceCounts> counts) {
    return make_factory(std::move(config), [counts](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                ++counts->actions;
                a->reply.send(Bytes{7, 7, 7});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                ++(c->reason == ShutdownKind::Sleep ? counts->begin_sleep : counts->destroy);
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
}

// Our spawn yields once before the body runs (tokio runs it on the first yield), so tests that
// wait for a spawned task to get going yield until the condition holds, boundedly.
template <typename Pred>
Task<void> yield_until(Pred pred, int max = 10) {
    for (int i = 0; i < max && !pred(); ++i)
        co_await rt::yield_now();
}

Task<void> wait_release(rt::OneshotReceiver<bool> release) {
    (void)co_await release.recv();
}

Task<void> keep_awake_until_released(ActorContext ctx, rt::OneshotReceiver<bool> release) {
    co_await ctx.keep_awake(wait_release(std::move(release)));
}

TEST(ActorTask, sleep_shutdown_without_in_flight_work_finishes_under_baseline) {
    rt::TestRuntime rt;
    auto ctx =
        new_with_kv(rt, "actor-sleep-fast", "task-sleep-fast", std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory(grace_config(5s));
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Sleep))
                      .ok());
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

TEST(ActorTask, sleep_shutdown_waits_for_keep_awake_work_then_finishes_next_tick) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-sleep-keep-awake", "task-sleep-keep-awake",
                           std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory(grace_config(5s));
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());

        auto [release_tx, release_rx] = rt::oneshot<bool>();
        auto keep_awake =
            rt::spawn(rt.executor(), keep_awake_until_released(ctx, std::move(release_rx)));
        co_await yield_until([&] { return ctx.keep_awake_count() == 1; });
        EXPECT_EQ(ctx.keep_awake_count(), 1u);

        auto [stop_tx, stop_rx] = rt::oneshot<Status>();
        parts.lifecycle_tx.send(LifecycleCommand::stop(ShutdownKind::Sleep, std::move(stop_tx)));
        for (int i = 0; i < 10; ++i)
            co_await rt::yield_now();
        EXPECT_TRUE(stop_rx.try_recv().is_empty())
            << "sleep shutdown should stay blocked while keep-awake work is active";

        EXPECT_TRUE(release_tx.send(true));
        auto stopped = co_await stop_rx.recv();
        CO_ASSERT(stopped.has_value());
        EXPECT_TRUE(stopped->ok());
        EXPECT_TRUE((co_await keep_awake.join()).is_ok());
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

TEST(ActorTask, destroy_shutdown_times_out_at_deadline_and_aborts_stuck_shutdown_task) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-destroy-timeout", "task-destroy-timeout",
                           std::make_shared<InMemoryKv>());
    const auto destroy_timeout = 100ms;
    auto task = new_task_with_factory(ctx, shutdown_ack_factory(grace_config(destroy_timeout)));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        auto dropped = std::make_shared<bool>(false);
        auto [never_tx, never_rx] = rt::oneshot<bool>();
        ctx.wait_until(stuck_future(NotifyOnDrop(dropped), std::move(never_rx)));
        co_await rt::yield_now();

        auto stop = rt::spawn(rt.executor(), task->handle_stop(ShutdownKind::Destroy));
        co_await rt::yield_now();
        EXPECT_FALSE(stop.is_finished())
            << "destroy shutdown should wait for the destroy deadline while tracked work is stuck";

        co_await rt.clock().advance(destroy_timeout - 1ms);
        co_await rt::yield_now();
        EXPECT_FALSE(stop.is_finished())
            << "destroy shutdown should still be waiting before the configured deadline";

        co_await rt.clock().advance(1ms);
        auto joined = co_await stop.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
        EXPECT_TRUE(*dropped) << "destroy teardown should abort the stuck shutdown task";
    }());
}

// Upstream's two refusal tests share this shape: the cleanup hook (which runs after teardown
// started) calls wait_until, which must drop the future at once and warn exactly once.
void run_refused_wait_until_case(std::string actor_id, ShutdownKind reason) {
    rt::TestRuntime rt;
    log::Capture capture;
    auto ctx = new_with_kv(rt, actor_id, "task-" + actor_id, std::make_shared<InMemoryKv>());
    auto dropped = std::make_shared<bool>(false);
    auto hook_fired = std::make_shared<bool>(false);
    auto destroy_completed = std::make_shared<bool>(false);
    const std::string label(shutdown_kind_label(reason));
    auto guard = install_shutdown_cleanup_hook(
        actor_id, [=](const ActorContext& hook_ctx, std::string_view hook_reason) {
            EXPECT_EQ(hook_reason, label);
            EXPECT_FALSE(*destroy_completed)
                << "destroy completion should not resolve before destroy cleanup finishes";
            auto [never_tx, never_rx] = rt::oneshot<bool>();
            hook_ctx.wait_until(stuck_future(NotifyOnDrop(dropped), std::move(never_rx)));
            *hook_fired = true;
        });
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory({});
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        auto waiter = [](ActorContext waiting, std::shared_ptr<bool> flag) -> Task<void> {
            co_await waiting.wait_for_destroy_completion_public();
            *flag = true;
        };
        std::optional<rt::JoinHandle<void>> destroy_wait;
        if (reason == ShutdownKind::Destroy) {
            destroy_wait = rt::spawn(rt.executor(), waiter(ctx, destroy_completed));
            co_await rt::yield_now();
            EXPECT_FALSE(destroy_wait->is_finished())
                << "destroy completion should not fire before shutdown begins";
        }
        auto [stop_tx, stop_rx] = rt::oneshot<Status>();
        parts.lifecycle_tx.send(LifecycleCommand::stop(reason, std::move(stop_tx)));
        auto stopped = co_await stop_rx.recv();
        EXPECT_TRUE(*hook_fired);
        EXPECT_TRUE(*dropped) << "refused wait_until future should drop immediately";
        EXPECT_EQ(capture.count(kRefusedWarning), 1u);
        CO_ASSERT(stopped.has_value());
        EXPECT_TRUE(stopped->ok());
        EXPECT_TRUE(co_await ctx.wait_for_shutdown_tasks(rt.clock().now() + 1ms));
        if (destroy_wait) {
            (void)co_await destroy_wait->join();
            EXPECT_TRUE(*destroy_completed);
        }
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

TEST(ActorTask, ctx_wait_until_during_finish_shutdown_cleanup_refused_without_leak) {
    run_refused_wait_until_case("actor-sleep-cleanup-race", ShutdownKind::Sleep);
}

TEST(ActorTask, destroy_shutdown_concurrent_wait_until_refused) {
    run_refused_wait_until_case("actor-destroy-cleanup-race", ShutdownKind::Destroy);
}

TEST(ActorTask, sleep_grace_keeps_dispatch_open_and_second_sleep_is_idempotent) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-sleep-grace-dispatch", "task-sleep-grace-dispatch",
                           std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    auto counts = std::make_shared<GraceCounts>();
    parts.task->factory = sleep_grace_factory(grace_config(5s), counts);
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        auto [release_tx, release_rx] = rt::oneshot<bool>();
        auto keep_awake =
            rt::spawn(rt.executor(), keep_awake_until_released(ctx, std::move(release_rx)));
        co_await yield_until([&] { return ctx.keep_awake_count() == 1; });

        auto [sleep_tx, sleep_rx] = rt::oneshot<Status>();
        parts.lifecycle_tx.send(LifecycleCommand::stop(ShutdownKind::Sleep, std::move(sleep_tx)));
        co_await wait_for_count(rt.clock(), counts->begin_sleep, 1);
        EXPECT_TRUE(ctx.actor_aborted());

        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Sleep))
                      .ok());
        EXPECT_EQ(counts->begin_sleep, 1u);

        auto [action_tx, action_rx] = rt::oneshot<Result<Bytes>>();
        DispatchCommand action = dispatch::Action{
            "ping", {}, ConnHandle("conn-grace", {}, {}, false), std::move(action_tx)};
        EXPECT_TRUE(parts.dispatch_tx.send(std::move(action)));
        auto reply = co_await action_rx.recv();
        CO_ASSERT(reply.has_value() && reply->ok());
        EXPECT_EQ(reply->value(), (Bytes{7, 7, 7}));
        EXPECT_EQ(counts->actions, 1u);
        EXPECT_EQ(counts->destroy, 0u);

        EXPECT_TRUE(release_tx.send(true));
        auto slept = co_await sleep_rx.recv();
        CO_ASSERT(slept.has_value());
        EXPECT_TRUE(slept->ok());
        EXPECT_TRUE((co_await keep_awake.join()).is_ok());
        EXPECT_EQ(counts->destroy, 0u);
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

#ifdef NDEBUG
// Upstream compiles this only without debug assertions: in debug builds a conflicting Stop during
// grace is an assertion failure.
TEST(ActorTask, duplicate_destroy_during_sleep_grace_is_acked_and_ignored_in_release) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-sleep-grace-destroy", "task-sleep-grace-destroy",
                           std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    auto counts = std::make_shared<GraceCounts>();
    parts.task->factory = sleep_grace_factory(grace_config(5s), counts);
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        auto [release_tx, release_rx] = rt::oneshot<bool>();
        auto keep_awake =
            rt::spawn(rt.executor(), keep_awake_until_released(ctx, std::move(release_rx)));
        co_await yield_until([&] { return ctx.keep_awake_count() == 1; });

        auto [sleep_tx, sleep_rx] = rt::oneshot<Status>();
        parts.lifecycle_tx.send(LifecycleCommand::stop(ShutdownKind::Sleep, std::move(sleep_tx)));
        co_await wait_for_count(rt.clock(), counts->begin_sleep, 1);

        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());

        EXPECT_TRUE(release_tx.send(true));
        auto slept = co_await sleep_rx.recv();
        CO_ASSERT(slept.has_value());
        EXPECT_TRUE(slept->ok());
        EXPECT_TRUE((co_await keep_awake.join()).is_ok());
        EXPECT_EQ(counts->begin_sleep, 1u);
        EXPECT_EQ(counts->destroy, 0u);
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}
#endif

void run_drain_case(std::string actor_id, ShutdownKind reason, std::string phase, bool slow) {
    rt::TestRuntime rt;
    log::Capture capture;
    auto ctx = new_with_kv(rt, actor_id, "task-" + actor_id, std::make_shared<InMemoryKv>());
    auto task = new_task(ctx);
    rt.block_on([&]() -> Task<void> {
        auto [release_tx, release_rx] = rt::oneshot<bool>();
        ctx.wait_until(wait_release(std::move(release_rx)));
        auto drain = rt::spawn(rt.executor(),
                               task->drain_tracked_work(reason, phase, rt.clock().now() + 5s));
        co_await rt::yield_now();
        EXPECT_FALSE(drain.is_finished());
        if (slow) {
            co_await rt.clock().advance(kLongShutdownDrainWarningThreshold + 1ms);
            co_await rt::yield_now();
            EXPECT_FALSE(drain.is_finished());
            EXPECT_EQ(capture.count(kDrainWarning), 1u);
            co_await rt.clock().advance(2s);
            co_await rt::yield_now();
            EXPECT_FALSE(drain.is_finished());
            EXPECT_EQ(capture.count(kDrainWarning), 1u);
        } else {
            co_await rt.clock().advance(kLongShutdownDrainWarningThreshold - 1ms);
            co_await rt::yield_now();
            EXPECT_FALSE(drain.is_finished());
            EXPECT_EQ(capture.count(kDrainWarning), 0u);
        }
        EXPECT_TRUE(release_tx.send(true));
        co_await yield_until([&] { return drain.is_finished(); });
        CO_ASSERT(drain.is_finished());
        auto drained = co_await drain.join();
        EXPECT_TRUE(drained.is_ok() && drained.value());
        EXPECT_EQ(capture.count(kDrainWarning), slow ? 1u : 0u);
    }());
}

TEST(ActorTask, drain_tracked_work_before_warning_threshold_does_not_emit_warning) {
    run_drain_case("actor-drain-fast", ShutdownKind::Destroy, "before_disconnect", false);
}

TEST(ActorTask, drain_tracked_work_warns_once_after_threshold_then_finishes) {
    run_drain_case("actor-drain-slow", ShutdownKind::Sleep, "after_disconnect", true);
}

// MARK: H. Failure paths, ordering and run-handler exit

TEST(ActorTask, inline_shutdown_panic_returns_error_instead_of_crashing_task_loop) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-shutdown-step-panic", "task-shutdown-step-panic",
                           std::make_shared<InMemoryKv>());
    auto guard = install_shutdown_cleanup_hook(
        "actor-shutdown-step-panic",
        [](const ActorContext&, std::string_view) { throw std::runtime_error("boom"); });
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory({});
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        Status stopped = co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                                ShutdownKind::Destroy);
        CO_ASSERT(!stopped.ok());
        EXPECT_NE(stopped.error().to_string().find("internal_error"), std::string::npos)
            << stopped.error().to_string();
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        CO_ASSERT(!joined.value().ok());
        EXPECT_NE(joined.value().error().to_string().find("shutdown panicked during Destroy"),
                  std::string::npos)
            << joined.value().error().to_string();
    }());
}

TEST(ActorTask, destroy_marks_completion_before_shutdown_reply_is_sent) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-destroy-reply-order", "task-destroy-reply-order",
                           std::make_shared<InMemoryKv>());
    auto hook_count = std::make_shared<std::size_t>(0);
    auto guard = install_shutdown_reply_hook(
        "actor-destroy-reply-order",
        [hook_count](const ActorContext& hook_ctx, ShutdownKind reason) {
            if (reason != ShutdownKind::Destroy)
                return;
            ++*hook_count;
            EXPECT_TRUE(hook_ctx.destroy_completed())
                << "destroy completion should already be visible when the shutdown reply is sent";
        });
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory({});
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop,
                                          ShutdownKind::Destroy))
                      .ok());
        EXPECT_EQ(*hook_count, 1u);
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
}

struct CleanRunSignals {
    std::size_t sleep_count = 0;
    std::size_t destroy_count = 0;
    bool run_returned = false;
    std::optional<ShutdownKind> cleanup;
};

// The run handler hands its event stream to a detached task and returns Ok at once.
std::shared_ptr<ActorFactory> detached_cleanup_after_clean_run_factory(
    std::shared_ptr<CleanRunSignals> signals) {
    return make_factory({}, [signals](ActorStart start) -> Task<Status> {
        auto detached = [](ActorEvents events, std::shared_ptr<CleanRunSignals> s) -> Task<void> {
            while (auto ev = co_await events.recv()) {
                if (auto* ser = std::get_if<event::SerializeState>(&*ev)) {
                    ser->reply.send(std::vector<StateDelta>{});
                } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                    ++(c->reason == ShutdownKind::Sleep ? s->sleep_count : s->destroy_count);
                    c->reply.send(Status{});
                    if (!s->cleanup)
                        s->cleanup = c->reason;
                    break;
                }
            }
        };
        rt::spawn(start.ctx.executor(), detached(std::move(start.events), signals));
        signals->run_returned = true;
        co_return Status{};
    });
}

void assert_clean_run_exit_stop_dispatches_cleanup(ShutdownKind reason) {
    const std::string actor_id = reason == ShutdownKind::Sleep ? "actor-clean-run-sleep-stop"
                                                               : "actor-clean-run-destroy-stop";
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, actor_id, "task-clean-run", std::make_shared<InMemoryKv>());
    auto signals = std::make_shared<CleanRunSignals>();
    auto task = new_task_with_factory(ctx, detached_cleanup_after_clean_run_factory(signals));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        for (int i = 0; i < 200 && !signals->run_returned; ++i)
            co_await rt.clock().sleep_for(10ms);
        CO_ASSERT(signals->run_returned);

        CO_ASSERT(task->run_handle.has_value());
        auto outcome = co_await ActorTask::wait_for_run_handle(&*task->run_handle);
        EXPECT_FALSE(task->handle_run_handle_outcome(std::move(outcome)).has_value());
        EXPECT_EQ(task->lifecycle, LifecycleState::Started);

        auto [stop_tx, stop_rx] = rt::oneshot<Status>();
        LifecycleCommand stop = LifecycleCommand::stop(reason, std::move(stop_tx));
        co_await task->handle_lifecycle(std::move(stop));
        for (int i = 0; i < 200 && !signals->cleanup; ++i)
            co_await rt.clock().sleep_for(10ms);
        CO_ASSERT(signals->cleanup.has_value());
        EXPECT_EQ(*signals->cleanup, reason);
        EXPECT_EQ(signals->sleep_count, reason == ShutdownKind::Sleep ? 1u : 0u);
        EXPECT_EQ(signals->destroy_count, reason == ShutdownKind::Destroy ? 1u : 0u);

        for (int i = 0; i < 1000 && ctx.core_dispatched_hook_count() != 0; ++i)
            co_await rt::yield_now();
        CO_ASSERT(ctx.core_dispatched_hook_count() == 0);

        auto exit = task->try_finish_grace();
        CO_ASSERT(exit.has_value());
        CO_ASSERT(exit->kind == LiveExit::Kind::Shutdown);
        EXPECT_EQ(exit->reason, reason);
        Status result = co_await task->run_shutdown(exit->reason);
        task->deliver_shutdown_reply(exit->reason, result);
        task->transition_to(LifecycleState::Terminated);
        EXPECT_TRUE(result.ok());
        auto stopped = co_await stop_rx.recv();
        CO_ASSERT(stopped.has_value());
        EXPECT_TRUE(stopped->ok());
    }());
}

TEST(ActorTask, clean_run_exit_still_dispatches_on_sleep_when_stop_arrives) {
    assert_clean_run_exit_stop_dispatches_cleanup(ShutdownKind::Sleep);
}

TEST(ActorTask, clean_run_exit_still_dispatches_on_destroy_when_stop_arrives) {
    assert_clean_run_exit_stop_dispatches_cleanup(ShutdownKind::Destroy);
}

void run_self_initiated_case(std::string actor_id, ShutdownKind reason) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, actor_id, "task-" + actor_id, std::make_shared<InMemoryKv>());
    auto cleanup_count = std::make_shared<std::size_t>(0);
    const std::string label(shutdown_kind_label(reason));
    auto guard = install_shutdown_cleanup_hook(
        actor_id, [cleanup_count, label](const ActorContext&, std::string_view hook_reason) {
            if (hook_reason == label)
                ++*cleanup_count;
        });
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = make_factory({}, [reason](ActorStart start) -> Task<Status> {
        Status requested = reason == ShutdownKind::Sleep ? start.ctx.sleep() : start.ctx.destroy();
        co_return requested;
    });
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        for (int i = 0; i < 5; ++i)
            co_await rt::yield_now();
        if (reason == ShutdownKind::Sleep) {
            EXPECT_EQ(ctx.sleep_request_count(), 1u);
        } else {
            EXPECT_TRUE(ctx.destroy_requested());
        }
        EXPECT_FALSE(run.is_finished())
            << "self-initiated stop should stay live until the Stop arrives";
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop, reason))
                      .ok());
        auto join = run.join();
        auto joined = co_await rt::timeout(rt.clock(), 2s, std::move(join));
        CO_ASSERT(joined.has_value() && joined->is_ok());
        EXPECT_TRUE(joined->value().ok());
        if (reason == ShutdownKind::Sleep) {
            EXPECT_EQ(ctx.sleep_request_count(), 1u);
        } else {
            EXPECT_TRUE(ctx.destroy_completed())
                << "destroy completion should be marked after self-initiated shutdown";
        }
        EXPECT_EQ(*cleanup_count, 1u);
    }());
}

TEST(ActorTask, self_initiated_sleep_waits_for_stop_reply_before_shutdown_finishes) {
    run_self_initiated_case("actor-self-sleep-run-return", ShutdownKind::Sleep);
}

TEST(ActorTask, self_initiated_destroy_waits_for_stop_reply_and_marks_complete) {
    run_self_initiated_case("actor-self-destroy-run-return", ShutdownKind::Destroy);
}

}  // namespace
}  // namespace rivetkit::core::test

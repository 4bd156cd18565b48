// Spec groups C (shutdown persistence and connections) and D (dispatch) of upstream tests/task.rs.

#include <algorithm>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

// Replies to SerializeState with `deltas`, disconnects on DisconnectConn, acks cleanup.
std::shared_ptr<ActorFactory> shutdown_factory(ActorConfig config, std::vector<StateDelta> deltas) {
    return make_factory(std::move(config), [deltas](ActorStart start) -> Task<Status> {
        ActorContext actor = start.ctx;
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                s->reply.send(deltas);
            } else if (auto* d = std::get_if<event::DisconnectConn>(&*ev)) {
                Status st = co_await actor.disconnect_conn(d->conn_id);
                EXPECT_TRUE(st.ok());
                d->reply.send(Status{});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
}

TEST(ActorTask, sleep_shutdown_persists_actor_and_hibernation_deltas) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-sleep", "task-sleep", kv);
    auto disconnects = std::make_shared<std::vector<std::string>>();
    ctx.add_conn(managed_test_conn(ctx, "conn-normal", false, disconnects));
    ConnHandle hibernating = managed_test_conn(ctx, "conn-hibernating", true, disconnects);
    auto meta = hibernation_meta("gate", "req1", 1, 2);
    meta.request_headers["x-test"] = "true";
    hibernating.configure_hibernation(meta);
    ctx.add_conn(hibernating);
    configure_live_hibernated_pairs(ctx, {{"gate", "req1"}});
    std::vector<StateDelta> deltas{StateDelta::actor_state({4, 5, 6}),
                                   StateDelta::conn_hibernation("conn-hibernating", {9, 8, 7})};
    auto wired = new_wired_task("actor-sleep", ctx, shutdown_factory(grace_config(200ms), deltas));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*wired.task)).ok());
        EXPECT_TRUE((co_await wired.task->handle_stop(ShutdownKind::Sleep)).ok());
    }());
    auto persisted = stored_actor(*kv);
    ASSERT_TRUE(persisted.has_value());
    EXPECT_EQ(persisted->state, (Bytes{4, 5, 6}));
    auto conn = stored_conn(*kv, "conn-hibernating");
    ASSERT_TRUE(conn.has_value());
    EXPECT_EQ(conn->state, (Bytes{9, 8, 7}));
    EXPECT_EQ(*disconnects, std::vector<std::string>{"conn-normal"});
    auto remaining = ctx.conns();
    ASSERT_EQ(remaining.size(), 1u);
    EXPECT_EQ(remaining[0].id(), "conn-hibernating");
}

TEST(ActorTask, sleep_shutdown_waits_for_on_state_change_before_final_save) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-sleep-state-change", "task-sleep-state-change", kv);
    ctx.set_state_initial({1});
    ActorConfig config = grace_config(500ms);
    config.action_timeout = 500ms;
    auto factory = make_factory(config, [](ActorStart start) -> Task<Status> {
        ActorContext actor = start.ctx;
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                std::vector<StateDelta> out{StateDelta::actor_state(actor.state())};
                s->reply.send(std::move(out));
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
    auto wired = new_wired_task("actor-sleep-state-change", ctx, factory);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*wired.task)).ok());
        WorkRegion on_state_change = ctx.begin_on_state_change();
        auto callback = [](ActorContext actor, WorkRegion guard) -> Task<void> {
            co_await actor.clock().sleep_for(25ms);
            actor.set_state_initial({8});
            guard.release();
        };
        rt::spawn(rt.executor(), callback(ctx, std::move(on_state_change)));
        EXPECT_TRUE((co_await wired.task->handle_stop(ShutdownKind::Sleep)).ok());
    }());
    auto persisted = stored_actor(*kv);
    ASSERT_TRUE(persisted.has_value());
    EXPECT_EQ(persisted->state, Bytes{8});
}

TEST(ActorTask, destroy_shutdown_disconnects_hibernating_connections_after_final_delta_flush) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-destroy", "task-destroy", kv);
    auto disconnects = std::make_shared<std::vector<std::string>>();
    ctx.add_conn(managed_test_conn(ctx, "conn-normal", false, disconnects));
    ConnHandle hibernating = managed_test_conn(ctx, "conn-hibernating", true, disconnects);
    hibernating.configure_hibernation(hibernation_meta("gate", "req1", 1, 2));
    ctx.add_conn(hibernating);
    configure_live_hibernated_pairs(ctx, {{"gate", "req1"}});
    std::vector<StateDelta> deltas{StateDelta::actor_state({7, 7, 7})};
    auto wired =
        new_wired_task("actor-destroy", ctx, shutdown_factory(grace_config(200ms), deltas));
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*wired.task)).ok());
        EXPECT_TRUE((co_await wired.task->handle_stop(ShutdownKind::Destroy)).ok());
    }());
    auto persisted = stored_actor(*kv);
    ASSERT_TRUE(persisted.has_value());
    EXPECT_EQ(persisted->state, (Bytes{7, 7, 7}));
    std::vector<std::string> sorted = *disconnects;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<std::string>{"conn-hibernating", "conn-normal"}));
    EXPECT_FALSE(kv->peek(keys::connection_key("conn-hibernating")).has_value());
    EXPECT_TRUE(ctx.conns().empty());
}

TEST(ActorTask, destroy_waits_for_tracked_schedule_persistence) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-schedule-destroy", "task-schedule-destroy", kv);
    auto factory = make_factory({}, [](ActorStart start) -> Task<Status> {
        ActorContext actor = start.ctx;
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                if (c->reason == ShutdownKind::Destroy) {
                    EXPECT_TRUE(actor.after(60s, "after-destroy", {1, 2, 3}).ok());
                }
                c->reply.send(Status{});
                break;
            }
        }
        co_return Status{};
    });
    auto wired = new_wired_task("actor-schedule-destroy", ctx, factory);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*wired.task)).ok());
        EXPECT_TRUE((co_await wired.task->handle_stop(ShutdownKind::Destroy)).ok());
    }());
    auto persisted = stored_actor(*kv);
    ASSERT_TRUE(persisted.has_value())
        << "scheduled event should be persisted before shutdown returns";
    ASSERT_EQ(persisted->scheduled_events.size(), 1u);
    EXPECT_EQ(persisted->scheduled_events[0].action, "after-destroy");
    EXPECT_EQ(persisted->scheduled_events[0].args, (Bytes{1, 2, 3}));
}

TEST(ActorTask, disconnect_hibernatable_connection_reaps_on_next_atomic_flush) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-disconnect", "task-disconnect", kv);
    auto disconnects = std::make_shared<std::vector<std::string>>();
    ConnHandle conn = managed_test_conn(ctx, "conn-hibernating", true, disconnects);
    conn.configure_hibernation(hibernation_meta("gate", "req1", 1, 2));
    ctx.add_conn(conn);
    rt.block_on([&]() -> Task<void> {
        std::vector<StateDelta> seed{StateDelta::conn_hibernation(conn.id(), {1, 2, 3})};
        CO_ASSERT((co_await ctx.save_state(std::move(seed))).ok());
        EXPECT_EQ(kv->batch_delete_call_count(), 0u);
        std::optional<std::string> reason("bye");
        CO_ASSERT((co_await conn.disconnect(std::move(reason))).ok());
        EXPECT_TRUE(ctx.conns().empty());
        std::vector<StateDelta> none;
        CO_ASSERT((co_await ctx.save_state(std::move(none))).ok());
    }());
    EXPECT_EQ(kv->batch_delete_call_count(), 0u);
    const auto& last = kv->last_apply_batch();
    ASSERT_TRUE(last.has_value());
    EXPECT_TRUE(last->puts.empty());
    EXPECT_EQ(last->deletes, std::vector<Bytes>{keys::connection_key(conn.id())});
    EXPECT_FALSE(kv->peek(keys::connection_key(conn.id())).has_value());
}

// MARK: D. Dispatch

TEST(ActorTask, action_dispatch_uses_optional_conn_and_alarms_use_none) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-action", "task-action", std::make_shared<InMemoryKv>());
    auto seen = std::make_shared<std::vector<std::optional<std::string>>>();
    auto factory = make_factory({}, [seen](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                seen->push_back(a->conn ? std::optional(a->conn->id()) : std::nullopt);
                a->reply.send(to_bytes(a->name));
            }
        }
        co_return Status{};
    });
    auto wired = new_wired_task("actor-action", ctx, factory);
    auto& task = *wired.task;
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(task)).ok());
        auto [reply_tx, reply_rx] = rt::oneshot<Result<Bytes>>();
        DispatchCommand cmd = dispatch::Action{
            "client-action", {}, ConnHandle("conn-client", {}, {}, false), std::move(reply_tx)};
        co_await task.handle_dispatch(std::move(cmd));
        auto reply = co_await reply_rx.recv();
        CO_ASSERT(reply.has_value());
        if (!reply->ok())
            ADD_FAILURE() << reply->error().to_string();
        CO_ASSERT(reply->ok());
        EXPECT_EQ(reply->value(), to_bytes("client-action"));

        PersistedActor persisted = task.ctx.persisted_actor();
        persisted.scheduled_events.push_back({"event-1", 0, "alarm-action", std::nullopt});
        task.ctx.load_persisted_actor(std::move(persisted));
        CO_ASSERT((co_await task.ctx.drain_overdue_scheduled_events()).ok());
        for (int i = 0; i < 50 && seen->size() < 2; ++i)
            co_await rt.clock().sleep_for(10ms);
        EXPECT_EQ(*seen, (std::vector<std::optional<std::string>>{"conn-client", std::nullopt}));

        EXPECT_TRUE((co_await task.handle_stop(ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorTask, action_dispatch_blocks_idle_sleep_until_reply) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-action-keep-awake", "task-action-keep-awake",
                           std::make_shared<InMemoryKv>());
    // Named members, not structured bindings: the coroutine below uses the receiver and the
    // sender, and clang 14 (the sanitizer build) cannot capture a binding.
    auto started_channel = rt::oneshot<bool>();
    auto& started_rx = started_channel.second;
    auto release_channel = rt::oneshot<bool>();
    auto& release_tx = release_channel.first;
    auto started = std::make_shared<std::optional<rt::OneshotSender<bool>>>(
        std::move(started_channel.first));
    auto release = std::make_shared<std::optional<rt::OneshotReceiver<bool>>>(
        std::move(release_channel.second));
    auto factory = make_factory({}, [started, release](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                if (*started) {
                    (*started)->send(true);
                    started->reset();
                }
                if (!release->has_value())
                    co_return errors::internal_error("release taken twice");
                (void)co_await (*release)->recv();
                a->reply.send(Bytes{9});
            }
        }
        co_return Status{};
    });
    auto task = new_task_with_factory(ctx, factory);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        auto [reply_tx, reply_rx] = rt::oneshot<Result<Bytes>>();
        DispatchCommand cmd = dispatch::Action{
            "slow-action", {}, ConnHandle("conn-keep-awake", {}, {}, false), std::move(reply_tx)};
        co_await task->handle_dispatch(std::move(cmd));
        CO_ASSERT((co_await started_rx.recv()).has_value());

        EXPECT_EQ(ctx.internal_keep_awake_count(), 1u);
        EXPECT_EQ(ctx.can_sleep(), CanSleep::ActiveInternalKeepAwake);
        EXPECT_TRUE(release_tx.send(true));

        auto reply = co_await reply_rx.recv();
        CO_ASSERT(reply.has_value() && reply->ok());
        EXPECT_EQ(reply->value(), Bytes{9});
        for (int i = 0; i < 10 && ctx.internal_keep_awake_count() != 0; ++i)
            co_await rt::yield_now();
        EXPECT_EQ(ctx.internal_keep_awake_count(), 0u);
        EXPECT_EQ(ctx.can_sleep(), CanSleep::Yes);

        EXPECT_TRUE((co_await task->handle_stop(ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorTask, workflow_requests_dispatch_through_actor_events) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-workflow", "task-workflow", std::make_shared<InMemoryKv>());
    auto info_channel = rt::oneshot<bool>();  // not a binding: the coroutine below captures it
    auto& info_rx = info_channel.second;
    auto info =
        std::make_shared<std::optional<rt::OneshotSender<bool>>>(std::move(info_channel.first));
    auto requests = std::make_shared<std::vector<std::optional<std::string>>>();
    auto factory = make_factory({}, [info, requests](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        (*info)->send(!events.try_recv().has_value());
        info->reset();
        while (auto ev = co_await events.recv()) {
            if (auto* h = std::get_if<event::WorkflowHistoryRequested>(&*ev)) {
                requests->push_back(std::nullopt);
                h->reply.send(std::optional<Bytes>(Bytes{4, 2}));
            } else if (auto* r = std::get_if<event::WorkflowReplayRequested>(&*ev)) {
                requests->push_back(r->entry_id);
                r->reply.send(std::optional<Bytes>(Bytes{9, 9, 1}));
            }
        }
        co_return Status{};
    });
    auto wired = new_wired_task("actor-workflow", ctx, factory);
    auto& task = *wired.task;
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(task)).ok());
        auto no_initial_event = co_await info_rx.recv();
        EXPECT_TRUE(no_initial_event.has_value() && *no_initial_event)
            << "workflow events should only arrive on explicit request";

        auto [history_tx, history_rx] = rt::oneshot<Result<std::optional<Bytes>>>();
        DispatchCommand cmd = dispatch::WorkflowHistory{std::move(history_tx)};
        co_await task.handle_dispatch(std::move(cmd));
        auto history = co_await history_rx.recv();
        CO_ASSERT(history.has_value() && history->ok());
        EXPECT_EQ(history->value(), std::optional<Bytes>(Bytes{4, 2}));

        auto [replay_tx, replay_rx] = rt::oneshot<Result<std::optional<Bytes>>>();
        DispatchCommand replay_cmd =
            dispatch::WorkflowReplay{std::string("entry-123"), std::move(replay_tx)};
        co_await task.handle_dispatch(std::move(replay_cmd));
        auto replay = co_await replay_rx.recv();
        CO_ASSERT(replay.has_value() && replay->ok());
        EXPECT_EQ(replay->value(), std::optional<Bytes>(Bytes{9, 9, 1}));
        EXPECT_EQ(*requests, (std::vector<std::optional<std::string>>{std::nullopt, "entry-123"}));

        EXPECT_TRUE((co_await task.handle_stop(ShutdownKind::Destroy)).ok());
    }());
}

TEST(ActorTask, sleep_finalize_rejects_new_dispatch) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-sleep-finalize-dispatch", "task-sleep-finalize-dispatch",
                           std::make_shared<InMemoryKv>());
    auto task = new_task(ctx);
    task->lifecycle = LifecycleState::SleepFinalize;
    rt.block_on([&]() -> Task<void> {
        auto [reply_tx, reply_rx] = rt::oneshot<Result<Bytes>>();
        DispatchCommand cmd = dispatch::Action{
            "ping", {}, ConnHandle("conn-finalize", {}, {}, false), std::move(reply_tx)};
        co_await task->handle_dispatch(std::move(cmd));
        auto reply = co_await reply_rx.recv();
        CO_ASSERT(reply.has_value());
        CO_ASSERT(!reply->ok());
        EXPECT_NE(reply->error().to_string().find("Actor is stopping"), std::string::npos)
            << reply->error().to_string();
    }());
}

}  // namespace
}  // namespace rivetkit::core::test

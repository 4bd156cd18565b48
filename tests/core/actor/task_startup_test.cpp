// Spec groups E (startup, wake, preload) and F (alarms) of upstream tests/task.rs.

#include <cstdlib>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

// Answers SerializeState with no deltas and acks cleanup; keeps draining until the stream closes.
std::shared_ptr<ActorFactory> ack_everything_factory(ActorConfig config = {}) {
    return make_factory(std::move(config), [](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                s->reply.send(std::vector<StateDelta>{});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
}

// Acks SerializeState and the cleanup hook, then returns (upstream's shutdown_ack_factory).
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

using SeedConn = std::tuple<std::string, std::string, std::string, Bytes>;

Task<void> seed_hibernated(rt::TestRuntime& rt, std::shared_ptr<InMemoryKv> kv,
                           std::string actor_id, std::vector<SeedConn> conns) {
    auto seed = new_with_kv(rt, actor_id, "task-wake", kv);
    std::vector<StateDelta> deltas;
    for (auto& [id, gateway, request, bytes] : conns) {
        ConnHandle conn(id, {}, {}, true);
        conn.configure_hibernation(hibernation_meta(gateway, request, 4, 8));
        seed.add_conn(conn);
        deltas.push_back(StateDelta::conn_hibernation(id, bytes));
    }
    Status saved = co_await seed.save_state(std::move(deltas));
    EXPECT_TRUE(saved.ok());
}

PreloadedKv startup_preload(std::vector<KvEntry> entries, bool request_persist_key) {
    std::vector<Bytes> keys_requested;
    if (request_persist_key)
        keys_requested.push_back(keys::to_bytes(keys::kPersistData));
    keys_requested.push_back(keys::to_bytes(keys::kLastPushedAlarm));
    keys_requested.push_back(keys::to_bytes(keys::kInspectorToken));
    keys_requested.push_back(Bytes{5, 1, 1});
    std::vector<Bytes> prefixes{keys::to_bytes(keys::kWorkflowStoragePrefix),
                                keys::to_bytes(keys::kConnPrefix),
                                keys::to_bytes(keys::kQueueMessagesPrefix)};
    return PreloadedKv(std::move(entries), std::move(keys_requested), std::move(prefixes));
}

PersistedActor future_actor(std::string event_id, std::int64_t ts, Bytes state = {}) {
    PersistedActor actor;
    actor.has_initialized = true;
    actor.state = std::move(state);
    actor.scheduled_events.push_back({std::move(event_id), ts, "tick", std::nullopt});
    return actor;
}

TEST(ActorTask, wake_start_clears_previous_sleep_request) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-wake", "task-wake", std::make_shared<InMemoryKv>());
    auto wired = new_wired_task("actor-wake", ctx, ack_everything_factory(grace_config(200ms)));
    auto& task = *wired.task;
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(task)).ok());
        CO_ASSERT(ctx.sleep().ok());
        EXPECT_TRUE(ctx.sleep_requested());
        EXPECT_TRUE((co_await task.handle_stop(ShutdownKind::Sleep)).ok());
        CO_ASSERT((co_await start_task(task)).ok());
        EXPECT_FALSE(ctx.sleep_requested());
    }());
}

TEST(ActorTask, wake_start_hibernated_does_not_refire_connection_open) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    struct Seen {
        std::size_t count = 0;
        Bytes first;
        bool no_initial_event = false;
        bool saw_connection_event = false;
    };
    auto seen = std::make_shared<Seen>();
    auto factory = make_factory({}, [seen](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        seen->count = start.hibernated.size();
        if (!start.hibernated.empty())
            seen->first = start.hibernated[0].second;
        seen->no_initial_event = !events.try_recv().has_value();
        while (auto ev = co_await events.recv()) {
            if (std::holds_alternative<event::ConnectionPreflight>(*ev) ||
                std::holds_alternative<event::ConnectionOpen>(*ev)) {
                seen->saw_connection_event = true;
            }
        }
        co_return Status{};
    });
    rt.block_on([&]() -> Task<void> {
        std::vector<SeedConn> seed_conns{{"conn-hibernating", "gate", "req1", {3, 2, 1}}};

        co_await seed_hibernated(rt, kv, "actor-wake", std::move(seed_conns));
        auto ctx = new_with_kv(rt, "actor-wake", "task-wake", kv);
        configure_live_hibernated_pairs(ctx, {{"gate", "req1"}});
        auto wired = new_wired_task("actor-wake", ctx, factory);
        CO_ASSERT((co_await start_task(*wired.task)).ok());
        co_await rt::yield_now();
        co_await rt::yield_now();
        EXPECT_EQ(seen->count, 1u);
        EXPECT_EQ(seen->first, (Bytes{3, 2, 1}));
        EXPECT_TRUE(seen->no_initial_event);
        EXPECT_TRUE((co_await wired.task->handle_stop(ShutdownKind::Sleep)).ok());
        EXPECT_FALSE(seen->saw_connection_event)
            << "hibernated connection should not refire ConnectionOpen";
    }());
}

TEST(ActorTask, startup_uses_empty_preloaded_persisted_actor_without_startup_bundle_batch_get) {
    ::unsetenv("_RIVET_TEST_INSPECTOR_TOKEN");
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-preload-empty", "task-preload-empty", kv);
    auto task = new_task(ctx);
    task->with_preloaded_persisted_actor(PreloadedPersistedActor::bundle_exists_but_empty());
    rt.block_on([&]() -> Task<void> { CO_ASSERT((co_await start_task(*task)).ok()); }());
    // Only the inspector token probe reads KV; the persisted bundle is known empty.
    EXPECT_EQ(kv->batch_get_call_count(), 1u);
    EXPECT_TRUE(ctx.persisted_actor().has_initialized);
}

TEST(ActorTask, manual_startup_does_not_mark_initialized_before_runtime_preamble) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-manual-startup-init", "task-manual-startup-init",
                           std::make_shared<InMemoryKv>());
    auto observed = std::make_shared<std::optional<bool>>();
    auto factory = std::make_shared<ActorFactory>(
        ActorFactory::with_manual_startup_ready({}, [observed](ActorStart start) -> Task<Status> {
            *observed = start.ctx.persisted_actor().has_initialized;
            start.ctx.set_state_initial({4, 5, 6});
            start.ctx.set_has_initialized(true);
            if (!start.startup_ready)
                co_return errors::internal_error("no startup_ready sender");
            start.startup_ready->send(Status{});
            while (auto ev = co_await start.events.recv()) {
                if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                    std::vector<StateDelta> deltas{StateDelta::actor_state(start.ctx.state())};
                    s->reply.send(std::move(deltas));
                } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                    c->reply.send(Status{});
                }
            }
            co_return Status{};
        }));
    auto task = new_task_with_factory(ctx, factory);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        CO_ASSERT(observed->has_value());
        EXPECT_FALSE(**observed);
        EXPECT_TRUE(ctx.persisted_actor().has_initialized);
        EXPECT_EQ(ctx.state(), (Bytes{4, 5, 6}));
        CO_ASSERT(task->run_handle.has_value());
        rt::JoinHandle<Status> run = std::move(*task->run_handle);
        task->run_handle.reset();
        run.abort();
        (void)co_await run.join();
    }());
}

TEST(ActorTask, startup_uses_preloaded_last_pushed_alarm_without_live_kv) {
    ::unsetenv("_RIVET_TEST_INSPECTOR_TOKEN");
    rt::TestRuntime rt;
    const std::int64_t future_ts = 4'102'445'000'000;
    auto preload = startup_preload(
        {{keys::to_bytes(keys::kLastPushedAlarm), encode_last_pushed_alarm(future_ts)},
         {keys::to_bytes(keys::kInspectorToken), to_bytes("startup-preload-token")}},
        true);
    auto ctx = new_with_kv(rt, "actor-preloaded-alarm", "task-preloaded-alarm",
                           std::make_shared<FailingKv>());
    auto envoy = std::make_shared<TestEnvoy>();
    ctx.configure_envoy(envoy, 31);
    auto task = new_task(ctx);
    task->with_preloaded_persisted_actor(
            PreloadedPersistedActor::some(future_actor("evt-preloaded-alarm", future_ts)))
        .with_preloaded_kv(std::move(preload));
    rt.block_on([&]() -> Task<void> {
        Status started = co_await start_task(*task);
        EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().to_string());
    }());
    EXPECT_EQ(ctx.last_pushed_alarm(), std::optional<std::int64_t>(future_ts));
}

TEST(ActorTask, startup_decodes_persisted_actor_from_preloaded_kv_without_live_kv) {
    ::unsetenv("_RIVET_TEST_INSPECTOR_TOKEN");
    rt::TestRuntime rt;
    const std::int64_t future_ts = 4'102'445'061'000;
    auto persisted =
        future_actor("evt-preloaded-persisted", future_ts, to_bytes("preloaded-state"));
    auto preload = startup_preload(
        {{keys::to_bytes(keys::kPersistData), encode_persisted_actor(persisted)},
         {keys::to_bytes(keys::kLastPushedAlarm), encode_last_pushed_alarm(future_ts)},
         {keys::to_bytes(keys::kInspectorToken), to_bytes("startup-persisted-preload-token")}},
        true);
    auto ctx = new_with_kv(rt, "actor-preloaded-persisted", "task-preloaded-persisted",
                           std::make_shared<FailingKv>());
    ctx.configure_envoy(std::make_shared<TestEnvoy>(), 33);
    auto task = new_task(ctx);
    task->with_preloaded_kv(std::move(preload));
    rt.block_on([&]() -> Task<void> {
        Status started = co_await start_task(*task);
        EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().to_string());
    }());
    EXPECT_EQ(ctx.persisted_actor().state, to_bytes("preloaded-state"));
    EXPECT_EQ(ctx.last_pushed_alarm(), std::optional<std::int64_t>(future_ts));
}

// Live KV that serves only a get of exactly [1]; anything else but puts fails.
class PersistOnlyKv final : public KvBackend {
  public:
    explicit PersistOnlyKv(Bytes persisted) : persisted_(std::move(persisted)) {}
    std::string_view label() const noexcept override { return "persist_only"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override {
        EXPECT_EQ(keys, std::vector<Bytes>{keys::to_bytes(keys::kPersistData)})
            << "partial preload should only live-fetch missing persisted actor data";
        saw_persist_get = true;
        co_return std::vector<std::optional<Bytes>>{persisted_};
    }
    Task<Status> batch_put(std::vector<KvEntry>) override { co_return Status{}; }
    Task<Status> batch_delete(std::vector<Bytes>) override { co_return unexpected(); }
    Task<Status> delete_range(Bytes, Bytes) override { co_return unexpected(); }
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes, ListOpts) override {
        co_return unexpected();
    }
    Task<Result<std::vector<KvEntry>>> list_range(Bytes, Bytes, ListOpts) override {
        co_return unexpected();
    }
    bool saw_persist_get = false;

  private:
    static Error unexpected() { return Error("test", "unexpected", "unexpected KV request"); }
    Bytes persisted_;
};

TEST(ActorTask, startup_uses_preloaded_alarm_with_partial_startup_preload) {
    ::unsetenv("_RIVET_TEST_INSPECTOR_TOKEN");
    rt::TestRuntime rt;
    const std::int64_t future_ts = 4'102'445'123'000;
    auto persisted = future_actor("evt-partial-preload-alarm", future_ts);
    auto preload = startup_preload(
        {{keys::to_bytes(keys::kLastPushedAlarm), encode_last_pushed_alarm(future_ts)},
         {keys::to_bytes(keys::kInspectorToken), to_bytes("startup-partial-preload-token")}},
        false);
    auto kv = std::make_shared<PersistOnlyKv>(encode_persisted_actor(persisted));
    auto ctx = new_with_kv(rt, "actor-partial-preload-alarm", "task-partial-preload-alarm", kv);
    ctx.configure_envoy(std::make_shared<TestEnvoy>(), 32);
    auto task = new_task(ctx);
    task->with_preloaded_kv(std::move(preload));
    rt.block_on([&]() -> Task<void> {
        Status started = co_await start_task(*task);
        EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().to_string());
    }());
    EXPECT_TRUE(kv->saw_persist_get);
    EXPECT_EQ(ctx.last_pushed_alarm(), std::optional<std::int64_t>(future_ts));
}

TEST(ActorTask, wake_start_filters_disconnected_hibernated_connections_and_reaps_them) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto hibernated = std::make_shared<std::vector<std::pair<std::string, Bytes>>>();
    auto factory = make_factory({}, [hibernated](ActorStart start) -> Task<Status> {
        for (auto& [conn, bytes] : start.hibernated)
            hibernated->emplace_back(conn.id(), bytes);
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                if (s->reason == SerializeStateReason::Save)
                    s->reply.send(std::vector<StateDelta>{});
            }
            EXPECT_FALSE(std::holds_alternative<event::ConnectionOpen>(*ev));
        }
        co_return Status{};
    });
    rt.block_on([&]() -> Task<void> {
        std::vector<SeedConn> seed_conns{{"conn-live", "gliv", "rliv", {3, 2, 1}},
                                         {"conn-stale", "gstl", "rstl", {6, 5, 4}}};

        co_await seed_hibernated(rt, kv, "actor-wake-prune", std::move(seed_conns));
        auto ctx = new_with_kv(rt, "actor-wake-prune", "task-wake", kv);
        configure_live_hibernated_pairs(ctx, {{"gliv", "rliv"}});
        auto wired = new_wired_task("actor-wake-prune", ctx, factory);
        auto& task = *wired.task;
        CO_ASSERT((co_await start_task(task)).ok());
        co_await rt::yield_now();
        co_await rt::yield_now();
        EXPECT_EQ(*hibernated,
                  (std::vector<std::pair<std::string, Bytes>>{{"conn-live", Bytes{3, 2, 1}}}));

        co_await task.handle_event(LifecycleEvent::save_requested(false));
        co_await task.on_state_save_tick();
        const auto& last = kv->last_apply_batch();
        CO_ASSERT(last.has_value());
        EXPECT_EQ(last->deletes, std::vector<Bytes>{keys::connection_key("conn-stale")});
        EXPECT_FALSE(kv->peek(keys::connection_key("conn-stale")).has_value());
        EXPECT_TRUE((co_await task.handle_stop(ShutdownKind::Sleep)).ok());
    }());
}

TEST(ActorTask, wake_start_reaps_dead_hibernated_connections_without_engine_registration) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto hibernated = std::make_shared<std::optional<std::vector<std::string>>>();
    auto factory = make_factory({}, [hibernated](ActorStart start) -> Task<Status> {
        std::vector<std::string> ids;
        for (auto& [conn, bytes] : start.hibernated)
            ids.push_back(conn.id());
        *hibernated = std::move(ids);
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                if (s->reason == SerializeStateReason::Save)
                    s->reply.send(std::vector<StateDelta>{});
            }
        }
        co_return Status{};
    });
    rt.block_on([&]() -> Task<void> {
        std::vector<SeedConn> seed_conns{{"conn-dead", "gded", "rded", {9, 8, 7}}};

        co_await seed_hibernated(rt, kv, "actor-wake-dead", std::move(seed_conns));
        auto ctx = new_with_kv(rt, "actor-wake-dead", "task-wake", kv);
        ctx.set_hibernated_connection_liveness_override({});
        auto wired = new_wired_task("actor-wake-dead", ctx, factory);
        auto& task = *wired.task;
        CO_ASSERT((co_await start_task(task)).ok());
        co_await rt::yield_now();
        co_await rt::yield_now();
        CO_ASSERT(hibernated->has_value());
        EXPECT_TRUE((*hibernated)->empty());
        EXPECT_TRUE(ctx.conns().empty());

        co_await task.handle_event(LifecycleEvent::save_requested(false));
        co_await task.on_state_save_tick();
        const auto& last = kv->last_apply_batch();
        CO_ASSERT(last.has_value());
        EXPECT_EQ(last->deletes, std::vector<Bytes>{keys::connection_key("conn-dead")});
        EXPECT_FALSE(kv->peek(keys::connection_key("conn-dead")).has_value());
        EXPECT_TRUE((co_await task.handle_stop(ShutdownKind::Sleep)).ok());
    }());
}

// MARK: F. Alarms

void seed_actor_and_alarm(InMemoryKv& kv, const PersistedActor& actor, std::int64_t pushed) {
    kv.insert(keys::to_bytes(keys::kPersistData), encode_persisted_actor(actor));
    kv.insert(keys::to_bytes(keys::kLastPushedAlarm), encode_last_pushed_alarm(pushed));
}

TEST(ActorTask, startup_skips_future_alarm_push_when_last_pushed_matches) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    const std::int64_t future_ts = 4'102'444'800'000;
    auto ctx = new_with_kv(rt, "actor-startup-skip-alarm", "task-startup-skip-alarm", kv);
    auto envoy = std::make_shared<TestEnvoy>();
    ctx.configure_envoy(envoy, 11);
    auto task = new_task(ctx);
    seed_actor_and_alarm(*kv, future_actor("evt-future", future_ts), future_ts);
    rt.block_on([&]() -> Task<void> { CO_ASSERT((co_await start_task(*task)).ok()); }());
    EXPECT_TRUE(envoy->alarms.empty());
}

TEST(ActorTask, startup_persists_last_pushed_alarm_after_future_alarm_push) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    const std::int64_t future_ts = 4'102'444'900'000;
    auto ctx = new_with_kv(rt, "actor-startup-push-alarm", "task-startup-push-alarm", kv);
    auto envoy = std::make_shared<TestEnvoy>();
    ctx.configure_envoy(envoy, 12);
    auto task = new_task(ctx);
    seed_actor_and_alarm(*kv, future_actor("evt-future", future_ts), future_ts + 1);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        EXPECT_EQ(recv_alarm_now(*envoy, "actor-startup-push-alarm", 12),
                  std::optional<std::int64_t>(future_ts));
        co_await ctx.wait_for_pending_alarm_writes();
    }());
    auto encoded = kv->peek(keys::kLastPushedAlarm);
    ASSERT_TRUE(encoded.has_value());
    EXPECT_EQ(decode_last_pushed_alarm(*encoded).value(), std::optional<std::int64_t>(future_ts));
}

TEST(ActorTask, fire_due_alarms_dispatches_overdue_work_during_sleep_grace) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-sleep-grace-alarm", "task-sleep-grace-alarm",
                           std::make_shared<InMemoryKv>());
    auto events = rt::unbounded_channel<ActorEvent>();  // not a binding: the coroutine captures it
    auto& events_rx = events.second;
    ctx.configure_actor_events(std::move(events.first));
    PersistedActor persisted;
    persisted.scheduled_events.push_back({"evt-overdue", 0, "tick", Bytes{1, 2, 3}});
    ctx.load_persisted_actor(std::move(persisted));
    auto task = new_task(ctx);
    task->lifecycle = LifecycleState::SleepGrace;
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await task->fire_due_alarms()).ok());
        auto recv = events_rx.recv();
        auto dispatched = co_await rt::timeout(rt.clock(), 1s, std::move(recv));
        CO_ASSERT(dispatched.has_value() && dispatched->has_value());
        auto* action = std::get_if<event::Action>(&**dispatched);
        CO_ASSERT(action != nullptr);
        action->reply.send(Bytes{});
        EXPECT_FALSE(ctx.next_event().has_value())
            << "overdue alarm should be consumed after dispatch";
    }());
}

void run_shutdown_alarm_case(std::string actor_id, ShutdownKind reason,
                             std::size_t expected_cancels) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, actor_id, "task-" + actor_id, std::make_shared<InMemoryKv>());
    auto parts = new_task_with_senders(ctx);
    parts.task->factory = shutdown_ack_factory(grace_config(5s));
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(parts.task));
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        EXPECT_TRUE(ctx.after(60s, "wake", {}).ok());
        CO_ASSERT((co_await send_and_wait(parts.lifecycle_tx, LifecycleCommand::Kind::Stop, reason))
                      .ok());
        auto joined = co_await run.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_TRUE(joined.value().ok());
    }());
    EXPECT_EQ(ctx.test_driver_alarm_cancel_count(), expected_cancels);
}

TEST(ActorTask, sleep_shutdown_preserves_driver_alarm_after_cleanup) {
    run_shutdown_alarm_case("actor-sleep-alarm-preserve", ShutdownKind::Sleep, 0);
}

TEST(ActorTask, destroy_shutdown_still_clears_driver_alarm_after_cleanup) {
    run_shutdown_alarm_case("actor-destroy-alarm-clear", ShutdownKind::Destroy, 1);
}

}  // namespace
}  // namespace rivetkit::core::test

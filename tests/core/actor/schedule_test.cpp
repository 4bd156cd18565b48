// Scheduled events through a running ActorTask on virtual time: many events per actor firing in
// due order (equal timestamps by event id, as upstream sorts them), overdue events drained when
// the next generation starts, cancellation re-syncing the engine alarm, and the [6] last-pushed
// alarm deduplicating pushes across a sleep/wake cycle.
//
// Each Generation is one ActorTask on a shared InMemoryKv with a TestEnvoy that records alarm
// pushes; the local alarm callback sends FireAlarm to the task as the registry does.

#include <algorithm>
#include <random>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

struct Fired {
    std::string action;
    std::int64_t at_ms = 0;
};

std::shared_ptr<ActorFactory> recording_factory(std::shared_ptr<std::vector<Fired>> fired,
                                                rt::Clock* clock) {
    return make_factory({}, [fired, clock](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                fired->push_back({a->name, clock->wall_now_ms()});
                a->reply.send(Bytes{});
            } else if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                s->reply.send(std::vector<StateDelta>{});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
}

class Generation {
  public:
    Generation(rt::TestRuntime& rt, std::shared_ptr<InMemoryKv> kv, std::uint32_t generation)
        : rt_(rt), envoy(std::make_shared<TestEnvoy>()), fired(std::make_shared<std::vector<Fired>>()),
          ctx(new_with_kv(rt, "actor-schedule", "schedule", std::move(kv))) {
        ctx.configure_envoy(envoy, generation);
        auto wired = new_wired_task("actor-schedule", ctx, recording_factory(fired, &rt.clock()));
        lifecycle_tx_.emplace(wired.lifecycle_tx);
        dispatch_tx_.emplace(std::move(wired.dispatch_tx));  // the task ends when it closes
        ctx.set_local_alarm_callback([tx = wired.lifecycle_tx] {
            auto [reply, ignored] = rt::oneshot<Status>();
            (void)tx.send(LifecycleCommand::fire_alarm(std::move(reply)));
        });
        run_.emplace(ActorTask::spawn(rt.executor(), std::move(wired.task)));
    }

    Status start() { return rt_.block_on(send_and_wait(*lifecycle_tx_, LifecycleCommand::Kind::Start)); }
    Status stop(ShutdownKind reason) {
        ack_alarms();
        auto stopping = rt::spawn(rt_.executor(),
                                  send_and_wait(*lifecycle_tx_, LifecycleCommand::Kind::Stop, reason));
        // Alarm pushes made during shutdown must be acknowledged for it to finish.
        for (int i = 0; i < 100 && !stopping.ready(); ++i) {
            rt_.block_on(rt_.clock().sleep_for(10ms));
            ack_alarms();
        }
        auto joined = rt_.block_on(stopping.join());
        auto ran = rt_.block_on(run_->join());
        EXPECT_TRUE(ran.is_ok());
        return joined.is_ok() ? joined.value() : Status(errors::actor_dropped_reply());
    }
    // Acknowledges every alarm push so far; the timestamps pushed, in order.
    std::vector<std::optional<std::int64_t>> ack_alarms() {
        while (!envoy->alarms.empty()) {
            auto push = std::move(envoy->alarms.front());
            envoy->alarms.pop_front();
            pushed.push_back(push.alarm_ts);
            push.ack.send(Status{});
        }
        rt_.block_on(rt::yield_now());
        return pushed;
    }
    void advance(rt::Clock::duration d) { rt_.block_on(rt_.clock().sleep_for(d)); }
    std::vector<std::string> fired_actions() const {
        std::vector<std::string> out;
        for (const auto& f : *fired)
            out.push_back(f.action);
        return out;
    }

    rt::TestRuntime& rt_;
    std::shared_ptr<TestEnvoy> envoy;
    std::shared_ptr<std::vector<Fired>> fired;
    ActorContext ctx;
    std::vector<std::optional<std::int64_t>> pushed;

  private:
    std::optional<rt::Sender<LifecycleCommand>> lifecycle_tx_;
    std::optional<rt::Sender<DispatchCommand>> dispatch_tx_;
    std::optional<rt::JoinHandle<Status>> run_;
};

TEST(Schedule, many_events_fire_in_due_order_equal_timestamps_by_event_id) {
    rt::TestRuntime rt;
    Generation g(rt, std::make_shared<InMemoryKv>(), 1);
    ASSERT_TRUE(g.start().ok());
    const std::int64_t now = rt.clock().wall_now_ms();
    // 24 events: 12 distinct due times in shuffled order, plus 4 sharing one timestamp.
    std::vector<std::int64_t> offsets;
    for (int i = 1; i <= 20; ++i)
        offsets.push_back(i * 50);
    std::shuffle(offsets.begin(), offsets.end(), std::mt19937(7));
    for (std::size_t i = 0; i < offsets.size(); ++i)
        EXPECT_TRUE(g.ctx.at(now + offsets[i], "t" + std::to_string(offsets[i]), {}).ok());
    for (int i = 0; i < 4; ++i)
        EXPECT_TRUE(g.ctx.at(now + 525, "same", {}).ok());
    const auto queued = g.ctx.persisted_actor().scheduled_events;
    ASSERT_EQ(queued.size(), 24u);
    EXPECT_TRUE(std::is_sorted(queued.begin(), queued.end(), [](const auto& a, const auto& b) {
        return a.timestamp != b.timestamp ? a.timestamp < b.timestamp : a.event_id < b.event_id;
    }));
    // The engine is told the earliest due time.
    auto pushed = g.ack_alarms();
    ASSERT_FALSE(pushed.empty());
    EXPECT_EQ(pushed.back(), std::optional<std::int64_t>(now + 50));

    g.advance(2s);
    ASSERT_EQ(g.fired->size(), 24u);
    std::vector<std::string> expected;
    for (const auto& e : queued)
        expected.push_back(e.action);
    EXPECT_EQ(g.fired_actions(), expected);
    for (std::size_t i = 0; i < queued.size(); ++i) {
        EXPECT_GE((*g.fired)[i].at_ms, queued[i].timestamp) << queued[i].action;
        EXPECT_LE((*g.fired)[i].at_ms, queued[i].timestamp + 1) << queued[i].action;
    }
    EXPECT_FALSE(g.ctx.next_event());
    // Once the schedule is empty the alarm is cleared.
    EXPECT_EQ(g.ack_alarms().back(), std::nullopt);
    EXPECT_TRUE(g.stop(ShutdownKind::Sleep).ok());
}

TEST(Schedule, cancelling_an_event_removes_it_and_resyncs_the_alarm) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    Generation g(rt, kv, 1);
    ASSERT_TRUE(g.start().ok());
    const std::int64_t now = rt.clock().wall_now_ms();
    EXPECT_TRUE(g.ctx.at(now + 100, "first", {}).ok());
    EXPECT_TRUE(g.ctx.at(now + 200, "second", {}).ok());
    EXPECT_TRUE(g.ctx.at(now + 300, "third", {}).ok());
    EXPECT_EQ(g.ack_alarms().back(), std::optional<std::int64_t>(now + 100));
    const auto events = g.ctx.persisted_actor().scheduled_events;
    ASSERT_EQ(events.size(), 3u);
    // New events are written by a save (with the state of what scheduled them).
    ASSERT_TRUE(rt.block_on(g.ctx.save_state({})).ok());

    EXPECT_TRUE(g.ctx.cancel_scheduled_event(events[0].event_id));
    EXPECT_FALSE(g.ctx.cancel_scheduled_event(events[0].event_id));
    EXPECT_FALSE(g.ctx.cancel_scheduled_event("no-such-event"));
    EXPECT_EQ(g.ack_alarms().back(), std::optional<std::int64_t>(now + 200));
    EXPECT_TRUE(g.ctx.cancel_scheduled_event(events[2].event_id));
    // The cancellation is persisted in [1].
    rt.block_on(g.ctx.wait_for_pending_state_writes());
    auto stored = stored_actor(*kv);
    ASSERT_TRUE(stored);
    ASSERT_EQ(stored->scheduled_events.size(), 1u);
    EXPECT_EQ(stored->scheduled_events[0].action, "second");

    g.advance(1s);
    EXPECT_EQ(g.fired_actions(), std::vector<std::string>{"second"});
    EXPECT_EQ(g.ack_alarms().back(), std::nullopt);
    EXPECT_TRUE(g.stop(ShutdownKind::Sleep).ok());
}

TEST(Schedule, overdue_events_are_drained_when_the_next_generation_starts) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    std::int64_t now = 0;
    {
        Generation first(rt, kv, 1);
        ASSERT_TRUE(first.start().ok());
        now = rt.clock().wall_now_ms();
        EXPECT_TRUE(first.ctx.at(now + 1'000, "overdue-b", {}).ok());
        EXPECT_TRUE(first.ctx.at(now + 500, "overdue-a", {}).ok());
        EXPECT_TRUE(first.ctx.at(now + 60'000, "future", {}).ok());
        EXPECT_TRUE(first.stop(ShutdownKind::Sleep).ok());
        EXPECT_TRUE(first.fired->empty());
        // Sleep keeps the engine alarm armed at the earliest event.
        EXPECT_EQ(first.pushed.back(), std::optional<std::int64_t>(now + 500));
    }
    // Asleep past the first two due times (nothing runs: no generation exists).
    rt.block_on(rt.clock().sleep_for(5s));
    Generation second(rt, kv, 2);
    ASSERT_TRUE(second.start().ok());
    second.advance(1ms);
    EXPECT_EQ(second.fired_actions(), (std::vector<std::string>{"overdue-a", "overdue-b"}));
    for (const auto& f : *second.fired)
        EXPECT_GE(f.at_ms, now + 5'000);
    ASSERT_TRUE(second.ctx.next_event());
    EXPECT_EQ(second.ctx.next_event()->action, "future");
    // The engine alarm now points at the remaining event.
    EXPECT_EQ(second.ack_alarms().back(), std::optional<std::int64_t>(now + 60'000));
    // A fired event's removal is saved with what its action changed: by the action's own save,
    // else by the save tick within a save interval (never before the action's outcome).
    second.advance(1s);
    rt.block_on(second.ctx.wait_for_pending_state_writes());
    auto stored = stored_actor(*kv);
    ASSERT_TRUE(stored);
    ASSERT_EQ(stored->scheduled_events.size(), 1u);
    EXPECT_EQ(stored->scheduled_events[0].action, "future");
    EXPECT_TRUE(second.stop(ShutdownKind::Destroy).ok());
}

TEST(Schedule, last_pushed_alarm_dedups_pushes_across_sleep_and_wake) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    std::int64_t due = 0;
    {
        Generation first(rt, kv, 1);
        ASSERT_TRUE(first.start().ok());
        due = rt.clock().wall_now_ms() + 10'000;
        EXPECT_TRUE(first.ctx.at(due, "wake-up", {}).ok());
        EXPECT_TRUE(first.stop(ShutdownKind::Sleep).ok());
        EXPECT_EQ(first.pushed.back(), std::optional<std::int64_t>(due));
        auto stored = kv->peek(keys::kLastPushedAlarm);
        ASSERT_TRUE(stored);
        EXPECT_EQ(decode_last_pushed_alarm(*stored).value(), std::optional<std::int64_t>(due));
    }
    {
        // Woken early (e.g. by a request): the same alarm is already armed, nothing is pushed.
        Generation second(rt, kv, 2);
        ASSERT_TRUE(second.start().ok());
        second.advance(1s);
        EXPECT_TRUE(second.ack_alarms().empty());
        EXPECT_TRUE(second.fired->empty());
        EXPECT_TRUE(second.stop(ShutdownKind::Sleep).ok());
        EXPECT_TRUE(second.pushed.empty());
    }
    rt.block_on(rt.clock().sleep_for(10s));
    {
        // The engine's alarm starts the third generation after the due time: the event fires and
        // the now-empty schedule clears the alarm, recorded in [6].
        Generation third(rt, kv, 3);
        ASSERT_TRUE(third.start().ok());
        third.advance(1ms);
        EXPECT_EQ(third.fired_actions(), std::vector<std::string>{"wake-up"});
        auto pushed = third.ack_alarms();
        ASSERT_FALSE(pushed.empty());
        EXPECT_EQ(pushed.back(), std::nullopt);
        EXPECT_TRUE(third.stop(ShutdownKind::Sleep).ok());
        auto stored = kv->peek(keys::kLastPushedAlarm);
        ASSERT_TRUE(stored);
        EXPECT_EQ(decode_last_pushed_alarm(*stored).value(), std::nullopt);
    }
}

}  // namespace
}  // namespace rivetkit::core::test

namespace rivetkit::core::test {
namespace {

// Found in review: a cancel writes the schedule at once, without the runtime's state; it wrote an
// event scheduled since the last save with it (a reschedule: new event, old one cancelled), so a
// crash before the action's save kept the new event and lost the action's change. Events
// scheduled since the last save now go only with a save.
TEST(Schedule, a_cancel_does_not_write_an_event_scheduled_since_the_last_save) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    ActorContext ctx = new_with_kv(rt, "actor-sched-cancel", "schedule", kv);
    const std::int64_t now = rt.clock().wall_now_ms();
    ASSERT_TRUE(ctx.at(now + 60'000, "old", {}).ok());
    ASSERT_TRUE(rt.block_on(ctx.save_state({})).ok());
    const std::string old_id = ctx.persisted_actor().scheduled_events.at(0).event_id;

    ASSERT_TRUE(ctx.at(now + 90'000, "new", {}).ok());
    ASSERT_TRUE(ctx.cancel_scheduled_event(old_id));
    rt.block_on(ctx.wait_for_pending_state_writes());
    std::optional<PersistedActor> stored = stored_actor(*kv);
    ASSERT_TRUE(stored.has_value());
    EXPECT_TRUE(stored->scheduled_events.empty())
        << "the cancel's write carried the new event without its action's state";

    ASSERT_TRUE(rt.block_on(ctx.save_state({})).ok());
    stored = stored_actor(*kv);
    ASSERT_TRUE(stored.has_value());
    ASSERT_EQ(stored->scheduled_events.size(), 1u);
    EXPECT_EQ(stored->scheduled_events[0].action, "new");
}

// A runtime as the typed API's: reports each action's outcome (on_result) and seals the consumed
// events into the state it hands over for a save.
std::shared_ptr<ActorFactory> sealing_factory(std::shared_ptr<std::vector<std::string>> fired) {
    ActorConfig config;
    config.state_save_interval = 50ms;
    return make_factory(config, [fired](ActorStart start) -> Task<Status> {
        ActorContext actor = start.ctx;
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                fired->push_back(a->name);
                if (a->on_result)
                    a->on_result();
                a->reply.send(Bytes{});
            } else if (auto* s = std::get_if<event::SerializeState>(&*ev)) {
                std::vector<StateDelta> deltas;
                if (s->reason == SerializeStateReason::Save) {
                    actor.seal_consumed_schedule();
                    deltas.push_back(
                        StateDelta::actor_state(Bytes{static_cast<std::uint8_t>(fired->size())}));
                }
                s->reply.send(std::move(deltas));
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
            }
        }
        co_return Status{};
    });
}

// Found by the chaos runner (one instance ran a scheduled fire twice): a save took the fired
// event's removal out of the pending list when its write started, and until the write came back
// the event was neither leaving nor gone. An alarm in that window — here the one re-synced by
// scheduling another event — dispatched it again.
TEST(Schedule, a_fired_event_does_not_fire_again_while_its_removal_is_being_written) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<GatedKv>();
    auto envoy = std::make_shared<TestEnvoy>();
    auto fired = std::make_shared<std::vector<std::string>>();
    ActorContext ctx = new_with_kv(rt, "actor-sched-held", "schedule", kv);
    ctx.configure_envoy(envoy, 1);
    auto wired = new_wired_task("actor-sched-held", ctx, sealing_factory(fired));
    ctx.set_local_alarm_callback([tx = wired.lifecycle_tx] {
        auto [reply, ignored] = rt::oneshot<Status>();
        (void)tx.send(LifecycleCommand::fire_alarm(std::move(reply)));
    });
    auto ack_alarms = [&envoy] {
        while (!envoy->alarms.empty()) {
            envoy->alarms.front().ack.send(Status{});
            envoy->alarms.pop_front();
        }
    };
    rt.block_on([&]() -> Task<void> {
        auto run = ActorTask::spawn(rt.executor(), std::move(wired.task));
        CO_ASSERT((co_await send_and_wait(wired.lifecycle_tx, LifecycleCommand::Kind::Start)).ok());
        const std::int64_t now = rt.clock().wall_now_ms();
        CO_ASSERT(ctx.at(now + 20, "first", {}).ok());
        co_await rt.clock().sleep_for(30ms);
        CO_ASSERT(fired->size() == 1u);

        // The save tick carries the removal; the engine holds its write.
        kv->held = true;
        co_await rt.clock().sleep_for(60ms);
        CO_ASSERT(kv->in_flight == 1u);
        CO_ASSERT(ctx.at(now + 1000, "second", {}).ok());
        co_await rt.clock().sleep_for(20ms);
        EXPECT_EQ(*fired, std::vector<std::string>{"first"}) << "fired again while its removal "
                                                                "was being written";
        kv->release();
        co_await rt.clock().sleep_for(1s);
        EXPECT_EQ(*fired, (std::vector<std::string>{"first", "second"}));
        EXPECT_FALSE(ctx.next_event());
        const std::optional<PersistedActor> stored = stored_actor(kv->inner);
        CO_ASSERT(stored.has_value());
        for (const auto& e : stored->scheduled_events)
            ADD_FAILURE() << "still stored: " << e.action;

        ack_alarms();
        auto stopping = rt::spawn(rt.executor(), send_and_wait(wired.lifecycle_tx,
                                                               LifecycleCommand::Kind::Stop,
                                                               ShutdownKind::Sleep));
        for (int i = 0; i < 100 && !stopping.ready(); ++i) {
            co_await rt.clock().sleep_for(10ms);
            ack_alarms();
        }
        EXPECT_TRUE((co_await stopping.join()).is_ok());
        EXPECT_TRUE((co_await run.join()).is_ok());
    }());
}

}  // namespace
}  // namespace rivetkit::core::test

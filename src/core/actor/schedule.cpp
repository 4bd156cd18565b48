// ActorContext: scheduled events and the engine alarm.
//
// Events live in PersistedActor.scheduled_events sorted by (timestamp, event_id). The engine is
// told the earliest timestamp; `last_pushed_alarm` ([6]) dedups pushes across restarts, and the
// "dirty since push" flag (fresh contexts start dirty) keeps unchanged schedules from re-pushing.

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "base/log.hpp"
#include "base/uuid.hpp"
#include "core/actor/context.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/metrics.hpp"

namespace rivetkit::core {
namespace {

void consume_after_reply(const ActorContext& ctx, std::string_view event_id);

bool event_before(const PersistedScheduleEvent& a, const PersistedScheduleEvent& b) {
    return a.timestamp != b.timestamp ? a.timestamp < b.timestamp : a.event_id < b.event_id;
}

// Runs one due event's action. The event stays in the schedule (marked in flight) until the
// action's outcome is final: the runtime calls on_result then, before the action's own durable
// save, so the save that carries the effect also carries the removal — a crash before it fires
// the event again in the next generation, a crash after it never does. A runtime that does not
// call on_result has the event consumed when the reply arrives. No reply (the actor stopped
// first) leaves the event for the next generation.
boost::asio::awaitable<void> dispatch_scheduled_action(WeakActorContext weak,
                                                       PersistedScheduleEvent ev) {
    auto ctx = weak.upgrade();
    if (!ctx)
        co_return;
    UserTaskTimer timer(metrics_ptr(*ctx), UserTaskKind::ScheduledAction);
    auto [reply, rx] = Reply<Bytes>::make();
    auto reported = std::make_shared<bool>(false);
    auto consume = [weak, id = ev.event_id, reported] {
        *reported = true;
        if (auto live = weak.upgrade())
            live->consume_scheduled_event(id);
    };
    event::Action action{ev.action, ev.args.value_or(Bytes{}), std::nullopt, std::move(reply),
                         consume};
    Status sent = ctx->try_send_actor_event(ActorEvent(std::move(action)), "scheduled_action");
    if (!sent.ok()) {
        log::warn("scheduled action dispatch failed", {{"actor_id", ctx->actor_id()},
                                                       {"action", ev.action},
                                                       {"error", sent.error().to_string()}});
        co_return;
    }
    ctx.reset();
    auto result = co_await rx.recv();
    if (!result)
        co_return;
    if (!*reported) {
        if (auto live = weak.upgrade())
            consume_after_reply(*live, ev.event_id);
    }
    if (!result->ok()) {
        if (auto live = weak.upgrade()) {
            log::error("scheduled action failed", {{"actor_id", live->actor_id()},
                                                   {"action", ev.action},
                                                   {"error", result->error().to_string()}});
        }
    }
}

// Persists a push's timestamp once the engine acknowledged it, unless a later push's already was
// (two acks arriving together may resume their writers in either order).
boost::asio::awaitable<void> persist_alarm_after_ack(WeakActorContext weak,
                                                     rt::OneshotReceiver<Status> ack,
                                                     std::optional<std::int64_t> alarm_ts,
                                                     std::uint32_t push) {
    auto acked = co_await ack.recv();
    auto ctx = weak.upgrade();
    if (!ctx)
        co_return;
    auto& s = *ctx->inner();
    if (acked && acked->ok() && push < s.alarm_pushes_persisted) {
        log::debug("alarm ack persisted by a later push", {{"actor_id", s.actor_id}});
    } else if (acked && acked->ok()) {
        s.alarm_pushes_persisted = push;
        Bytes key = keys::to_bytes(keys::kLastPushedAlarm);
        Bytes value = encode_last_pushed_alarm(alarm_ts);
        Status put = co_await s.kv.put(std::move(key), std::move(value));
        if (!put.ok()) {
            log::error("failed to persist last pushed alarm",
                       {{"actor_id", s.actor_id}, {"error", put.error().to_string()}});
        }
    } else {
        log::warn("engine did not acknowledge alarm", {{"actor_id", s.actor_id}});
    }
    --s.pending_alarm_writes;
    s.alarm_writes_changed.notify_waiters();
}

boost::asio::awaitable<void> local_alarm_timer(WeakActorContext weak, Instant at) {
    {
        auto ctx = weak.upgrade();
        if (!ctx)
            co_return;
        rt::Clock& clock = ctx->clock();
        ctx.reset();
        co_await clock.sleep_until(at);
    }
    auto ctx = weak.upgrade();
    if (ctx && ctx->inner()->local_alarm_callback)
        ctx->inner()->local_alarm_callback();
}

void rearm_local_alarm(const ActorContext& ctx, std::optional<std::int64_t> next) {
    auto& s = *ctx.inner();
    if (s.local_alarm_timer)
        s.local_alarm_timer->abort();
    s.local_alarm_timer.reset();
    if (!s.local_alarm_callback || !next)
        return;
    const auto delay =
        std::chrono::milliseconds(std::max<std::int64_t>(0, *next - s.clock->wall_now_ms()));
    s.local_alarm_timer =
        rt::spawn(s.executor, local_alarm_timer(ctx.downgrade(), s.clock->now() + delay));
}

void push_alarm(const ActorContext& ctx, std::optional<std::int64_t> next) {
    auto& s = *ctx.inner();
    const bool dirty = std::exchange(s.schedule_dirty_since_push, false);
    rearm_local_alarm(ctx, next);
    if (!dirty)
        return;
    if (next && next == s.last_pushed_alarm)
        return;
    if (!s.envoy) {
        s.schedule_dirty_since_push = true;
        log::debug("alarm sync deferred: no envoy handle", {{"actor_id", s.actor_id}});
        return;
    }
    auto ack = s.envoy->set_alarm(s.actor_id, s.generation, next);
    s.last_pushed_alarm = next;
    ++s.pending_alarm_writes;
    rt::spawn(s.executor,
              persist_alarm_after_ack(ctx.downgrade(), std::move(ack), next, ++s.alarm_pushes));
}

}  // namespace

Status ActorContext::after(std::chrono::milliseconds delay, std::string action, Bytes args) const {
    return at(p_->clock->wall_now_ms() + delay.count(), std::move(action), std::move(args));
}

Status ActorContext::at(std::int64_t timestamp_ms, std::string action, Bytes args) const {
    const std::uint32_t limit = config().max_scheduled_events;
    if (p_->persisted.scheduled_events.size() >= limit) {
        log::warn("scheduled event refused: per-actor limit reached",
                  {{"actor_id", p_->actor_id}, {"action", action}, {"limit", limit}});
        return errors::actor_too_many("scheduled_events", limit);
    }
    PersistedScheduleEvent ev{random_uuid_v4(), timestamp_ms, std::move(action),
                              schedule_args_from(std::move(args))};
    p_->schedule.edit().unsaved.insert(ev.event_id);
    auto& events = p_->persisted.scheduled_events;
    events.insert(std::upper_bound(events.begin(), events.end(), ev, event_before), std::move(ev));
    p_->schedule_dirty_since_push = true;
    p_->mark_dirty();
    metrics_of(*this).state_mutation(StateMutationReason::ScheduledEventsUpdate);
    // Written with the next save, together with the state of the action that scheduled it (a
    // reply-after-durable action's save, else the save tick within a save interval). Written at
    // once with the older state, a crash before the action's own save kept the event and lost the
    // action's change, and the retried action scheduled it again (chaos runner, seed 7).
    request_save({});
    record_inspector_signal(InspectorSignal::SchedulesUpdated);
    sync_alarm();
    return {};
}

bool ActorContext::cancel_scheduled_event(std::string_view event_id) const {
    auto& events = p_->persisted.scheduled_events;
    const auto before = events.size();
    std::erase_if(events, [&](const PersistedScheduleEvent& e) { return e.event_id == event_id; });
    if (events.size() == before)
        return false;
    auto& book = p_->schedule.edit();
    if (auto in_flight = book.in_flight.find(event_id); in_flight != book.in_flight.end())
        book.in_flight.erase(in_flight);
    std::erase(book.consumed, event_id);
    std::erase(book.sealed, event_id);
    if (auto unsaved = book.unsaved.find(event_id); unsaved != book.unsaved.end())
        book.unsaved.erase(unsaved);
    log::debug("scheduled actor event cancelled",
               {{"actor_id", p_->actor_id}, {"event_id", std::string(event_id)}});
    p_->schedule_dirty_since_push = true;
    p_->mark_dirty();
    metrics_of(*this).state_mutation(StateMutationReason::ScheduledEventsUpdate);
    persist_now_tracked("schedule cancel");
    record_inspector_signal(InspectorSignal::SchedulesUpdated);
    sync_alarm();
    return true;
}

std::optional<PersistedScheduleEvent> ActorContext::next_event() const {
    for (const auto& e : p_->persisted.scheduled_events) {
        if (!p_->schedule.view().leaving(e.event_id))
            return e;
    }
    return std::nullopt;
}

void ActorContext::consume_scheduled_event(std::string_view event_id) const {
    if (!p_->schedule.view().in_flight.contains(event_id))
        return;
    auto& book = p_->schedule.edit();
    const auto id = book.in_flight.find(event_id);
    book.consumed.push_back(*id);
    book.in_flight.erase(id);
    // Saved with the action's effect when it asked for a save, else within a save interval.
    request_save({});
}

void ActorContext::seal_consumed_schedule() const {
    if (p_->schedule.view().consumed.empty())
        return;  // every save calls this: an actor that never scheduled makes no book for it
    auto& book = p_->schedule.edit();
    for (auto& id : book.consumed)
        book.sealed.push_back(std::move(id));
    book.consumed.clear();
}

namespace {
// For a runtime that does not report outcomes (no on_result call): the event leaves the schedule
// once its reply came, in a write of its own — its effect is saved separately, so a crash between
// the two loses it (at most once, as upstream's).
void consume_after_reply(const ActorContext& ctx, std::string_view event_id) {
    auto& s = *ctx.inner();
    if (!s.schedule.view().in_flight.contains(event_id))
        return;
    auto& in_flight = s.schedule.edit().in_flight;
    in_flight.erase(in_flight.find(event_id));
    auto& events = s.persisted.scheduled_events;
    const auto before = events.size();
    std::erase_if(events, [&](const PersistedScheduleEvent& e) { return e.event_id == event_id; });
    if (events.size() == before)
        return;
    s.mark_dirty();
    metrics_of(ctx).state_mutation(StateMutationReason::ScheduledEventsUpdate);
    ctx.persist_now_tracked("schedule consumed");
    ctx.record_inspector_signal(InspectorSignal::SchedulesUpdated);
}
}  // namespace

boost::asio::awaitable<Status> ActorContext::drain_overdue_scheduled_events() const {
    ActorContext self = *this;
    auto& s = *self.p_;
    if (!s.alarm_dispatch_suspended) {
        const std::int64_t now = s.clock->wall_now_ms();
        std::vector<PersistedScheduleEvent> due;
        for (const auto& e : s.persisted.scheduled_events) {
            if (e.timestamp > now)
                break;
            if (s.schedule.view().leaving(e.event_id))
                continue;  // dispatched already, or ran and its removal waits for a save
            s.schedule.edit().in_flight.insert(e.event_id);
            due.push_back(e);
        }
        if (!due.empty())
            s.schedule_dirty_since_push = true;  // the alarm moves past them
        for (auto& ev : due) {
            self.spawn_shutdown_task("scheduled_action",
                                     dispatch_scheduled_action(self.downgrade(), std::move(ev)),
                                     true);
        }
    }
    self.sync_alarm();
    co_return Status{};
}

void ActorContext::sync_alarm() const {
    auto next = next_event();
    push_alarm(*this, next ? std::optional(next->timestamp) : std::nullopt);
}

void ActorContext::sync_future_alarm() const {
    const std::int64_t now = p_->clock->wall_now_ms();
    std::optional<std::int64_t> next;
    for (const auto& ev : p_->persisted.scheduled_events) {
        if (ev.timestamp > now) {
            next = ev.timestamp;
            break;
        }
    }
    push_alarm(*this, next);
}

boost::asio::awaitable<void> ActorContext::wait_for_pending_alarm_writes() const {
    auto inner = p_;
    while (inner->pending_alarm_writes > 0)
        co_await inner->alarm_writes_changed.notified();
}

void ActorContext::set_local_alarm_callback(std::function<void()> callback) const {
    p_->local_alarm_callback = std::move(callback);
    if (!p_->local_alarm_callback)
        cancel_local_alarm_timeouts();
}

void ActorContext::cancel_local_alarm_timeouts() const {
    if (p_->local_alarm_timer)
        p_->local_alarm_timer->abort();
    p_->local_alarm_timer.reset();
}

// Destroy only: the engine must not wake a destroyed actor. Sleep keeps the driver alarm armed.
void ActorContext::cancel_driver_alarm() const {
    cancel_local_alarm_timeouts();
    ++p_->driver_alarm_cancel_count;
    if (p_->envoy)
        (void)p_->envoy->set_alarm(p_->actor_id, p_->generation, std::nullopt);
}

}  // namespace rivetkit::core

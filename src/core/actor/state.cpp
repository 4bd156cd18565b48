// ActorContext: actor state, save requests and the delta save path.
//
// Invariants:
//  - save_requested is cleared only when a save completes for the latest request revision, so a
//    request that arrives while a save is in flight keeps the flag (and gets its own tick).
//  - queued hibernation updates/removals are taken by a save and restored if that save fails.
//  - every write of [1] carries the whole PersistedActor, so schedule/input changes ride along.

#include <algorithm>

#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/metrics.hpp"

namespace rivetkit::core {
namespace {

Error connection_error(std::string_view code, std::string message) {
    return Error("connection", std::string(code), std::move(message));
}

struct PreparedSave {
    std::optional<Bytes> actor_state;
    std::vector<KvEntry> conn_puts;
    std::vector<std::pair<std::string, std::uint16_t>> conn_message_indexes;  // as written
    std::vector<Bytes> deletes;
    std::set<std::string, std::less<>> taken_updates;
    std::set<std::string> taken_removals;
    std::set<std::string> explicit_updates;
    std::set<std::string> explicit_removals;
};

}  // namespace

void ActorContext::set_state_initial(Bytes state) const {
    p_->persisted.state = std::move(state);
    p_->mark_dirty();
}

void ActorContext::request_save(RequestSaveOpts opts) const {
    auto& s = *p_;
    ++s.save_request_revision;
    // An attached inspector hears of every requested save (it then reads the state).
    if (s.inspector_attached > 0)
        send_lifecycle_event(LifecycleEvent::inspector_serialize_requested());

    const bool was_pending = s.save_requested;
    const bool was_immediate = s.save_requested_immediate;
    s.save_requested = true;
    if (opts.immediate)
        s.save_requested_immediate = true;
    if (opts.max_wait_ms) {
        const Instant deadline = s.clock->now() + std::chrono::milliseconds(*opts.max_wait_ms);
        s.save_max_wait_deadline =
            s.save_max_wait_deadline ? std::min(*s.save_max_wait_deadline, deadline) : deadline;
    }
    const bool escalates = opts.immediate && !was_immediate;
    if (!opts.max_wait_ms && was_pending && !escalates)
        return;  // already scheduled
    if (!s.lifecycle_events ||
        !s.lifecycle_events->send(LifecycleEvent::save_requested(opts.immediate))) {
        log::warn("failed to request actor state save", {{"actor_id", s.actor_id}});
    }
}

boost::asio::awaitable<Status> ActorContext::request_save_and_wait(RequestSaveOpts opts) const {
    ActorContext self = *this;
    if (!self.p_->lifecycle_events)
        co_return errors::actor_not_configured("lifecycle events");
    self.request_save(opts);
    const std::uint64_t revision = self.p_->save_request_revision;
    while (self.p_->completed_save_revision < revision)
        co_await self.p_->save_progress.notified();
    co_return Status{};
}

Instant ActorContext::save_deadline(bool immediate) const {
    const auto& s = *p_;
    const Instant now = s.clock->now();
    if (s.save_failures_in_a_row >= 2) {
        // 50 ms after the second failure in a row, doubling up to a second.
        const std::uint32_t doublings = std::min<std::uint32_t>(s.save_failures_in_a_row - 2, 5);
        const auto backoff = std::min<rt::Clock::duration>(
            std::chrono::milliseconds(50 << doublings), std::chrono::seconds(1));
        return now + backoff;
    }
    if (immediate || s.save_requested_immediate)
        return now;
    const auto interval =
        std::chrono::duration_cast<rt::Clock::duration>(s.config->state_save_interval);
    auto delay = interval;
    if (s.last_save_at) {
        const auto since = now - *s.last_save_at;
        delay = since >= interval ? rt::Clock::duration::zero() : interval - since;
    }
    Instant deadline = now + delay;
    if (s.save_max_wait_deadline)
        deadline = std::min(deadline, *s.save_max_wait_deadline);
    return deadline;
}

void ActorContext::load_persisted_actor(PersistedActor persisted) const {
    p_->persisted = std::move(persisted);
    p_->schedule.reset();
    p_->dirty = false;
    p_->save_requested = false;
    p_->save_requested_immediate = false;
    p_->save_max_wait_deadline.reset();
}

void ActorContext::set_has_initialized(bool value) const {
    if (p_->persisted.has_initialized == value)
        return;
    p_->persisted.has_initialized = value;
    p_->mark_dirty();
    metrics_of(*this).state_mutation(StateMutationReason::HasInitialized);
}

void ActorContext::set_input(std::optional<Bytes> input) const {
    p_->persisted.input = std::move(input);
    p_->mark_dirty();
    metrics_of(*this).state_mutation(StateMutationReason::InputSet);
}

void ActorContext::set_scheduled_events(std::vector<PersistedScheduleEvent> events) const {
    p_->persisted.scheduled_events = std::move(events);
    if (!p_->schedule.view().unsaved.empty())
        p_->schedule.edit().unsaved.clear();  // the whole schedule, written now
    p_->mark_dirty();
    metrics_of(*this).state_mutation(StateMutationReason::ScheduledEventsUpdate);
    p_->schedule_dirty_since_push = true;
    persist_now_tracked("set scheduled events");
    record_inspector_signal(InspectorSignal::SchedulesUpdated);
}

WorkRegion ActorContext::begin_on_state_change() const {
    return WorkRegion(p_, RegionKind::KeepAwake);
}

boost::asio::awaitable<Status> ActorContext::persist_if_dirty() const {
    ActorContext self = *this;
    auto& s = *self.p_;
    if (!s.dirty)
        co_return Status{};
    const std::uint64_t revision = s.state_revision;
    // Without the runtime's state: events scheduled since the last save stay out (they go with
    // the state of the action that scheduled them), and the actor stays dirty for that save.
    Bytes encoded;
    const auto& unsaved = s.schedule.view().unsaved;
    if (unsaved.empty()) {
        encoded = encode_persisted_actor(s.persisted);
    } else {
        PersistedActor without = s.persisted;
        std::erase_if(without.scheduled_events, [&](const PersistedScheduleEvent& e) {
            return unsaved.contains(e.event_id);
        });
        encoded = encode_persisted_actor(without);
    }
    const bool complete = unsaved.empty();
    ++s.in_flight_writes;
    Bytes key = keys::to_bytes(keys::kPersistData);
    Status put = co_await s.kv.put(std::move(key), std::move(encoded));
    --s.in_flight_writes;
    s.save_progress.notify_waiters();
    if (!put.ok())
        co_return put;
    metrics_of(self).state_saved();
    self.record_inspector_signal(InspectorSignal::StateUpdated);
    if (s.state_revision == revision && complete)
        s.dirty = false;
    s.last_save_at = s.clock->now();
    co_return Status{};
}

namespace {
// Persists run one at a time so a later snapshot never lands before an earlier one.
boost::asio::awaitable<void> tracked_persist(WeakActorContext weak, std::string description) {
    auto ctx = weak.upgrade();
    if (!ctx)
        co_return;
    auto& s = *ctx->inner();
    while (s.persist_busy)
        co_await s.save_progress.notified();
    s.persist_busy = true;
    Status result = co_await ctx->persist_if_dirty();
    s.persist_busy = false;
    --s.tracked_persists;
    s.save_progress.notify_waiters();
    if (!result.ok()) {
        log::error("tracked actor persist failed", {{"actor_id", s.actor_id},
                                                    {"description", description},
                                                    {"error", result.error().to_string()}});
        // What it carried stays unsaved: the save tick writes it within a save interval (else
        // an unchanged state would leave it in memory until some later change, and a crash
        // meanwhile loses it).
        ctx->request_save({});
    }
}
}  // namespace

void ActorContext::persist_now_tracked(std::string_view description) const {
    ++p_->tracked_persists;
    rt::spawn(p_->executor, tracked_persist(downgrade(), std::string(description)));
}

boost::asio::awaitable<void> ActorContext::wait_for_pending_state_writes() const {
    auto inner = p_;
    while (inner->tracked_persists > 0 || inner->in_flight_writes > 0 || inner->persist_busy) {
        co_await inner->save_progress.notified();
    }
}

boost::asio::awaitable<Status> ActorContext::save_state(std::vector<StateDelta> deltas) const {
    return save_state_with_revision(std::move(deltas), p_->save_request_revision);
}

boost::asio::awaitable<Status> ActorContext::patch_state(Bytes state) const {
    ActorContext self = *this;
    std::vector<StateDelta> deltas{StateDelta::actor_state(std::move(state))};
    Status saved = co_await self.save_state(std::move(deltas));
    if (saved.ok())
        ++self.p_->state_patches;
    co_return saved;
}

namespace {

Result<PreparedSave> prepare_save(ActorContextInner& s, std::vector<StateDelta> deltas) {
    PreparedSave out;
    std::map<std::string, bool> explicit_updates;
    std::set<std::string> explicit_removals;
    for (auto& delta : deltas) {
        switch (delta.kind) {
            case StateDelta::Kind::ActorState:
                out.actor_state = std::move(delta.bytes);
                break;
            case StateDelta::Kind::ConnHibernation: {
                auto it = s.conns.find(delta.conn);
                if (it == s.conns.end()) {
                    return connection_error("not_found",
                                            "Connection '" + delta.conn + "' not found.");
                }
                if (!it->second.is_hibernatable()) {
                    return connection_error("not_hibernatable",
                                            "Connection '" + delta.conn + "' is not hibernatable.");
                }
                it->second.set_state_initial(std::move(delta.bytes));
                explicit_updates[delta.conn] = true;
                break;
            }
            case StateDelta::Kind::ConnHibernationRemoved:
                explicit_removals.insert(delta.conn);
                break;
        }
    }
    // A state handed over for a save that failed is still the newest unless this save brings
    // a newer one: the runtime does not hand the same state over twice.
    if (out.actor_state)
        s.unsaved_actor_state.reset();
    else if (s.unsaved_actor_state)
        out.actor_state = std::move(*std::exchange(s.unsaved_actor_state, nullptr));
    for (const auto& [id, _] : explicit_updates)
        out.explicit_updates.insert(id);
    out.explicit_removals = explicit_removals;
    if (!s.hibernation.view().updates.empty() || !s.hibernation.view().removals.empty()) {
        out.taken_updates = std::exchange(s.hibernation.edit().updates, {});
        out.taken_removals = std::exchange(s.hibernation.edit().removals, {});
    }
    std::set<std::string> removals = out.taken_removals;
    removals.insert(explicit_removals.begin(), explicit_removals.end());

    auto put_conn = [&](const std::string& id, bool required) -> Status {
        auto it = s.conns.find(id);
        if (it == s.conns.end() || !it->second.is_hibernatable())
            return {};
        auto persisted = it->second.to_persisted();
        if (!persisted.ok())
            return required ? Status(std::move(persisted).error()) : Status{};
        out.conn_puts.emplace_back(keys::connection_key(id),
                                   encode_persisted_connection(*persisted));
        out.conn_message_indexes.emplace_back(id, persisted->server_message_index);
        return {};
    };
    for (const auto& [id, _] : explicit_updates) {
        if (removals.count(id) > 0)
            continue;
        if (Status st = put_conn(id, true); !st.ok())
            return std::move(st).error();
    }
    for (const auto& id : out.taken_updates) {
        if (removals.count(id) > 0 || explicit_updates.count(id) > 0)
            continue;
        (void)put_conn(id, false);
    }
    for (const auto& id : removals)
        out.deletes.push_back(keys::connection_key(id));
    return out;
}

// After a failed write: what it carried is written by the next save.
void restore_queues(ActorContextInner& s, PreparedSave& prepared) {
    if (!prepared.taken_updates.empty() || !prepared.explicit_updates.empty() ||
        !prepared.taken_removals.empty() || !prepared.explicit_removals.empty()) {
        auto& book = s.hibernation.edit();
        book.updates.merge(prepared.taken_updates);
        book.updates.merge(prepared.explicit_updates);
        book.removals.merge(prepared.taken_removals);
        book.removals.merge(prepared.explicit_removals);
    }
    if (prepared.actor_state && !s.unsaved_actor_state)
        s.unsaved_actor_state = std::make_unique<Bytes>(std::move(*prepared.actor_state));
}

void finish_save_request(ActorContextInner& s, std::uint64_t revision) {
    s.completed_save_revision = std::max(s.completed_save_revision, revision);
    if (revision >= s.save_request_revision) {
        s.save_requested = false;
        s.save_requested_immediate = false;
        s.save_max_wait_deadline.reset();
    }
    s.save_progress.notify_waiters();
}

boost::asio::awaitable<Status> write_chunked(Kv kv, std::vector<KvEntry> puts,
                                             std::vector<Bytes> deletes) {
    std::size_t pi = 0;
    std::size_t di = 0;
    while (pi < puts.size() || di < deletes.size()) {
        const std::size_t pn = std::min(kApplyBatchChunkSize, puts.size() - pi);
        const std::size_t dn = std::min(kApplyBatchChunkSize, deletes.size() - di);
        std::vector<KvEntry> chunk_puts(
            std::make_move_iterator(puts.begin() + static_cast<std::ptrdiff_t>(pi)),
            std::make_move_iterator(puts.begin() + static_cast<std::ptrdiff_t>(pi + pn)));
        std::vector<Bytes> chunk_deletes(
            std::make_move_iterator(deletes.begin() + static_cast<std::ptrdiff_t>(di)),
            std::make_move_iterator(deletes.begin() + static_cast<std::ptrdiff_t>(di + dn)));
        pi += pn;
        di += dn;
        Status st = co_await kv.apply_batch(std::move(chunk_puts), std::move(chunk_deletes));
        if (!st.ok())
            co_return st;
    }
    co_return Status{};
}

}  // namespace

boost::asio::awaitable<Status> ActorContext::save_state_with_revision(
    std::vector<StateDelta> deltas, std::uint64_t revision) const {
    ActorContext self = *this;
    auto& s = *self.p_;
    while (s.persist_busy)
        co_await s.save_progress.notified();
    s.persist_busy = true;
    Status result = co_await self.save_state_exclusive(std::move(deltas), revision);
    s.persist_busy = false;
    s.save_failures_in_a_row = result.ok() ? 0 : s.save_failures_in_a_row + 1;
    s.save_progress.notify_waiters();
    co_return result;
}

namespace {
boost::asio::awaitable<void> background_save(ActorContext ctx, std::vector<StateDelta> deltas,
                                             std::uint64_t revision) {
    auto& s = *ctx.inner();
    Status saved = co_await ctx.save_state_with_revision(std::move(deltas), revision);
    s.background_save_in_flight = false;
    s.last_background_save_ok = saved.ok();
    --s.tracked_persists;
    s.save_progress.notify_waiters();
    if (!saved.ok()) {
        log::error("actor state save failed",
                   {{"actor_id", s.actor_id}, {"error", saved.error().to_string()}});
        ctx.send_lifecycle_event(LifecycleEvent::save_requested(true));
    } else if (s.save_requested) {
        // A request that arrived while the write was in flight moved the revision on.
        ctx.send_lifecycle_event(LifecycleEvent::save_requested(s.save_requested_immediate));
    }
}
}  // namespace

boost::asio::awaitable<bool> ActorContext::wait_for_background_save() const {
    auto inner = p_;
    while (inner->background_save_in_flight)
        co_await inner->save_progress.notified();
    co_return inner->last_background_save_ok;
}

void ActorContext::save_state_in_background(std::vector<StateDelta> deltas,
                                            std::uint64_t revision) const {
    p_->background_save_in_flight = true;
    ++p_->tracked_persists;
    rt::spawn(p_->executor, background_save(*this, std::move(deltas), revision));
}

boost::asio::awaitable<Status> ActorContext::save_state_exclusive(std::vector<StateDelta> deltas,
                                                                  std::uint64_t revision) const {
    ActorContext self = *this;
    auto& s = *self.p_;
    auto prepared_result = prepare_save(s, std::move(deltas));
    if (!prepared_result.ok())
        co_return std::move(prepared_result).error();
    PreparedSave prepared = std::move(prepared_result).value();
    // The persisted actor goes out with a new state, and also when something else in it (the
    // schedule, the input) changed and was not written with a state yet (a new event) or its own
    // write failed (a cancel): a save is the write, so a sleep right after leaves nothing out.
    // Fired scheduled events sealed with the state this save carries leave the schedule in this
    // write, together with what their actions changed. They stay sealed (so no alarm dispatches
    // them again) until the write is back.
    const std::vector<std::string> consumed = s.schedule.view().sealed;
    const bool write_persisted =
        prepared.actor_state.has_value() || s.dirty || !consumed.empty();
    if (!write_persisted && prepared.conn_puts.empty() && prepared.deletes.empty()) {
        finish_save_request(s, revision);
        co_return Status{};
    }
    auto drop_consumed = [&consumed](std::vector<PersistedScheduleEvent>& events) {
        std::erase_if(events, [&](const PersistedScheduleEvent& e) {
            return std::find(consumed.begin(), consumed.end(), e.event_id) != consumed.end();
        });
    };
    std::vector<KvEntry> puts;
    const std::uint64_t state_revision = s.state_revision;
    // Events scheduled so far go out with this save's state; later ones wait for the next.
    std::vector<std::string> inserted;
    if (write_persisted)
        inserted.assign(s.schedule.view().unsaved.begin(), s.schedule.view().unsaved.end());
    if (write_persisted) {
        PersistedActor next = s.persisted;
        if (prepared.actor_state)
            next.state = *prepared.actor_state;
        drop_consumed(next.scheduled_events);
        puts.emplace_back(keys::to_bytes(keys::kPersistData), encode_persisted_actor(next));
    }
    for (auto& put : prepared.conn_puts)
        puts.push_back(std::move(put));
    ++s.in_flight_writes;
    Status written = co_await write_chunked(s.kv, std::move(puts), std::move(prepared.deletes));
    --s.in_flight_writes;
    s.save_progress.notify_waiters();
    if (!written.ok()) {
        restore_queues(s, prepared);
        co_return written;
    }
    if (prepared.actor_state) {
        metrics_of(self).state_saved();
        s.persisted.state = std::move(*prepared.actor_state);
        self.record_inspector_signal(InspectorSignal::StateUpdated);
    }
    for (const auto& id : inserted) {
        auto& unsaved = s.schedule.edit().unsaved;
        if (auto it = unsaved.find(id); it != unsaved.end())
            unsaved.erase(it);
    }
    if (write_persisted && s.state_revision == state_revision)
        s.dirty = false;
    if (!consumed.empty()) {
        std::erase_if(s.schedule.edit().sealed, [&](const std::string& id) {
            return std::find(consumed.begin(), consumed.end(), id) != consumed.end();
        });
        drop_consumed(s.persisted.scheduled_events);
        metrics_of(self).state_mutation(StateMutationReason::ScheduledEventsUpdate);
        self.record_inspector_signal(InspectorSignal::SchedulesUpdated);
    }
    for (const auto& [id, index] : prepared.conn_message_indexes) {
        if (auto it = s.conns.find(id); it != s.conns.end())
            it->second.mark_server_message_index_saved(index);
    }
    s.last_save_at = s.clock->now();
    finish_save_request(s, revision);
    co_return Status{};
}

}  // namespace rivetkit::core

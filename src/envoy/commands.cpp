// The command stream: start/stop actors through the callbacks, deduplicate replays by
// (actor, generation, index), acknowledge what was handled.
//
// Acks go out right after each batch (upstream acks lazily; the engine accepts either). Replays
// still happen — an ack can be lost with its connection — so dedup entries outlive the actor
// generation for kDedupRetention.

#include <chrono>

#include "base/log.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy::detail {

namespace asio = boost::asio;

namespace {

constexpr auto kDedupRetention = std::chrono::minutes(10);

StopReason from_proto(proto::StopActorReason reason) {
    switch (reason) {
        case proto::StopActorReason::SleepIntent:
            return StopReason::sleep_intent;
        case proto::StopActorReason::StopIntent:
            return StopReason::stop_intent;
        case proto::StopActorReason::Destroy:
            return StopReason::destroy;
        case proto::StopActorReason::GoingAway:
            return StopReason::going_away;
        case proto::StopActorReason::Lost:
            return StopReason::lost;
    }
    return StopReason::lost;
}

ActorStart to_actor_start(const ActorKey& key, proto::CommandStartActor start) {
    ActorStart out;
    out.actor_id = key.actor_id;
    out.generation = key.generation;
    out.config.name = std::move(start.config.name);
    out.config.key = std::move(start.config.key);
    out.config.create_ts = start.config.create_ts;
    out.config.input = std::move(start.config.input);
    for (const auto& r : start.hibernating_requests) {
        out.hibernating_requests.push_back(TunnelId{r.gateway_id, r.request_id});
    }
    if (start.preloaded_kv) {
        PreloadedKv kv;
        for (auto& e : start.preloaded_kv->entries) {
            kv.entries.push_back(PreloadedKvEntry{std::move(e.key), std::move(e.value)});
        }
        kv.requested_get_keys = std::move(start.preloaded_kv->requested_get_keys);
        kv.requested_prefixes = std::move(start.preloaded_kv->requested_prefixes);
        out.preloaded_kv = std::move(kv);
    }
    return out;
}

proto::Event stopped_event(proto::StopCode code, std::optional<std::string> message) {
    proto::ActorStateStopped stopped{code, std::move(message)};
    return proto::Event{proto::EventActorStateUpdate{proto::ActorState{std::move(stopped)}}};
}

void forget_actor(EnvoyState& st, const ActorKey& key) {
    st.actors.erase(key);
    mark_history_finished(st, key);
    st.command_dedup[key].finished_at = st.clock.now();
    st.actors_changed.notify_one();
}

asio::awaitable<void> run_actor_start(std::shared_ptr<EnvoyState> st, ActorKey key,
                                      std::shared_ptr<ActorEntry> entry, ActorStart start) {
    std::vector<TunnelId> hibernating = start.hibernating_requests;
    Status status;
    if (!st->callbacks) {
        status = envoy_error("shutdown", "envoy is shut down");
    } else {
        EnvoyHandle handle = st->handle();
        auto starting = st->callbacks->on_actor_start(handle, std::move(start));
        try {
            status = co_await std::move(starting);
        } catch (...) {
            status = error_from_exception(std::current_exception());
        }
    }
    entry->started = true;
    entry->start_done.notify_waiters();
    auto alarms = std::exchange(entry->deferred_alarms, nullptr);
    if (!status.ok()) {
        if (alarms) {
            for (auto& alarm : *alarms)
                alarm.sent.send(Error("actor", "start_failed", "the actor's start failed"));
        }
        log::warn("actor start failed", {{"actor_id", key.actor_id},
                                         {"generation", key.generation},
                                         {"error", status.error().to_string()}});
        push_event(*st, key, stopped_event(proto::StopCode::Error, status.error().to_string()));
        on_actor_stopped_tunnels(*st, key, StopReason::stop_intent);
        st->pending_restores.erase(key.actor_id);
        forget_actor(*st, key);
        co_return;
    }
    if (entry->phase == ActorPhase::starting)
        entry->phase = ActorPhase::running;
    log::debug("actor running", {{"actor_id", key.actor_id}, {"generation", key.generation}});
    // Running and what the actor asked for while starting, in one message: one workflow signal
    // for the engine instead of one per event.
    std::vector<proto::Event> events;
    events.push_back(
        proto::Event{proto::EventActorStateUpdate{proto::ActorState{proto::ActorStateRunning{}}}});
    if (alarms) {
        for (const auto& alarm : *alarms)
            events.push_back(proto::Event{proto::EventActorSetAlarm{alarm.alarm_ts}});
    }
    if (auto intent = std::exchange(entry->deferred_intent, std::nullopt))
        events.push_back(proto::Event{proto::EventActorIntent{std::move(*intent)}});
    push_events(*st, key, std::move(events));
    if (alarms) {
        for (auto& alarm : *alarms)
            alarm.sent.send(Status{});
    }
    restore_hibernating_websockets(*st, key, hibernating);
}

asio::awaitable<void> run_actor_stop(std::shared_ptr<EnvoyState> st, ActorKey key,
                                     std::shared_ptr<ActorEntry> entry, StopReason reason) {
    while (!entry->started)
        co_await entry->start_done.notified();
    // A failed start already reported Stopped and forgot the actor.
    auto it = st->actors.find(key);
    if (it == st->actors.end() || it->second != entry)
        co_return;
    Status status;
    if (st->callbacks) {
        EnvoyHandle handle = st->handle();
        auto stopping =
            st->callbacks->on_actor_stop(handle, ActorStop{key.actor_id, key.generation, reason});
        try {
            status = co_await std::move(stopping);
        } catch (...) {
            status = error_from_exception(std::current_exception());
        }
    }
    on_actor_stopped_tunnels(*st, key, reason);
    // Stopped(Ok) without a prior intent reads as "actor exited" to the engine, so a lost actor
    // reports Error (as upstream).
    if (status.ok() && reason != StopReason::lost) {
        push_event(*st, key, stopped_event(proto::StopCode::Ok, std::nullopt));
    } else {
        std::string message = status.ok() ? "actor lost" : status.error().to_string();
        push_event(*st, key, stopped_event(proto::StopCode::Error, std::move(message)));
    }
    log::debug("actor stopped", {{"actor_id", key.actor_id},
                                 {"generation", key.generation},
                                 {"reason", to_string(reason)}});
    forget_actor(*st, key);
}

void start_actor(EnvoyState& st, const ActorKey& key, proto::CommandStartActor start) {
    if (st.actors.contains(key)) {
        log::warn("duplicate start for a running actor ignored",
                  {{"actor_id", key.actor_id}, {"generation", key.generation}});
        return;
    }
    auto entry = std::make_shared<ActorEntry>();
    for (const auto& r : start.hibernating_requests)
        entry->listed_hibernating.push_back(TunnelId{r.gateway_id, r.request_id});
    st.actors.emplace(key, entry);
    log::debug(
        "actor starting",
        {{"actor_id", key.actor_id}, {"generation", key.generation}, {"name", start.config.name}});
    st.tasks.spawn(st.executor, run_actor_start(st.shared_from_this(), key, entry,
                                                to_actor_start(key, std::move(start))));
}

void stop_actor(EnvoyState& st, const ActorKey& key, StopReason reason) {
    auto it = st.actors.find(key);
    if (it == st.actors.end()) {
        log::warn("stop for unknown actor ignored", {{"actor_id", key.actor_id},
                                                     {"generation", key.generation},
                                                     {"reason", to_string(reason)}});
        return;
    }
    auto entry = it->second;
    if (entry->phase == ActorPhase::stopping)
        return;
    entry->phase = ActorPhase::stopping;
    log::debug("actor stopping", {{"actor_id", key.actor_id},
                                  {"generation", key.generation},
                                  {"reason", to_string(reason)}});
    st.tasks.spawn(st.executor, run_actor_stop(st.shared_from_this(), key, entry, reason));
}

void prune_dedup(EnvoyState& st) {
    auto now = st.clock.now();
    for (auto it = st.command_dedup.begin(); it != st.command_dedup.end();) {
        if (it->second.finished_at && now - *it->second.finished_at > kDedupRetention) {
            it = st.command_dedup.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace

void handle_commands(EnvoyState& st, proto::ToEnvoyCommands commands) {
    prune_dedup(st);
    std::map<ActorKey, std::int64_t> acked;
    for (auto& wrapper : commands.value) {
        ActorKey key{wrapper.checkpoint.actor_id, wrapper.checkpoint.generation};
        auto& dedup = st.command_dedup[key];
        std::int64_t index = wrapper.checkpoint.index;
        acked[key] = std::max(acked[key], std::max(index, dedup.last_index));
        if (index <= dedup.last_index) {
            log::debug("replayed command skipped", {{"actor_id", key.actor_id},
                                                    {"generation", key.generation},
                                                    {"index", static_cast<long long>(index)}});
            continue;
        }
        dedup.last_index = index;
        if (auto* start = wrapper.inner.get_if<proto::CommandStartActor>()) {
            start_actor(st, key, std::move(*start));
        } else if (auto* stop = wrapper.inner.get_if<proto::CommandStopActor>()) {
            stop_actor(st, key, from_proto(stop->reason));
        }
    }
    if (acked.empty())
        return;
    proto::ToRivetAckCommands ack;
    for (const auto& [key, index] : acked) {
        ack.last_command_checkpoints.push_back(
            proto::ActorCheckpoint{key.actor_id, key.generation, index});
    }
    st.send(proto::ToRivet{std::move(ack)});
}

void stop_all_actors_locally(EnvoyState& st, StopReason reason) {
    std::vector<ActorKey> keys;
    for (const auto& [key, entry] : st.actors)
        keys.push_back(key);
    for (const auto& key : keys)
        stop_actor(st, key, reason);
}

}  // namespace rivetkit::envoy::detail

// Events: envoy-assigned index per (actor, generation) from 0, kept until the engine acks them
// (ToEnvoyAckEvents) and re-sent in full after every reconnect. A stopped generation's history
// stays until the engine has surely received its Stopped event: acknowledged, or sent on a
// connection that stayed up past the engine's ping timeout after it (upstream drops it once sent,
// and a connection lost right then loses the Stopped event for good).

#include <algorithm>

#include "base/log.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy::detail {

namespace {
proto::EventWrapper wrapped(const ActorKey& key, const PendingEvent& e) {
    return proto::EventWrapper{proto::ActorCheckpoint{key.actor_id, key.generation, e.index},
                               e.inner};
}
}  // namespace

void push_event(EnvoyState& st, const ActorKey& key, proto::Event event) {
    std::vector<proto::Event> one;
    one.push_back(std::move(event));
    push_events(st, key, std::move(one));
}

void push_events(EnvoyState& st, const ActorKey& key, std::vector<proto::Event> events) {
    auto& history = st.events[key];
    proto::ToRivetEvents batch;
    for (auto& event : events) {
        PendingEvent pending{history.next_index++, std::move(event)};
        if (st.connected)
            batch.value.push_back(wrapped(key, pending));
        history.unacked.push_back(std::move(pending));
    }
    if (!batch.value.empty())
        st.send(proto::ToRivet{std::move(batch)});
}

namespace {
// The engine closes a connection whose pongs stop for 15 s; one that stayed up this long after a
// frame went out carried the pongs sent after it, and so the frame.
constexpr auto kSurelyDelivered = std::chrono::seconds(30);
}  // namespace

void mark_history_finished(EnvoyState& st, const ActorKey& key) {
    auto it = st.events.find(key);
    if (it == st.events.end())
        return;
    it->second.finished = true;
    if (st.connected) {
        it->second.sent_at = st.clock.now();
        it->second.sent_on = st.connection_serial;
    }
}

void prune_finished_histories(EnvoyState& st) {
    const auto now = st.clock.now();
    std::erase_if(st.events, [&](const auto& entry) {
        const EventHistory& h = entry.second;
        if (!h.finished)
            return false;
        if (h.unacked.empty())
            return true;
        return st.connected && h.sent_at && h.sent_on == st.connection_serial &&
               now - *h.sent_at >= kSurelyDelivered;
    });
}

void handle_ack_events(EnvoyState& st, const proto::ToEnvoyAckEvents& ack) {
    for (const auto& cp : ack.last_event_checkpoints) {
        auto it = st.events.find(ActorKeyRef{cp.actor_id, cp.generation});
        if (it == st.events.end())
            continue;
        auto& unacked = it->second.unacked;
        auto acked = std::find_if(unacked.begin(), unacked.end(), [&](const auto& e) {
            return e.index > cp.index;
        });
        unacked.erase(unacked.begin(), acked);
        if (unacked.empty())
            std::vector<PendingEvent>().swap(unacked);  // an idle actor holds nothing
    }
    prune_finished_histories(st);
}

void replay_events(EnvoyState& st) {
    proto::ToRivetEvents batch;
    for (auto& [key, history] : st.events) {
        for (const auto& e : history.unacked)
            batch.value.push_back(wrapped(key, e));
        if (history.finished) {
            history.sent_at = st.clock.now();
            history.sent_on = st.connection_serial;
        }
    }
    if (batch.value.empty())
        return;
    log::info("replaying unacknowledged events",
              {{"count", static_cast<unsigned long>(batch.value.size())}});
    st.send(proto::ToRivet{std::move(batch)});
}

}  // namespace rivetkit::envoy::detail

// Events: envoy-assigned index per (actor, generation) from 0, kept until the engine acks them
// (ToEnvoyAckEvents) and re-sent in full after every reconnect. A stopped generation's history
// is dropped once its Stopped event went out on a live connection (as upstream).

#include "base/log.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy::detail {

void push_event(EnvoyState& st, const ActorKey& key, proto::Event event) {
    auto& history = st.events[key];
    proto::EventWrapper wrapper{
        proto::ActorCheckpoint{key.actor_id, key.generation, history.next_index++},
        std::move(event)};
    if (st.connected) {
        proto::ToRivetEvents batch;
        batch.value.push_back(wrapper);
        st.send(proto::ToRivet{std::move(batch)});
    }
    history.unacked.push_back(std::move(wrapper));
}

void mark_history_finished(EnvoyState& st, const ActorKey& key) {
    auto it = st.events.find(key);
    if (it == st.events.end())
        return;
    if (st.connected) {
        st.events.erase(it);
    } else {
        it->second.finished = true;
    }
}

void handle_ack_events(EnvoyState& st, const proto::ToEnvoyAckEvents& ack) {
    for (const auto& cp : ack.last_event_checkpoints) {
        auto it = st.events.find(ActorKey{cp.actor_id, cp.generation});
        if (it == st.events.end())
            continue;
        auto& unacked = it->second.unacked;
        while (!unacked.empty() && unacked.front().checkpoint.index <= cp.index)
            unacked.pop_front();
    }
}

void replay_events(EnvoyState& st) {
    proto::ToRivetEvents batch;
    for (auto it = st.events.begin(); it != st.events.end();) {
        for (const auto& e : it->second.unacked)
            batch.value.push_back(e);
        it = it->second.finished ? st.events.erase(it) : std::next(it);
    }
    if (batch.value.empty())
        return;
    log::info("replaying unacknowledged events",
              {{"count", static_cast<unsigned long>(batch.value.size())}});
    st.send(proto::ToRivet{std::move(batch)});
}

}  // namespace rivetkit::envoy::detail

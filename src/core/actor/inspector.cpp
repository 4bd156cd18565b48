// ActorContext: inspector attachment and the state overlay broadcast.

#include <nlohmann/json.hpp>

#include "base/cbor.hpp"
#include "base/log.hpp"
#include "core/actor/context.hpp"

namespace rivetkit::core {

void ActorContext::configure_inspector_runtime() const {
    p_->inspector_configured = true;
}

InspectorAttachGuard::InspectorAttachGuard(std::shared_ptr<ActorContextInner> inner)
    : inner_(std::move(inner)) {
    if (inner_->inspector_attached++ == 0) {
        ActorContext(inner_).send_lifecycle_event(LifecycleEvent::inspector_attachments_changed());
    }
}

InspectorAttachGuard::~InspectorAttachGuard() {
    if (!inner_)
        return;
    if (--inner_->inspector_attached == 0) {
        ActorContext(inner_).send_lifecycle_event(LifecycleEvent::inspector_attachments_changed());
    }
}

std::optional<InspectorAttachGuard> ActorContext::inspector_attach() const {
    if (!p_->inspector_configured)
        return std::nullopt;
    return std::optional<InspectorAttachGuard>(std::in_place, p_);
}

std::optional<rt::Receiver<Bytes>> ActorContext::subscribe_inspector() const {
    if (!p_->inspector_configured)
        return std::nullopt;
    auto [tx, rx] = rt::unbounded_channel<Bytes>();
    p_->inspector_subscribers.edit().overlay.push_back(std::move(tx));
    return std::optional<rt::Receiver<Bytes>>(std::move(rx));
}

void ActorContext::broadcast_inspector_overlay(const std::vector<StateDelta>& deltas) const {
    if (p_->inspector_attached == 0 || deltas.empty())
        return;
    const Bytes payload = encode_state_deltas_cbor(deltas);
    auto& subs = p_->inspector_subscribers.edit().overlay;
    std::size_t lagged = 0;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [&](const rt::Sender<Bytes>& tx) {
                                  auto dropped = tx.send_lossy(payload, kInspectorOverlayCapacity);
                                  if (!dropped)
                                      return true;
                                  lagged += *dropped;
                                  return false;
                              }),
               subs.end());
    log::debug("inspector overlay broadcast", {{"actor_id", p_->actor_id},
                                               {"delta_count", deltas.size()},
                                               {"payload_bytes", payload.size()},
                                               {"receiver_count", subs.size()},
                                               {"lagged_dropped", lagged}});
}

rt::Receiver<InspectorSignal> ActorContext::subscribe_inspector_signals() const {
    auto [tx, rx] = rt::unbounded_channel<InspectorSignal>();
    p_->inspector_subscribers.edit().signal.push_back(std::move(tx));
    return std::move(rx);
}

void ActorContext::record_inspector_signal(InspectorSignal signal) const {
    if (p_->inspector_subscribers.view().signal.empty())
        return;  // every save records one: an actor nobody inspects makes no list for it
    auto& subs = p_->inspector_subscribers.edit().signal;
    subs.erase(std::remove_if(subs.begin(), subs.end(),
                              [signal](const rt::Sender<InspectorSignal>& tx) {
                                  return !tx.send(signal);
                              }),
               subs.end());
}

// serde's externally tagged enum layout, with Vec<u8> as an array of integers (not a byte string).
Bytes encode_state_deltas_cbor(const std::vector<StateDelta>& deltas) {
    using Json = nlohmann::ordered_json;
    Json list = Json::array();
    for (const auto& delta : deltas) {
        Json entry = Json::object();
        switch (delta.kind) {
            case StateDelta::Kind::ActorState:
                entry["ActorState"] = delta.bytes;
                break;
            case StateDelta::Kind::ConnHibernation: {
                Json body = Json::object();
                body["conn"] = delta.conn;
                body["bytes"] = delta.bytes;
                entry["ConnHibernation"] = std::move(body);
                break;
            }
            case StateDelta::Kind::ConnHibernationRemoved:
                entry["ConnHibernationRemoved"] = delta.conn;
                break;
        }
        list.push_back(std::move(entry));
    }
    return Json::to_cbor(list);
}

std::optional<std::vector<StateDelta>> decode_state_deltas_cbor(BytesView payload) {
    auto json = parse_cbor_or_discarded(payload);
    if (json.is_discarded() || !json.is_array())
        return std::nullopt;
    std::vector<StateDelta> out;
    for (const auto& entry : json) {
        if (!entry.is_object() || entry.size() != 1)
            return std::nullopt;
        // Not items(): its proxy is a temporary, and a binding into it would dangle.
        const auto it = entry.begin();
        const std::string name = it.key();
        const auto& value = it.value();
        if (name == "ActorState" && value.is_array()) {
            out.push_back(StateDelta::actor_state(value.get<Bytes>()));
        } else if (name == "ConnHibernation" && value.is_object()) {
            out.push_back(StateDelta::conn_hibernation(value.at("conn").get<std::string>(),
                                                       value.at("bytes").get<Bytes>()));
        } else if (name == "ConnHibernationRemoved" && value.is_string()) {
            out.push_back(StateDelta::conn_hibernation_removed(value.get<std::string>()));
        } else {
            return std::nullopt;
        }
    }
    return out;
}

}  // namespace rivetkit::core

#include "core/actor/messages.hpp"

#include "base/log.hpp"

namespace rivetkit::core {

std::string_view event_kind(const ActorEvent& ev) noexcept {
    struct Visitor {
        std::string_view operator()(const event::Action&) const { return "action"; }
        std::string_view operator()(const event::HttpRequestEv&) const { return "http_request"; }
        std::string_view operator()(const event::QueueSend&) const { return "queue_send"; }
        std::string_view operator()(const event::WebSocketOpen&) const { return "websocket_open"; }
        std::string_view operator()(const event::ConnectionPreflight&) const {
            return "connection_preflight";
        }
        std::string_view operator()(const event::ConnectionOpen&) const {
            return "connection_open";
        }
        std::string_view operator()(const event::ConnectionClosed&) const {
            return "connection_closed";
        }
        std::string_view operator()(const event::SubscribeRequest&) const {
            return "subscribe_request";
        }
        std::string_view operator()(const event::SerializeState& e) const {
            return e.reason == SerializeStateReason::Save ? "serialize_state_save"
                                                          : "serialize_state_inspector";
        }
        std::string_view operator()(const event::RunGracefulCleanup& e) const {
            return e.reason == ShutdownKind::Sleep ? "run_sleep_cleanup" : "run_destroy_cleanup";
        }
        std::string_view operator()(const event::DisconnectConn&) const {
            return "disconnect_conn";
        }
        std::string_view operator()(const event::WorkflowHistoryRequested&) const {
            return "workflow_history_requested";
        }
        std::string_view operator()(const event::WorkflowReplayRequested&) const {
            return "workflow_replay_requested";
        }
    };
    return std::visit(Visitor{}, ev);
}

void ActorEvents::log_drained(const ActorEvent& ev) const {
    log::debug("actor event drained", {{"actor_id", actor_id_}, {"event", event_kind(ev)}});
}

boost::asio::awaitable<std::optional<ActorEvent>> ActorEvents::recv() {
    std::optional<ActorEvent> ev = co_await rx_.recv();
    if (ev)
        log_drained(*ev);
    co_return ev;
}

std::optional<ActorEvent> ActorEvents::try_recv() {
    auto r = rx_.try_recv();
    if (!r.has_value())
        return std::nullopt;
    std::optional<ActorEvent> ev(std::move(r).value());
    log_drained(*ev);
    return ev;
}

}  // namespace rivetkit::core

// CoreRegistry: the inspector WebSocket (/inspector/connect), upstream's protocol
// (core/inspector/protocol.hpp).
//
// Auth: the token from a `rivet_inspector_token.<token>` subprotocol, else an `Authorization:
// Bearer` header, checked against KV [3]; a refused socket is accepted and closed with 1008
// "inspector.unauthorized" (as upstream). On open the client gets Init (connections, the runtime's
// current state as GET /inspector/state shows it, rpcs, queue size, workflow history). Then, on one
// task per socket, in arrival order: client requests answered with their response (or
// Error{"group.code: message"} when one fails or a frame does not decode, logged with actor_id;
// the socket stays open), the state overlay the actor task broadcasts while an inspector is
// attached (StateUpdated with unsaved state, debounced by the task), and the context's inspector
// signals (StateUpdated after a save, ConnectionsUpdated, QueueUpdated, WorkflowHistoryUpdated,
// and to v6 sockets SchedulesUpdated when a scheduled event is added, cancelled or fired).
//
// Versions: the socket's wire mode comes from `?protocol_version=N` on the connect path (else the
// legacy embedded-v5 framing); an invalid one closes the socket with 1002
// "inspector.invalid_protocol_version" before auth, as upstream. Schedules (v6) are the actor's
// scheduled events, kind "at"; this core has no cron/every schedules, so a fire history is always
// empty and deleting a cron/every schedule answers deleted=false.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>
#include <tuple>

#include "base/cbor.hpp"
#include "base/log.hpp"
#include "core/actor/queue.hpp"
#include "core/inspector/auth.hpp"
#include "core/inspector/database.hpp"
#include "core/inspector/protocol.hpp"
#include "core/inspector/state.hpp"
#include "core/registry/actor_requests.hpp"
#include "core/registry/registry.hpp"
#include "core/registry/routes.hpp"
#include "core/registry/websocket_support.hpp"
#include "runtime/channel.hpp"
#include "runtime/select.hpp"
#include "runtime/spawn.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core::registry {

namespace asio = boost::asio;
namespace wire = inspector::wire;

namespace {

using Instance = CoreRegistry::Instance;
template <typename T>
using Task = asio::awaitable<T>;

using Inbound = SocketInbound;

class InspectorListener final : public envoy::WebSocketListener {
  public:
    explicit InspectorListener(rt::Sender<Inbound> tx) : tx_(std::move(tx)) {}
    void on_message(envoy::WebSocketMessage message) override {
        tx_.send(Inbound{std::move(message), std::nullopt});
    }
    void on_close(envoy::CloseFrame frame) override {
        tx_.send(Inbound{std::nullopt, std::move(frame)});
    }

  private:
    rt::Sender<Inbound> tx_;
};

std::uint64_t non_negative(std::int64_t ms) {
    return static_cast<std::uint64_t>(std::max<std::int64_t>(ms, 0));
}

// Upstream's inspector_schedules for an actor with scheduled events only: kind "at", ordered by
// next run, then id.
std::uint32_t clamp_u32(std::uint64_t v) {
    return v > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(v);
}

std::vector<wire::Schedule> wire_schedules(const ActorContext& ctx) {
    std::vector<wire::Schedule> out;
    for (auto& event : ctx.persisted_actor().scheduled_events) {
        wire::Schedule s;
        s.id = std::move(event.event_id);
        s.kind = "at";
        s.action = std::move(event.action);
        s.args = std::move(event.args).value_or(Bytes{});
        s.next_run_at = non_negative(event.timestamp);
        out.push_back(std::move(s));
    }
    std::ranges::sort(out, [](const wire::Schedule& a, const wire::Schedule& b) {
        return std::tie(a.next_run_at, a.id) < std::tie(b.next_run_at, b.id);
    });
    return out;
}

wire::ToClientBody body_of(auto message) {
    wire::ToClientBody body;
    body.value = std::move(message);
    return body;
}

// Error frames carry the structured id first: "inspector.invalid_request: ...".
wire::ToClientBody error_body(const Error& error) {
    return body_of(
        wire::Error{fmt::format("{}.{}: {}", error.group(), error.code(), error.message())});
}

nlohmann::json cbor_json_or_null(const Bytes& cbor) {
    if (cbor.empty())
        return nullptr;
    auto value = parse_cbor_or_discarded(cbor);
    return value.is_discarded() ? nlohmann::json(nullptr) : value;
}

// Connection details travel as CBOR of upstream's JSON shape.
std::vector<wire::Connection> wire_connections(const ActorContext& ctx) {
    std::vector<wire::Connection> out;
    for (const auto& conn : ctx.conns()) {
        nlohmann::json details = {
            {"type", nullptr},
            {"params", cbor_json_or_null(conn.params())},
            {"stateEnabled", true},
            {"state", cbor_json_or_null(conn.state())},
            {"subscriptions", conn.subscriptions().size()},
            {"isHibernatable", conn.is_hibernatable()},
        };
        out.push_back(wire::Connection{conn.id(), nlohmann::json::to_cbor(details)});
    }
    return out;
}

// The runtime's current state (as GET /inspector/state shows it); None when state is disabled
// or empty, since the inspector would fail to decode zero CBOR bytes.
Task<std::optional<Bytes>> state_payload(ActorContext ctx) {
    if (!ctx.config().has_state)
        co_return std::nullopt;
    Bytes state = co_await inspector::current_state(ctx);
    if (state.empty())
        co_return std::nullopt;
    co_return state;
}

std::vector<std::string> rpcs_of(const Instance& instance) {
    std::vector<std::string> out;
    for (const auto& action : instance.factory->config().actions)
        out.push_back(action.name);
    return out;
}

Task<Result<wire::QueueStatus>> queue_status(std::shared_ptr<Instance> instance,
                                             std::uint32_t limit) {
    ActorQueue queue(instance->ctx);
    auto messages = co_await queue.inspect_messages();
    if (!messages.ok())
        co_return std::move(messages).error();
    wire::QueueStatus status;
    status.size = messages->size();
    status.max_size = queue.max_size();
    status.truncated = messages->size() > limit;
    for (auto& m : *messages) {
        if (status.messages.size() >= limit)
            break;
        status.messages.push_back(wire::QueueMessageSummary{
            m.id, std::move(m.name),
            static_cast<std::uint64_t>(std::max<std::int64_t>(m.created_at, 0))});
    }
    co_return status;
}

Task<Result<wire::Init>> build_init(std::shared_ptr<Instance> instance) {
    auto workflow = co_await ask_workflow(instance, false, std::nullopt);
    if (!workflow.ok())
        co_return std::move(workflow).error();
    ActorQueue queue(instance->ctx);
    auto messages = co_await queue.inspect_messages();
    if (!messages.ok())
        co_return std::move(messages).error();
    wire::Init init;
    init.connections = wire_connections(instance->ctx);
    init.state = co_await state_payload(instance->ctx);
    init.is_state_enabled = instance->ctx.config().has_state;
    init.rpcs = rpcs_of(*instance);
    init.is_database_enabled = inspector::database_enabled(instance->ctx);
    init.queue_size = messages->size();
    init.workflow_history = std::move(workflow->history);
    init.is_workflow_enabled = workflow->enabled;
    // No custom inspector tabs in this host (tab_config stays empty): the UI shows its own.
    init.schedules = wire_schedules(instance->ctx);
    co_return init;
}

// One inspector socket: everything it sends goes through here, on one task.
class InspectorSession {
  public:
    InspectorSession(std::shared_ptr<Instance> instance, envoy::WebSocketSender sender,
                     rt::Clock& clock, inspector::WireMode mode)
        : instance_(std::move(instance)), sender_(std::move(sender)), clock_(clock), mode_(mode) {}

    Task<void> run(rt::Receiver<Inbound> inbound, rt::Receiver<Bytes> overlay,
                   rt::Receiver<InspectorSignal> signals, InspectorAttachGuard attached) {
        bool overlay_open = true;
        bool signals_open = true;
        for (;;) {
            const std::size_t arm = co_await rt::select(inbound, rt::when(overlay_open, overlay),
                                                        rt::when(signals_open, signals));
            if (arm == 0) {
                auto item = inbound.try_recv();
                if (!item || item->close)
                    break;
                co_await on_message(std::move(item->message->data));
            } else if (arm == 1) {
                auto payload = overlay.try_recv();
                if (!payload) {
                    overlay_open = false;
                    continue;
                }
                push_overlay(*payload);
            } else {
                auto first = signals.try_recv();
                if (!first) {
                    signals_open = false;
                    continue;
                }
                // Signals queued together are pushed once each.
                std::array<bool, kInspectorSignalCount> pending{};
                pending[static_cast<std::size_t>(*first)] = true;
                while (auto more = signals.try_recv())
                    pending[static_cast<std::size_t>(*more)] = true;
                for (std::size_t i = 0; i < pending.size(); ++i) {
                    if (pending[i])
                        co_await push_signal(static_cast<InspectorSignal>(i));
                }
            }
        }
        log::debug("inspector websocket closed", {{"actor_id", instance_->actor_id}});
        (void)attached;
    }

  private:
    void send(const wire::ToClientBody& body) const {
        sender_.send(inspector::encode_server_message(body, mode_), true);
    }

    Task<void> on_message(Bytes payload) {
        auto decoded = inspector::decode_client_message(payload, mode_);
        if (!decoded.ok()) {
            log::warn("undecodable inspector websocket message",
                      {{"actor_id", instance_->actor_id},
                       {"payload_len", payload.size()},
                       {"error", decoded.error().to_string()}});
            send(error_body(decoded.error()));
            co_return;
        }
        const std::string_view kind = inspector::message_kind(decoded.value());
        Result<wire::ToClientBody> response = co_await answer(std::move(decoded).value());
        if (!response.ok()) {
            log::warn("inspector websocket request failed",
                      {{"actor_id", instance_->actor_id},
                       {"request", kind},
                       {"error", response.error().to_string()}});
            send(error_body(response.error()));
            co_return;
        }
        send(response.value());
    }

    Task<Result<wire::ToClientBody>> answer(wire::ToServerBody request) {
        const ActorContext& ctx = instance_->ctx;
        if (auto* patch = request.get_if<wire::PatchStateRequest>()) {
            Bytes state = patch->state;
            Status saved = co_await ctx.patch_state(std::move(patch->state));
            if (!saved.ok())
                co_return std::move(saved).error();
            co_return body_of(wire::StateUpdated{std::move(state)});
        }
        if (auto* req = request.get_if<wire::StateRequest>()) {
            auto state = co_await state_payload(ctx);
            co_return body_of(
                wire::StateResponse{req->id, std::move(state), ctx.config().has_state});
        }
        if (auto* req = request.get_if<wire::ConnectionsRequest>())
            co_return body_of(wire::ConnectionsResponse{req->id, wire_connections(ctx)});
        if (auto* req = request.get_if<wire::ActionRequest>()) {
            auto output = co_await run_action(std::move(req->name), std::move(req->args));
            if (!output.ok())
                co_return std::move(output).error();
            co_return body_of(wire::ActionResponse{req->id, std::move(output).value()});
        }
        if (auto* req = request.get_if<wire::RpcsListRequest>())
            co_return body_of(wire::RpcsListResponse{req->id, rpcs_of(*instance_)});
        if (auto* req = request.get_if<wire::TraceQueryRequest>())
            co_return body_of(wire::TraceQueryResponse{req->id, Bytes{}});
        if (auto* req = request.get_if<wire::QueueRequest>()) {
            auto status =
                co_await queue_status(instance_, inspector::clamp_queue_limit(req->limit));
            if (!status.ok())
                co_return std::move(status).error();
            co_return body_of(wire::QueueResponse{req->id, std::move(status).value()});
        }
        if (auto* req = request.get_if<wire::WorkflowHistoryRequest>()) {
            auto got = co_await ask_workflow(instance_, false, std::nullopt);
            if (!got.ok())
                co_return std::move(got).error();
            co_return body_of(
                wire::WorkflowHistoryResponse{req->id, std::move(got->history), got->enabled});
        }
        if (auto* req = request.get_if<wire::WorkflowReplayRequest>()) {
            auto got = co_await ask_workflow(instance_, true, std::move(req->entry_id));
            if (!got.ok())
                co_return std::move(got).error();
            if (got->enabled)
                ctx.record_inspector_signal(InspectorSignal::WorkflowHistoryUpdated);
            co_return body_of(
                wire::WorkflowReplayResponse{req->id, std::move(got->history), got->enabled});
        }
        if (auto* req = request.get_if<wire::SchedulesRequest>())
            co_return body_of(wire::SchedulesResponse{req->id, wire_schedules(ctx)});
        if (auto* req = request.get_if<wire::ScheduleHistoryRequest>()) {
            // Only cron/every schedules keep a fire history, and this core has none.
            co_return body_of(
                wire::ScheduleHistoryResponse{req->id, std::move(req->schedule_id), {}});
        }
        if (auto* req = request.get_if<wire::ScheduleDeleteRequest>()) {
            bool deleted = false;
            if (req->kind == "at")
                deleted = ctx.cancel_scheduled_event(req->schedule_id);
            else if (req->kind != "cron" && req->kind != "every")
                co_return Error("inspector", "invalid_request",
                                fmt::format("invalid inspector schedule kind \"{}\"", req->kind));
            co_return body_of(
                wire::ScheduleDeleteResponse{req->id, std::move(req->schedule_id), deleted});
        }
        if (auto* req = request.get_if<wire::DatabaseSchemaRequest>()) {
            auto op = inspector::database_schema(ctx);
            auto schema = co_await std::move(op);
            if (!schema.ok())
                co_return std::move(schema).error();
            co_return body_of(wire::DatabaseSchemaResponse{req->id, std::move(schema).value()});
        }
        auto& rows_request = std::get<wire::DatabaseTableRowsRequest>(request.value);
        auto op = inspector::database_rows(ctx, std::move(rows_request.table),
                                           clamp_u32(rows_request.limit),
                                           clamp_u32(rows_request.offset));
        auto rows = co_await std::move(op);
        if (!rows.ok())
            co_return std::move(rows).error();
        co_return body_of(wire::DatabaseTableRowsResponse{rows_request.id, std::move(rows).value()});
    }

    Task<Result<Bytes>> run_action(std::string name, Bytes args) {
        return run_transient_action(instance_, clock_, ConnectOptions{}, std::move(name),
                                    std::move(args));
    }

    void push_overlay(const Bytes& payload) const {
        auto deltas = decode_state_deltas_cbor(payload);
        if (!deltas) {
            log::error("failed to decode inspector overlay update",
                       {{"actor_id", instance_->actor_id}});
            return;
        }
        for (auto& delta : *deltas) {
            if (delta.kind == StateDelta::Kind::ActorState) {
                send(body_of(wire::StateUpdated{std::move(delta.bytes)}));
                return;
            }
        }
    }

    Task<void> push_signal(InspectorSignal signal) {
        const ActorContext& ctx = instance_->ctx;
        switch (signal) {
            case InspectorSignal::StateUpdated:
                send(body_of(wire::StateUpdated{ctx.state()}));
                break;
            case InspectorSignal::ConnectionsUpdated:
                send(body_of(wire::ConnectionsUpdated{wire_connections(ctx)}));
                break;
            case InspectorSignal::QueueUpdated:
                send(body_of(wire::QueueUpdated{ActorQueue(ctx).size()}));
                break;
            case InspectorSignal::SchedulesUpdated:
                // Versions before 6 have no schedules (upstream skips the push for them).
                if (mode_.version >= 6)
                    send(body_of(wire::SchedulesUpdated{wire_schedules(ctx)}));
                break;
            case InspectorSignal::WorkflowHistoryUpdated: {
                auto got = co_await ask_workflow(instance_, false, std::nullopt);
                if (got.ok() && got->history)
                    send(body_of(wire::WorkflowHistoryUpdated{std::move(*got->history)}));
                break;
            }
        }
    }

    std::shared_ptr<Instance> instance_;
    envoy::WebSocketSender sender_;
    rt::Clock& clock_;
    inspector::WireMode mode_;
};

Task<void> run_session(std::shared_ptr<InspectorSession> session, rt::Receiver<Inbound> inbound,
                       rt::Receiver<Bytes> overlay, rt::Receiver<InspectorSignal> signals,
                       InspectorAttachGuard attached) {
    co_await session->run(std::move(inbound), std::move(overlay), std::move(signals),
                          std::move(attached));
}

std::optional<std::string> offered_token(const envoy::Headers& headers) {
    if (auto token = protocol_with_prefix(subprotocols(headers), "rivet_inspector_token."))
        return token;
    return bearer_token(header_value(headers, "authorization").value_or(""));
}

}  // namespace

Task<Result<std::shared_ptr<envoy::WebSocketListener>>> CoreRegistry::open_inspector_websocket(
    std::shared_ptr<Instance> instance, envoy::WebSocketOpen open, envoy::WebSocketSender sender) {
    auto self = shared_from_this();
    auto mode = inspector::wire_mode_from_path(open.path);
    if (!mode.ok()) {
        log::warn("rejecting invalid inspector protocol version",
                  {{"actor_id", instance->actor_id},
                   {"path", open.path},
                   {"error", mode.error().to_string()}});
        co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1002,
                                   "inspector.invalid_protocol_version");
    }
    const inspector::WireMode wire_mode = mode.value();
    std::optional<std::string> token = offered_token(open.headers);
    Status authorized = co_await inspector::verify_token(instance->ctx, std::move(token));
    if (!authorized.ok()) {
        log::warn("rejecting inspector websocket without a valid token",
                  {{"actor_id", instance->actor_id}});
        co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1008,
                                   "inspector.unauthorized");
    }
    // Subscribed before Init is built, so nothing that happens meanwhile is missed.
    auto attached = instance->ctx.inspector_attach();
    auto overlay = instance->ctx.subscribe_inspector();
    if (!attached || !overlay) {
        log::error("inspector runtime missing during websocket attach",
                   {{"actor_id", instance->actor_id}});
        co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                   "inspector.runtime_missing");
    }
    auto signals = instance->ctx.subscribe_inspector_signals();
    auto init = co_await build_init(instance);
    if (!init.ok()) {
        log::error("failed to build inspector init message",
                   {{"actor_id", instance->actor_id}, {"error", init.error().to_string()}});
        co_return closing_listener(executor_, std::move(sender), std::nullopt, false, 1011,
                                   "inspector.init_error");
    }
    // Init goes out right after the envoy reports the socket open; the session's frames follow.
    asio::post(executor_, [sender, frame = inspector::encode_server_message(
                                       body_of(std::move(init).value()), wire_mode)]() mutable {
        sender.send(std::move(frame), true);
    });
    auto [tx, rx] = rt::unbounded_channel<Inbound>();
    auto session = std::make_shared<InspectorSession>(instance, sender, clock_, wire_mode);
    rt::spawn(executor_, run_session(std::move(session), std::move(rx), std::move(*overlay),
                                     std::move(signals), std::move(*attached)));
    co_return std::shared_ptr<envoy::WebSocketListener>(
        std::make_shared<InspectorListener>(std::move(tx)));
}

}  // namespace rivetkit::core::registry

// Tunneled WebSockets: open (accepted or rejected by the callbacks), messages both ways, close,
// and hibernation. A hibernatable socket acks every delivered message (the gateway buffers until
// acked) unless its listener acks them itself after persisting, survives a sleep of its actor — the
// listener is dropped, path/headers/last index kept in memory — and is re-attached when the next
// generation's StartActor lists it. Duplicates (index ≤ last) are dropped; a gap closes the socket
// with 1008 ws.message_index_skip (as upstream).

#include <algorithm>

#include "base/log.hpp"
#include "envoy/protocol.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy::detail {

namespace asio = boost::asio;

namespace {

void send_ws(EnvoyState& st, WsStream& ws, proto::ToRivetTunnelMessageKind kind) {
    proto::MessageId mid{ws.id.gateway_id, ws.id.request_id, ws.next_out_index++};
    st.send_tunnel(proto::ToRivetTunnelMessage{mid, std::move(kind)}, ws.backlog);
}

void send_close(EnvoyState& st, const TunnelId& id, std::uint16_t code, std::string reason) {
    proto::MessageId mid{id.gateway_id, id.request_id, 0};
    proto::ToRivetWebSocketClose close{code, std::move(reason), false};
    st.send_tunnel(
        proto::ToRivetTunnelMessage{mid, proto::ToRivetTunnelMessageKind{std::move(close)}});
}

void ack(EnvoyState& st, WsStream& ws, std::uint16_t index) {
    if (ws.can_hibernate && !(ws.listener && ws.listener->acks_messages())) {
        ws.last_acked_index = index;
        send_ws(st, ws, proto::ToRivetTunnelMessageKind{proto::ToRivetWebSocketMessageAck{index}});
    }
}

// Acks follow delivery to a live listener: the gateway keeps un-acked messages and delivers them
// again when the socket is restored, so nothing is acked that the actor has not seen.
void deliver(EnvoyState& st, WsStream& ws, WebSocketMessage message) {
    std::uint16_t index = message.index;
    if (ws.listener) {
        ws.listener->on_message(std::move(message));
        ack(st, ws, index);
    } else {
        ws.early.push_back(std::move(message));
    }
}

asio::awaitable<void> run_open(std::shared_ptr<EnvoyState> st, std::shared_ptr<WsStream> ws,
                               WebSocketOpen open) {
    Result<std::shared_ptr<WebSocketListener>> accepted =
        Error("envoy", "shutdown", "envoy is shut down");
    if (st->callbacks) {
        EnvoyHandle handle = st->handle();
        WebSocketSender sender(st, ws->id);
        auto opening = st->callbacks->websocket(handle, std::move(open), sender);
        try {
            accepted = co_await std::move(opening);
        } catch (...) {
            accepted = error_from_exception(std::current_exception());
        }
    }
    auto it = st->websockets.find(ws->id.key());
    if (it == st->websockets.end() || it->second != ws)
        co_return;  // closed meanwhile
    if (!accepted.ok() || !*accepted) {
        std::string reason = accepted.ok()
                                 ? "envoy.rejected"
                                 : accepted.error().group() + "." + accepted.error().code();
        log::info("websocket rejected", {{"actor_id", ws->actor_id}, {"reason", reason}});
        st->websockets.erase(it);
        send_close(*st, ws->id, 1011, std::move(reason));
        co_return;
    }
    ws->listener = std::move(*accepted);
    send_ws(*st, *ws,
            proto::ToRivetTunnelMessageKind{proto::ToRivetWebSocketOpen{ws->can_hibernate}});
    ws->awaiting_open = false;
    for (auto& [data, binary] : std::exchange(ws->pending_out, {}))
        send_websocket_frame(*st, ws->id, std::move(data), binary);
    while (!ws->early.empty() && ws->listener) {
        auto m = std::move(ws->early.front());
        ws->early.pop_front();
        std::uint16_t index = m.index;
        ws->listener->on_message(std::move(m));
        ack(*st, *ws, index);
    }
}

void on_open(EnvoyState& st, const TunnelId& id, proto::ToEnvoyWebSocketOpen open) {
    auto actor = st.find_actor(open.actor_id, open.actor_generation);
    if (!actor) {
        log::warn("websocket for unknown actor",
                  {{"actor_id", open.actor_id}, {"request", id.to_hex()}});
        send_close(st, id, 1011, "envoy.actor_not_found");
        return;
    }
    auto existing = st.websockets.find(id.key());
    log::debug("websocket open", {{"actor_id", actor->actor_id},
                                  {"request", id.to_hex()},
                                  {"existing", existing != st.websockets.end()},
                                  {"existing_hibernating", existing != st.websockets.end() &&
                                                               existing->second->hibernating}});
    auto ws = std::make_shared<WsStream>();
    ws->actor_id = actor->actor_id;
    ws->generation = actor->generation;
    ws->id = id;
    ws->path = open.path;
    ws->headers = open.headers;
    // The gateway's WebSocketOpen is index 0; client messages continue from there.
    ws->last_in_index = 0;
    ws->last_acked_index = 0;
    WebSocketOpen request{actor->actor_id, id, std::move(open.path), std::move(open.headers),
                          false};
    ws->can_hibernate = st.callbacks && st.callbacks->can_hibernate(request);
    request.can_hibernate = ws->can_hibernate;
    ws->awaiting_open = true;
    st.websockets[id.key()] = ws;
    st.tasks.spawn(st.executor, run_open(st.shared_from_this(), ws, std::move(request)));
}

void on_message(EnvoyState& st, const TunnelId& id, std::uint16_t index,
                proto::ToEnvoyWebSocketMessage message) {
    auto it = st.websockets.find(id.key());
    if (it == st.websockets.end()) {
        log::debug("message for unknown websocket ignored", {{"request", id.to_hex()}});
        return;
    }
    auto ws = it->second;
    if (ws->hibernating) {
        // Sent while the actor was stopping: left un-acked, so the gateway delivers it again
        // after the socket is restored on wake.
        log::debug("message for hibernating websocket left for redelivery",
                   {{"request", id.to_hex()}, {"index", static_cast<unsigned>(index)}});
        return;
    }
    if (ws->can_hibernate && ws->last_in_index) {
        std::uint16_t last = *ws->last_in_index;
        if (!index_after(index, last)) {
            log::debug("duplicate websocket message dropped",
                       {{"request", id.to_hex()}, {"index", static_cast<unsigned>(index)}});
            return;
        }
        if (index != static_cast<std::uint16_t>(last + 1)) {
            log::warn("websocket message index gap, closing",
                      {{"request", id.to_hex()},
                       {"expected", static_cast<unsigned>(static_cast<std::uint16_t>(last + 1))},
                       {"got", static_cast<unsigned>(index)}});
            auto listener = std::move(ws->listener);
            st.websockets.erase(it);
            send_close(st, id, 1008, "ws.message_index_skip");
            if (listener)
                listener->on_close(CloseFrame{1008, "ws.message_index_skip"});
            return;
        }
    }
    ws->last_in_index = index;
    deliver(st, *ws, WebSocketMessage{std::move(message.data), message.binary, index});
}

void on_close(EnvoyState& st, const TunnelId& id, proto::ToEnvoyWebSocketClose close) {
    auto it = st.websockets.find(id.key());
    if (it == st.websockets.end())
        return;
    auto listener = std::move(it->second->listener);
    st.websockets.erase(it);
    if (listener)
        listener->on_close(CloseFrame{close.code, std::move(close.reason)});
}

}  // namespace

void handle_websocket_message(EnvoyState& st, const TunnelId& id, std::uint16_t index,
                              proto::ToEnvoyTunnelMessageKind kind) {
    auto& v = kind.value;
    if (auto* open = std::get_if<proto::ToEnvoyWebSocketOpen>(&v)) {
        on_open(st, id, std::move(*open));
    } else if (auto* message = std::get_if<proto::ToEnvoyWebSocketMessage>(&v)) {
        on_message(st, id, index, std::move(*message));
    } else if (auto* close = std::get_if<proto::ToEnvoyWebSocketClose>(&v)) {
        on_close(st, id, std::move(*close));
    }
}

void send_websocket_frame(EnvoyState& st, const TunnelId& id, Bytes data, bool binary) {
    auto it = st.websockets.find(id.key());
    if (it == st.websockets.end() || it->second->hibernating)
        return;
    if (it->second->awaiting_open) {
        it->second->pending_out.emplace_back(std::move(data), binary);
        return;
    }
    const std::size_t limit = st.config.websocket_backlog_limit_bytes;
    if (limit > 0 && it->second->backlog->bytes + data.size() > limit) {
        // A reader slower than its writer (or an engine that stopped reading): rather than hold
        // an ever-growing queue, close the socket. What it still had queued is skipped, the
        // gateway gets the close, and the listener hears it like any close.
        auto ws = it->second;
        log::warn("websocket closed: outgoing backlog over its limit",
                  {{"actor_id", ws->actor_id},
                   {"backlog_bytes", static_cast<unsigned long long>(ws->backlog->bytes)},
                   {"limit_bytes", static_cast<unsigned long long>(limit)}});
        ws->backlog->dropped = true;
        st.websockets.erase(it);
        ws->backlog = std::make_shared<WsBacklog>();  // the close itself is not skipped
        send_ws(st, *ws,
                proto::ToRivetTunnelMessageKind{
                    proto::ToRivetWebSocketClose{1011, "ws.outgoing_backlog_full", false}});
        if (auto listener = ws->listener)
            listener->on_close(CloseFrame{1011, "ws.outgoing_backlog_full"});
        return;
    }
    send_ws(
        st, *it->second,
        proto::ToRivetTunnelMessageKind{proto::ToRivetWebSocketMessage{std::move(data), binary}});
}

void ack_websocket_message(EnvoyState& st, const TunnelId& id, std::uint16_t index) {
    auto it = st.websockets.find(id.key());
    if (it == st.websockets.end() || it->second->hibernating || !it->second->can_hibernate)
        return;
    it->second->last_acked_index = index;
    send_ws(st, *it->second,
            proto::ToRivetTunnelMessageKind{proto::ToRivetWebSocketMessageAck{index}});
}

void close_websocket_locally(EnvoyState& st, const TunnelId& id, CloseFrame frame) {
    auto it = st.websockets.find(id.key());
    if (it == st.websockets.end())
        return;
    auto ws = it->second;
    st.websockets.erase(it);
    proto::ToRivetWebSocketClose close{frame.code, std::move(frame.reason), false};
    send_ws(st, *ws, proto::ToRivetTunnelMessageKind{std::move(close)});
}

void on_actor_stopped_tunnels(EnvoyState& st, const ActorKey& key, StopReason reason) {
    std::vector<std::shared_ptr<WsStream>> closing;
    for (auto& [k, ws] : st.websockets) {
        if (ws->actor_id != key.actor_id || ws->generation != key.generation || ws->hibernating)
            continue;
        // Every stop after which the actor lives on (sleep, a draining or lost envoy — the
        // core keeps its hibernatable connections for these too) leaves a hibernatable socket
        // open at the gateway, re-attached where the actor wakes; only a destroy closes it.
        const bool actor_lives_on =
            reason != StopReason::stop_intent && reason != StopReason::destroy;
        if (ws->can_hibernate && actor_lives_on) {
            // Before the socket counts as hibernating, so the listener can still ack what the
            // actor's final save carried.
            if (auto listener = std::move(ws->listener))
                listener->on_hibernate();
            ws->hibernating = true;
            ws->early.clear();
            // Delivered but never acked (the actor deferred it while entering sleep): the
            // gateway sends it again after the wake, and it must not count as a duplicate then.
            ws->last_in_index = ws->last_acked_index;
        } else {
            closing.push_back(ws);
        }
    }
    for (auto& ws : closing) {
        st.websockets.erase(ws->id.key());
        proto::ToRivetWebSocketClose close{1011, std::string("actor.stopped"), false};
        send_ws(st, *ws, proto::ToRivetTunnelMessageKind{std::move(close)});
        if (auto listener = std::move(ws->listener))
            listener->on_close(CloseFrame{1011, "actor.stopped"});
    }
}

void restore_hibernating_websockets(EnvoyState& st, const ActorKey& key,
                                    const std::vector<TunnelId>& requests) {
    std::vector<HibernatingWebSocketMeta> metas;
    if (auto pending = st.pending_restores.find(key.actor_id);
        pending != st.pending_restores.end()) {
        metas = std::move(pending->second);
        st.pending_restores.erase(pending);
    }
    std::vector<std::uint64_t> listed;
    for (const auto& id : requests) {
        listed.push_back(id.key());
        std::shared_ptr<WsStream> ws;
        auto it = st.websockets.find(id.key());
        auto meta = std::find_if(metas.begin(), metas.end(),
                                 [&](const HibernatingWebSocketMeta& m) { return m.id == id; });
        if (it != st.websockets.end() && it->second->hibernating &&
            it->second->actor_id == key.actor_id) {
            ws = it->second;
            // Messages the actor persisted but had not acked when it slept are durable: ack them
            // now, and the gateway's re-sends of them are skipped as duplicates.
            if (meta != metas.end() &&
                index_after(meta->last_client_index, ws->last_acked_index.value_or(0))) {
                ws->last_acked_index = meta->last_client_index;
                ws->last_in_index = meta->last_client_index;
                send_ws(st, *ws,
                        proto::ToRivetTunnelMessageKind{
                            proto::ToRivetWebSocketMessageAck{meta->last_client_index}});
            }
        } else if (it == st.websockets.end()) {
            // Opened by another process (this host restarted while the actor slept): rebuilt
            // from what the actor persisted about it.
            if (meta != metas.end()) {
                ws = std::make_shared<WsStream>();
                ws->actor_id = key.actor_id;
                ws->id = id;
                ws->path = meta->path;
                ws->headers = meta->headers;
                ws->can_hibernate = true;
                ws->last_in_index = meta->last_client_index;
                ws->last_acked_index = meta->last_client_index;
                st.websockets[id.key()] = ws;
            } else {
                log::warn("hibernating websocket has no persisted metadata, closing",
                          {{"actor_id", key.actor_id}, {"request", id.to_hex()}});
                send_close(st, id, 1000, "ws.meta_not_found_during_restore");
                continue;
            }
        }
        if (!ws) {
            log::warn("hibernating websocket cannot be restored, closing",
                      {{"actor_id", key.actor_id}, {"request", id.to_hex()}});
            send_close(st, id, 1011, "ws.restore_failed");
            continue;
        }
        ws->hibernating = false;
        ws->generation = key.generation;
        log::debug("restoring hibernating websocket",
                   {{"actor_id", key.actor_id}, {"request", id.to_hex()}});
        WebSocketOpen open{key.actor_id, id, ws->path, ws->headers, true, true};
        st.tasks.spawn(st.executor, run_open(st.shared_from_this(), ws, std::move(open)));
    }
    // Hibernating sockets of this actor that the engine no longer lists are gone at the gateway.
    for (auto it = st.websockets.begin(); it != st.websockets.end();) {
        const auto& ws = *it->second;
        bool stale = ws.hibernating && ws.actor_id == key.actor_id &&
                     std::find(listed.begin(), listed.end(), it->first) == listed.end();
        it = stale ? st.websockets.erase(it) : std::next(it);
    }
}

}  // namespace rivetkit::envoy::detail

// Tunneled HTTP. Both gateway behaviours of 2.3.19 are served:
//  - "gateway 2": the body arrives inline in RequestStart, the response goes back inline;
//  - "gateway 3" (stream / responseStream): the body arrives in chunks and we return credit with
//    cumulative RequestBodyWindowUpdates (the gateway stalls after ~1 MiB otherwise); large
//    responses are streamed in chunks, un-acknowledged bytes kept one chunk below
//    `response_window_bytes` (see response_window_open).
// The handler sees whole bodies both ways, unless it asks for a streamed request body
// (EnvoyCallbacks::stream_request_body): then it is called at RequestStart, reads the chunks from
// an HttpBodyStream, and the gateway is credited as it reads. Our message indexes run per request from 0, shared by
// response frames and window updates (accepted by the engine).

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "envoy/state.hpp"

namespace rivetkit::envoy::detail {

namespace asio = boost::asio;

namespace {

proto::MessageId message_id(const TunnelId& id, std::uint16_t index) {
    return proto::MessageId{id.gateway_id, id.request_id, index};
}

void send_http(EnvoyState& st, const TunnelId& id, HttpStream& s,
               proto::ToRivetTunnelMessageKind kind) {
    st.send_tunnel(
        proto::ToRivetTunnelMessage{message_id(id, s.next_out_index++), std::move(kind)});
}

void respond_actor_not_found(EnvoyState& st, const TunnelId& id) {
    std::string body = "Actor not found";
    proto::ToRivetResponseStart start;
    start.status = 503;
    start.headers = {{"x-rivet-error", "envoy.actor_not_found"},
                     {"content-length", std::to_string(body.size())}};
    start.body = to_bytes(body);
    start.stream = false;
    st.send_tunnel(proto::ToRivetTunnelMessage{message_id(id, 0),
                                               proto::ToRivetTunnelMessageKind{std::move(start)}});
}

// Whether `n` more response body bytes may be sent now.
//
// Gateway 3 returns response credit (ResponseBodyWindowUpdate.consumedBytes) as its HTTP layer
// takes the bytes, and separately bounds the bytes it queues per request between the tunnel and
// that layer by the same 1 MiB (min(gateway_streaming_http_response_queue_max_bytes, window)).
// That queue can still count a message whose bytes were already credited: measured on 2.3.19,
// with a full window un-acknowledged the next chunk overflowed the queue whenever the client
// read slowly (gateway log "actor response producer outpaced downstream delivery and filled the
// HTTP response queue"; the gateway aborts the request and the client gets a truncated chunked
// body), while one chunk of headroom never did. So un-acknowledged bytes plus the next chunk stay
// within the window minus one chunk (our largest message). With nothing un-acknowledged a chunk
// may always go, so windows under two chunks still make progress.
bool response_window_open(const EnvoyConfig& config, const HttpStream& s, std::uint64_t n) {
    const std::uint64_t in_flight =
        s.response_sent > s.response_acked ? s.response_sent - s.response_acked : 0;
    if (in_flight == 0)
        return true;
    return in_flight + n + config.response_chunk_bytes <= config.response_window_bytes;
}

// ResponseStart's headers are a BARE map: each name at most once (a repeated key is a malformed
// message; the engine would keep one of the values). HTTP names are case-insensitive, so a name
// repeated in any case is folded into its first occurrence, the values joined by ", " as a list
// field allows (RFC 9110, 5.3). set-cookie cannot be joined: its first value stays and the others
// are dropped, with a warning.
void fold_repeated_headers(Headers& headers, const std::string& actor_id) {
    for (std::size_t i = 1; i < headers.size();) {
        std::size_t first = 0;
        while (first < i && !ascii_iequals(headers[first].first, headers[i].first))
            ++first;
        if (first == i) {
            ++i;
            continue;
        }
        if (ascii_iequals(headers[i].first, "set-cookie")) {
            log::warn("response header set-cookie repeated; the protocol carries one, later ones "
                      "dropped",
                      {{"actor_id", actor_id}});
        } else {
            headers[first].second += ", ";
            headers[first].second += headers[i].second;
        }
        headers.erase(headers.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

asio::awaitable<void> send_response(std::shared_ptr<EnvoyState> st, TunnelId id,
                                    std::shared_ptr<HttpStream> s, HttpResponse response) {
    const std::size_t chunk = st->config.response_chunk_bytes;
    fold_repeated_headers(response.headers, s->actor_id);
    if (!s->response_stream || response.body.size() <= chunk) {
        proto::ToRivetResponseStart start{response.status, std::move(response.headers),
                                          std::move(response.body), false};
        send_http(*st, id, *s, proto::ToRivetTunnelMessageKind{std::move(start)});
        co_return;
    }
    proto::ToRivetResponseStart start{response.status, std::move(response.headers), std::nullopt,
                                      true};
    send_http(*st, id, *s, proto::ToRivetTunnelMessageKind{std::move(start)});
    const Bytes& body = response.body;
    std::size_t offset = 0;
    while (offset < body.size()) {
        std::size_t n = std::min(chunk, body.size() - offset);
        // The gateway aborts a response that outruns its buffer; wait for credit.
        while (!s->aborted && !response_window_open(st->config, *s, n))
            co_await s->window.notified();
        if (s->aborted)
            co_return;
        proto::ToRivetResponseChunk piece;
        piece.body.assign(body.begin() + static_cast<std::ptrdiff_t>(offset),
                          body.begin() + static_cast<std::ptrdiff_t>(offset + n));
        offset += n;
        piece.finish = offset == body.size();
        s->response_sent += n;
        send_http(*st, id, *s, proto::ToRivetTunnelMessageKind{std::move(piece)});
    }
}

asio::awaitable<void> run_fetch(std::shared_ptr<EnvoyState> st, TunnelId id,
                                std::shared_ptr<HttpStream> s) {
    HttpResponse response;
    if (!st->callbacks) {
        response.status = 503;
    } else {
        EnvoyHandle handle = st->handle();
        auto fetching = st->callbacks->fetch(handle, std::move(s->request));
        try {
            response = co_await std::move(fetching);
        } catch (...) {
            Error e = error_from_exception(std::current_exception());
            log::warn("fetch handler failed",
                      {{"actor_id", s->actor_id}, {"error", e.to_string()}});
            response = HttpResponse{500, {{"x-rivet-error", e.group() + "." + e.code()}}, {}};
        }
    }
    if (s->body && !s->body->complete())
        s->body->fail(envoy_error("response_sent", "the handler answered before the body ended"));
    if (!s->aborted)
        co_await send_response(st, id, s, std::move(response));
    auto it = st->http.find(id.key());
    if (it != st->http.end() && it->second == s)
        st->http.erase(it);
}

void dispatch(EnvoyState& st, const TunnelId& id, const std::shared_ptr<HttpStream>& s) {
    s->dispatched = true;
    // From the run queue, where the rest of the request's way runs (rt::spawn_queued).
    st.tasks.spawn_queued(st.executor, run_fetch(st.shared_from_this(), id, s));
}

void on_request_start(EnvoyState& st, const TunnelId& id, proto::ToEnvoyRequestStart start) {
    if (st.http.contains(id.key())) {
        log::warn("duplicate tunnel request start ignored", {{"request", id.to_hex()}});
        return;
    }
    auto actor = st.find_actor(start.actor_id, start.actor_generation);
    if (!actor) {
        log::warn("tunnel request for unknown actor",
                  {{"actor_id", start.actor_id}, {"request", id.to_hex()}});
        respond_actor_not_found(st, id);
        return;
    }
    auto s = std::make_shared<HttpStream>();
    s->actor_id = actor->actor_id;
    s->generation = actor->generation;
    s->streaming_request = start.stream;
    s->response_stream = start.response_stream;
    s->request.actor_id = actor->actor_id;
    s->request.id = id;
    s->request.method = std::move(start.method);
    s->request.path = std::move(start.path);
    s->request.headers = std::move(start.headers);
    if (start.body)
        s->request.body = std::move(*start.body);
    st.http.emplace(id.key(), s);
    if (s->streaming_request && st.callbacks && st.callbacks->stream_request_body(s->request)) {
        s->body = std::make_shared<HttpBodyStream>(st.weak_from_this(), id);
        if (!s->request.body.empty())
            s->body->push(std::move(s->request.body));
        s->request.body.clear();
        s->request.body_stream = s->body;
        dispatch(st, id, s);
        return;
    }
    if (!s->streaming_request)
        dispatch(st, id, s);
}

void on_request_chunk(EnvoyState& st, const TunnelId& id, proto::ToEnvoyRequestChunk chunk) {
    auto it = st.http.find(id.key());
    if (it == st.http.end())
        return;
    auto s = it->second;
    if (s->body) {
        // Credit goes back as the handler reads (credit_request_body).
        s->body->push(std::move(chunk.body));
        if (chunk.finish)
            s->body->finish();
        return;
    }
    if (!s->streaming_request || s->dispatched)
        return;
    s->request.body.insert(s->request.body.end(), chunk.body.begin(), chunk.body.end());
    s->request_consumed += chunk.body.size();
    if (!chunk.finish) {
        send_http(st, id, *s,
                  proto::ToRivetTunnelMessageKind{
                      proto::ToRivetRequestBodyWindowUpdate{s->request_consumed}});
        return;
    }
    dispatch(st, id, s);
}

}  // namespace

void credit_request_body(EnvoyState& st, const TunnelId& id, std::uint64_t total_read) {
    auto it = st.http.find(id.key());
    if (it == st.http.end() || it->second->aborted)
        return;
    auto& s = *it->second;
    if (total_read <= s.request_consumed)
        return;
    s.request_consumed = total_read;
    send_http(st, id, s,
              proto::ToRivetTunnelMessageKind{
                  proto::ToRivetRequestBodyWindowUpdate{s.request_consumed}});
}

void handle_http_message(EnvoyState& st, const TunnelId& id, std::uint16_t /*index*/,
                         proto::ToEnvoyTunnelMessageKind kind) {
    auto& v = kind.value;
    if (auto* start = std::get_if<proto::ToEnvoyRequestStart>(&v)) {
        on_request_start(st, id, std::move(*start));
    } else if (auto* chunk = std::get_if<proto::ToEnvoyRequestChunk>(&v)) {
        on_request_chunk(st, id, std::move(*chunk));
    } else if (std::holds_alternative<proto::ToEnvoyRequestAbort>(v)) {
        auto it = st.http.find(id.key());
        if (it == st.http.end())
            return;
        log::debug("tunnel request aborted", {{"request", id.to_hex()}});
        if (it->second->body)
            it->second->body->fail(envoy_error("request_aborted", "the request was aborted"));
        it->second->aborted = true;
        it->second->window.notify_one();
        st.http.erase(it);
    } else if (std::holds_alternative<proto::ToEnvoyRequestBodyCancel>(v)) {
        // The body ends here, but the gateway still wants a response.
        auto it = st.http.find(id.key());
        if (it == st.http.end())
            return;
        if (it->second->body) {
            it->second->body->fail(
                envoy_error("request_body_cancelled", "the request body was cancelled"));
        } else if (!it->second->dispatched) {
            dispatch(st, id, it->second);
        }
    } else if (auto* update = std::get_if<proto::ToEnvoyResponseBodyWindowUpdate>(&v)) {
        auto it = st.http.find(id.key());
        if (it == st.http.end())
            return;
        auto& s = *it->second;
        s.response_acked = std::max(s.response_acked, update->consumed_bytes);
        s.window.notify_one();
    }
}

void handle_tunnel_message(EnvoyState& st, proto::ToEnvoyTunnelMessage message) {
    TunnelId id{message.message_id.gateway_id, message.message_id.request_id};
    std::uint16_t index = message.message_id.message_index;
    std::size_t kind = message.message_kind.value.index();
    // Variant order: RequestStart, RequestChunk, RequestAbort, RequestBodyCancel,
    // ResponseBodyWindowUpdate, then WebSocketOpen, WebSocketMessage, WebSocketClose.
    if (kind <= 4) {
        handle_http_message(st, id, index, std::move(message.message_kind));
    } else {
        handle_websocket_message(st, id, index, std::move(message.message_kind));
    }
}

}  // namespace rivetkit::envoy::detail

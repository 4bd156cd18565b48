// KV requests: u32 ids per envoy process, one pending entry per request until its response,
// timeout (on the envoy's clock) or the envoy's end. Requests made while disconnected, and
// requests in flight when a connection drops, are (re)sent after the next ToEnvoyInit; every KV
// operation is idempotent, so a duplicate delivery is harmless.

#include "base/log.hpp"
#include "envoy/state.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::envoy::detail {

namespace asio = boost::asio;

void handle_kv_response(EnvoyState& st, proto::ToEnvoyKvResponse response) {
    auto it = st.kv_pending.find(response.request_id);
    if (it == st.kv_pending.end()) {
        log::warn("kv response for unknown request ignored",
                  {{"request_id", static_cast<unsigned>(response.request_id)}});
        return;
    }
    auto pending = std::move(it->second);
    st.kv_pending.erase(it);
    pending.reply.send(Result<proto::KvResponseData>(std::move(response.data)));
}

void resend_pending_kv(EnvoyState& st) {
    for (const auto& [id, pending] : st.kv_pending)
        st.outbox.push_back(pending.frame);
}

void fail_pending_kv(EnvoyState& st, const Error& error) {
    auto pending = std::move(st.kv_pending);
    st.kv_pending.clear();
    for (auto& [id, p] : pending)
        p.reply.send(Result<proto::KvResponseData>(error));
}

asio::awaitable<Result<proto::KvResponseData>> kv_request(std::shared_ptr<EnvoyState> st,
                                                          std::string actor_id,
                                                          proto::KvRequestData data) {
    // Stopped, or closing with no connection left to carry the request: fail now rather than
    // wait out the request timeout for a reconnect that will not come.
    if (st->stopped || (st->shutting_down && !st->connected))
        co_return envoy_error("shutdown", "envoy is shut down");
    std::uint32_t id = st->next_kv_request_id++;
    proto::ToRivet message{proto::ToRivetKvRequest{actor_id, id, std::move(data)}};
    auto [tx, rx] = rt::oneshot<Result<proto::KvResponseData>>();
    Bytes frame = st->encode(message);
    if (st->connected) {
        st->outbox.push_back(frame);
        st->outbox_ready.notify_one();
    }
    st->kv_pending.emplace(id, PendingKv{actor_id, std::move(tx), std::move(frame)});

    std::optional<std::optional<Result<proto::KvResponseData>>> reply =
        co_await rt::recv_timeout(st->clock, st->config.kv_request_timeout, rx);
    if (!reply) {
        st->kv_pending.erase(id);
        log::warn("kv request timed out",
                  {{"actor_id", actor_id}, {"request_id", static_cast<unsigned>(id)}});
        co_return Error("kv", "timeout", "kv request timed out");
    }
    if (!*reply)
        co_return envoy_error("shutdown", "envoy is shut down");
    co_return std::move(**reply);
}

}  // namespace rivetkit::envoy::detail

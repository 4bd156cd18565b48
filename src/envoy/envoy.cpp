#include "envoy/envoy.hpp"

#include <cstdio>

#include "bare/codec.hpp"
#include "base/random.hpp"
#include "envoy/protocol.hpp"
#include "envoy/state.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::envoy {

std::uint64_t TunnelId::key() const noexcept {
    std::uint64_t k = 0;
    for (auto b : gateway_id)
        k = (k << 8) | b;
    for (auto b : request_id)
        k = (k << 8) | b;
    return k;
}

std::string TunnelId::to_hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(key()));
    return buf;
}

const char* to_string(StopReason reason) noexcept {
    switch (reason) {
        case StopReason::sleep_intent:
            return "sleep_intent";
        case StopReason::stop_intent:
            return "stop_intent";
        case StopReason::destroy:
            return "destroy";
        case StopReason::going_away:
            return "going_away";
        case StopReason::lost:
            return "lost";
    }
    return "unknown";
}

namespace detail {

namespace {
// Encode buffers kept for reuse; frames above this size are released instead of pooled so one
// big tunnel body does not pin memory. The pool covers the frames in flight at once in steady
// traffic; at most 1 MiB per engine connection (64 of up to 256 KiB was 16 MiB, and after a
// burst of starts it held 64 page commits of ~4.5 KB each).
constexpr std::size_t kMaxSpareBuffers = 16;
constexpr std::size_t kMaxPooledCapacity = 64 * 1024;
}  // namespace

EnvoyState::EnvoyState(boost::asio::any_io_executor ex, rt::Clock& c, EnvoyConfig cfg,
                       std::shared_ptr<EnvoyCallbacks> cb, std::shared_ptr<TransportFactory> tf)
    : executor(std::move(ex)),
      clock(c),
      config(std::move(cfg)),
      callbacks(std::move(cb)),
      transports(std::move(tf)),
      rng(config.rng_seed ? std::mt19937_64(*config.rng_seed) : random_engine()) {
    if (config.envoy_key.empty())
        config.envoy_key = generate_envoy_key(rng(), rng());
}

Bytes EnvoyState::encode(const proto::ToRivet& message) {
    Bytes buffer;
    if (!spare_buffers.empty()) {
        buffer = std::move(spare_buffers.back());
        spare_buffers.pop_back();
    }
    bare::Writer w(std::move(buffer));
    bare::encode_into(w, message);
    return w.take();
}

void EnvoyState::recycle(Bytes buffer) {
    if (spare_buffers.size() < kMaxSpareBuffers && buffer.capacity() <= kMaxPooledCapacity) {
        buffer.clear();
        spare_buffers.push_back(std::move(buffer));
    }
}

bool EnvoyState::send(const proto::ToRivet& message) {
    if (!connected)
        return false;
    outbox.push_back(encode(message));
    outbox_ready.notify_one();
    return true;
}

void EnvoyState::send_tunnel(proto::ToRivetTunnelMessage message,
                             std::shared_ptr<WsBacklog> backlog) {
    proto::ToRivet out{std::move(message)};
    TunnelFrame frame{encode(out), std::move(backlog)};
    if (frame.backlog)
        frame.backlog->bytes += frame.bytes.size();
    if (connected) {
        tunnel_outbox.push_back(std::move(frame));
        outbox_ready.notify_one();
    } else {
        offline_tunnel.push_back(std::move(frame));
    }
}

void EnvoyState::discard_tunnel_frames(std::deque<TunnelFrame>& frames) {
    for (auto& f : frames) {
        if (f.backlog)
            f.backlog->bytes -= f.bytes.size();
    }
    frames.clear();
}

std::optional<ActorKey> EnvoyState::find_actor(const std::string& actor_id,
                                               std::optional<std::uint32_t> generation) const {
    if (generation) {
        auto found = actors.find(ActorKeyRef{actor_id, *generation});
        if (found == actors.end())
            return std::nullopt;
        return found->first;
    }
    auto it = actors.upper_bound(ActorKeyRef{actor_id, UINT32_MAX});
    if (it == actors.begin())
        return std::nullopt;
    --it;
    if (it->first.actor_id != actor_id)
        return std::nullopt;
    return it->first;
}

Error envoy_error(std::string code, std::string message) {
    return Error("envoy", std::move(code), std::move(message));
}

}  // namespace detail

EnvoyHandle start_envoy(boost::asio::any_io_executor executor, rt::Clock& clock, EnvoyConfig config,
                        std::shared_ptr<EnvoyCallbacks> callbacks,
                        std::shared_ptr<TransportFactory> transports) {
    if (!transports)
        transports = make_websocket_transport_factory(config.tls);
    auto st = std::make_shared<detail::EnvoyState>(executor, clock, std::move(config),
                                                   std::move(callbacks), std::move(transports));
    // Detached: the run loop holds the state and ends on shutdown or eviction.
    rt::spawn(executor, detail::run_envoy(st));
    return EnvoyHandle(st);
}

}  // namespace rivetkit::envoy

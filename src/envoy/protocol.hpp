#pragma once
// Pure protocol helpers: the connect URL, close-reason parsing, tunnel ids, u16 index order.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "envoy/config.hpp"
#include "envoy/transport.hpp"

namespace rivetkit::envoy {

// ws(s)://host:port/envoys/connect?protocol_version=8&namespace=…&envoy_key=…&version=…&pool_name=…
// with subprotocols "rivet" (+ "rivet_token.<t>"). Accepts http(s):// and ws(s):// endpoints.
Result<ConnectTarget> build_connect_target(const EnvoyConfig& config, std::string_view envoy_key);

// "<group>.<code>#<ray_id>" as the engine sends in close frames.
struct CloseReason {
    std::string group;
    std::string code;
    std::optional<std::string> ray_id;
};
std::optional<CloseReason> parse_close_reason(std::string_view reason);

// Eviction (another connection took this envoy key) is the one close after which upstream
// never reconnects.
bool is_eviction(const std::optional<CloseReason>& reason) noexcept;

// Wrap-aware order of u16 message indexes (a is after b).
inline bool index_after(std::uint16_t a, std::uint16_t b) noexcept {
    return a != b && static_cast<std::uint16_t>(a - b) < 0x8000;
}

// 3..128 chars of [0-9a-zA-Z_-], random; what the engine accepts as envoy_key.
std::string generate_envoy_key(std::uint64_t seed_a, std::uint64_t seed_b);

}  // namespace rivetkit::envoy

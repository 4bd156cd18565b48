#pragma once
// Route classification and small helpers shared by the registry's HTTP and WebSocket paths.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.hpp"

namespace rivetkit::core::registry {

// The rivetkit release whose client protocol this host speaks (reported by GET /metadata).
inline constexpr std::string_view kRivetkitCompatVersion = "2.3.19";

struct Route {
    enum class Kind : std::uint8_t {
        Raw,        // /request, /request/..., /request?...: the user's on_request
        Action,     // /action/{name}
        Queue,      // /queue/{name}
        Metadata,   // /metadata
        Health,     // /health
        Metrics,    // /metrics
        Root,       // /
        Inspector,  // /inspector/...
        NotFound,
    };
    Kind kind = Kind::NotFound;
    std::string path;          // without the query string
    std::string request_path;  // what the runtime sees: /request stripped for raw, query kept
    std::string segment;       // decoded action/queue name, or the inspector sub-path
    bool segment_ok = true;
    std::string segment_error;
};

Route classify_http_path(std::string_view full_path);

// WebSocket paths: /connect (actor-connect), /inspector/connect, anything else is raw.
enum class WebSocketRoute : std::uint8_t { ActorConnect, InspectorConnect, Raw };
WebSocketRoute classify_websocket_path(std::string_view full_path);

// The status a framework error answers with (upstream's table).
std::uint16_t framework_status(const Error& error) noexcept;

// One percent-decoded path segment; nullopt (with `why`) on a bad escape or invalid UTF-8.
std::optional<std::string> percent_decode(std::string_view segment, std::string* why = nullptr);

std::string json_quote(std::string_view text);

// "Bearer <token>" (scheme case-insensitive) → token.
std::optional<std::string> bearer_token(std::string_view authorization);

}  // namespace rivetkit::core::registry

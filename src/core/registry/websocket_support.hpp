#pragma once
// Helpers shared by the registry's WebSocket routes (actor_connect.cpp, inspector_ws.cpp).

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "envoy/callbacks.hpp"

namespace rivetkit::core::registry {

std::string lower(std::string s);
// Header names compare case-insensitively; `name` is lower case.
std::optional<std::string> header_value(const envoy::Headers& headers, std::string_view name);
// The offered subprotocols (Sec-WebSocket-Protocol), trimmed.
std::vector<std::string> subprotocols(const envoy::Headers& headers);
std::optional<std::string> protocol_with_prefix(const std::vector<std::string>& protocols,
                                                std::string_view prefix);

// What a socket's listener hands to the coroutine serving it: a message, or the close.
struct SocketInbound {
    std::optional<envoy::WebSocketMessage> message;
    std::optional<envoy::CloseFrame> close;
};

// A listener for a socket that is refused after the upgrade: it sends `first` (if any) and
// closes with `code`/`reason`, both posted so they follow the envoy's open.
std::shared_ptr<envoy::WebSocketListener> closing_listener(boost::asio::any_io_executor executor,
                                                           envoy::WebSocketSender sender,
                                                           std::optional<Bytes> first, bool binary,
                                                           std::uint16_t code, std::string reason);

}  // namespace rivetkit::core::registry

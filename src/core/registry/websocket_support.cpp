// Helpers shared by the registry's WebSocket routes.

#include "core/registry/websocket_support.hpp"

#include <boost/asio/post.hpp>
#include <cctype>

namespace rivetkit::core::registry {

namespace asio = boost::asio;

namespace {

// Refused sockets ignore whatever still arrives.
class ClosingListener final : public envoy::WebSocketListener {
  public:
    void on_message(envoy::WebSocketMessage) override {}
    void on_close(envoy::CloseFrame) override {}
};

}  // namespace

std::string lower(std::string s) {
    for (auto& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::optional<std::string> header_value(const envoy::Headers& headers, std::string_view name) {
    for (const auto& [k, v] : headers) {
        if (lower(k) == name)
            return v;
    }
    return std::nullopt;
}

// The offered subprotocols, trimmed.
std::vector<std::string> subprotocols(const envoy::Headers& headers) {
    std::vector<std::string> out;
    auto raw = header_value(headers, "sec-websocket-protocol");
    if (!raw)
        return out;
    std::string_view rest = *raw;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        if (!item.empty())
            out.emplace_back(item);
        if (comma == std::string_view::npos)
            break;
        rest.remove_prefix(comma + 1);
    }
    return out;
}

std::optional<std::string> protocol_with_prefix(const std::vector<std::string>& protocols,
                                                std::string_view prefix) {
    for (const auto& p : protocols) {
        if (p.substr(0, prefix.size()) == prefix)
            return p.substr(prefix.size());
    }
    return std::nullopt;
}

std::shared_ptr<envoy::WebSocketListener> closing_listener(asio::any_io_executor executor,
                                                           envoy::WebSocketSender sender,
                                                           std::optional<Bytes> first, bool binary,
                                                           std::uint16_t code, std::string reason) {
    // Posted: the envoy reports the socket open after this callback returns, and the frames must
    // follow that.
    asio::post(executor, [sender, first = std::move(first), binary, code,
                          reason = std::move(reason)]() mutable {
        if (first)
            sender.send(std::move(*first), binary);
        sender.close(envoy::CloseFrame{code, std::move(reason)});
    });
    return std::make_shared<ClosingListener>();
}

}  // namespace rivetkit::core::registry

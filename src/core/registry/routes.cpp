#include "core/registry/routes.hpp"

#include <fmt/format.h>

#include <cctype>

namespace rivetkit::core::registry {

namespace {

std::optional<std::string_view> single_segment(std::string_view path, std::string_view prefix) {
    if (path.substr(0, prefix.size()) != prefix)
        return std::nullopt;
    std::string_view rest = path.substr(prefix.size());
    if (rest.empty() || rest.find('/') != std::string_view::npos)
        return std::nullopt;
    return rest;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t extra = 0;
        if (c < 0x80)
            extra = 0;
        else if ((c >> 5) == 0x6)
            extra = 1;
        else if ((c >> 4) == 0xE)
            extra = 2;
        else if ((c >> 3) == 0x1E)
            extra = 3;
        else
            return false;
        if (i + extra >= s.size() && extra > 0)
            return false;
        for (std::size_t k = 1; k <= extra; ++k) {
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2)
                return false;
        }
        i += extra + 1;
    }
    return true;
}

}  // namespace

Route classify_http_path(std::string_view full_path) {
    Route route;
    const auto q = full_path.find('?');
    const std::string_view path = full_path.substr(0, q);
    route.path = std::string(path);
    route.request_path = std::string(full_path);

    if (full_path.substr(0, 8) == "/request") {
        std::string_view stripped = full_path.substr(8);
        if (stripped.empty() || stripped[0] == '/' || stripped[0] == '?') {
            route.kind = Route::Kind::Raw;
            route.request_path = stripped.empty() ? "/" : std::string(stripped);
            if (route.request_path[0] == '?')
                route.request_path.insert(route.request_path.begin(), '/');
            return route;
        }
    }
    auto set_segment = [&](Route::Kind kind, std::string_view segment) {
        route.kind = kind;
        std::string why;
        if (auto decoded = percent_decode(segment, &why)) {
            route.segment = std::move(*decoded);
        } else {
            route.segment_ok = false;
            route.segment_error = "path segment: " + why;
        }
    };
    if (auto seg = single_segment(path, "/action/")) {
        set_segment(Route::Kind::Action, *seg);
        return route;
    }
    if (auto seg = single_segment(path, "/queue/")) {
        set_segment(Route::Kind::Queue, *seg);
        return route;
    }
    if (path.substr(0, 11) == "/inspector/") {
        route.kind = Route::Kind::Inspector;
        route.segment = std::string(path.substr(11));
        return route;
    }
    if (path == "/metadata")
        route.kind = Route::Kind::Metadata;
    else if (path == "/health")
        route.kind = Route::Kind::Health;
    else if (path == "/metrics")
        route.kind = Route::Kind::Metrics;
    else if (path == "/")
        route.kind = Route::Kind::Root;
    else
        route.kind = Route::Kind::NotFound;
    return route;
}

WebSocketRoute classify_websocket_path(std::string_view full_path) {
    const std::string_view path = full_path.substr(0, full_path.find('?'));
    if (path == "/connect")
        return WebSocketRoute::ActorConnect;
    if (path == "/inspector/connect")
        return WebSocketRoute::InspectorConnect;
    return WebSocketRoute::Raw;
}

std::uint16_t framework_status(const Error& e) noexcept {
    const std::string_view g = e.group();
    const std::string_view c = e.code();
    if (g == "auth" && c == "forbidden")
        return 403;
    if (g == "actor") {
        if (c == "action_not_found" || c == "not_found")
            return 404;
        if (c == "action_timed_out")
            return 408;
        if (c == "invalid_request")
            return 400;
        if (c == "method_not_allowed")
            return 405;
    }
    if (g == "message" && (c == "incoming_too_long" || c == "outgoing_too_long"))
        return 400;
    if (g == "queue")
        return 400;
    if (g == "protocol" && (c == "invalid_http_request" || c == "invalid_actor_connect_request"))
        return 400;
    return 500;
}

std::optional<std::string> percent_decode(std::string_view segment, std::string* why) {
    std::string out;
    out.reserve(segment.size());
    for (std::size_t i = 0; i < segment.size(); ++i) {
        if (segment[i] != '%') {
            out.push_back(segment[i]);
            continue;
        }
        if (i + 2 >= segment.size()) {
            if (why)
                *why = "incomplete percent escape";
            return std::nullopt;
        }
        const int hi = hex_value(segment[i + 1]);
        const int lo = hex_value(segment[i + 2]);
        if (hi < 0 || lo < 0) {
            if (why)
                *why = "invalid percent escape";
            return std::nullopt;
        }
        out.push_back(static_cast<char>((hi << 4) | lo));
        i += 2;
    }
    if (!valid_utf8(out)) {
        if (why)
            *why = "not valid UTF-8";
        return std::nullopt;
    }
    return out;
}

std::string json_quote(std::string_view text) {
    std::string out = "\"";
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20)
                    out += fmt::format("\\u{:04x}", c);
                else
                    out.push_back(ch);
        }
    }
    out.push_back('"');
    return out;
}

std::optional<std::string> bearer_token(std::string_view value) {
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())))
        value.remove_prefix(1);
    if (value.size() < 7)
        return std::nullopt;
    for (std::size_t i = 0; i < 6; ++i) {
        if (std::tolower(static_cast<unsigned char>(value[i])) != "bearer"[i])
            return std::nullopt;
    }
    if (!std::isspace(static_cast<unsigned char>(value[6])))
        return std::nullopt;
    value.remove_prefix(7);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front())))
        value.remove_prefix(1);
    if (value.empty())
        return std::nullopt;
    return std::string(value);
}

}  // namespace rivetkit::core::registry

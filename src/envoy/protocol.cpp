#include "envoy/protocol.hpp"

#include <boost/url/encode.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>

#include "base/version.hpp"

namespace rivetkit::envoy {

namespace {

std::string encode_component(std::string_view s) {
    return boost::urls::encode(s, boost::urls::unreserved_chars);
}

}  // namespace

Result<ConnectTarget> build_connect_target(const EnvoyConfig& config, std::string_view envoy_key) {
    auto parsed = boost::urls::parse_uri(config.endpoint);
    if (!parsed) {
        return Error("envoy", "invalid_endpoint", "endpoint is not a URI: " + config.endpoint);
    }
    ConnectTarget target;
    std::string scheme(parsed->scheme());
    if (scheme == "http" || scheme == "ws") {
        target.tls = false;
    } else if (scheme == "https" || scheme == "wss") {
        target.tls = true;
    } else {
        return Error("envoy", "invalid_endpoint", "unsupported scheme: " + scheme);
    }
    target.host = std::string(parsed->host());
    target.port = parsed->has_port() ? std::string(parsed->port()) : (target.tls ? "443" : "80");
    std::string base(parsed->encoded_path());
    while (!base.empty() && base.back() == '/')
        base.pop_back();
    target.target =
        base + "/envoys/connect?protocol_version=" + std::to_string(kEnvoyProtocolVersion) +
        "&namespace=" + encode_component(config.namespace_name) +
        "&envoy_key=" + encode_component(envoy_key) + "&version=" + std::to_string(config.version) +
        "&pool_name=" + encode_component(config.pool_name);
    target.subprotocols.emplace_back("rivet");
    if (config.token)
        target.subprotocols.push_back("rivet_token." + *config.token);
    return target;
}

std::optional<CloseReason> parse_close_reason(std::string_view reason) {
    CloseReason out;
    std::string_view main = reason;
    if (auto hash = reason.find('#'); hash != std::string_view::npos) {
        main = reason.substr(0, hash);
        out.ray_id = std::string(reason.substr(hash + 1));
    }
    auto dot = main.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot + 1 == main.size())
        return std::nullopt;
    out.group = std::string(main.substr(0, dot));
    out.code = std::string(main.substr(dot + 1));
    return out;
}

bool is_eviction(const std::optional<CloseReason>& reason) noexcept {
    return reason && reason->group == "ws" && reason->code == "eviction";
}

std::string generate_envoy_key(std::uint64_t seed_a, std::uint64_t seed_b) {
    static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    std::string key = "envoy_";
    for (std::uint64_t seed : {seed_a, seed_b}) {
        for (int i = 0; i < 12; ++i) {
            key.push_back(kAlphabet[seed % 36]);
            seed /= 36;
        }
    }
    return key;
}

}  // namespace rivetkit::envoy

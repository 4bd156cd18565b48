// Arbitrary bytes as an inspector WebSocket frame (u16 LE version + body): every schema version's
// ToServer/ToClient round-trips; the host's own entry points (decode_client_message with the
// embedded version, and with the body read at a negotiated version, upgrading to v6) never crash
// and, when they accept a frame, yield a request that encodes; and a v6 server message written
// down to any version (encode_server_message) decodes exactly as that version's ToClient.

#include <cstdlib>

#include "core/inspector/protocol.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v2.hpp"
#include "proto/inspector_v3.hpp"
#include "proto/inspector_v4.hpp"
#include "proto/inspector_v5.hpp"
#include "proto/inspector_v6.hpp"
#include "round_trip.hpp"

namespace {

namespace p = rivetkit::proto;
namespace inspector = rivetkit::core::inspector;

template <typename ToServer, typename ToClient>
void both(std::span<const std::uint8_t> body) {
    constexpr std::size_t kPrefix = rivetkit::bare::kVersionPrefixSize;
    rivetkit::fuzz::check_round_trip<ToServer>(body, kPrefix);
    rivetkit::fuzz::check_round_trip<ToClient>(body, kPrefix);
}

void encodes(rivetkit::Result<inspector::wire::ToServerBody> decoded) {
    if (decoded.ok()) {
        p::inspector_v6::ToServer message{std::move(decoded).value()};
        (void)rivetkit::bare::encode_to_bytes(message);
    }
}

template <typename ToClient>
void decodes_exactly(const std::vector<std::uint8_t>& bytes) {
    ToClient out{};
    if (rivetkit::bare::decode_into(bytes, out))
        std::abort();
}

// Every version's writer must produce a message its own schema reads back.
void written_down(std::span<const std::uint8_t> body) {
    p::inspector_v6::ToClient message{};
    if (rivetkit::bare::decode_into(body, message))
        return;
    for (std::uint16_t v = 1; v <= inspector::kProtocolVersion; ++v) {
        auto bytes = inspector::encode_server_message(message.body, inspector::WireMode{v, false});
        switch (v) {
            case 1:
                decodes_exactly<p::inspector_v1::ToClient>(bytes);
                break;
            case 2:
                decodes_exactly<p::inspector_v2::ToClient>(bytes);
                break;
            case 3:
                decodes_exactly<p::inspector_v3::ToClient>(bytes);
                break;
            case 4:
                decodes_exactly<p::inspector_v4::ToClient>(bytes);
                break;
            case 5:
                decodes_exactly<p::inspector_v5::ToClient>(bytes);
                break;
            default:
                decodes_exactly<p::inspector_v6::ToClient>(bytes);
                break;
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    encodes(inspector::decode_client_message({data, size}));
    rivetkit::bare::VersionedView view;
    if (rivetkit::bare::split_versioned({data, size}, view))
        return 0;
    const auto negotiated =
        static_cast<std::uint16_t>(1 + view.version % inspector::kProtocolVersion);
    encodes(inspector::decode_client_message(view.body, inspector::WireMode{negotiated, false}));
    written_down(view.body);
    switch (view.version) {
        case 1:
            both<p::inspector_v1::ToServer, p::inspector_v1::ToClient>(view.body);
            break;
        case 2:
            both<p::inspector_v2::ToServer, p::inspector_v2::ToClient>(view.body);
            break;
        case 3:
            both<p::inspector_v3::ToServer, p::inspector_v3::ToClient>(view.body);
            break;
        case 4:
            both<p::inspector_v4::ToServer, p::inspector_v4::ToClient>(view.body);
            break;
        case 5:
            both<p::inspector_v5::ToServer, p::inspector_v5::ToClient>(view.body);
            break;
        default:
            both<p::inspector_v6::ToServer, p::inspector_v6::ToClient>(view.body);
            break;
    }
    return 0;
}

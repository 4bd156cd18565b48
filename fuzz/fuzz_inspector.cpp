// Arbitrary bytes as an inspector WebSocket frame (u16 LE version + body): every schema version's
// ToServer/ToClient round-trips, and the host's own entry point (decode_client_message, with the
// v1–v3 → v4 upgrade) never crashes and, when it accepts a frame, yields a request that encodes.

#include "core/inspector/protocol.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v2.hpp"
#include "proto/inspector_v3.hpp"
#include "proto/inspector_v4.hpp"
#include "round_trip.hpp"

namespace {

template <typename ToServer, typename ToClient>
void both(std::span<const std::uint8_t> body) {
    constexpr std::size_t kPrefix = rivetkit::bare::kVersionPrefixSize;
    rivetkit::fuzz::check_round_trip<ToServer>(body, kPrefix);
    rivetkit::fuzz::check_round_trip<ToClient>(body, kPrefix);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace p = rivetkit::proto;
    auto decoded = rivetkit::core::inspector::decode_client_message({data, size});
    if (decoded.ok()) {
        rivetkit::proto::inspector_v4::ToServer message{std::move(decoded).value()};
        (void)rivetkit::bare::encode_to_bytes(message);
    }
    rivetkit::bare::VersionedView view;
    if (rivetkit::bare::split_versioned({data, size}, view))
        return 0;
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
        default:
            both<p::inspector_v4::ToServer, p::inspector_v4::ToClient>(view.body);
            break;
    }
    return 0;
}

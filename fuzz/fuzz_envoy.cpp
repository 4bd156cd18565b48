// Arbitrary bytes as every envoy v8 top-level message.

#include "proto/envoy_v8.hpp"
#include "round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace envoy = rivetkit::proto::envoy_v8;
    using rivetkit::fuzz::check_round_trip;
    const std::span<const std::uint8_t> in(data, size);
    check_round_trip<envoy::ToEnvoy>(in);
    check_round_trip<envoy::ToRivet>(in);
    check_round_trip<envoy::ToEnvoyConn>(in);
    check_round_trip<envoy::ToGateway>(in);
    check_round_trip<envoy::ToOutbound>(in);
    check_round_trip<envoy::ActorCommandKeyData>(in);
    return 0;
}

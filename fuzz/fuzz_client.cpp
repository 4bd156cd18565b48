// Arbitrary bytes as a versioned client-protocol payload (u16 LE version + body), decoded by the
// schema version the prefix names, as every message a host reads or writes.

#include "proto/client_v1.hpp"
#include "proto/client_v2.hpp"
#include "proto/client_v3.hpp"
#include "proto/client_v4.hpp"
#include "round_trip.hpp"

namespace {

template <typename Ns>
void all_messages(std::span<const std::uint8_t> body) {
    using rivetkit::fuzz::check_round_trip;
    constexpr std::size_t kPrefix = rivetkit::bare::kVersionPrefixSize;
    check_round_trip<typename Ns::ToClient>(body, kPrefix);
    check_round_trip<typename Ns::ToServer>(body, kPrefix);
    check_round_trip<typename Ns::HttpActionRequest>(body, kPrefix);
    check_round_trip<typename Ns::HttpActionResponse>(body, kPrefix);
    check_round_trip<typename Ns::HttpResponseError>(body, kPrefix);
    check_round_trip<typename Ns::HttpResolveResponse>(body, kPrefix);
}

struct V1 {
    using ToClient = rivetkit::proto::client_v1::ToClient;
    using ToServer = rivetkit::proto::client_v1::ToServer;
    using HttpActionRequest = rivetkit::proto::client_v1::HttpActionRequest;
    using HttpActionResponse = rivetkit::proto::client_v1::HttpActionResponse;
    using HttpResponseError = rivetkit::proto::client_v1::HttpResponseError;
    using HttpResolveResponse = rivetkit::proto::client_v1::HttpResolveResponse;
};
struct V2 {
    using ToClient = rivetkit::proto::client_v2::ToClient;
    using ToServer = rivetkit::proto::client_v2::ToServer;
    using HttpActionRequest = rivetkit::proto::client_v2::HttpActionRequest;
    using HttpActionResponse = rivetkit::proto::client_v2::HttpActionResponse;
    using HttpResponseError = rivetkit::proto::client_v2::HttpResponseError;
    using HttpResolveResponse = rivetkit::proto::client_v2::HttpResolveResponse;
};
struct V3 {
    using ToClient = rivetkit::proto::client_v3::ToClient;
    using ToServer = rivetkit::proto::client_v3::ToServer;
    using HttpActionRequest = rivetkit::proto::client_v3::HttpActionRequest;
    using HttpActionResponse = rivetkit::proto::client_v3::HttpActionResponse;
    using HttpResponseError = rivetkit::proto::client_v3::HttpResponseError;
    using HttpResolveResponse = rivetkit::proto::client_v3::HttpResolveResponse;
};
struct V4 {
    using ToClient = rivetkit::proto::client_v4::ToClient;
    using ToServer = rivetkit::proto::client_v4::ToServer;
    using HttpActionRequest = rivetkit::proto::client_v4::HttpActionRequest;
    using HttpActionResponse = rivetkit::proto::client_v4::HttpActionResponse;
    using HttpResponseError = rivetkit::proto::client_v4::HttpResponseError;
    using HttpResolveResponse = rivetkit::proto::client_v4::HttpResolveResponse;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using rivetkit::fuzz::check_round_trip;
    rivetkit::bare::VersionedView view;
    if (rivetkit::bare::split_versioned({data, size}, view))
        return 0;
    constexpr std::size_t kPrefix = rivetkit::bare::kVersionPrefixSize;
    switch (view.version) {
        case 1:
            all_messages<V1>(view.body);
            break;
        case 2:
            all_messages<V2>(view.body);
            break;
        case 3:
            all_messages<V3>(view.body);
            check_round_trip<rivetkit::proto::client_v3::HttpQueueSendRequest>(view.body, kPrefix);
            check_round_trip<rivetkit::proto::client_v3::HttpQueueSendResponse>(view.body, kPrefix);
            break;
        default:
            all_messages<V4>(view.body);
            check_round_trip<rivetkit::proto::client_v4::HttpQueueSendRequest>(view.body, kPrefix);
            check_round_trip<rivetkit::proto::client_v4::HttpQueueSendResponse>(view.body, kPrefix);
            break;
    }
    return 0;
}

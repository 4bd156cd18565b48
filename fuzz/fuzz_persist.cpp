// Arbitrary bytes as a persisted KV value (u16 LE version + body), decoded by the version it names,
// as each record kind stored under that version.

#include "proto/persist_alarm_v1.hpp"
#include "proto/persist_v1.hpp"
#include "proto/persist_v2.hpp"
#include "proto/persist_v3.hpp"
#include "proto/persist_v4.hpp"
#include "round_trip.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using rivetkit::fuzz::check_round_trip;
    namespace proto = rivetkit::proto;
    rivetkit::bare::VersionedView view;
    if (rivetkit::bare::split_versioned({data, size}, view))
        return 0;
    constexpr std::size_t kPrefix = rivetkit::bare::kVersionPrefixSize;
    const auto body = view.body;
    switch (view.version) {
        case 1:
            check_round_trip<proto::persist_v1::PersistedActor>(body, kPrefix);
            check_round_trip<proto::persist_alarm_v1::LastPushedAlarm>(body, kPrefix);
            break;
        case 2:
            check_round_trip<proto::persist_v2::PersistedActor>(body, kPrefix);
            break;
        case 3:
            check_round_trip<proto::persist_v3::Actor>(body, kPrefix);
            check_round_trip<proto::persist_v3::Conn>(body, kPrefix);
            break;
        default:
            check_round_trip<proto::persist_v4::Actor>(body, kPrefix);
            check_round_trip<proto::persist_v4::Conn>(body, kPrefix);
            check_round_trip<proto::persist_v4::QueueMetadata>(body, kPrefix);
            check_round_trip<proto::persist_v4::QueueMessage>(body, kPrefix);
            break;
    }
    return 0;
}

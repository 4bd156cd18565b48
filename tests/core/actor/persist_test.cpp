// Known-answer tests for the persisted records. The byte vectors come from upstream's own tests
// (rivetkit-core tests/state.rs and tests/connection.rs, actor-persist tests/versioned.rs at tag
// v2.3.0-rc.12), i.e. bytes produced by upstream's codec.

#include "core/actor/persist.hpp"

#include <gtest/gtest.h>

#include <string>

#include "bare/codec.hpp"
#include "proto/persist_v1.hpp"
#include "proto/persist_v3.hpp"

namespace rivetkit::core {
namespace {

Bytes from_hex(std::string_view hex) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(
            static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    }
    return out;
}

Bytes raw(std::string_view s) {
    return Bytes(s.begin(), s.end());
}
template <std::size_t N>
Bytes lit(const char (&s)[N]) {
    return Bytes(s, s + N - 1);
}

TEST(Persist, persisted_actor_round_trips_with_embedded_version) {
    PersistedActor actor{Bytes{1, 2, 3},
                         true,
                         Bytes{4, 5, 6},
                         {PersistedScheduleEvent{"event-1", 42, "ping", Bytes{7, 8}}}};
    Bytes encoded = encode_persisted_actor(actor);
    EXPECT_EQ(encoded, from_hex("04000103010203010304050601076576656e742d312a000000000000000470696e"
                                "6701020708"));
    auto decoded = decode_persisted_actor(encoded);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, actor);
}

TEST(Persist, actor_decodes_legacy_raw_v4_schedule_args) {
    Bytes encoded =
        lit("\x04\x00\x01\x05input\x01\x05state\x01\x07"
            "event-1\x2a\x00\x00\x00\x00\x00\x00\x00"
            "\x0fhandleTurnTimer\x01\x80");
    auto decoded = decode_persisted_actor(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    EXPECT_EQ(decoded->input, raw("input"));
    EXPECT_TRUE(decoded->has_initialized);
    EXPECT_EQ(decoded->state, raw("state"));
    ASSERT_EQ(decoded->scheduled_events.size(), 1u);
    EXPECT_EQ(decoded->scheduled_events[0].event_id, "event-1");
    EXPECT_EQ(decoded->scheduled_events[0].timestamp, 42);
    EXPECT_EQ(decoded->scheduled_events[0].action, "handleTurnTimer");
    EXPECT_EQ(decoded->scheduled_events[0].args, (Bytes{0x80}));
}

TEST(Persist, actor_decodes_legacy_raw_v4_when_current_v4_accepts_bytes) {
    Bytes encoded =
        lit("\x04\x00\x00\x01\x05state\x01\x07"
            "event-1\x2a\x00\x00\x00\x00\x00\x00\x00"
            "\x0fhandleTurnTimer\x02\x01\x99");
    auto decoded = decode_persisted_actor(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    EXPECT_EQ(decoded->scheduled_events[0].args, (Bytes{0x01, 0x99}));
}

TEST(Persist, legacy_raw_v4_empty_args_become_none) {
    // Same legacy layout with a zero-length args blob.
    Bytes encoded =
        lit("\x04\x00\x00\x01\x01\x07\x01\x07"
            "event-1\x2a\x00\x00\x00\x00\x00\x00\x00\x04ping\x00");
    auto decoded = decode_persisted_actor(encoded);
    // Tag 0 is also a valid current-v4 "None", and canonical: current v4 wins with args None.
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    EXPECT_EQ(decoded->scheduled_events[0].args, std::nullopt);
}

TEST(Persist, persisted_actor_decodes_old_typescript_v4_optional_schedule_args) {
    PersistedActor actor{std::nullopt, true, Bytes{1}, {{"event-1", 42, "ping", std::nullopt}}};
    auto decoded = decode_persisted_actor(encode_persisted_actor(actor));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, actor);
}

TEST(Persist, persisted_actor_decodes_old_typescript_v1_layout) {
    proto::persist_v1::PersistedActor v1;
    v1.input = Bytes{1, 2};
    v1.has_initialized = true;
    v1.state = Bytes{3, 4};
    proto::persist_v1::PersistedScheduleEvent ev;
    ev.event_id = "event-1";
    ev.timestamp = 42;
    ev.kind.value = proto::persist_v1::GenericPersistedScheduleEvent{"ping", Bytes{5, 6}};
    v1.scheduled_events.push_back(ev);
    Bytes encoded = bare::encode_versioned(1, v1);
    auto decoded = decode_persisted_actor(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    PersistedActor expected{Bytes{1, 2}, true, Bytes{3, 4}, {{"event-1", 42, "ping", Bytes{5, 6}}}};
    EXPECT_EQ(*decoded, expected);
}

TEST(Persist, persisted_connection_uses_ts_v4_fixed_id_wire_format) {
    PersistedConnection conn;
    conn.id = "c";
    conn.parameters = {1, 2};
    conn.state = {3};
    conn.gateway_id = {10, 11, 12, 13};
    conn.request_id = {20, 21, 22, 23};
    conn.server_message_index = 9;
    conn.client_message_index = 10;
    conn.request_path = "/";
    Bytes encoded = encode_persisted_connection(conn);
    EXPECT_EQ(encoded, (Bytes{4,  0,  1,  'c', 2,  1, 2, 1,  3, 0, 10,  11, 12,
                              13, 20, 21, 22,  23, 9, 0, 10, 0, 1, '/', 0}));
    auto decoded = decode_persisted_connection(encoded);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, conn);
}

TEST(Persist, persisted_connection_v3_upgrades) {
    proto::persist_v3::Conn v3;
    v3.id = "c";
    v3.state = {3};
    v3.gateway_id = {1, 2, 3, 4};
    v3.request_headers = {{"a", "b"}};
    auto decoded = decode_persisted_connection(bare::encode_versioned(3, v3));
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(decoded->id, "c");
    EXPECT_EQ(decoded->gateway_id, (std::array<std::uint8_t, 4>{1, 2, 3, 4}));
    EXPECT_EQ(decoded->request_headers.size(), 1u);
}

TEST(Persist, last_pushed_alarm_round_trips_with_embedded_version) {
    Bytes some = encode_last_pushed_alarm(123);
    EXPECT_EQ(some, (Bytes{1, 0, 1, 123, 0, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(decode_last_pushed_alarm(some).value(), std::optional<std::int64_t>(123));
    Bytes none = encode_last_pushed_alarm(std::nullopt);
    EXPECT_EQ(none, (Bytes{1, 0, 0}));
    EXPECT_EQ(decode_last_pushed_alarm(none).value(), std::nullopt);
}

TEST(Persist, queue_records_round_trip_v4_only) {
    PersistedQueueMetadata meta{7, 2};
    Bytes encoded = encode_queue_metadata(meta);
    EXPECT_EQ(encoded, (Bytes{4, 0, 7, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0}));
    EXPECT_EQ(decode_queue_metadata(encoded).value(), meta);
    encoded[0] = 3;
    auto bad = decode_queue_metadata(encoded);
    ASSERT_FALSE(bad.ok());
    EXPECT_TRUE(bad.error().is("protocol", "invalid_persisted_data"));

    PersistedQueueMessage msg{"job", Bytes{1}, 5, 1u, std::nullopt, true, 9};
    EXPECT_EQ(decode_queue_message(encode_queue_message(msg)).value(), msg);
}

TEST(Persist, corrupt_bytes_are_structured_errors_naming_the_record) {
    for (const Bytes& bad : {Bytes{}, Bytes{4}, Bytes{9, 0, 1}, Bytes{4, 0, 7, 7, 7}}) {
        auto actor = decode_persisted_actor(bad);
        ASSERT_FALSE(actor.ok());
        EXPECT_TRUE(actor.error().is("protocol", "invalid_persisted_data"));
        EXPECT_NE(actor.error().message().find("persisted actor"), std::string::npos);
    }
    auto conn = decode_persisted_connection(Bytes{2, 0});
    ASSERT_FALSE(conn.ok());
    EXPECT_NE(conn.error().message().find("persisted connection"), std::string::npos);
    auto alarm = decode_last_pushed_alarm(Bytes{1, 0, 2});
    ASSERT_FALSE(alarm.ok());
    EXPECT_NE(alarm.error().message().find("last pushed alarm"), std::string::npos);
}

TEST(Persist, empty_schedule_args_are_none) {
    EXPECT_EQ(schedule_args_from({}), std::nullopt);
    EXPECT_EQ(schedule_args_from({1}), (Bytes{1}));
}

}  // namespace
}  // namespace rivetkit::core

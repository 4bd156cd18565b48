// Generated codecs: round trips through every construct, and structured errors for bad input.

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "bare_test/features.hpp"
#include "proto/client_v4.hpp"
#include "proto/envoy_v8.hpp"
#include "proto/persist_alarm_v1.hpp"
#include "proto/persist_v4.hpp"

namespace rivetkit::bare {
namespace {

namespace tf = test_features;
namespace envoy = proto::envoy_v8;
using Bytes = std::vector<std::uint8_t>;

tf::Features sample_features() {
    tf::Features f;
    f.prims = tf::AllPrimitives{
        .a_uint = 1ULL << 40,
        .a_int = -5,
        .a_u8 = 200,
        .a_u16 = 65535,
        .a_u32 = 123456,
        .a_u64 = std::numeric_limits<std::uint64_t>::max(),
        .a_i8 = -128,
        .a_i16 = -2,
        .a_i32 = std::numeric_limits<std::int32_t>::min(),
        .a_i64 = -1,
        .a_f32 = 0.5f,
        .a_f64 = 3.25,
        .a_bool = true,
        .a_str = "ünïcödé",
        .a_data = {0, 1, 2, 255},
        .a_hash = {7, 8, 9},
    };
    f.maybe = tf::Inner{"in", tf::Color::Blue};
    f.grid = {{1, -1}, {}, {32767}};
    f.counts = {{"z", 1}, {"a", 2}};  // wire order is kept, not sorted
    f.by_code = {{3, "three"}};
    f.choice = tf::Choice{tf::Nothing{}};
    f.choices = {tf::Choice{tf::Inner{"x", tf::Color::Red}}, tf::Choice{tf::Numbers{{1, 2, 3}}},
                 tf::Choice{tf::Tagline{"tag"}}};
    f.blobs = std::vector<Bytes>{{1}, {}};
    f.class_ = true;
    return f;
}

TEST(BareGeneratedTest, FeaturesRoundTripByteExact) {
    const tf::Features f = sample_features();
    const Bytes bytes = encode_to_bytes(f);
    auto decoded = decode_from_bytes<tf::Features>(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    EXPECT_EQ(*decoded, f);
    EXPECT_EQ(encode_to_bytes(*decoded), bytes);
}

TEST(BareGeneratedTest, UnionUsesExplicitTagsAndEnumsTheirValues) {
    EXPECT_EQ(tf::Choice{tf::Inner{}}.tag(), 1u);
    EXPECT_EQ(tf::Choice{tf::Nothing{}}.tag(), 7u);
    EXPECT_EQ(tf::Choice{tf::Numbers{}}.tag(), 8u);
    EXPECT_EQ(tf::Choice{tf::Tagline{}}.tag(), 9u);
    EXPECT_EQ(encode_to_bytes(tf::Choice{tf::Nothing{}}), Bytes{7});
    EXPECT_EQ(encode_to_bytes(tf::Choice{tf::Inner{"", tf::Color::Green}}), (Bytes{1, 0, 5}));
    EXPECT_EQ(to_string(tf::Color::Green), "GREEN");
    EXPECT_TRUE(tf::Choice{tf::Tagline{}}.is<tf::Tagline>());
}

TEST(BareGeneratedTest, EveryTruncationFailsCleanly) {
    const Bytes bytes = encode_to_bytes(sample_features());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        tf::Features out;
        auto err = decode_into(std::span<const std::uint8_t>(bytes.data(), n), out);
        ASSERT_TRUE(err.has_value()) << "prefix " << n;
        EXPECT_LE(err->offset, n);
        EXPECT_EQ(err->path.rfind("Features", 0), 0u) << err->path;
    }
}

TEST(BareGeneratedTest, TrailingBytesRejected) {
    Bytes bytes = encode_to_bytes(tf::Choice{tf::Nothing{}});
    bytes.push_back(0);
    tf::Choice out;
    auto err = decode_into(bytes, out);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->offset, 1u);
    EXPECT_EQ(err->path, "Choice");
    EXPECT_NE(err->reason.find("trailing"), std::string::npos);
}

TEST(BareGeneratedTest, UnknownUnionTagAndEnumValueAreErrors) {
    tf::Choice c;
    auto err = decode_into(Bytes{2}, c);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->reason, "unknown tag 2 for union Choice");
    EXPECT_EQ(err->offset, 0u);

    auto err2 = decode_into(Bytes{1, 0, 4}, c);  // Inner{label "", color 4}
    ASSERT_TRUE(err2.has_value());
    EXPECT_EQ(err2->reason, "unknown value 4 for enum Color");
    EXPECT_EQ(err2->path, "Choice.Inner.color");
    EXPECT_EQ(err2->offset, 2u);
}

TEST(BareGeneratedTest, DuplicateMapKeysRejectedWithEntryPath) {
    tf::Features f = sample_features();
    f.counts = {{"k", 1}, {"j", 2}, {"k", 3}};
    const Bytes bytes = encode_to_bytes(f);
    tf::Features out;
    auto err = decode_into(bytes, out);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->reason, "duplicate map key");
    EXPECT_EQ(err->path, "Features.counts[2]");
}

TEST(BareGeneratedTest, EnvoyErrorPathNamesTheField) {
    envoy::CommandStartActor start;
    start.config.name = "counter";
    envoy::ToEnvoy msg{envoy::ToEnvoyCommands{
        {envoy::CommandWrapper{envoy::ActorCheckpoint{"actor", 1, 2}, envoy::Command{start}}}}};
    Bytes bytes = encode_to_bytes(msg);
    // tag, count, checkpoint{str "actor"(6), u32(4), i64(8)}, Command tag, name length → 'c'.
    const std::size_t name_at = 1 + 1 + 6 + 4 + 8 + 1;
    ASSERT_EQ(bytes[name_at], 7);
    bytes[name_at + 1] = 0xff;
    envoy::ToEnvoy out;
    auto err = decode_into(bytes, out);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->path, "ToEnvoy.ToEnvoyCommands[0].inner.CommandStartActor.config.name");
    EXPECT_EQ(err->offset, name_at);
    EXPECT_EQ(err->reason, "invalid UTF-8 in str");

    auto as_error = decode_from_bytes<envoy::ToEnvoy>(bytes);
    ASSERT_FALSE(as_error.ok());
    EXPECT_TRUE(as_error.error().is("protocol", "invalid_bare"));
}

TEST(BareGeneratedTest, HugeListCountFailsBeforeAllocating) {
    // ToEnvoyCommands claiming 2^62 entries with nothing following.
    const Bytes bytes = {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
    envoy::ToEnvoy out;
    auto err = decode_into(bytes, out);
    ASSERT_TRUE(err.has_value());
    EXPECT_EQ(err->offset, 1u);
    EXPECT_EQ(err->path, "ToEnvoy.ToEnvoyCommands");
    EXPECT_NE(err->reason.find("exceeds"), std::string::npos);
}

TEST(BareGeneratedTest, VersionedEnvelopeRoundTripAndOffsets) {
    namespace client = proto::client_v4;
    const client::ToClient msg{client::ToClientBody{client::Init{"actor-1", "conn-1"}}};
    const Bytes payload = encode_versioned(4, msg);
    ASSERT_GE(payload.size(), 2u);
    EXPECT_EQ(payload[0], 4);
    EXPECT_EQ(payload[1], 0);
    auto decoded = decode_versioned<client::ToClient>(payload, 4);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    EXPECT_EQ(*decoded, msg);

    auto wrong = decode_versioned<client::ToClient>(payload, 3);
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message().find("unsupported schema version 4"), std::string::npos);

    Bytes bad = payload;
    bad[2] = 9;  // union tag
    auto view = split_versioned(bad);
    ASSERT_TRUE(view.ok());
    auto err = decode_versioned_body<client::ToClient>(*view);
    ASSERT_FALSE(err.ok());
    EXPECT_NE(err.error().metadata()->find(R"("offset":2)"), std::string::npos);
}

TEST(BareGeneratedTest, LastPushedAlarmMatchesDocumentedBytes) {
    namespace alarm = proto::persist_alarm_v1;
    const std::int64_t ts = 0x0102030405060708;
    EXPECT_EQ(encode_versioned(1, alarm::LastPushedAlarm{ts}),
              (Bytes{1, 0, 1, 8, 7, 6, 5, 4, 3, 2, 1}));
    EXPECT_EQ(encode_versioned(1, alarm::LastPushedAlarm{}), (Bytes{1, 0, 0}));
    auto none = decode_versioned<alarm::LastPushedAlarm>(Bytes{1, 0, 0}, 1);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->value.has_value());
}

TEST(BareGeneratedTest, PersistedActorRoundTrip) {
    namespace p4 = proto::persist_v4;
    p4::Actor actor;
    actor.input = Bytes{0xa0};
    actor.has_initialized = true;
    actor.state = {0xa1, 0x61, 0x61, 0x01};
    actor.scheduled_events = {p4::ScheduleEvent{"ev-1", 1700000000000, "tick", std::nullopt}};
    const Bytes payload = encode_versioned(4, actor);
    auto decoded = decode_versioned<p4::Actor>(payload, 4);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, actor);
}

}  // namespace
}  // namespace rivetkit::bare

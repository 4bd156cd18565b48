// The codec runtime on its own: every primitive, and every way a malformed buffer must fail.

#include "bare/codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bare/map_keys.hpp"
#include "bare/reader.hpp"
#include "bare/utf8.hpp"
#include "bare/writer.hpp"

namespace rivetkit::bare {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytes_of(std::initializer_list<int> v) {
    Bytes out;
    for (int b : v)
        out.push_back(static_cast<std::uint8_t>(b));
    return out;
}

TEST(BareWriterTest, UintVarintKnownAnswers) {
    struct Case {
        std::uint64_t value;
        Bytes encoded;
    };
    const std::vector<Case> cases = {
        {0, bytes_of({0x00})},
        {1, bytes_of({0x01})},
        {127, bytes_of({0x7f})},
        {128, bytes_of({0x80, 0x01})},
        {300, bytes_of({0xac, 0x02})},
        {std::numeric_limits<std::uint64_t>::max(),
         bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})},
    };
    for (const auto& c : cases) {
        Writer w;
        w.write_uint(c.value);
        EXPECT_EQ(w.bytes(), c.encoded) << c.value;
        Reader r(w.bytes());
        EXPECT_EQ(r.read_uint(), c.value);
        EXPECT_FALSE(r.failed());
        EXPECT_TRUE(r.at_end());
    }
}

TEST(BareWriterTest, IntIsZigZag) {
    const std::vector<std::pair<std::int64_t, Bytes>> cases = {
        {0, bytes_of({0x00})},  {-1, bytes_of({0x01})},        {1, bytes_of({0x02})},
        {-2, bytes_of({0x03})}, {-65, bytes_of({0x81, 0x01})}, {64, bytes_of({0x80, 0x01})},
    };
    for (const auto& [value, encoded] : cases) {
        Writer w;
        w.write_int(value);
        EXPECT_EQ(w.bytes(), encoded) << value;
    }
    for (std::int64_t v : {std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max(), std::int64_t{-123456789}}) {
        Writer w;
        w.write_int(v);
        Reader r(w.bytes());
        EXPECT_EQ(r.read_int(), v);
        EXPECT_TRUE(r.at_end());
    }
}

TEST(BareWriterTest, FixedWidthAreLittleEndianAndRoundTrip) {
    Writer w;
    w.write_u8(0xab);
    w.write_u16(0x1234);
    w.write_u32(0xdeadbeef);
    w.write_u64(0x0102030405060708ULL);
    w.write_i8(-2);
    w.write_i16(-300);
    w.write_i32(-70000);
    w.write_i64(std::numeric_limits<std::int64_t>::min());
    w.write_f32(1.5f);
    w.write_f64(-0.25);
    w.write_bool(true);
    w.write_bool(false);
    EXPECT_EQ(Bytes(w.bytes().begin() + 1, w.bytes().begin() + 3), bytes_of({0x34, 0x12}));
    EXPECT_EQ(Bytes(w.bytes().begin() + 7, w.bytes().begin() + 15),
              bytes_of({8, 7, 6, 5, 4, 3, 2, 1}));

    Reader r(w.bytes());
    EXPECT_EQ(r.read_u8(), 0xab);
    EXPECT_EQ(r.read_u16(), 0x1234);
    EXPECT_EQ(r.read_u32(), 0xdeadbeefu);
    EXPECT_EQ(r.read_u64(), 0x0102030405060708ULL);
    EXPECT_EQ(r.read_i8(), -2);
    EXPECT_EQ(r.read_i16(), -300);
    EXPECT_EQ(r.read_i32(), -70000);
    EXPECT_EQ(r.read_i64(), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(r.read_f32(), 1.5f);
    EXPECT_EQ(r.read_f64(), -0.25);
    EXPECT_TRUE(r.read_bool());
    EXPECT_FALSE(r.read_bool());
    EXPECT_FALSE(r.failed());
    EXPECT_TRUE(r.at_end());
}

TEST(BareWriterTest, FloatBitsSurviveIncludingNan) {
    Writer w;
    w.write_f64(std::numeric_limits<double>::quiet_NaN());
    w.write_f32(-std::numeric_limits<float>::infinity());
    Reader r(w.bytes());
    EXPECT_TRUE(std::isnan(r.read_f64()));
    EXPECT_EQ(r.read_f32(), -std::numeric_limits<float>::infinity());
}

TEST(BareWriterTest, StrDataFixedRoundTrip) {
    Writer w;
    w.write_str("héllo");
    w.write_str("");
    w.write_data(bytes_of({1, 2, 3}));
    w.write_fixed_data(bytes_of({9, 8, 7, 6}));
    EXPECT_EQ(w.bytes()[0], 6);  // byte length, not code points

    Reader r(w.bytes());
    EXPECT_EQ(r.read_str(), "héllo");
    EXPECT_EQ(r.read_str(), "");
    EXPECT_EQ(r.read_data(), bytes_of({1, 2, 3}));
    EXPECT_EQ((r.read_fixed_data<4>()), (std::array<std::uint8_t, 4>{9, 8, 7, 6}));
    EXPECT_TRUE(r.at_end());
}

TEST(BareWriterTest, ClearAndTakeReuseTheWriter) {
    Writer w;
    w.write_u32(1);
    w.clear();
    EXPECT_EQ(w.size(), 0u);
    w.write_u8(5);
    auto out = w.take();
    EXPECT_EQ(out, bytes_of({5}));
    EXPECT_EQ(w.size(), 0u);
    w.write_u8(6);
    EXPECT_EQ(w.bytes(), bytes_of({6}));
}

TEST(BareReaderTest, RejectsOverlongVarint) {
    const Bytes overlong = bytes_of({0x80, 0x00});
    Reader r(overlong);
    EXPECT_EQ(r.read_uint(), 0u);
    ASSERT_TRUE(r.failed());
    auto err = r.take_error("T");
    EXPECT_EQ(err.offset, 0u);
    EXPECT_NE(err.reason.find("overlong"), std::string::npos);
}

TEST(BareReaderTest, RejectsVarintOverflowAndElevenBytes) {
    const Bytes overflow = bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02});
    Reader r1(overflow);
    r1.read_uint();
    EXPECT_TRUE(r1.failed());

    const Bytes eleven =
        bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x01});
    Reader r2(eleven);
    r2.read_uint();
    EXPECT_TRUE(r2.failed());
}

TEST(BareReaderTest, TruncatedVarintFailsAtItsStart) {
    const Bytes b = bytes_of({0x05, 0x80, 0x80});
    Reader r(b);
    EXPECT_EQ(r.read_u8(), 5);
    r.read_uint();
    ASSERT_TRUE(r.failed());
    EXPECT_EQ(r.take_error("").offset, 1u);
}

TEST(BareReaderTest, BoolAndOptionalTagMustBeZeroOrOne) {
    const Bytes two = bytes_of({0x02});
    Reader r1(two);
    r1.read_bool();
    EXPECT_TRUE(r1.failed());
    Reader r2(two);
    r2.read_optional_tag();
    EXPECT_TRUE(r2.failed());
}

TEST(BareReaderTest, InvalidUtf8IsRejected) {
    for (const Bytes& bad : {bytes_of({0x02, 0xc0, 0x80}),              // overlong NUL
                             bytes_of({0x03, 0xed, 0xa0, 0x80}),        // surrogate
                             bytes_of({0x04, 0xf4, 0x90, 0x80, 0x80}),  // > U+10FFFF
                             bytes_of({0x01, 0xff}), bytes_of({0x02, 0xe2, 0x82})}) {
        Reader r(bad);
        r.read_str();
        ASSERT_TRUE(r.failed());
        EXPECT_EQ(r.take_error("").offset, 0u);
    }
    EXPECT_TRUE(is_valid_utf8(bytes_of({0xf0, 0x9f, 0x98, 0x80})));  // U+1F600
    EXPECT_TRUE(is_valid_utf8(bytes_of({0xef, 0xbf, 0xbf})));
}

// The validator checks ASCII 32 and eight bytes at a time: a bad or multi-byte sequence at any
// offset, inside or after such a run, is still seen.
TEST(BareReaderTest, Utf8IsCheckedAtEveryOffsetOfALongAsciiRun) {
    for (std::size_t at = 0; at < 80; ++at) {
        Bytes ascii(80, 'a');
        Bytes bad = ascii;
        bad[at] = 0xff;
        EXPECT_FALSE(is_valid_utf8(bad)) << "0xff at " << at;
        Bytes overlong = ascii;
        overlong[at] = 0xc0;
        if (at + 1 < overlong.size())
            overlong[at + 1] = 0x80;
        EXPECT_FALSE(is_valid_utf8(overlong)) << "overlong at " << at;
        if (at + 1 < ascii.size()) {
            Bytes two = ascii;
            two[at] = 0xc3;  // U+00E9
            two[at + 1] = 0xa9;
            EXPECT_TRUE(is_valid_utf8(two)) << "U+00E9 at " << at;
        }
        Bytes cut = ascii;
        cut.resize(at + 1);
        cut.push_back(0xe2);  // a three-byte sequence cut after its first byte
        EXPECT_FALSE(is_valid_utf8(cut)) << "cut sequence after " << at + 1 << " ASCII bytes";
    }
}

TEST(BareReaderTest, HugeLengthPrefixFailsWithoutAllocating) {
    // Claims 2^63 bytes of data with 3 bytes present; must fail before any allocation.
    const Bytes b = bytes_of({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 1, 2, 3});
    Reader r(b);
    EXPECT_TRUE(r.read_data().empty());
    ASSERT_TRUE(r.failed());
    EXPECT_NE(r.take_error("").reason.find("exceeds"), std::string::npos);

    Reader r2(b);
    EXPECT_EQ(r2.read_length(), 0u);
    EXPECT_TRUE(r2.failed());
}

TEST(BareReaderTest, ReadsPastEndFailAndStickyErrorKeepsFirst) {
    const Bytes b = bytes_of({1, 2});
    Reader r(b, /*base_offset=*/10);
    r.read_u32();
    ASSERT_TRUE(r.failed());
    EXPECT_EQ(r.read_u8(), 0);  // sticky: nothing consumed
    r.fail("second failure");
    auto err = r.take_error("Root");
    EXPECT_EQ(err.offset, 10u);
    EXPECT_EQ(err.path, "Root");
    EXPECT_NE(err.reason.find("end of input"), std::string::npos);
}

TEST(BareReaderTest, PathSegmentsJoinOutermostFirst) {
    const Bytes b;
    Reader r(b);
    r.read_u8();
    r.add_field("name");
    r.add_field("config");
    r.add_index(0);
    r.add_field("ToEnvoyCommands");
    EXPECT_EQ(r.take_error("ToEnvoy").path, "ToEnvoy.ToEnvoyCommands[0].config.name");
}

TEST(BareDecodeErrorTest, ConvertsToStructuredProtocolError) {
    DecodeError e{"invalid \"bool\" value 2", 7, "A.b"};
    Error err = e.to_error();
    EXPECT_EQ(err.group(), "protocol");
    EXPECT_EQ(err.code(), "invalid_bare");
    EXPECT_NE(err.message().find("A.b"), std::string::npos);
    ASSERT_TRUE(err.metadata().has_value());
    EXPECT_EQ(*err.metadata(), R"({"reason":"invalid \"bool\" value 2","offset":7,"path":"A.b"})");
}

TEST(BareVersionedTest, SplitRejectsShortPayloads) {
    for (const Bytes& b : {Bytes{}, bytes_of({4})}) {
        auto r = split_versioned(b);
        ASSERT_FALSE(r.ok());
        EXPECT_TRUE(r.error().is("protocol", "invalid_bare"));
    }
    const Bytes ok = bytes_of({0x04, 0x00, 0xaa});
    auto v = split_versioned(ok);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->version, 4);
    EXPECT_EQ(v->body.size(), 1u);

    const Bytes only_version = bytes_of({0x01, 0x02});
    auto v2 = split_versioned(only_version);
    ASSERT_TRUE(v2.ok());
    EXPECT_EQ(v2->version, 0x0201);
    EXPECT_TRUE(v2->body.empty());
}

// The first entry whose key appeared before it, the same for a header-sized map (compared pairwise)
// and a long one (sorted).
TEST(BareMapKeysTest, TheFirstRepeatedKeyIsFoundInShortAndLongMaps) {
    using Entries = std::vector<std::pair<std::string, int>>;
    for (std::size_t n : {2u, 5u, 32u, 33u, 200u}) {
        Entries entries;
        for (std::size_t i = 0; i < n; ++i)
            entries.emplace_back("key-" + std::to_string(i), 0);
        EXPECT_EQ(find_duplicate_key(entries), std::nullopt) << n;
        entries.emplace_back("key-1", 0);   // repeats entry 1
        entries.emplace_back("key-0", 0);   // repeats entry 0, later
        EXPECT_EQ(find_duplicate_key(entries), n) << n;
        entries.insert(entries.begin() + 2, {"key-0", 0});  // now the first repeat, at 2
        EXPECT_EQ(find_duplicate_key(entries), 2u) << n;
    }
}

}  // namespace
}  // namespace rivetkit::bare

// read_cbor, cbor_well_formed and write_cbor against nlohmann's reader and writer; and
// parse_cbor_or_discarded: nlohmann's CBOR reader without its one exception that
// allow_exceptions=false does not stop (an array or map header longer than a vector can hold).

#include "base/cbor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace rivetkit {
namespace {

TEST(Cbor, AnArrayOrMapHeaderLongerThanMemoryIsDiscardedNotThrown) {
    // 0x9b / 0xbb: array / map with an 8-byte length, here 2^64 - 1 (the fuzzer's input had
    // such a header inside a persisted connection's subscriptions).
    const Bytes array = {0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const Bytes map = {0xbb, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x01, 0x02};
    EXPECT_TRUE(parse_cbor_or_discarded(array).is_discarded());
    EXPECT_TRUE(parse_cbor_or_discarded(map).is_discarded());
    // Nested, as the fuzzer found it: an array holding the oversized one.
    const Bytes nested = {0x82, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x9b, 0x00};
    EXPECT_TRUE(parse_cbor_or_discarded(nested).is_discarded());
}

TEST(Cbor, ValidAndTruncatedInputs) {
    EXPECT_EQ(parse_cbor_or_discarded(Bytes{0x82, 0x01, 0x61, 0x61}), nlohmann::json::array({1, "a"}));
    EXPECT_TRUE(parse_cbor_or_discarded(Bytes{0x82, 0x01}).is_discarded());
    EXPECT_TRUE(parse_cbor_or_discarded(Bytes{0x01, 0x02}).is_discarded());  // strict: one value
    EXPECT_TRUE(parse_cbor_or_discarded(Bytes{}).is_discarded());
}

using json = nlohmann::json;

// Values across every head width and kind nlohmann writes, nested.
class Values {
  public:
    explicit Values(std::uint32_t seed) : rng_(seed) {}

    json scalar() {
        static const std::uint64_t kUnsigned[] = {0,     23,         24,         255,
                                                  256,   65535,      65536,      4294967295ULL,
                                                  1ULL << 32, 1ULL << 53, ~0ULL};
        static const std::int64_t kSigned[] = {-1,     -24,          -25,          -256,
                                               -257,   -65536,       -65537,       -4294967296LL,
                                               -4294967297LL, std::numeric_limits<std::int64_t>::min(),
                                               std::numeric_limits<std::int64_t>::max()};
        static const double kFloats[] = {0.0,   -0.0,  0.5,   1.1,     1e300,  -3.4e38, 3.5e38,
                                         1e-45, 16777217.0, std::numeric_limits<double>::infinity(),
                                         -std::numeric_limits<double>::infinity()};
        switch (pick(8)) {
            case 0:
                return nullptr;
            case 1:
                return pick(2) == 0;
            case 2:
                return kUnsigned[pick(std::size(kUnsigned))];
            case 3:
                return kSigned[pick(std::size(kSigned))];
            case 4:
                return kFloats[pick(std::size(kFloats))];
            case 5:
                return std::string(pick_len(), 'x');
            case 6: {
                json::binary_t bin(std::vector<std::uint8_t>(pick_len(), 0xab));
                if (pick(2) == 0)
                    bin.set_subtype(pick(3) == 0 ? 70000 : pick(300));
                return json::binary(std::move(bin));
            }
            default:
                return static_cast<std::int64_t>(rng_()) - (1LL << 31);
        }
    }
    json value(int depth) {
        if (depth > 3 || pick(3) != 0)
            return scalar();
        const std::size_t n = depth == 0 && pick(4) == 0 ? 300 : pick(depth == 0 ? 30 : 6);
        json out = pick(2) == 0 ? json::array() : json::object();
        for (std::size_t i = 0; i < n; ++i) {
            if (out.is_array())
                out.push_back(value(depth + 1));
            else
                out["k" + std::to_string(i)] = value(depth + 1);
        }
        return out;
    }

  private:
    std::size_t pick(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
    std::size_t pick_len() {
        static const std::size_t kLens[] = {0, 23, 24, 255, 256, 70000};
        return kLens[pick(std::size(kLens))];
    }
    std::mt19937 rng_;
};

TEST(Cbor, WritesTheBytesNlohmannWrites) {
    Values values(7);
    for (int i = 0; i < 500; ++i) {
        const json v = values.value(0);
        Bytes ours;
        write_cbor(v, ours);
        ASSERT_EQ(ours, json::to_cbor(v)) << v.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    Bytes nan;
    write_cbor(json(std::numeric_limits<double>::quiet_NaN()), nan);
    EXPECT_EQ(nan, (Bytes{0xf9, 0x7e, 0x00}));
}

TEST(Cbor, ReadsWhatItWritesAsNlohmannReadsIt) {
    Values values(11);
    for (int i = 0; i < 500; ++i) {
        const json v = values.value(0);
        const Bytes cbor = json::to_cbor(v);
        CborReadNotes notes;
        auto ours = read_cbor(cbor, &notes);
        ASSERT_TRUE(ours.has_value());
        EXPECT_TRUE(cbor_well_formed(cbor));
        if (notes.tagged)
            continue;  // nlohmann refuses the tags of binary subtypes
        ASSERT_EQ(*ours, parse_cbor_or_discarded(cbor));
    }
}

TEST(Cbor, ReadsTheTagsAndSimpleValuesJavaScriptEncodersWrite) {
    CborReadNotes notes;
    // 0xc1 (epoch time tag) around 1: the content, tag noted.
    EXPECT_EQ(read_cbor(Bytes{0xc1, 0x01}, &notes), json(1));
    EXPECT_TRUE(notes.tagged);
    // bignum tag 2 around bytes: binary with subtype 2.
    auto big = read_cbor(Bytes{0xc2, 0x42, 0x01, 0x00});
    ASSERT_TRUE(big && big->is_binary());
    EXPECT_EQ(big->get_binary().subtype(), 2);
    notes = {};
    EXPECT_EQ(read_cbor(Bytes{0xf7}, &notes), json(nullptr));  // undefined
    EXPECT_TRUE(notes.undefined);
    notes = {};
    EXPECT_EQ(read_cbor(Bytes{0xa1, 0x01, 0x02}, &notes), json({{"1", 2}}));
    EXPECT_TRUE(notes.non_text_key);
    EXPECT_EQ(read_cbor(Bytes{0xf9, 0x3c, 0x00}), json(1.0));  // half float
    // indefinite text in two chunks, indefinite array
    EXPECT_EQ(read_cbor(Bytes{0x7f, 0x61, 0x61, 0x61, 0x62, 0xff}), json("ab"));
    EXPECT_EQ(read_cbor(Bytes{0x9f, 0x01, 0x02, 0xff}), json::array({1, 2}));
}

TEST(Cbor, MalformedInputIsRefusedByBothWalksWithoutReadingPastIt) {
    const Bytes refused[] = {
        {},
        {0x82, 0x01},                    // array short of an item
        {0x01, 0x02},                    // two values
        {0x1c},                          // reserved argument width
        {0x62, 0x61},                    // text shorter than its head
        {0x7f, 0x41, 0x00, 0xff},        // a byte chunk inside indefinite text
        {0xa1, 0x80, 0x01},              // an array as a map key
        {0xf8, 0x20},                    // two-byte simple value
        {0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},  // longer than the input
        {0x9f, 0x01},                    // unterminated indefinite array
    };
    for (const auto& b : refused) {
        EXPECT_FALSE(read_cbor(b).has_value());
        EXPECT_FALSE(cbor_well_formed(b));
    }
    Bytes deep(200, 0x81);
    deep.push_back(0x01);
    EXPECT_FALSE(cbor_well_formed(deep));
    EXPECT_FALSE(read_cbor(deep).has_value());
}

TEST(Cbor, EveryPrefixAndByteFlipAgreesBetweenTheTwoWalks) {
    Values values(3);
    std::mt19937 rng(5);
    for (int i = 0; i < 300; ++i) {
        const Bytes cbor = json::to_cbor(values.value(0));
        for (std::size_t cut = 0; cut < std::min<std::size_t>(cbor.size(), 64); ++cut) {
            const BytesView prefix(cbor.data(), cut);
            ASSERT_EQ(cbor_well_formed(prefix), read_cbor(prefix).has_value());
        }
        Bytes flipped = cbor;
        flipped[rng() % flipped.size()] = static_cast<std::uint8_t>(rng());
        ASSERT_EQ(cbor_well_formed(flipped), read_cbor(flipped).has_value());
    }
}

}  // namespace
}  // namespace rivetkit

// Numbers between C++ and JavaScript: to_cbor writes integers as the official client's CBOR
// encoder (cbor-x) writes the same JS values, and from_cbor reads that encoder's integral floats
// back as integers. Each number's bytes are cbor-x's own output for it (node:
// require("cbor-x").encode(n)); cbor-x writes map headers in a longer form, not compared here.

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "rivetkit/rivetkit.hpp"

namespace rivetkit {
namespace {

std::string hex(const Bytes& b) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (auto c : b) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
    return out;
}

Bytes unhex(std::string_view s) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < s.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(s.substr(i, 2)), nullptr, 16)));
    return out;
}

// A client's CBOR whose array header announces 2^64 - 1 elements: a structured error, not an
// exception out of the decoder (nlohmann throws there even with allow_exceptions=false).
TEST(Values, AnOversizedCborArrayHeaderIsAnErrorNotAnException) {
    const Bytes oversized = {0x81, 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    Result<Json> decoded = Json();
    EXPECT_NO_THROW(decoded = from_cbor(oversized));
    EXPECT_FALSE(decoded.ok());
}

TEST(Values, IntegersAreWrittenAsAJavaScriptEncoderWritesThem) {
    EXPECT_EQ(hex(to_cbor(Json(4294967295LL))), "1affffffff");   // 32 bits: an integer
    EXPECT_EQ(hex(to_cbor(Json(-4294967296LL))), "3affffffff");  // likewise, negative
    EXPECT_EQ(hex(to_cbor(Json(1796346349679LL))), "fb427a23e96086f000");  // a timestamp: float64
    EXPECT_EQ(hex(to_cbor(Json(-4294967297LL))), "fbc1f0000000100000");
    EXPECT_EQ(hex(to_cbor(Json(9007199254740991LL))), "fb433fffffffffffff");  // 2^53 - 1
    // Beyond 2^53 - 1 a JS number cannot hold it: 64-bit integer (a BigInt for the client).
    EXPECT_EQ(hex(to_cbor(Json(9007199254740993ULL))), "1b0020000000000001");
    // Nested values too, and the rest unchanged.
    EXPECT_EQ(hex(to_cbor(Json{{"at", 1796346349679LL}, {"n", 5}})),
              "a2626174fb427a23e96086f000616e05");
}

TEST(Values, IntegralFloatsFromAJavaScriptEncoderReadAsIntegers) {
    auto ts = from_cbor(unhex("fb427a23e96086f000"));
    ASSERT_TRUE(ts.ok());
    EXPECT_TRUE(ts->is_number_integer());
    EXPECT_EQ(ts->get<std::int64_t>(), 1796346349679LL);
    auto nested = from_cbor(unhex("a2626174fb427a23e96086f0006166fb3ff8000000000000"));
    ASSERT_TRUE(nested.ok());
    EXPECT_EQ((*nested)["at"], 1796346349679LL);
    EXPECT_TRUE((*nested)["at"].is_number_integer());
    EXPECT_EQ((*nested)["f"], 1.5);  // a fraction stays a float
    // Beyond 2^53 a float is not a JS integer: it stays a float.
    auto huge = from_cbor(unhex("fb4430000000000000"));
    ASSERT_TRUE(huge.ok());
    EXPECT_TRUE(huge->is_number_float());
}

// The round trip a typed actor's state and results take: int64 fields survive exactly.
TEST(Values, Int64ValuesRoundTripThroughTheirJavaScriptForm) {
    const std::int64_t values[] = {0,
                                   7,
                                   -1,
                                   4294967295LL,
                                   4294967296LL,
                                   1796346349679LL,
                                   -1796346349679LL,
                                   9007199254740991LL,
                                   9007199254740993LL,
                                   std::numeric_limits<std::int64_t>::min(),
                                   std::numeric_limits<std::int64_t>::max()};
    for (std::int64_t n : values) {
        auto back = from_cbor(to_cbor(Json(n)));
        ASSERT_TRUE(back.ok()) << n;
        EXPECT_EQ(result_as<std::int64_t>(std::move(back)).value(), n) << n;
    }
}

// cbor_args of scalars skips the Json array; its bytes are still to_cbor's of that array.
TEST(Values, ScalarArgumentsAreWrittenAsTheirJsonArrayWouldBe) {
    const auto json_path = [](const auto&... args) {
        Json array = Json::array();
        (array.push_back(Json(args)), ...);
        return to_cbor(array);
    };
    const std::int64_t ints[] = {0, 23, 24, -1, -25, 255, 65536, 4294967295LL, 4294967296LL,
                                 -4294967297LL, 1796346349679LL, 1LL << 40, 9007199254740993LL,
                                 std::numeric_limits<std::int64_t>::min(),
                                 std::numeric_limits<std::int64_t>::max()};
    for (std::int64_t n : ints) {
        EXPECT_EQ(hex(cbor_args(n)), hex(json_path(n))) << n;
        EXPECT_EQ(hex(cbor_args(static_cast<std::uint64_t>(n))),
                  hex(json_path(static_cast<std::uint64_t>(n))))
            << n;
    }
    for (double d : {0.0, 0.5, 1.1, 1e300, 3.0, std::numeric_limits<double>::infinity()})
        EXPECT_EQ(hex(cbor_args(d)), hex(json_path(d))) << d;
    const std::string long_text(300, 'x');
    EXPECT_EQ(hex(cbor_args(1, "a", true, 2.5f, long_text, std::string_view("view"), 7u, short{-3})),
              hex(json_path(1, "a", true, 2.5f, long_text, std::string_view("view"), 7u, short{-3})));
    EXPECT_EQ(hex(cbor_args(nullptr, false)), hex(json_path(nullptr, false)));
    EXPECT_EQ(hex(cbor_args()), "80");
}

}  // namespace
}  // namespace rivetkit

// parse_cbor_or_discarded: nlohmann's CBOR reader without its one exception that
// allow_exceptions=false does not stop (an array or map header longer than a vector can hold).

#include "base/cbor.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

}  // namespace
}  // namespace rivetkit

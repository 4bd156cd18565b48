// The typed runtime's fast path for scalar action arguments (detail::decode_plain_args): it reads
// only what the JSON path (from_cbor, then decode_args) reads as the same values, and leaves
// everything else to that path. Checked against it on generated args arrays: every array the
// fast path accepts, the JSON path decodes to the same tuple, bit for bit.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "rivetkit/rivetkit.hpp"

namespace rivetkit {
namespace {

// Doubles compared by their bits: -0.0 is not 0.0 here, a NaN equals the same NaN.
template <typename T>
bool same(const T& a, const T& b) {
    if constexpr (std::is_same_v<T, double>) {
        return std::memcmp(&a, &b, sizeof a) == 0;
    } else if constexpr (detail::IsOptional<T>::value) {
        return a.has_value() == b.has_value() && (!a || same(*a, *b));
    } else {
        return a == b;
    }
}

template <typename Tuple>
bool same_tuple(const Tuple& a, const Tuple& b) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (same(std::get<I>(a), std::get<I>(b)) && ...);
    }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

template <typename Tuple>
std::optional<Tuple> fast(const Bytes& cbor) {
    Tuple out{};
    if (!detail::decode_plain_args(cbor, out))
        return std::nullopt;
    return out;
}

template <typename Tuple>
Result<Tuple> slow(const Bytes& cbor) {
    Result<Json> json = detail::action_args(cbor);
    if (!json.ok())
        return std::move(json).error();
    return detail::decode_args<Tuple>("act", *json);
}

Bytes bytes(std::initializer_list<int> list) {
    Bytes out;
    for (int b : list)
        out.push_back(static_cast<std::uint8_t>(b));
    return out;
}

// A CBOR float: single precision for a float, double for a double.
template <typename F>
void append_cbor_float(Bytes& out, F f) {
    using Bits = std::conditional_t<sizeof(F) == 8, std::uint64_t, std::uint32_t>;
    Bits bits = 0;
    std::memcpy(&bits, &f, sizeof f);
    out.push_back(sizeof(F) == 8 ? 0xfb : 0xfa);
    for (int shift = static_cast<int>(sizeof(F)) * 8 - 8; shift >= 0; shift -= 8)
        out.push_back(static_cast<std::uint8_t>(bits >> shift));
}

// Items of every kind the fast path must either read exactly or refuse.
std::vector<Bytes> item_pool() {
    std::vector<Bytes> pool = {
        bytes({0x00}), bytes({0x17}), bytes({0x18, 0x18}), bytes({0x18, 0x05}),  // non-canonical
        bytes({0x19, 0x7f, 0xff}), bytes({0x19, 0xff, 0xff}), bytes({0x1a, 0x80, 0x00, 0x00, 0x00}),
        bytes({0x1b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
        bytes({0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
        bytes({0x20}), bytes({0x38, 0x7f}), bytes({0x39, 0x80, 0x00}),
        bytes({0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),  // INT64_MIN
        bytes({0x3b, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}),  // below INT64_MIN
        bytes({0xf4}), bytes({0xf5}), bytes({0xf6}), bytes({0xf7}), bytes({0xf0}),
        bytes({0xf9, 0x3c, 0x00}),  // half 1.0
        bytes({0xf9, 0x3e, 0x00}),  // half 1.5
        bytes({0x60}), bytes({0x61, 'a'}), bytes({0x62, '$', 'x'}), bytes({0x61, '$'}),
        bytes({0x62, 0xff, 0xfe}),                           // not UTF-8
        bytes({0x7f, 0x61, 'a', 0x61, 'b', 0xff}),           // text in chunks
        bytes({0x42, 0x01, 0x02}),                           // byte string
        bytes({0xc1, 0x01}),                                 // tagged integer
        bytes({0x80}), bytes({0x82, 0x62, '$', 'a', 0x01}),  // arrays
        bytes({0xa1, 0x61, 'k', 0x01}),                      // map
        bytes({0x1a, 0x00, 0x01}),                           // truncated
    };
    for (double d : {0.5, -2.25, 5.0, -0.0, 9007199254740993.0, 1e300, std::nan(""),
                     std::numeric_limits<double>::infinity()}) {
        Bytes item;
        append_cbor_float(item, d);
        pool.push_back(item);
    }
    for (float f : {0.25f, 3.0f, -1.5f}) {
        Bytes item;
        append_cbor_float(item, f);
        pool.push_back(item);
    }
    return pool;
}

// Random arrays of 0-4 pool items (sometimes with a wrong head, trailing bytes, or cut short):
// whenever the fast path reads one, the JSON path decodes the same values. Returns how many the
// fast path read.
template <typename Tuple>
int check_against_json_path(std::uint32_t seed, int rounds) {
    static const std::vector<Bytes> pool = item_pool();
    std::mt19937 rng(seed);
    int accepted = 0;
    for (int round = 0; round < rounds; ++round) {
        const std::size_t n = rng() % 5;
        Bytes cbor;
        switch (rng() % 16) {
            case 0:
                break;  // absent args
            case 1:
                cbor.push_back(0x9f);  // indefinite array
                break;
            case 2:
                cbor = bytes({0x98, static_cast<int>(n)});  // long-form head
                break;
            default:
                cbor.push_back(static_cast<std::uint8_t>(0x80 | n));
        }
        for (std::size_t i = 0; i < n && !(cbor.empty() && i == 0); ++i) {
            const Bytes& item = pool[rng() % pool.size()];
            cbor.insert(cbor.end(), item.begin(), item.end());
        }
        if (!cbor.empty() && cbor[0] == 0x9f)
            cbor.push_back(0xff);
        if (rng() % 20 == 0)
            cbor.push_back(0x00);  // trailing
        if (rng() % 20 == 0 && !cbor.empty())
            cbor.pop_back();  // cut short
        const std::optional<Tuple> read = fast<Tuple>(cbor);
        if (!read)
            continue;
        ++accepted;
        const Result<Tuple> reference = slow<Tuple>(cbor);
        EXPECT_TRUE(reference.ok()) << "seed " << seed << " round " << round;
        if (reference.ok()) {
            EXPECT_TRUE(same_tuple(*read, *reference)) << "seed " << seed << " round " << round;
        }
    }
    return accepted;
}

TEST(PlainArgs, WhatTheFastPathReadsTheJsonPathReadsAsTheSameValues) {
    EXPECT_GT((check_against_json_path<std::tuple<std::int64_t>>(1, 20000)), 500);
    EXPECT_GT((check_against_json_path<std::tuple<int, std::optional<std::string>>>(2, 20000)),
              500);
    EXPECT_GT((check_against_json_path<std::tuple<std::string, bool, double>>(3, 200000)), 30);
    EXPECT_GT((check_against_json_path<std::tuple<std::uint16_t, std::optional<std::int64_t>,
                                                  std::optional<double>>>(4, 20000)),
              300);
    EXPECT_GT((check_against_json_path<std::tuple<short, unsigned long long>>(5, 20000)), 20);
    EXPECT_GT((check_against_json_path<std::tuple<std::optional<bool>>>(6, 20000)), 500);
    EXPECT_GT((check_against_json_path<std::tuple<std::string, std::optional<std::string>>>(
                  8, 40000)),
              100);
    EXPECT_GT((check_against_json_path<std::tuple<>>(7, 2000)), 100);
}

// The official client's usual forms take the fast path.
TEST(PlainArgs, TheOfficialClientsFormsAreReadWithoutJson) {
    EXPECT_EQ((fast<std::tuple<std::int64_t>>(bytes({0x81, 0x01}))), std::tuple<std::int64_t>(1));
    EXPECT_EQ((fast<std::tuple<std::int64_t>>(bytes({0x81, 0x38, 0x63}))),
              std::tuple<std::int64_t>(-100));
    EXPECT_TRUE(fast<std::tuple<>>(Bytes{}));
    EXPECT_TRUE(fast<std::tuple<>>(bytes({0x80})));

    Bytes mixed = bytes({0x83, 0x61, 'a', 0xf5});
    append_cbor_float(mixed, 2.5);
    const auto read = fast<std::tuple<std::string, bool, double>>(mixed);
    ASSERT_TRUE(read);
    EXPECT_EQ(*read, std::make_tuple(std::string("a"), true, 2.5));

    using Optional = std::tuple<int, std::optional<std::string>>;
    EXPECT_EQ(fast<Optional>(bytes({0x81, 0x07})), Optional(7, std::nullopt));
    EXPECT_EQ(fast<Optional>(bytes({0x82, 0x07, 0xf6})), Optional(7, std::nullopt));
    EXPECT_EQ(fast<Optional>(bytes({0x82, 0x07, 0x61, 'z'})), Optional(7, "z"));
}

// What from_cbor reads through its compat form, and what decode_args refuses, is left to them:
// the fast path declines, the JSON path answers.
TEST(PlainArgs, CompatFormsAndMismatchesAreLeftToTheJsonPath) {
    Bytes five = bytes({0x81});
    append_cbor_float(five, 5.0);  // how a JS encoder may write 5
    EXPECT_FALSE(fast<std::tuple<std::int64_t>>(five));
    EXPECT_EQ(slow<std::tuple<std::int64_t>>(five).value(), std::tuple<std::int64_t>(5));

    const Bytes dollar = bytes({0x82, 0x62, '$', 'x', 0x61, 'y'});
    EXPECT_FALSE((fast<std::tuple<std::string, std::string>>(dollar)));

    EXPECT_FALSE(fast<std::tuple<std::int64_t>>(bytes({0x81, 0x61, 'a'})));
    const auto mismatch = slow<std::tuple<std::int64_t>>(bytes({0x81, 0x61, 'a'}));
    ASSERT_FALSE(mismatch.ok());
    EXPECT_EQ(mismatch.error().code(), "validation_error");

    EXPECT_FALSE(fast<std::tuple<std::int64_t>>(bytes({0x82, 0x01, 0x02})));  // arity
    EXPECT_FALSE(fast<std::tuple<std::uint16_t>>(bytes({0x81, 0x1a, 0x00, 0x01, 0x00, 0x00})));
    EXPECT_FALSE(fast<std::tuple<std::uint16_t>>(bytes({0x81, 0x20})));  // negative
}

}  // namespace
}  // namespace rivetkit

#include "base/ascii.hpp"

#include <gtest/gtest.h>

using rivetkit::ascii_iequals;
using rivetkit::ascii_lower;

TEST(Ascii, LowersOnlyAsciiCapitals) {
    EXPECT_EQ(ascii_lower('A'), 'a');
    EXPECT_EQ(ascii_lower('Z'), 'z');
    EXPECT_EQ(ascii_lower('a'), 'a');
    EXPECT_EQ(ascii_lower('@'), '@');  // just before 'A'
    EXPECT_EQ(ascii_lower('['), '[');  // just after 'Z'
    EXPECT_EQ(ascii_lower('\xC9'), '\xC9');  // a Latin-1 capital is not ASCII
}

TEST(Ascii, HeaderNamesCompareWithoutCase) {
    EXPECT_TRUE(ascii_iequals("Content-Type", "content-type"));
    EXPECT_TRUE(ascii_iequals("", ""));
    EXPECT_FALSE(ascii_iequals("vary", "vary "));
    EXPECT_FALSE(ascii_iequals("x-a", "x_a"));
    static_assert(ascii_iequals("SET-COOKIE", "set-cookie"));
}

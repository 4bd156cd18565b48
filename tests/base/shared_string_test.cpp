#include "base/shared_string.hpp"

#include <map>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "base/log.hpp"

namespace rivetkit {
namespace {

const std::string kId = "1oasnakdmqjf6wpno1wy7vci4sal00";  // an engine id: past the inline buffer

TEST(SharedString, CopiesShareOneBlock) {
    SharedString a(kId);
    SharedString b = a;
    SharedString c;
    c = b;
    EXPECT_EQ(a.str().data(), b.str().data());
    EXPECT_EQ(a.str().data(), c.str().data());
    EXPECT_EQ(c.str(), kId);
    // Made again from the same text: equal, but its own block.
    SharedString d(kId);
    EXPECT_EQ(a, d);
    EXPECT_NE(a.str().data(), d.str().data());
}

TEST(SharedString, ComparesAndOrdersByItsCharacters) {
    SharedString a("abc");
    EXPECT_EQ(a, "abc");
    EXPECT_EQ(a, std::string("abc"));
    EXPECT_EQ(a, std::string_view("abc"));
    EXPECT_EQ(std::string("abc"), a);
    EXPECT_NE(a, "abd");
    EXPECT_LT(a, SharedString("abd"));
    EXPECT_LT(a, std::string("b"));
    EXPECT_GT(a, std::string_view("ab"));
    SharedString empty;
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(empty, "");
    EXPECT_EQ(empty.size(), 0u);
}

TEST(SharedString, KeysAMapLookedUpByPlainText) {
    std::map<SharedString, int, std::less<>> m;
    m.emplace(SharedString(kId), 1);
    m.emplace(SharedString("other"), 2);
    EXPECT_EQ(m.find(kId)->second, 1);
    EXPECT_EQ(m.find(std::string_view("other"))->second, 2);
    EXPECT_EQ(m.find(std::string_view("missing")), m.end());
}

TEST(SharedString, ReadsAsAStringAndAsALogValue) {
    SharedString a(kId);
    const std::string& ref = a;
    std::string_view view = a;
    EXPECT_EQ(ref, kId);
    EXPECT_EQ(view, kId);
    log::Value value(a);
    EXPECT_EQ(value.string_view(), kId);
}

}  // namespace
}  // namespace rivetkit

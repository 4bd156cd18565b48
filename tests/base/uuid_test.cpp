// random_uuid_v4: RFC 4122 version 4 text, lowercase, 8-4-4-4-12.

#include "base/uuid.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace rivetkit {
namespace {

TEST(Uuid, RandomV4IsLowercaseHexWithVersionAndVariantBits) {
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
        const std::string id = random_uuid_v4();
        ASSERT_EQ(id.size(), 36u) << id;
        for (std::size_t at = 0; at < id.size(); ++at) {
            if (at == 8 || at == 13 || at == 18 || at == 23) {
                EXPECT_EQ(id[at], '-') << id;
            } else {
                EXPECT_TRUE((id[at] >= '0' && id[at] <= '9') || (id[at] >= 'a' && id[at] <= 'f'))
                    << id;
            }
        }
        EXPECT_EQ(id[14], '4') << id;                                  // version
        EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // variant
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), 200u);
}

}  // namespace
}  // namespace rivetkit

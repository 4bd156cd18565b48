// Inspector auth against the actor's KV [3] token: only the exact stored token passes; a missing
// or empty candidate, a wrong one, or no stored token is inspector/unauthorized.

#include "core/inspector/auth.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "runtime/test_runtime.hpp"

namespace rivetkit::core::inspector {
namespace {

struct Fixture {
    Fixture()
        : kv(std::make_shared<InMemoryKv>()),
          ctx(rt.executor(), rt.clock(), "actor-a", "inspected", {}, "local", Kv(kv, "actor-a")) {}

    Status verify(std::optional<std::string> candidate) {
        return rt.block_on(verify_token(ctx, std::move(candidate)));
    }

    rt::TestRuntime rt;
    std::shared_ptr<InMemoryKv> kv;
    ActorContext ctx;
};

void expect_unauthorized(const Status& st) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().group(), "inspector");
    EXPECT_EQ(st.error().code(), "unauthorized");
}

TEST(InspectorAuth, OnlyTheStoredTokenPasses) {
    Fixture f;
    expect_unauthorized(f.verify("tok"));  // nothing stored yet
    ASSERT_TRUE(
        f.rt.block_on(f.ctx.kv().put(keys::to_bytes(keys::kInspectorToken), to_bytes("tok"))).ok());
    EXPECT_TRUE(f.verify("tok").ok());
    expect_unauthorized(f.verify("tok2"));
    expect_unauthorized(f.verify("to"));
    expect_unauthorized(f.verify("TOK"));
    expect_unauthorized(f.verify(""));
    expect_unauthorized(f.verify(std::nullopt));
}

TEST(InspectorAuth, TestTokenOverrideReplacesTheStoredToken) {
    Fixture f;
    ASSERT_TRUE(
        f.rt.block_on(f.ctx.kv().put(keys::to_bytes(keys::kInspectorToken), to_bytes("tok"))).ok());
    ::setenv("_RIVET_TEST_INSPECTOR_TOKEN", "override", 1);
    const Status with_override = f.verify("override");
    const Status stored = f.verify("tok");
    ::unsetenv("_RIVET_TEST_INSPECTOR_TOKEN");
    EXPECT_TRUE(with_override.ok());
    expect_unauthorized(stored);
    EXPECT_TRUE(f.verify("tok").ok());
}

}  // namespace
}  // namespace rivetkit::core::inspector

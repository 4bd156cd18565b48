#include "base/error.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "base/result.hpp"

namespace rivetkit {
namespace {

TEST(ErrorTest, DisplayContainsCodeAndMessage) {
    auto e = errors::actor_stopping();
    EXPECT_EQ(e.group(), "actor");
    EXPECT_EQ(e.code(), "stopping");
    EXPECT_EQ(e.to_string(), "stopping: Actor is stopping.");
    EXPECT_EQ(e.id(), "actor/stopping");
}

TEST(ErrorTest, ActorSpecifierPrefixesDisplayButKeepsFields) {
    auto e = errors::actor_not_ready().with_actor({"actor-1", 3, "k"});
    EXPECT_EQ(e.to_string(), "actor actor-1 generation 3 key k: not_ready: Actor is not ready.");
    EXPECT_EQ(e.code(), "not_ready");
    ASSERT_TRUE(e.actor().has_value());
    EXPECT_EQ(e.actor()->generation, 3u);
}

TEST(ErrorTest, NonStructuredExceptionBecomesInternalError) {
    auto e = error_from_exception(std::make_exception_ptr(std::runtime_error("boom")));
    EXPECT_TRUE(e.is("core", "internal_error"));
    EXPECT_EQ(e.message(), "An internal error occurred");
    EXPECT_EQ(e.metadata(), R"({"error":"boom"})");
}

TEST(ErrorTest, StructuredExceptionIsPreserved) {
    auto e = error_from_exception(std::make_exception_ptr(ErrorException(
        errors::user("deliberate_failure", "counter failed on purpose", R"({"reason":"test"})"))));
    EXPECT_TRUE(e.is("user", "deliberate_failure"));
    EXPECT_EQ(e.metadata(), R"({"reason":"test"})");
}

TEST(ErrorTest, PublicHttpStatusTable) {
    EXPECT_EQ(public_http_status(errors::actor_action_not_found("x")), 404);
    EXPECT_EQ(public_http_status(errors::actor_invalid_request("argument 1: bad")), 400);
    EXPECT_TRUE(is_public(errors::actor_invalid_request("argument 1: bad")));
    EXPECT_EQ(public_http_status(errors::actor_action_timed_out()), 408);
    EXPECT_EQ(public_http_status(errors::actor_aborted()), 400);
    EXPECT_EQ(public_http_status(errors::message_incoming_too_long()), 400);
    EXPECT_EQ(public_http_status(Error("queue", "timed_out", "t")), 400);
    EXPECT_EQ(public_http_status(Error("auth", "forbidden", "f")), 403);
    EXPECT_EQ(public_http_status(errors::user("c", "m")), 400);
    EXPECT_EQ(public_http_status(errors::actor_stopping()), 500);
}

TEST(ErrorTest, NonPublicErrorsAreMasked) {
    auto masked = to_public(errors::actor_not_configured("kv"));
    EXPECT_TRUE(masked.is("core", "internal_error"));
    EXPECT_FALSE(masked.metadata().has_value());
    auto shown = to_public(errors::user("bad", "bad input"));
    EXPECT_TRUE(shown.is("user", "bad"));
}

TEST(ErrorTest, AnErrorMadePublicIsShownWithItsOwnGroupAndStatus) {
    // upstream's `new ActorError("connection", "custom_error", msg, { public: true })`
    Error custom("connection", "custom_error", "Test error from createConnState");
    EXPECT_FALSE(is_public(custom));
    EXPECT_EQ(to_public(custom).code(), "internal_error");
    Error shown = Error(custom).make_public();
    EXPECT_TRUE(is_public(shown));
    EXPECT_EQ(public_http_status(shown), 400);
    EXPECT_EQ(to_public(shown), custom);
    EXPECT_EQ(public_http_status(Error("billing", "payment_required", "pay").make_public(402)),
              402);
    // The flag travels with the error through an exception.
    try {
        throw ErrorException(std::move(shown));
    } catch (...) {
        EXPECT_TRUE(is_public(error_from_exception(std::current_exception())));
    }
}

// An Error is a pointer to its fields, so a Status costs the frames and replies that may hold one
// next to nothing; copies are independent and a moved-from error reads as empty.
TEST(ErrorTest, IsSmallCopiesDeepAndReadsEmptyOnceMoved) {
    static_assert(sizeof(Error) == sizeof(void*));
    static_assert(sizeof(Status) <= 2 * sizeof(void*));
    Error original("actor", "not_found", "missing", R"({"id":"a"})");
    Error copy = original;
    copy.with_actor(ActorSpecifier{"a", 3, "k"}).make_public(404);
    EXPECT_FALSE(original.actor().has_value());
    EXPECT_FALSE(original.public_status().has_value());
    EXPECT_EQ(copy.public_status(), 404u);
    EXPECT_EQ(copy, original);  // equality is group, code, message and metadata
    Error moved = std::move(copy);
    EXPECT_EQ(moved.actor()->generation, 3u);
    EXPECT_EQ(copy.group(), "");   // NOLINT(bugprone-use-after-move): what a moved-from reads
    EXPECT_EQ(copy.to_string(), ": ");
    copy = original;  // and it can be assigned again
    EXPECT_EQ(copy.message(), "missing");
    EXPECT_EQ(copy.metadata(), std::optional<std::string>(R"({"id":"a"})"));
}

TEST(ResultTest, ValueAndError) {
    Result<int> ok = 5;
    EXPECT_TRUE(ok.ok());
    EXPECT_EQ(*ok, 5);
    Result<int> bad = errors::actor_dropped_reply();
    EXPECT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().code(), "dropped_reply");
    EXPECT_THROW((void)bad.value(), ErrorException);
    Status s;
    EXPECT_TRUE(s.ok());
    Status f = errors::actor_starting();
    EXPECT_EQ(f.error().message(), "Actor is starting.");
}

}  // namespace
}  // namespace rivetkit

#include "base/log.hpp"

#include <gtest/gtest.h>

#include <thread>

namespace rivetkit::log {
namespace {

TEST(LogTest, CaptureRecordsMessageAndFieldsAtEveryLevel) {
    set_level(Level::error);
    Capture capture;
    debug("actor lifecycle command received", {{"actor_id", "a1"}, {"command", "start"}});
    warn("closed", {{"count", 3}, {"flag", true}});
    set_level(Level::info);

    auto records = capture.records();
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].level, Level::debug);
    EXPECT_EQ(records[0].message, "actor lifecycle command received");
    EXPECT_TRUE(records[0].has_field("actor_id", "a1"));
    EXPECT_EQ(records[0].field("command"), "start");
    EXPECT_EQ(records[1].field("count"), "3");
    EXPECT_EQ(records[1].field("flag"), "true");
    EXPECT_FALSE(records[1].field("missing").has_value());
    EXPECT_EQ(capture.count("closed"), 1u);
}

TEST(LogTest, ThreadCaptureDoesNotSeeOtherThreads) {
    Capture capture;
    std::thread([] {
        Capture other;
        info("from other thread");
        EXPECT_EQ(other.count("from other thread"), 1u);
    }).join();
    info("from this thread");
    EXPECT_EQ(capture.count("from other thread"), 0u);
    EXPECT_EQ(capture.count("from this thread"), 1u);
}

TEST(LogTest, AllThreadsCaptureSeesOtherThreads) {
    Capture capture(Capture::Scope::all_threads);
    std::thread([] { info("from worker", {{"n", 1}}); }).join();
    EXPECT_EQ(capture.count("from worker"), 1u);
}

TEST(LogTest, NestedCapturesBothRecord) {
    Capture outer;
    {
        Capture inner;
        info("inside");
        EXPECT_EQ(inner.count("inside"), 1u);
    }
    info("outside");
    EXPECT_EQ(outer.count("inside"), 1u);
    EXPECT_EQ(outer.count("outside"), 1u);
}

TEST(LogTest, RenderLogfmtQuotesWhenNeeded) {
    auto line = render(Format::logfmt, Level::warn, "all senders dropped",
                       {{"actor_id", "abc"}, {"reason", "has \"quote\""}, {"n", -5}});
    EXPECT_EQ(
        line,
        "level=warn msg=\"all senders dropped\" actor_id=abc reason=\"has \\\"quote\\\"\" n=-5");
}

TEST(LogTest, RenderJsonEscapes) {
    auto line = render(Format::json, Level::info, "m\n", {{"k", "v\""}, {"b", false}, {"u", 7u}});
    EXPECT_EQ(line, R"({"level":"info","msg":"m\n","k":"v\"","b":false,"u":7})");
}

TEST(LogTest, ParseLevel) {
    EXPECT_EQ(parse_level("DEBUG"), Level::debug);
    EXPECT_EQ(parse_level("warning"), Level::warn);
    EXPECT_EQ(parse_level("off"), Level::off);
    EXPECT_FALSE(parse_level("loud").has_value());
}

TEST(LogTest, EnabledFollowsThresholdWithoutCapture) {
    set_level(Level::warn);
    EXPECT_FALSE(enabled(Level::debug));
    EXPECT_TRUE(enabled(Level::error));
    {
        Capture capture;
        EXPECT_TRUE(enabled(Level::trace));
    }
    EXPECT_FALSE(enabled(Level::info));
    set_level(Level::info);
}

}  // namespace
}  // namespace rivetkit::log

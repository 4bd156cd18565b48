// Rate-limited actor warnings (upstream diagnostics.rs) and the inspector overlay's bounded
// per-subscriber queue (upstream's broadcast channel of 32).

#include <gtest/gtest.h>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kStopping = "work sent to stopping actor instance";

TEST(ActorDiagnostics, warnings_are_limited_per_window_and_report_what_was_suppressed) {
    reset_global_warnings_for_tests();
    rt::TestRuntime rt;
    log::Capture capture;
    auto ctx = new_with_kv(rt, "actor-diag", "task-diag", std::make_shared<InMemoryKv>());
    for (int i = 0; i < 5; ++i)
        ctx.warn_work_sent_to_stopping_instance("dispatch");
    EXPECT_EQ(capture.count(kStopping), kWarningLimit);

    rt.block_on([&]() -> Task<void> { co_await rt.clock().advance(kWarningWindow - 1ms); }());
    ctx.warn_work_sent_to_stopping_instance("dispatch");
    EXPECT_EQ(capture.count(kStopping), kWarningLimit) << "still inside the first window";

    rt.block_on([&]() -> Task<void> { co_await rt.clock().advance(1ms); }());
    ctx.warn_work_sent_to_stopping_instance("stop_actor");
    auto records = capture.find(kStopping);
    ASSERT_EQ(records.size(), kWarningLimit + 1);
    const auto& next = records.back();
    EXPECT_TRUE(next.has_field("actor_id", "actor-diag"));
    EXPECT_TRUE(next.has_field("operation", "stop_actor"));
    EXPECT_TRUE(next.has_field("per_actor_suppressed", "3"));
    EXPECT_TRUE(next.has_field("global_suppressed", "3"));
    EXPECT_TRUE(records.front().has_field("per_actor_suppressed", "0"));
}

TEST(ActorDiagnostics, the_process_wide_window_limits_warnings_across_actors) {
    reset_global_warnings_for_tests();
    rt::TestRuntime rt;
    log::Capture capture;
    auto a = new_with_kv(rt, "actor-diag-a", "task-diag", std::make_shared<InMemoryKv>());
    auto b = new_with_kv(rt, "actor-diag-b", "task-diag", std::make_shared<InMemoryKv>());
    for (int i = 0; i < 3; ++i)
        a.warn_work_sent_to_stopping_instance("dispatch");
    b.warn_work_sent_to_stopping_instance("dispatch");
    EXPECT_EQ(capture.count(kStopping), 3u);
    // Kinds are limited separately.
    b.warn_self_call_risk("dispatch");
    auto parked = capture.find("actor dispatch may be parked behind the current instance");
    ASSERT_EQ(parked.size(), 1u);
    EXPECT_TRUE(parked[0].has_field("actor_id", "actor-diag-b"));
}

TEST(ActorDiagnostics, dispatch_to_a_destroying_actor_warns_at_most_three_times_per_window) {
    reset_global_warnings_for_tests();
    rt::TestRuntime rt;
    log::Capture capture;
    auto ctx = new_with_kv(rt, "actor-diag-dispatch", "task-diag", std::make_shared<InMemoryKv>());
    auto task = new_task(ctx);
    rt.block_on([&]() -> Task<void> {
        CO_ASSERT((co_await start_task(*task)).ok());
        CO_ASSERT(ctx.destroy().ok());
        for (int i = 0; i < 6; ++i) {
            auto [tx, rx] = rt::oneshot<Result<Bytes>>();
            DispatchCommand command =
                dispatch::Action{"late", {}, ConnHandle("conn", {}, {}, false), std::move(tx)};
            co_await task->handle_dispatch(std::move(command));
            auto reply = rx.try_recv();
            CO_ASSERT(reply.has_value() && !reply->ok());
            EXPECT_EQ(reply->error().code(), "destroying");
        }
    }());
    EXPECT_EQ(capture.count(kStopping), 3u);
}

TEST(ActorDiagnostics, inspector_overlay_keeps_the_newest_32_for_a_slow_subscriber) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-overlay-lag", "task-diag", std::make_shared<InMemoryKv>());
    ctx.configure_inspector_runtime();
    auto guard = ctx.inspector_attach();
    ASSERT_TRUE(guard.has_value());
    auto rx = ctx.subscribe_inspector();
    ASSERT_TRUE(rx.has_value());
    for (std::uint8_t i = 0; i < 40; ++i)
        ctx.broadcast_inspector_overlay({StateDelta::actor_state(Bytes{i})});
    EXPECT_EQ(rx->len(), kInspectorOverlayCapacity);
    auto first = rx->try_recv();
    ASSERT_TRUE(first.has_value());
    auto deltas = decode_state_deltas_cbor(*first);
    ASSERT_TRUE(deltas.has_value());
    ASSERT_EQ(deltas->size(), 1u);
    EXPECT_EQ((*deltas)[0].bytes, Bytes{8}) << "the 8 oldest overlays were dropped";
}

}  // namespace
}  // namespace rivetkit::core::test

// Bad persisted input (issue 3, "Bad input"): a corrupt [1] or [6] makes Start fail with a
// structured protocol/invalid_persisted_data error naming the key, logged with actor_id; nothing is
// overwritten and other actors in the process are unaffected. Not part of upstream's spec.

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

TEST(ActorTaskBadInput, corrupt_persisted_actor_fails_start_without_overwriting) {
    rt::TestRuntime rt;
    log::Capture capture;
    auto kv = std::make_shared<InMemoryKv>();
    const Bytes corrupt{4, 0, 7, 7, 7};
    kv->insert(keys::to_bytes(keys::kPersistData), corrupt);
    auto healthy_kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-corrupt", "task-corrupt", kv);
    auto healthy_ctx = new_with_kv(rt, "actor-healthy", "task-healthy", healthy_kv);
    auto task = new_task(ctx);
    auto healthy = new_task(healthy_ctx);
    rt.block_on([&]() -> Task<void> {
        Status started = co_await start_task(*task);
        CO_ASSERT(!started.ok());
        EXPECT_TRUE(started.error().is("protocol", "invalid_persisted_data"));
        EXPECT_NE(started.error().message().find("key [1]"), std::string::npos)
            << started.error().message();
        EXPECT_EQ(task->lifecycle, LifecycleState::Loading);
        CO_ASSERT((co_await start_task(*healthy)).ok());
    }());
    EXPECT_EQ(kv->peek(keys::kPersistData), corrupt);
    EXPECT_EQ(kv->entries().size(), 1u) << "nothing else may be written for a failed start";
    bool logged = false;
    for (const auto& record : capture.find("actor start failed")) {
        logged = logged || record.has_field("actor_id", "actor-corrupt");
    }
    EXPECT_TRUE(logged);
    EXPECT_TRUE(healthy_ctx.persisted_actor().has_initialized);
}

TEST(ActorTaskBadInput, corrupt_last_pushed_alarm_names_its_key) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    kv->insert(keys::to_bytes(keys::kLastPushedAlarm), Bytes{1, 0, 9});
    auto ctx = new_with_kv(rt, "actor-corrupt-alarm", "task-corrupt-alarm", kv);
    auto task = new_task(ctx);
    rt.block_on([&]() -> Task<void> {
        Status started = co_await start_task(*task);
        CO_ASSERT(!started.ok());
        EXPECT_TRUE(started.error().is("protocol", "invalid_persisted_data"));
        EXPECT_NE(started.error().message().find("key [6]"), std::string::npos);
    }());
}

}  // namespace
}  // namespace rivetkit::core::test

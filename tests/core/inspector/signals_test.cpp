// The context's inspector signals (what an inspector socket pushes on) on virtual time: a save of
// [1] signals StateUpdated, a connection joining or leaving ConnectionsUpdated, the queue changing
// QueueUpdated, a scheduled event added or cancelled SchedulesUpdated; nothing is recorded for a
// receiver that is gone.

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/actor/context.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/queue.hpp"
#include "runtime/test_runtime.hpp"

namespace rivetkit::core {
namespace {

struct Fixture {
    Fixture()
        : kv(std::make_shared<InMemoryKv>()),
          ctx(rt.executor(), rt.clock(), "actor-i", "inspected", {}, "local", Kv(kv, "actor-i")) {}

    std::vector<InspectorSignal> drain(rt::Receiver<InspectorSignal>& rx) {
        std::vector<InspectorSignal> out;
        while (auto s = rx.try_recv())
            out.push_back(*s);
        return out;
    }

    rt::TestRuntime rt;
    std::shared_ptr<InMemoryKv> kv;
    ActorContext ctx;
};

using S = InspectorSignal;

TEST(InspectorSignals, SavesOfPersistedStateSignalStateUpdated) {
    Fixture f;
    auto rx = f.ctx.subscribe_inspector_signals();
    std::vector<StateDelta> deltas{StateDelta::actor_state(Bytes{0xa0})};
    ASSERT_TRUE(f.rt.block_on(f.ctx.save_state(std::move(deltas))).ok());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::StateUpdated});
    EXPECT_EQ(f.ctx.state(), Bytes{0xa0});

    f.ctx.set_state_initial(Bytes{0x01});
    ASSERT_TRUE(f.rt.block_on(f.ctx.persist_if_dirty()).ok());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::StateUpdated});
    // Nothing dirty: no write, no signal.
    ASSERT_TRUE(f.rt.block_on(f.ctx.persist_if_dirty()).ok());
    EXPECT_TRUE(f.drain(rx).empty());
}

TEST(InspectorSignals, ConnectionsJoiningAndLeavingSignalConnectionsUpdated) {
    Fixture f;
    auto rx = f.ctx.subscribe_inspector_signals();
    f.ctx.add_conn(ConnHandle("c1", {}, {}, false));
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::ConnectionsUpdated});
    EXPECT_TRUE(f.ctx.remove_conn("c1").has_value());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::ConnectionsUpdated});
    EXPECT_FALSE(f.ctx.remove_conn("c1").has_value());
    EXPECT_TRUE(f.drain(rx).empty());
}

TEST(InspectorSignals, QueueChangesSignalQueueUpdated) {
    Fixture f;
    ActorQueue queue(f.ctx);
    ASSERT_TRUE(f.rt.block_on(queue.send("jobs", Bytes{0x01})).ok());
    auto rx = f.ctx.subscribe_inspector_signals();
    ASSERT_TRUE(f.rt.block_on(queue.send("jobs", Bytes{0x02})).ok());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::QueueUpdated});
    auto got = f.rt.block_on(queue.try_next(QueueReceiveOpts{}));
    ASSERT_TRUE(got.ok() && got.value().has_value());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::QueueUpdated});
}

TEST(InspectorSignals, ScheduleChangesSignalSchedulesUpdated) {
    Fixture f;
    auto rx = f.ctx.subscribe_inspector_signals();
    EXPECT_TRUE(f.ctx.after(std::chrono::minutes(5), "tick", Bytes{0x80}).ok());
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::SchedulesUpdated});
    auto event = f.ctx.next_event();
    ASSERT_TRUE(event.has_value());
    EXPECT_TRUE(f.ctx.cancel_scheduled_event(event->event_id));
    EXPECT_EQ(f.drain(rx), std::vector<S>{S::SchedulesUpdated});
    // Nothing to cancel: nothing changed, no signal.
    EXPECT_FALSE(f.ctx.cancel_scheduled_event(event->event_id));
    EXPECT_TRUE(f.drain(rx).empty());
}

TEST(InspectorSignals, EverySubscriberGetsEachSignalAndGoneOnesArePruned) {
    Fixture f;
    auto a = f.ctx.subscribe_inspector_signals();
    {
        auto b = f.ctx.subscribe_inspector_signals();
        f.ctx.record_inspector_signal(S::WorkflowHistoryUpdated);
        EXPECT_EQ(f.drain(b), std::vector<S>{S::WorkflowHistoryUpdated});
        EXPECT_EQ(f.ctx.inner()->inspector_subscribers.view().signal.size(), 2u);
    }
    f.ctx.record_inspector_signal(S::QueueUpdated);
    EXPECT_EQ(f.drain(a), (std::vector<S>{S::WorkflowHistoryUpdated, S::QueueUpdated}));
    EXPECT_EQ(f.ctx.inner()->inspector_subscribers.view().signal.size(), 1u);
}

}  // namespace
}  // namespace rivetkit::core

// Actor metrics (core/actor/metrics.hpp): upstream's names in the Prometheus text format, per
// actor name; live actors' gauges summed, finished actors' counters kept under their name; the
// recording path is relaxed atomics on the name's shard of the recording thread (several threads
// recording at once while another renders sum exactly; an actor costs a small handle); hooks in the task/context paths (connections, state saves, scheduled
// actions, queue waits) on virtual time.

#include "core/actor/metrics.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

// The value of the sample line starting with `prefix` ("name{labels}"), or -1.
double sample(const std::string& text, const std::string& prefix) {
    const std::string key = prefix + " ";
    std::size_t at = 0;
    while ((at = text.find(key, at)) != std::string::npos) {
        if (at == 0 || text[at - 1] == '\n') {
            const std::size_t end = text.find('\n', at);
            return std::stod(text.substr(at + key.size(), end - at - key.size()));
        }
        at += key.size();
    }
    return -1;
}

TEST(Metrics, renders_upstream_names_and_types_per_actor_name) {
    auto a = std::make_shared<ActorMetrics>("metrics-render");
    a->actor_started();
    a->set_queue_depth(3);
    a->queue_messages_sent(5);
    a->queue_messages_received(2);
    a->connection_established();
    a->set_connections_active(1);
    a->end_user_task(UserTaskKind::Action, std::chrono::milliseconds(30));
    a->begin_user_task(UserTaskKind::Action);  // net 0 active after the end above
    a->state_mutation(StateMutationReason::InputSet);
    a->state_saved();
    a->shutdown_wait(ShutdownKind::Sleep, std::chrono::milliseconds(2));
    const std::string text = render_prometheus_metrics();
    for (const char* header :
         {"# TYPE rivetkit_actor_active_count gauge", "# TYPE rivetkit_actor_started_total counter",
          "# TYPE rivetkit_actor_stopped_total counter", "# TYPE rivetkit_actor_queue_depth gauge",
          "# TYPE rivetkit_actor_queue_messages_sent_total counter",
          "# TYPE rivetkit_actor_queue_messages_received_total counter",
          "# TYPE rivetkit_actor_connections_active gauge",
          "# TYPE rivetkit_actor_connections_total counter",
          "# TYPE rivetkit_actor_user_tasks_active gauge",
          "# TYPE rivetkit_actor_user_task_duration_seconds histogram",
          "# TYPE rivetkit_actor_shutdown_wait_seconds histogram",
          "# TYPE rivetkit_actor_shutdown_timeout_total counter",
          "# TYPE rivetkit_actor_state_mutation_total counter"}) {
        EXPECT_NE(text.find(std::string(header) + "\n"), std::string::npos) << header;
    }
    const std::string n = "{actor_name=\"metrics-render\"";
    EXPECT_EQ(sample(text, "rivetkit_actor_active_count" + n + "}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_started_total" + n + "}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_queue_depth" + n + "}"), 3);
    EXPECT_EQ(sample(text, "rivetkit_actor_queue_messages_sent_total" + n + "}"), 5);
    EXPECT_EQ(sample(text, "rivetkit_actor_queue_messages_received_total" + n + "}"), 2);
    EXPECT_EQ(sample(text, "rivetkit_actor_connections_active" + n + "}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_connections_total" + n + "}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_user_tasks_active" + n + ",kind=\"action\"}"), 0);
    const std::string action = n + ",kind=\"action\"";
    EXPECT_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_count" + action + "}"), 1);
    EXPECT_DOUBLE_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_sum" + action + "}"),
                     0.03);
    EXPECT_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_bucket" + action +
                               ",le=\"0.025\"}"),
              0);
    EXPECT_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_bucket" + action +
                               ",le=\"0.05\"}"),
              1);
    EXPECT_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_bucket" + action +
                               ",le=\"+Inf\"}"),
              1);
    EXPECT_EQ(sample(text, "rivetkit_actor_state_mutation_total" + n + ",reason=\"input_set\"}"),
              1);
    EXPECT_EQ(sample(text, "rivetkit_actor_state_saves_total" + n + "}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_shutdown_wait_seconds_count" + n + ",reason=\"sleep\"}"),
              1);
}

TEST(Metrics, finished_actors_keep_their_counters_but_not_their_gauges) {
    const std::string n = "{actor_name=\"metrics-fold\"}";
    {
        ActorMetrics first("metrics-fold");
        first.actor_started();
        first.queue_messages_sent(4);
        first.set_queue_depth(4);
        ActorMetrics second("metrics-fold");
        second.actor_started();
        second.queue_messages_sent(1);
        second.set_queue_depth(1);
        const std::string live = render_prometheus_metrics();
        EXPECT_EQ(sample(live, "rivetkit_actor_active_count" + n), 2);
        EXPECT_EQ(sample(live, "rivetkit_actor_queue_depth" + n), 5);
        EXPECT_EQ(sample(live, "rivetkit_actor_queue_messages_sent_total" + n), 5);
        first.actor_stopped();
    }
    const std::string after = render_prometheus_metrics();
    EXPECT_EQ(sample(after, "rivetkit_actor_active_count" + n), 0);
    EXPECT_EQ(sample(after, "rivetkit_actor_queue_depth" + n), 0);
    EXPECT_EQ(sample(after, "rivetkit_actor_queue_messages_sent_total" + n), 5);
    EXPECT_EQ(sample(after, "rivetkit_actor_started_total" + n), 2);
    EXPECT_EQ(sample(after, "rivetkit_actor_stopped_total" + n), 1);
}

TEST(Metrics, actors_on_several_threads_record_without_locks_while_rendering) {
    constexpr int kThreads = 4;
    constexpr int kEach = 50'000;
    std::vector<std::thread> threads;
    std::atomic<bool> done{false};
    std::thread renderer([&] {
        while (!done.load())
            (void)render_prometheus_metrics();
    });
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([] {
            ActorMetrics m("metrics-threads");
            for (int i = 0; i < kEach; ++i) {
                m.queue_messages_sent(1);
                m.end_user_task(UserTaskKind::Action, std::chrono::microseconds(1));
            }
        });
    }
    for (auto& t : threads)
        t.join();
    done = true;
    renderer.join();
    const std::string text = render_prometheus_metrics();
    const std::string n = "{actor_name=\"metrics-threads\"";
    EXPECT_EQ(sample(text, "rivetkit_actor_queue_messages_sent_total" + n + "}"), kThreads * kEach);
    EXPECT_EQ(sample(text, "rivetkit_actor_user_task_duration_seconds_count" + n +
                               ",kind=\"action\"}"),
              kThreads * kEach);
}

TEST(Metrics, an_actor_costs_a_small_handle_not_histograms_of_its_own) {
    // An awake actor's memory is the product's RSS per actor: its metrics are a reference to its
    // name's shard and its own gauge contributions, not 13 histograms (~1.6 KB) per actor.
    EXPECT_LE(sizeof(ActorMetrics), 32u);
    const std::string n = "{actor_name=\"metrics-handles\"}";
    std::vector<std::unique_ptr<ActorMetrics>> actors;
    for (int i = 0; i < 1000; ++i) {
        actors.push_back(std::make_unique<ActorMetrics>("metrics-handles"));
        actors.back()->actor_started();
        actors.back()->set_connections_active(2);
        actors.back()->set_connections_active(1);
    }
    std::string text = render_prometheus_metrics();
    EXPECT_EQ(sample(text, "rivetkit_actor_active_count" + n), 1000);
    EXPECT_EQ(sample(text, "rivetkit_actor_connections_active" + n), 1000);
    // An actor that goes away without stopping (its task was dropped) takes its gauges with it.
    actors.resize(400);
    text = render_prometheus_metrics();
    EXPECT_EQ(sample(text, "rivetkit_actor_active_count" + n), 400);
    EXPECT_EQ(sample(text, "rivetkit_actor_connections_active" + n), 400);
    EXPECT_EQ(sample(text, "rivetkit_actor_started_total" + n), 1000);
}

TEST(Metrics, context_hooks_record_connections_saves_schedule_and_mutations) {
    rt::TestRuntime rt;
    auto kv = std::make_shared<InMemoryKv>();
    auto ctx = new_with_kv(rt, "actor-metrics-hooks", "metrics-hooks", kv);
    const std::string n = "{actor_name=\"metrics-hooks\"";
    ctx.add_conn(ConnHandle("c1", {}, {}, false));
    ctx.add_conn(ConnHandle("c2", {}, {}, false));
    EXPECT_EQ(sample(render_prometheus_metrics(), "rivetkit_actor_connections_active" + n + "}"), 2);
    ctx.remove_conn("c1");
    EXPECT_EQ(sample(render_prometheus_metrics(), "rivetkit_actor_connections_active" + n + "}"), 1);
    ctx.set_input(Bytes{1});
    ctx.set_has_initialized(true);
    EXPECT_TRUE(ctx.after(std::chrono::milliseconds(10), "later", {}).ok());
    // A new event is written with the next save (with the state of the action that scheduled
    // it); this context has no task to run one, so it is saved here.
    EXPECT_TRUE(rt.block_on(ctx.persist_if_dirty()).ok());
    rt.block_on(ctx.wait_for_pending_state_writes());
    const std::string text = render_prometheus_metrics();
    EXPECT_EQ(sample(text, "rivetkit_actor_state_mutation_total" + n + ",reason=\"input_set\"}"), 1);
    EXPECT_EQ(
        sample(text, "rivetkit_actor_state_mutation_total" + n + ",reason=\"has_initialized\"}"), 1);
    EXPECT_EQ(sample(text, "rivetkit_actor_state_mutation_total" + n +
                               ",reason=\"scheduled_events_update\"}"),
              1);
    EXPECT_GE(sample(text, "rivetkit_actor_state_saves_total" + n + "}"), 1);
    // The [1] writes went through the context's KV handle.
    EXPECT_GE(sample(text, "rivetkit_actor_kv_operations_total" + n + ",operation=\"put\"}"), 1);
    EXPECT_TRUE(rt.block_on(ctx.kv().list_prefix(Bytes{4})).ok());
    EXPECT_EQ(sample(render_prometheus_metrics(),
                     "rivetkit_actor_kv_operations_total" + n + ",operation=\"list\"}"),
              1);
}

}  // namespace
}  // namespace rivetkit::core::test

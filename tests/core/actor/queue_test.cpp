// The durable queue (core/actor/queue.hpp) on virtual time: FIFO, names, batches, waits with
// timeout and abort, completable messages and enqueue_and_wait, limits, the persisted layout
// ([5,1,1] metadata, [5,1,2] + u64 BE id) and reloading from KV as after sleep or a host restart.
//
// Steps run synchronously through TestRuntime::block_on; concurrent parts are spawned with
// `into`, which records the result, so no coroutine here builds temporaries inside co_await.

#include "core/actor/queue.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/metrics.hpp"
#include "core/actor/persist.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rivetkit::core {
namespace {

using namespace std::chrono_literals;
template <typename T>
using Task = boost::asio::awaitable<T>;

template <typename T>
Task<void> into(Task<T> task, std::shared_ptr<std::optional<T>> out) {
    *out = co_await std::move(task);
}

template <typename T>
std::shared_ptr<std::optional<T>> spawn_into(rt::TestRuntime& rt, Task<T> task) {
    auto out = std::make_shared<std::optional<T>>();
    rt::spawn(rt.executor(), into(std::move(task), out));
    return out;
}

struct Fixture {
    explicit Fixture(std::shared_ptr<InMemoryKv> backend = std::make_shared<InMemoryKv>(),
                     std::string name = "queue-test")
        : kv(std::move(backend)),
          ctx(rt.executor(), rt.clock(), "actor-q", std::move(name), {}, "local",
              Kv(kv, "actor-q")),
          queue(ctx) {}

    Result<QueueMessage> send(std::string name, std::string body) {
        return rt.block_on(queue.send(std::move(name), to_bytes(body)));
    }
    std::optional<QueueMessage> try_next(std::vector<std::string> names = {},
                                         bool completable = false) {
        QueueReceiveOpts opts;
        opts.names = std::move(names);
        opts.completable = completable;
        auto got = rt.block_on(queue.try_next(std::move(opts)));
        EXPECT_TRUE(got.ok());
        return got.ok() ? std::move(got).value() : std::nullopt;
    }
    void sleep(rt::Clock::duration d) { rt.block_on(rt.clock().sleep_for(d)); }

    rt::TestRuntime rt;
    std::shared_ptr<InMemoryKv> kv;
    ActorContext ctx;
    ActorQueue queue;
};

std::string text(const Bytes& b) {
    return std::string(b.begin(), b.end());
}

TEST(QueueTest, send_then_next_is_fifo_and_removes_messages) {
    Fixture f;
    ASSERT_TRUE(f.send("jobs", "a").ok());
    ASSERT_TRUE(f.send("jobs", "b").ok());
    ASSERT_TRUE(f.send("jobs", "c").ok());
    EXPECT_EQ(f.queue.size(), 3u);
    for (std::string expected : {"a", "b", "c"}) {
        auto m = f.try_next();
        ASSERT_TRUE(m);
        EXPECT_EQ(text(m->body), expected);
        EXPECT_EQ(m->name, "jobs");
    }
    EXPECT_FALSE(f.try_next());
    EXPECT_EQ(f.queue.size(), 0u);
    // Only the metadata is left, with next_id past the three ids used.
    ASSERT_EQ(f.kv->entries().size(), 1u);
    auto meta = decode_queue_metadata(*f.kv->peek(keys::kQueueMetadata));
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta->next_id, 4u);
    EXPECT_EQ(meta->size, 0u);
}

TEST(QueueTest, persisted_layout_matches_upstream_keys) {
    Fixture f;
    auto sent = f.send("jobs", "payload");
    ASSERT_TRUE(sent.ok());
    EXPECT_EQ(sent->id, 1u);
    EXPECT_EQ(sent->created_at, f.rt.clock().wall_now_ms());
    const Bytes key{5, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1};
    auto raw = f.kv->peek(key);
    ASSERT_TRUE(raw);
    // u16 LE version 4, then the BARE record.
    ASSERT_GE(raw->size(), 2u);
    EXPECT_EQ((*raw)[0], 4);
    EXPECT_EQ((*raw)[1], 0);
    auto record = decode_queue_message(*raw);
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(record->name, "jobs");
    EXPECT_EQ(text(record->body), "payload");
    EXPECT_EQ(record->created_at, sent->created_at);
    auto meta = decode_queue_metadata(*f.kv->peek(Bytes{5, 1, 1}));
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta->next_id, 2u);
    EXPECT_EQ(meta->size, 1u);
}

TEST(QueueTest, names_filter_and_batches_keep_fifo_order) {
    Fixture f;
    ASSERT_TRUE(f.send("a", "1").ok());
    ASSERT_TRUE(f.send("b", "2").ok());
    ASSERT_TRUE(f.send("a", "3").ok());
    ASSERT_TRUE(f.send("c", "4").ok());
    auto b = f.try_next({"b"});
    ASSERT_TRUE(b);
    EXPECT_EQ(text(b->body), "2");

    QueueReceiveOpts opts;
    opts.names = {"a", "c"};
    opts.count = 5;
    auto batch = f.rt.block_on(f.queue.next_batch(std::move(opts)));
    ASSERT_TRUE(batch.ok());
    ASSERT_EQ(batch->size(), 3u);
    EXPECT_EQ(text((*batch)[0].body), "1");
    EXPECT_EQ(text((*batch)[1].body), "3");
    EXPECT_EQ(text((*batch)[2].body), "4");
    EXPECT_EQ(f.queue.size(), 0u);

    ASSERT_TRUE(f.send("a", "5").ok());
    ASSERT_TRUE(f.send("a", "6").ok());
    QueueReceiveOpts two;
    two.count = 1;
    auto one = f.rt.block_on(f.queue.try_next_batch(std::move(two)));
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ(text((*one)[0].body), "5");
}

TEST(QueueTest, next_waits_for_a_matching_message) {
    Fixture f;
    QueueReceiveOpts opts;
    opts.names = {"wanted"};
    auto got = spawn_into(f.rt, f.queue.next(std::move(opts)));
    f.sleep(1s);
    EXPECT_FALSE(got->has_value());
    EXPECT_EQ(f.queue.active_waits(), 1u);
    EXPECT_TRUE(f.ctx.inner()->queue_wait_active);
    ASSERT_TRUE(f.send("other", "x").ok());
    f.sleep(1ms);
    EXPECT_FALSE(got->has_value());
    ASSERT_TRUE(f.send("wanted", "y").ok());
    f.sleep(1ms);
    ASSERT_TRUE(got->has_value());
    ASSERT_TRUE((*got)->ok());
    ASSERT_TRUE((**got)->has_value());
    EXPECT_EQ(text((***got)->body), "y");
    EXPECT_EQ(f.queue.active_waits(), 0u);
    EXPECT_FALSE(f.ctx.inner()->queue_wait_active);
    EXPECT_EQ(f.queue.size(), 1u);  // "other" is still there
}

TEST(QueueTest, next_times_out_on_virtual_time_with_an_empty_result) {
    Fixture f;
    const auto start = f.rt.clock().now();
    QueueReceiveOpts opts;
    opts.timeout = 5s;
    auto got = spawn_into(f.rt, f.queue.next(std::move(opts)));
    f.sleep(4999ms);
    EXPECT_FALSE(got->has_value());
    f.sleep(1ms);
    ASSERT_TRUE(got->has_value());
    ASSERT_TRUE((*got)->ok());
    EXPECT_FALSE((**got)->has_value());
    EXPECT_EQ(f.rt.clock().now() - start, 5s);
    EXPECT_EQ(f.queue.active_waits(), 0u);
}

TEST(QueueTest, next_is_aborted_by_the_callers_signal_or_the_actor_abort) {
    Fixture f;
    rt::CancellationToken signal;
    QueueReceiveOpts opts;
    opts.signal = signal;
    auto got = spawn_into(f.rt, f.queue.next(std::move(opts)));
    f.sleep(10ms);
    signal.cancel();
    f.sleep(1ms);
    ASSERT_TRUE(got->has_value());
    ASSERT_FALSE((*got)->ok());
    EXPECT_TRUE((*got)->error().is("actor", "aborted"));

    auto second = spawn_into(f.rt, f.queue.next(QueueReceiveOpts{}));
    f.sleep(10ms);
    f.ctx.cancel_actor_abort();
    f.sleep(1ms);
    ASSERT_TRUE(second->has_value());
    ASSERT_FALSE((*second)->ok());
    EXPECT_TRUE((*second)->error().is("actor", "aborted"));
    EXPECT_EQ(f.queue.active_waits(), 0u);
}

TEST(QueueTest, limits_reject_with_structured_errors) {
    Fixture f;
    ActorConfig config;
    config.max_queue_size = 2;
    config.max_queue_message_size = 64;
    f.ctx.configure(config);
    ASSERT_TRUE(f.send("a", "1").ok());
    ASSERT_TRUE(f.send("a", "2").ok());
    auto full = f.send("a", "3");
    ASSERT_FALSE(full.ok());
    EXPECT_TRUE(full.error().is("queue", "full"));
    EXPECT_EQ(full.error().metadata(), std::optional<std::string>(R"({"limit":2})"));
    EXPECT_TRUE(f.try_next());
    auto big = f.send("a", std::string(100, 'x'));
    ASSERT_FALSE(big.ok());
    EXPECT_TRUE(big.error().is("queue", "message_too_large"));
    EXPECT_EQ(f.queue.size(), 1u);
    EXPECT_EQ(f.queue.max_size(), 2u);
}

TEST(QueueTest, completable_message_stays_until_completed_and_completes_once) {
    Fixture f;
    ASSERT_TRUE(f.send("a", "1").ok());
    auto plain = f.try_next({}, false);
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->is_completable());
    auto not_configured = f.rt.block_on(plain->complete(std::nullopt));
    ASSERT_FALSE(not_configured.ok());
    EXPECT_TRUE(not_configured.error().is("queue", "complete_not_configured"));

    ASSERT_TRUE(f.send("a", "2").ok());
    auto m = f.try_next({}, true);
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->is_completable());
    EXPECT_EQ(f.queue.size(), 1u);  // still queued until completed
    ASSERT_TRUE(f.rt.block_on(m->complete(std::nullopt)).ok());
    EXPECT_EQ(f.queue.size(), 0u);
    EXPECT_FALSE(f.kv->peek(keys::queue_message_key(m->id)));
    auto twice = f.rt.block_on(m->complete(std::nullopt));
    ASSERT_FALSE(twice.ok());
    EXPECT_TRUE(twice.error().is("queue", "already_completed"));
}

// A consumer that completes the moment it receives: the sender's waiter must already exist.
Task<void> complete_on_receive(ActorQueue queue, std::shared_ptr<int> handled) {
    QueueReceiveOpts opts;
    opts.completable = true;
    auto got = co_await queue.next(std::move(opts));
    if (!got.ok() || !got->has_value())
        co_return;
    QueueMessage m = std::move(**got);
    std::string reply = "done:" + text(m.body);
    std::optional<Bytes> response(to_bytes(reply));
    Status done = co_await m.complete(std::move(response));
    if (done.ok())
        ++*handled;
}

TEST(QueueTest, enqueue_and_wait_gets_the_completion_response) {
    Fixture f;
    auto handled = std::make_shared<int>(0);
    rt::spawn(f.rt.executor(), complete_on_receive(f.queue, handled));
    f.sleep(1ms);
    auto got = f.rt.block_on(f.queue.enqueue_and_wait("jobs", to_bytes("x"), {}));
    ASSERT_TRUE(got.ok()) << got.error().to_string();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ(text(**got), "done:x");
    EXPECT_EQ(*handled, 1);
    EXPECT_EQ(f.queue.size(), 0u);
}

TEST(QueueTest, enqueue_and_wait_times_out_and_leaves_the_message) {
    Fixture f;
    const auto start = f.rt.clock().now();
    EnqueueAndWaitOpts opts;
    opts.timeout = 2s;
    auto got = f.rt.block_on(f.queue.enqueue_and_wait("jobs", to_bytes("x"), opts));
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(got.error().is("queue", "timed_out"));
    EXPECT_EQ(f.rt.clock().now() - start, 2s);
    EXPECT_EQ(f.queue.size(), 1u);
    // Completing later finds no waiter and still removes the message.
    auto m = f.try_next({}, true);
    ASSERT_TRUE(m);
    ASSERT_TRUE(f.rt.block_on(m->complete(std::nullopt)).ok());
    EXPECT_EQ(f.queue.size(), 0u);

    rt::CancellationToken signal;
    signal.cancel();
    EnqueueAndWaitOpts aborted;
    aborted.signal = signal;
    auto refused = f.rt.block_on(f.queue.enqueue_and_wait("jobs", to_bytes("y"), aborted));
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(refused.error().is("actor", "aborted"));
}

TEST(QueueTest, messages_survive_a_new_context_on_the_same_kv_without_id_reuse) {
    auto kv = std::make_shared<InMemoryKv>();
    {
        Fixture first(kv);
        ASSERT_TRUE(first.send("a", "1").ok());
        ASSERT_TRUE(first.send("b", "2").ok());
        ASSERT_TRUE(first.send("a", "3").ok());
        auto m = first.try_next({"b"});
        ASSERT_TRUE(m);
    }
    Fixture second(kv);
    auto sent = second.send("a", "4");
    ASSERT_TRUE(sent.ok());
    EXPECT_EQ(sent->id, 4u);
    std::vector<std::string> bodies;
    while (auto m = second.try_next())
        bodies.push_back(text(m->body));
    EXPECT_EQ(bodies, (std::vector<std::string>{"1", "3", "4"}));
}

TEST(QueueTest, corrupt_metadata_is_rebuilt_from_the_messages) {
    auto kv = std::make_shared<InMemoryKv>();
    {
        Fixture first(kv);
        ASSERT_TRUE(first.send("a", "1").ok());
        ASSERT_TRUE(first.send("a", "2").ok());
    }
    kv->insert(Bytes{5, 1, 1}, Bytes{0xff, 0xff, 0x01});
    // A message whose record does not decode is skipped, not fatal.
    kv->insert(keys::queue_message_key(7), Bytes{0x04, 0x00, 0xff});
    Fixture second(kv);
    auto inspected = second.rt.block_on(second.queue.inspect_messages());
    ASSERT_TRUE(inspected.ok());
    ASSERT_EQ(inspected->size(), 2u);
    auto sent = second.send("a", "3");
    ASSERT_TRUE(sent.ok());
    EXPECT_EQ(sent->id, 8u);  // past every stored key, even the undecodable one
    auto meta = decode_queue_metadata(*kv->peek(Bytes{5, 1, 1}));
    ASSERT_TRUE(meta.ok());
    EXPECT_EQ(meta->size, 3u);
}

TEST(QueueTest, metrics_count_sent_received_and_depth_per_actor_name) {
    Fixture f(std::make_shared<InMemoryKv>(), "queue-metrics-test");
    ASSERT_TRUE(f.send("a", "1").ok());
    ASSERT_TRUE(f.send("a", "2").ok());
    EXPECT_TRUE(f.try_next());
    const std::string rendered = render_prometheus_metrics();
    EXPECT_NE(rendered.find(
                  "rivetkit_actor_queue_messages_sent_total{actor_name=\"queue-metrics-test\"} 2\n"),
              std::string::npos)
        << rendered;
    EXPECT_NE(rendered.find("rivetkit_actor_queue_messages_received_total{actor_name=\"queue-"
                            "metrics-test\"} 1\n"),
              std::string::npos);
    EXPECT_NE(rendered.find("rivetkit_actor_queue_depth{actor_name=\"queue-metrics-test\"} 1\n"),
              std::string::npos);
}

}  // namespace
}  // namespace rivetkit::core

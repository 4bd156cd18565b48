#pragma once
// Shared harness for the ported ActorTask spec (upstream rivetkit-core tests/task.rs). Every test
// runs on rt::TestRuntime: virtual time with auto-advance, like tokio's paused clock, so the
// timing tests finish in milliseconds of real time.

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"
#include "core/actor/task.hpp"
#include "runtime/channel.hpp"
#include "runtime/notify.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/timeout.hpp"
#include "runtime/yield.hpp"

// ASSERT_* returns, which a coroutine cannot; this records the failure and co_returns.
#define CO_ASSERT(cond)                                     \
    do {                                                    \
        const bool co_assert_ok_ = static_cast<bool>(cond); \
        EXPECT_TRUE(co_assert_ok_) << #cond;                \
        if (!co_assert_ok_)                                 \
            co_return;                                      \
    } while (false)

namespace rivetkit::core::test {

template <typename T = void>
using Task = boost::asio::awaitable<T>;
using namespace std::chrono_literals;

inline ActorContext new_with_kv(rt::TestRuntime& rt, std::string actor_id, std::string name,
                                std::shared_ptr<KvBackend> kv) {
    std::string id = actor_id;
    return ActorContext(rt.executor(), rt.clock(), std::move(actor_id), std::move(name), {},
                        "local", Kv(std::move(kv), std::move(id)));
}

// An in-memory KV whose apply_batch writes can be held (`held`, then `release()`) or made to
// fail (`fail_next`): a write the engine has not answered yet, on virtual time.
class GatedKv final : public KvBackend {
  public:
    std::string_view label() const noexcept override { return "gated"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override {
        return inner.batch_get(std::move(keys));
    }
    Task<Status> batch_put(std::vector<KvEntry> entries) override {
        return inner.batch_put(std::move(entries));
    }
    Task<Status> batch_delete(std::vector<Bytes> keys) override {
        return inner.batch_delete(std::move(keys));
    }
    Task<Status> delete_range(Bytes start, Bytes end) override {
        return inner.delete_range(std::move(start), std::move(end));
    }
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) override {
        return inner.list_prefix(std::move(prefix), opts);
    }
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts) override {
        return inner.list_range(std::move(start), std::move(end), opts);
    }
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) override {
        ++started;
        if (fail_next > 0) {
            --fail_next;
            co_return Error("kv", "injected_failure", "injected");
        }
        ++in_flight;
        max_in_flight = std::max(max_in_flight, in_flight);
        while (held)
            co_await released.notified();
        if (clock != nullptr && write_time.count() > 0)
            co_await clock->sleep_for(write_time);  // the engine's round trip
        Status result = co_await inner.apply_batch(std::move(puts), std::move(deletes));
        --in_flight;
        co_return result;
    }
    void release() {
        held = false;
        released.notify_waiters();
    }

    InMemoryKv inner;
    rt::Clock* clock = nullptr;  // with write_time: each write takes that long
    rt::Clock::duration write_time{};
    bool held = false;
    std::size_t fail_next = 0;
    std::size_t started = 0;
    std::size_t in_flight = 0;
    std::size_t max_in_flight = 0;
    rt::Notify released;
};

inline std::shared_ptr<ActorFactory> make_factory(ActorConfig config, ActorEntry entry) {
    return std::make_shared<ActorFactory>(std::move(config), std::move(entry));
}

inline std::shared_ptr<ActorFactory> noop_factory() {
    return make_factory({}, [](ActorStart) -> Task<Status> { co_return Status{}; });
}

// A runtime that answers every action with {1} and acks the graceful cleanup.
inline std::shared_ptr<ActorFactory> answering_factory() {
    return make_factory({}, [](ActorStart start) -> Task<Status> {
        ActorEvents events = std::move(start.events);
        while (auto ev = co_await events.recv()) {
            if (auto* a = std::get_if<event::Action>(&*ev)) {
                a->reply.send(Bytes{1});
            } else if (auto* c = std::get_if<event::RunGracefulCleanup>(&*ev)) {
                c->reply.send(Status{});
                break;
            }
        }
        co_return Status{};
    });
}

inline ActorConfig grace_config(std::chrono::milliseconds grace) {
    ActorConfig config;
    config.sleep_grace_period = grace;
    config.sleep_grace_period_overridden = true;
    return config;
}

// Senders dropped at once, as upstream's new_task_with_factory does.
inline std::unique_ptr<ActorTask> new_task_with_factory(ActorContext ctx,
                                                        std::shared_ptr<ActorFactory> factory) {
    auto [ltx, lrx] = rt::unbounded_channel<LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<LifecycleEvent>();
    return std::make_unique<ActorTask>("actor-drain", 0, std::move(lrx), std::move(drx),
                                       std::move(erx), std::move(factory), std::move(ctx),
                                       std::nullopt, std::nullopt);
}

inline std::unique_ptr<ActorTask> new_task(ActorContext ctx) {
    return new_task_with_factory(std::move(ctx), noop_factory());
}

struct TaskWithSenders {
    std::unique_ptr<ActorTask> task;
    rt::Sender<LifecycleCommand> lifecycle_tx;
    rt::Sender<DispatchCommand> dispatch_tx;
    rt::Sender<LifecycleEvent> events_tx;
};

inline TaskWithSenders new_task_with_senders(ActorContext ctx) {
    auto [ltx, lrx] = rt::unbounded_channel<LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<LifecycleEvent>();
    auto task = std::make_unique<ActorTask>("actor-drain", 0, std::move(lrx), std::move(drx),
                                            std::move(erx), noop_factory(), std::move(ctx),
                                            std::nullopt, std::nullopt);
    return {std::move(task), std::move(ltx), std::move(dtx), std::move(etx)};
}

// A task with its own channels where the ctx reports lifecycle events into the task's inbox.
struct WiredTask {
    std::unique_ptr<ActorTask> task;
    rt::Sender<LifecycleCommand> lifecycle_tx;
    rt::Sender<DispatchCommand> dispatch_tx;
};

inline WiredTask new_wired_task(std::string actor_id, ActorContext ctx,
                                std::shared_ptr<ActorFactory> factory) {
    auto [ltx, lrx] = rt::unbounded_channel<LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<LifecycleEvent>();
    ctx.configure_lifecycle_events(std::move(etx));
    auto task = std::make_unique<ActorTask>(std::move(actor_id), 0, std::move(lrx), std::move(drx),
                                            std::move(erx), std::move(factory), std::move(ctx),
                                            std::nullopt, std::nullopt);
    return {std::move(task), std::move(ltx), std::move(dtx)};
}

inline Task<Status> start_task(ActorTask& task) {
    auto [tx, rx] = rt::oneshot<Status>();
    // Commands are built as locals: a temporary with a destructor inside a co_await expression
    // trips GCC 12's coroutine lowering.
    LifecycleCommand command = LifecycleCommand::start(std::move(tx));
    co_await task.handle_lifecycle(std::move(command));
    auto reply = co_await rx.recv();
    co_return reply ? std::move(*reply) : Status(errors::actor_dropped_reply());
}

inline Task<Status> send_and_wait(const rt::Sender<LifecycleCommand>& tx,
                                  LifecycleCommand::Kind kind,
                                  ShutdownKind reason = ShutdownKind::Sleep) {
    auto [reply_tx, reply_rx] = rt::oneshot<Status>();
    LifecycleCommand command = kind == LifecycleCommand::Kind::Stop
                                   ? LifecycleCommand::stop(reason, std::move(reply_tx))
                                   : LifecycleCommand::start(std::move(reply_tx));
    EXPECT_TRUE(tx.send(std::move(command)));
    auto reply = co_await reply_rx.recv();
    co_return reply ? std::move(*reply) : Status(errors::actor_dropped_reply());
}

inline Task<void> drain_lifecycle_events(ActorTask& task) {
    for (auto ev = task.lifecycle_events.try_recv(); ev; ev = task.lifecycle_events.try_recv()) {
        co_await task.handle_event(*ev);
    }
}

inline Task<void> wait_for_count(rt::Clock& clock, const std::size_t& counter,
                                 std::size_t expected) {
    for (int i = 0; i < 50 && counter < expected; ++i)
        co_await clock.sleep_for(10ms);
    EXPECT_EQ(counter, expected);
}

// One-byte states only: a braced Bytes temporary inside a co_await trips a GCC 12 coroutine bug.
inline Task<void> wait_for_state(const ActorContext& ctx, std::uint8_t expected_byte) {
    const Bytes expected(1, expected_byte);
    for (int i = 0; i < 50 && ctx.state() != expected; ++i)
        co_await ctx.clock().sleep_for(10ms);
    EXPECT_EQ(ctx.state(), expected);
}

inline std::optional<PersistedActor> stored_actor(const InMemoryKv& kv) {
    auto bytes = kv.peek(keys::kPersistData);
    if (!bytes)
        return std::nullopt;
    auto decoded = decode_persisted_actor(*bytes);
    if (!decoded.ok())
        return std::nullopt;
    return decoded.value();
}

inline std::optional<PersistedConnection> stored_conn(const InMemoryKv& kv, std::string_view id) {
    auto bytes = kv.peek(keys::connection_key(id));
    if (!bytes)
        return std::nullopt;
    auto decoded = decode_persisted_connection(*bytes);
    if (!decoded.ok())
        return std::nullopt;
    return decoded.value();
}

inline HibernatableConnectionMetadata hibernation_meta(std::string_view gateway,
                                                       std::string_view request,
                                                       std::uint16_t server_index,
                                                       std::uint16_t client_index) {
    HibernatableConnectionMetadata meta;
    std::copy_n(gateway.begin(), 4, meta.gateway_id.begin());
    std::copy_n(request.begin(), 4, meta.request_id.begin());
    meta.server_message_index = server_index;
    meta.client_message_index = client_index;
    meta.request_path = "/ws";
    return meta;
}

inline void configure_live_hibernated_pairs(
    const ActorContext& ctx, std::vector<std::pair<std::string_view, std::string_view>> pairs) {
    std::vector<std::pair<Bytes, Bytes>> out;
    for (auto [g, r] : pairs)
        out.emplace_back(to_bytes(g), to_bytes(r));
    ctx.set_hibernated_connection_liveness_override(std::move(out));
}

// A connection whose disconnect handler records itself, queues its hibernation removal and
// removes itself from the actor (upstream's managed_test_conn).
inline ConnHandle managed_test_conn(const ActorContext& ctx, std::string id, bool hibernatable,
                                    std::shared_ptr<std::vector<std::string>> disconnects) {
    ConnHandle conn(id, {}, {}, hibernatable);
    WeakActorContext weak = ctx.downgrade();
    conn.configure_disconnect_handler(DisconnectHandler(
        [weak, id, hibernatable, disconnects](std::optional<std::string>) -> Task<Status> {
            disconnects->push_back(id);
            if (auto strong = weak.upgrade()) {
                if (hibernatable)
                    strong->request_hibernation_transport_removal(id);
                strong->remove_conn(id);
            }
            co_return Status{};
        }));
    auto managed = conn.managed_disconnect_handler();
    conn.configure_transport_disconnect_handler(managed.ok() ? std::optional(managed.value())
                                                             : std::nullopt);
    return conn;
}

// Sets a flag when destroyed: proves a refused/aborted future was dropped.
struct NotifyOnDrop {
    std::shared_ptr<bool> dropped;
    explicit NotifyOnDrop(std::shared_ptr<bool> flag) : dropped(std::move(flag)) {}
    NotifyOnDrop(NotifyOnDrop&& other) noexcept : dropped(std::move(other.dropped)) {}
    NotifyOnDrop(const NotifyOnDrop&) = delete;
    ~NotifyOnDrop() {
        if (dropped)
            *dropped = true;
    }
};

// A future that never completes on its own and marks `dropped` when its frame is destroyed.
inline Task<void> stuck_future(NotifyOnDrop notify, rt::OneshotReceiver<bool> never) {
    NotifyOnDrop held = std::move(notify);
    (void)co_await never.recv();
}

// Records what core asks of the engine. SetAlarm messages queue up with their ack senders, like
// upstream's ToEnvoyMessage::SetAlarm on the test envoy handle.
class TestEnvoy final : public EnvoyLink {
  public:
    struct SetAlarm {
        std::string actor_id;
        std::optional<std::uint32_t> generation;
        std::optional<std::int64_t> alarm_ts;
        rt::OneshotSender<Status> ack;
    };

    void sleep_actor(std::string_view, std::optional<std::uint32_t>) override { ++sleep_requests; }
    void destroy_actor(std::string_view, std::optional<std::uint32_t>) override {
        ++destroy_requests;
    }
    rt::OneshotReceiver<Status> set_alarm(std::string_view actor_id,
                                          std::optional<std::uint32_t> generation,
                                          std::optional<std::int64_t> alarm_ts) override {
        auto [tx, rx] = rt::oneshot<Status>();
        alarms.push_back({std::string(actor_id), generation, alarm_ts, std::move(tx)});
        return std::move(rx);
    }
    void restore_hibernating_requests(std::string_view, std::vector<HibernatingRequest>) override {}
    bool is_hibernating_request_live(std::string_view, const GatewayId&,
                                     const RequestId&) const override {
        return false;
    }
    std::size_t active_http_request_count(std::string_view) const override { return 0; }

    std::deque<SetAlarm> alarms;
    std::size_t sleep_requests = 0;
    std::size_t destroy_requests = 0;
};

// Upstream's recv_alarm_now: takes the next SetAlarm, checks it and acks it.
inline std::optional<std::int64_t> recv_alarm_now(TestEnvoy& envoy, std::string_view actor_id,
                                                  std::optional<std::uint32_t> generation) {
    EXPECT_FALSE(envoy.alarms.empty()) << "expected set_alarm envoy message";
    if (envoy.alarms.empty())
        return std::nullopt;
    auto message = std::move(envoy.alarms.front());
    envoy.alarms.pop_front();
    EXPECT_EQ(message.actor_id, actor_id);
    EXPECT_EQ(message.generation, generation);
    message.ack.send(Status{});
    return message.alarm_ts;
}

// Live KV through a shut-down envoy: every call fails.
class FailingKv final : public KvBackend {
  public:
    std::string_view label() const noexcept override { return "failing"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes>) override {
        co_return fail();
    }
    Task<Status> batch_put(std::vector<KvEntry>) override { co_return fail(); }
    Task<Status> batch_delete(std::vector<Bytes>) override { co_return fail(); }
    Task<Status> delete_range(Bytes, Bytes) override { co_return fail(); }
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes, ListOpts) override { co_return fail(); }
    Task<Result<std::vector<KvEntry>>> list_range(Bytes, Bytes, ListOpts) override {
        co_return fail();
    }
    Task<Status> apply_batch(std::vector<KvEntry>, std::vector<Bytes>) override {
        co_return fail();
    }

  private:
    static Error fail() { return Error("envoy", "shutdown", "envoy is shutting down"); }
};

}  // namespace rivetkit::core::test

// rivetkit::testing (include/rivetkit/testing.hpp): the engine's part played in process. Each
// actor runs as on rivetkit-host — an ActorContext and ActorTask started, stopped and woken the
// way the core registry does it — on an rt::TestRuntime (virtual time). The engine stand-in keeps
// the KV and SQLite pages per actor, delivers alarms as virtual-clock timers, and carries out the
// actor's sleep/destroy requests.

#include "rivetkit/testing.hpp"

#include <map>
#include <mutex>
#include <set>

#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "core/actor/envoy_link.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"
#include "sqlite/database.hpp"
#include "sqlite/vfs.hpp"
#include "core/actor/task.hpp"
#include "core/registry/actor_requests.hpp"
#include "core/registry/registry.hpp"
#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::testing {

template <typename T = void>
using Task = boost::asio::awaitable<T>;

namespace detail {

namespace {

Error process_gone() {
    return Error("kv", "process_gone", "the actor's process crashed; nothing more is written");
}

struct Faults {
    std::size_t fail_writes = 0;
    std::size_t writes = 0;
};

// One generation's view of its actor's KV: engine-wide injected failures, and cut off when the
// generation crashes (a dead process writes nothing more).
class GenerationKv final : public core::KvBackend {
  public:
    GenerationKv(std::shared_ptr<core::InMemoryKv> store, std::shared_ptr<Faults> faults,
                 std::shared_ptr<bool> severed)
        : store_(std::move(store)), faults_(std::move(faults)), severed_(std::move(severed)) {}

    std::string_view label() const noexcept override { return "test_engine"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override {
        if (*severed_)
            co_return process_gone();
        co_return co_await store_->batch_get(std::move(keys));
    }
    Task<Status> batch_put(std::vector<core::KvEntry> entries) override {
        if (auto failed = write_fault())
            co_return *failed;
        co_return co_await store_->batch_put(std::move(entries));
    }
    Task<Status> batch_delete(std::vector<Bytes> keys) override {
        if (auto failed = write_fault())
            co_return *failed;
        co_return co_await store_->batch_delete(std::move(keys));
    }
    Task<Status> delete_range(Bytes start, Bytes end) override {
        if (auto failed = write_fault())
            co_return *failed;
        co_return co_await store_->delete_range(std::move(start), std::move(end));
    }
    Task<Result<std::vector<core::KvEntry>>> list_prefix(Bytes prefix, core::ListOpts opts) override {
        if (*severed_)
            co_return process_gone();
        co_return co_await store_->list_prefix(std::move(prefix), opts);
    }
    Task<Result<std::vector<core::KvEntry>>> list_range(Bytes start, Bytes end,
                                                  core::ListOpts opts) override {
        if (*severed_)
            co_return process_gone();
        co_return co_await store_->list_range(std::move(start), std::move(end), opts);
    }
    Task<Status> apply_batch(std::vector<core::KvEntry> puts, std::vector<Bytes> deletes) override {
        if (auto failed = write_fault())
            co_return *failed;
        co_return co_await store_->apply_batch(std::move(puts), std::move(deletes));
    }

  private:
    std::optional<Error> write_fault() {
        if (*severed_)
            return process_gone();
        if (faults_->fail_writes > 0) {
            --faults_->fail_writes;
            return Error("kv", "injected_failure", "injected KV write failure");
        }
        ++faults_->writes;
        return std::nullopt;
    }

    std::shared_ptr<core::InMemoryKv> store_;
    std::shared_ptr<Faults> faults_;
    std::shared_ptr<bool> severed_;
};

// SQLite pages of one actor. Called from SQLite's worker threads.
class MemoryPages final : public sqlite::PageStore {
  public:
    Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) override {
        std::lock_guard lock(mutex_);
        std::vector<std::optional<Bytes>> out;
        out.reserve(pgnos.size());
        for (auto pgno : pgnos) {
            auto it = pages_.find(pgno);
            if (it == pages_.end() || pgno > size_pages_)
                out.emplace_back(std::nullopt);
            else
                out.emplace_back(it->second);
        }
        return out;
    }
    Status commit(std::vector<envoy::SqliteDirtyPage> dirty,
                  std::uint32_t db_size_pages) override {
        std::lock_guard lock(mutex_);
        for (auto& page : dirty)
            pages_[page.pgno] = std::move(page.bytes);
        size_pages_ = db_size_pages;
        return {};
    }

  private:
    std::mutex mutex_;
    std::map<std::uint32_t, Bytes> pages_;
    std::uint32_t size_pages_ = 0;
};

}  // namespace

struct ConnectionState;

struct Running {
    std::uint32_t generation = 0;
    std::shared_ptr<core::registry::CoreRegistry::Instance> instance;
    rt::JoinHandle<Status> join;
    std::shared_ptr<bool> severed;
};

struct ActorRecord {
    std::string id;
    std::string name;
    Key key;
    std::string key_text;
    std::optional<Bytes> input;
    std::shared_ptr<core::ActorFactory> factory;
    std::shared_ptr<core::InMemoryKv> kv = std::make_shared<core::InMemoryKv>();
    std::shared_ptr<MemoryPages> pages = std::make_shared<MemoryPages>();
    std::uint32_t generation = 0;
    std::optional<Running> running;
    bool starting = false;
    bool stopping = false;
    bool destroyed = false;
    rt::Notify settled;  // a start or stop finished
    std::optional<std::int64_t> alarm_ts;
    std::uint64_t alarm_seq = 0;
    bool lose_next_reply = false;
    std::vector<std::weak_ptr<ConnectionState>> conns;
};

struct ConnectionState {
    std::weak_ptr<EngineState> engine;
    std::shared_ptr<ActorRecord> actor;
    std::uint32_t generation = 0;
    std::optional<core::ConnHandle> conn;
    std::string id;
    bool open = false;
    std::map<std::uint64_t, std::pair<std::string, TestConnection::EventHandler>> listeners;
    std::uint64_t next_listener = 1;
    std::set<std::string> subscribed;
    std::map<std::string, std::vector<Json>, std::less<>> received;
    // Why the actor closed the connection (a refused subscription), as the client sees it.
    std::optional<Error> closed_by;
};

class Link;

struct EngineState : std::enable_shared_from_this<EngineState> {
    explicit EngineState(TestEngine::Options options)
        : rt(rt::TestRuntime::Options{true, options.wall_start_ms}) {}

    rt::TestRuntime rt;
    std::map<std::string, std::shared_ptr<core::ActorFactory>> factories;
    std::map<std::string, std::shared_ptr<ActorRecord>> actors;  // by id
    std::map<std::pair<std::string, std::string>, std::string> ids;  // (name, key) → id
    std::shared_ptr<Faults> faults = std::make_shared<Faults>();
    std::shared_ptr<Link> link;
    std::uint64_t next_id = 1;

    std::shared_ptr<ActorRecord> find(const std::string& id) const {
        auto it = actors.find(id);
        return it == actors.end() ? nullptr : it->second;
    }

    // Runs `task` to completion on the virtual runtime. A wait nothing can ever end (the actor
    // gone while a call waited on it) becomes testing/deadlock.
    template <typename T>
    Result<T> run(Task<Result<T>> task) {
        try {
            return rt.block_on(std::move(task));
        } catch (const rt::DeadlockError& e) {
            return Error("testing", "deadlock", e.what());
        }
    }
};

Task<Status> start_actor(std::shared_ptr<EngineState> engine, std::shared_ptr<ActorRecord> actor);
Task<Status> stop_actor(std::shared_ptr<EngineState> engine, std::shared_ptr<ActorRecord> actor,
                        core::ShutdownKind reason);
Task<void> alarm_timer(std::weak_ptr<EngineState> weak, std::shared_ptr<ActorRecord> actor,
                       std::uint64_t seq, std::int64_t ts);

// What the actors ask of the engine.
class Link final : public core::EnvoyLink {
  public:
    explicit Link(std::weak_ptr<EngineState> engine) : engine_(std::move(engine)) {}

    void sleep_actor(std::string_view actor_id, std::optional<std::uint32_t> generation) override {
        stop_later(actor_id, generation, core::ShutdownKind::Sleep);
    }
    void destroy_actor(std::string_view actor_id,
                       std::optional<std::uint32_t> generation) override {
        stop_later(actor_id, generation, core::ShutdownKind::Destroy);
    }
    rt::OneshotReceiver<Status> set_alarm(std::string_view actor_id,
                                          std::optional<std::uint32_t>,
                                          std::optional<std::int64_t> alarm_ts) override {
        auto [tx, rx] = rt::oneshot<Status>();
        if (auto engine = engine_.lock()) {
            if (auto actor = engine->find(std::string(actor_id))) {
                actor->alarm_ts = alarm_ts;
                const std::uint64_t seq = ++actor->alarm_seq;
                if (alarm_ts)
                    rt::spawn(engine->rt.executor(), alarm_timer(engine_, actor, seq, *alarm_ts));
            }
        }
        tx.send(Status{});
        return std::move(rx);
    }
    void restore_hibernating_requests(std::string_view,
                                      std::vector<core::HibernatingRequest>) override {}
    bool is_hibernating_request_live(std::string_view, const core::GatewayId&,
                                     const core::RequestId&) const override {
        return false;
    }
    std::size_t active_http_request_count(std::string_view) const override { return 0; }

  private:
    static Task<void> stop_task(std::shared_ptr<EngineState> engine,
                                std::shared_ptr<ActorRecord> actor, core::ShutdownKind reason) {
        Status stopped = co_await stop_actor(engine, actor, reason);
        if (!stopped.ok()) {
            log::warn("test engine: actor stop failed",
                      {{"actor_id", actor->id}, {"error", stopped.error().to_string()}});
        }
    }

    void stop_later(std::string_view actor_id, std::optional<std::uint32_t> generation,
                    core::ShutdownKind reason) {
        auto engine = engine_.lock();
        if (!engine)
            return;
        auto actor = engine->find(std::string(actor_id));
        if (!actor || !actor->running)
            return;
        if (generation && actor->running->generation != *generation)
            return;
        rt::spawn(engine->rt.executor(), stop_task(engine, actor, reason));
    }

    std::weak_ptr<EngineState> engine_;
};

namespace {

void close_connections(ActorRecord& actor) {
    for (auto& weak : actor.conns) {
        if (auto conn = weak.lock())
            conn->open = false;
    }
    actor.conns.clear();
}

}  // namespace

Task<Status> start_actor(std::shared_ptr<EngineState> engine, std::shared_ptr<ActorRecord> actor) {
    for (;;) {
        if (actor->destroyed)
            co_return errors::actor_not_found(actor->id);
        if (actor->running && !actor->stopping)
            co_return Status{};
        if (!actor->starting && !actor->stopping)
            break;
        co_await actor->settled.notified();
    }
    actor->starting = true;
    const std::uint32_t generation = ++actor->generation;
    auto severed = std::make_shared<bool>(false);
    core::Kv kv(std::make_shared<GenerationKv>(actor->kv, engine->faults, severed), actor->id);
    core::ActorContext ctx(engine->rt.executor(), engine->rt.clock(), actor->id, actor->name,
                           actor->key, "local", std::move(kv));
    ctx.configure(actor->factory->shared_config());
    ctx.configure_envoy(engine->link, generation);
    ctx.configure_sqlite(actor->pages);

    auto [ltx, lrx] = rt::unbounded_channel<core::LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<core::DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<core::LifecycleEvent>();
    ctx.configure_lifecycle_events(std::move(etx));
    ctx.set_local_alarm_callback([tx = ltx] {
        auto [reply, reply_rx] = rt::oneshot<Status>();
        tx.send(core::LifecycleCommand::fire_alarm(std::move(reply)));
    });
    auto task = std::make_unique<core::ActorTask>(actor->id, generation, std::move(lrx),
                                                  std::move(drx), std::move(erx), actor->factory,
                                                  ctx, actor->input, std::nullopt);
    auto instance = std::make_shared<core::registry::CoreRegistry::Instance>(
        core::registry::CoreRegistry::Instance{actor->id, actor->name, generation,
                                               actor->key_text, ctx, actor->factory, ltx,
                                               std::move(dtx), std::nullopt, std::nullopt, 0});
    auto join = core::ActorTask::spawn(engine->rt.executor(), std::move(task));
    actor->running.emplace(Running{generation, instance, std::move(join), severed});

    auto [reply, reply_rx] = rt::oneshot<Status>();
    ltx.send(core::LifecycleCommand::start(std::move(reply)));
    auto started = co_await reply_rx.recv();
    Status result = started ? std::move(*started) : Status(errors::actor_dropped_reply());
    actor->starting = false;
    if (!result.ok()) {
        log::error("test engine: actor start failed",
                   {{"actor_id", actor->id}, {"error", result.error().to_string()}});
        actor->running.reset();
    }
    actor->settled.notify_waiters();
    co_return result;
}

Task<Status> stop_actor(std::shared_ptr<EngineState> engine, std::shared_ptr<ActorRecord> actor,
                        core::ShutdownKind reason) {
    while (actor->starting || actor->stopping)
        co_await actor->settled.notified();
    if (!actor->running)
        co_return Status{};
    actor->stopping = true;
    auto [reply, reply_rx] = rt::oneshot<Status>();
    actor->running->instance->lifecycle.send(core::LifecycleCommand::stop(reason, std::move(reply)));
    auto stopped = co_await reply_rx.recv();
    Status result = stopped ? std::move(*stopped) : Status(errors::actor_dropped_reply());
    if (actor->running) {
        auto joined = co_await actor->running->join.join();
        (void)joined;
    }
    actor->running.reset();
    actor->stopping = false;
    close_connections(*actor);
    if (reason == core::ShutdownKind::Destroy) {
        actor->destroyed = true;
        actor->kv = std::make_shared<core::InMemoryKv>();
        actor->pages = std::make_shared<MemoryPages>();
        actor->alarm_ts.reset();
        ++actor->alarm_seq;
        engine->ids.erase({actor->name, actor->key_text});
    }
    actor->settled.notify_waiters();
    co_return result;
}

Task<void> alarm_timer(std::weak_ptr<EngineState> weak, std::shared_ptr<ActorRecord> actor,
                       std::uint64_t seq, std::int64_t ts) {
    {
        auto engine = weak.lock();
        if (!engine)
            co_return;
        const std::int64_t now = engine->rt.clock().wall_now_ms();
        if (ts > now) {
            auto& clock = engine->rt.clock();
            engine.reset();
            co_await clock.sleep_for(std::chrono::milliseconds(ts - now));
        }
    }
    auto engine = weak.lock();
    if (!engine || actor->alarm_seq != seq || actor->destroyed)
        co_return;
    // An awake actor fires its own alarms (the local alarm timer); the engine wakes a sleeping one.
    if (actor->running)
        co_return;
    actor->alarm_ts.reset();
    Status started = co_await start_actor(engine, actor);
    if (!started.ok() || !actor->running)
        co_return;
    auto [reply, reply_rx] = rt::oneshot<Status>();
    actor->running->instance->lifecycle.send(core::LifecycleCommand::fire_alarm(std::move(reply)));
    (void)co_await reply_rx.recv();
}

namespace {

using Instance = core::registry::CoreRegistry::Instance;

// The actor started (woken) if it is not running; its running instance.
Task<Result<std::shared_ptr<Instance>>> awake_instance(std::shared_ptr<EngineState> engine,
                                                       std::shared_ptr<ActorRecord> actor) {
    Status awake = co_await start_actor(engine, actor);
    if (!awake.ok())
        co_return std::move(awake).error();
    co_return actor->running->instance;
}

// What the caller of an action receives: its decoded output, unless the reply is to be lost.
Result<Json> delivered_reply(ActorRecord& actor, Result<Bytes> output) {
    if (actor.lose_next_reply) {
        actor.lose_next_reply = false;
        return Error("client", "reply_lost",
                     "the action ran but its reply was lost (TestActor::lose_next_reply)");
    }
    if (!output.ok())
        return std::move(output).error();
    if (output->empty())
        return Json();
    return from_cbor(*output);
}

Task<Result<Json>> stateless_action(std::shared_ptr<EngineState> engine,
                                    std::shared_ptr<ActorRecord> actor, std::string name,
                                    Bytes args) {
    auto instance = co_await awake_instance(engine, actor);
    if (!instance.ok())
        co_return std::move(instance).error();
    core::ConnectOptions options;
    auto output = co_await core::registry::run_transient_action(
        *instance, engine->rt.clock(), std::move(options), std::move(name), std::move(args));
    co_return delivered_reply(*actor, std::move(output));
}

Task<Result<Json>> connection_action(std::shared_ptr<ConnectionState> conn, std::string name,
                                     Bytes args) {
    auto actor = conn->actor;
    if (conn->closed_by)
        co_return *conn->closed_by;
    if (!conn->open || !actor->running || actor->running->generation != conn->generation)
        co_return Error("client", "connection_closed", "the connection is closed");
    auto instance = actor->running->instance;
    auto [tx, rx] = rt::oneshot<Result<Bytes>>();
    Result<Bytes> output = errors::actor_not_ready();
    if (instance->dispatch.send(
            core::dispatch::Action{std::move(name), std::move(args), *conn->conn, std::move(tx)})) {
        auto got = co_await rx.recv();
        output = got ? std::move(*got) : Result<Bytes>(errors::actor_dropped_reply());
    }
    co_return delivered_reply(*actor, std::move(output));
}

Task<Result<std::shared_ptr<ConnectionState>>> open_connection(
    std::shared_ptr<EngineState> engine, std::shared_ptr<ActorRecord> actor, Json params) {
    auto instance = co_await awake_instance(engine, actor);
    if (!instance.ok())
        co_return std::move(instance).error();
    auto state = std::make_shared<ConnectionState>();
    state->engine = engine;
    state->actor = actor;
    state->generation = (*instance)->generation;
    std::weak_ptr<ConnectionState> weak = state;
    core::ConnectOptions options;
    options.params = params.is_null() ? Bytes{} : to_cbor(params);
    options.prepare = [weak](const core::ConnHandle& conn) -> Status {
        conn.configure_event_sender([weak](std::string_view event, const Bytes& args,
                                           core::ConnHandle::EventFrames*) -> Status {
            auto s = weak.lock();
            if (!s || !s->open)
                return Status{};
            auto decoded = from_cbor(args);
            Json value = decoded.ok() ? std::move(decoded).value() : Json();
            s->received[std::string(event)].push_back(value);
            std::vector<TestConnection::EventHandler> handlers;
            for (const auto& [id, listener] : s->listeners) {
                if (listener.first == event)
                    handlers.push_back(listener.second);
            }
            for (auto& handler : handlers)
                handler(value);
            return Status{};
        });
        conn.configure_transport_disconnect_handler(
            [weak](std::optional<std::string>) -> boost::asio::awaitable<Status> {
                if (auto s = weak.lock())
                    s->open = false;
                co_return Status{};
            });
        return Status{};
    };
    auto connected = co_await (*instance)->ctx.connect_conn(std::move(options));
    if (!connected.ok())
        co_return std::move(connected).error();
    state->conn = std::move(connected).value();
    state->id = state->conn->id();
    state->open = true;
    actor->conns.push_back(state);
    co_return state;
}

Task<Status> close_connection(std::shared_ptr<ConnectionState> conn);

Task<Status> subscribe_connection(std::shared_ptr<ConnectionState> conn, std::string event) {
    auto actor = conn->actor;
    if (!conn->open || !actor->running || actor->running->generation != conn->generation)
        co_return Error("client", "connection_closed", "the connection is closed");
    if (Status admitted = actor->running->instance->ctx.admit_subscription(*conn->conn, event);
        !admitted.ok())
        co_return admitted;
    auto [reply, rx] = core::Reply<void>::make();
    Status sent = actor->running->instance->ctx.try_send_actor_event(
        core::event::SubscribeRequest{*conn->conn, event, std::move(reply)}, "subscribe_request");
    if (!sent.ok())
        co_return sent;
    auto got = co_await rx.recv();
    if (!got)
        co_return errors::actor_dropped_reply();
    if (!got->ok()) {
        // As actor-connect: a refused subscription closes the connection with the error, and
        // the client's calls on it fail with that error.
        conn->closed_by = got->error();
        Status closed = co_await close_connection(conn);
        (void)closed;
        co_return std::move(*got);
    }
    conn->conn->subscribe(event);
    conn->subscribed.insert(std::move(event));
    co_return Status{};
}

Task<Status> close_connection(std::shared_ptr<ConnectionState> conn) {
    if (!conn->open)
        co_return Status{};
    auto actor = conn->actor;
    if (!actor->running || actor->running->generation != conn->generation) {
        conn->open = false;
        co_return Status{};
    }
    Status st = co_await conn->conn->disconnect(std::nullopt);
    conn->open = false;
    co_return st;
}

Task<Result<TestActor::HttpResponse>> http_request(std::shared_ptr<EngineState> engine,
                                                   std::shared_ptr<ActorRecord> actor,
                                                   core::HttpRequest request) {
    auto instance = co_await awake_instance(engine, actor);
    if (!instance.ok())
        co_return std::move(instance).error();
    auto [tx, rx] = rt::oneshot<Result<core::HttpResponse>>();
    if (!(*instance)->dispatch.send(
            core::dispatch::Http{std::move(request), std::move(tx)}))
        co_return errors::actor_not_ready();
    auto got = co_await rx.recv();
    if (!got)
        co_return errors::actor_dropped_reply();
    if (!got->ok())
        co_return std::move(*got).error();
    TestActor::HttpResponse out;
    out.status = (*got)->status;
    for (auto& [k, v] : (*got)->headers)
        out.headers.emplace_back(k, v);
    out.body.assign((*got)->body.begin(), (*got)->body.end());
    co_return out;
}

Task<Result<Json>> queue_send(std::shared_ptr<EngineState> engine,
                              std::shared_ptr<ActorRecord> actor, std::string queue, Bytes body,
                              bool wait) {
    auto awake = co_await awake_instance(engine, actor);
    if (!awake.ok())
        co_return std::move(awake).error();
    auto instance = std::move(awake).value();
    core::ConnectOptions options;
    auto connected = co_await instance->ctx.connect_conn(std::move(options));
    if (!connected.ok())
        co_return std::move(connected).error();
    core::ConnHandle conn = std::move(connected).value();
    auto [tx, rx] = rt::oneshot<Result<core::QueueSendResult>>();
    Result<core::QueueSendResult> result = errors::actor_not_ready();
    if (instance->dispatch.send(core::dispatch::QueueSend{std::move(queue), std::move(body), conn,
                                                          core::HttpRequest{}, wait, std::nullopt,
                                                          std::move(tx)})) {
        auto got = co_await rx.recv();
        result = got ? std::move(*got) : Result<core::QueueSendResult>(errors::actor_dropped_reply());
    }
    Status disconnected = co_await conn.disconnect(std::nullopt);
    (void)disconnected;
    if (!result.ok())
        co_return std::move(result).error();
    Json out = Json::object();
    out["status"] =
        result->status == core::QueueSendResult::Status::Completed ? "completed" : "timedOut";
    if (result->response) {
        auto decoded = from_cbor(*result->response);
        out["response"] = decoded.ok() ? std::move(decoded).value() : Json();
    }
    co_return out;
}

Task<Status> stop_all(std::shared_ptr<EngineState> engine) {
    std::vector<std::shared_ptr<ActorRecord>> awake;
    for (auto& [id, actor] : engine->actors) {
        if (actor->running)
            awake.push_back(actor);
    }
    Status result;
    for (auto& actor : awake) {
        Status st = co_await stop_actor(engine, actor, core::ShutdownKind::Sleep);
        if (!st.ok() && result.ok())
            result = st;
    }
    co_return result;
}

std::shared_ptr<ActorRecord> record_of(const std::shared_ptr<EngineState>& engine,
                                       const std::string& name, const Key& key) {
    auto it = engine->ids.find({name, core::registry::format_actor_key(key)});
    return it == engine->ids.end() ? nullptr : engine->find(it->second);
}

}  // namespace

}  // namespace detail

// MARK: TestConnection

TestConnection::TestConnection(std::shared_ptr<detail::ConnectionState> state)
    : state_(std::move(state)) {}

TestConnection::~TestConnection() {
    dispose();
}

std::uint64_t TestConnection::on(std::string event, EventHandler handler) {
    const std::uint64_t id = state_->next_listener++;
    if (!state_->subscribed.count(event))
        subscribe(event);
    state_->listeners.emplace(id, std::make_pair(std::move(event), std::move(handler)));
    return id;
}

void TestConnection::off(std::uint64_t listener) {
    state_->listeners.erase(listener);
}

std::vector<Json> TestConnection::events(std::string_view event) const {
    auto it = state_->received.find(event);
    return it == state_->received.end() ? std::vector<Json>{} : it->second;
}

void TestConnection::subscribe(std::string event) {
    auto engine = state_->engine.lock();
    if (!engine || state_->subscribed.count(event))
        return;
    Status st = engine->run(detail::subscribe_connection(state_, std::move(event)));
    if (!st.ok()) {
        log::warn("test connection: subscribe failed",
                  {{"conn_id", state_->id}, {"error", st.error().to_string()}});
    }
}

Result<Json> TestConnection::action(std::string name, Json args) {
    auto engine = state_->engine.lock();
    if (!engine)
        return Error("client", "connection_closed", "the test engine is gone");
    if (!args.is_array())
        args = Json::array({std::move(args)});
    return engine->run(detail::connection_action(state_, std::move(name), to_cbor(args)));
}

bool TestConnection::is_open() const {
    return state_->open && state_->actor->running &&
           state_->actor->running->generation == state_->generation;
}

const std::string& TestConnection::id() const {
    return state_->id;
}

void TestConnection::dispose() {
    if (!state_ || !state_->open)
        return;
    auto engine = state_->engine.lock();
    if (!engine) {
        state_->open = false;
        return;
    }
    Status st = engine->run(detail::close_connection(state_));
    (void)st;
}

// MARK: TestActor

TestActor::TestActor(std::shared_ptr<detail::EngineState> engine, std::string name, Key key)
    : engine_(std::move(engine)), name_(std::move(name)), key_(std::move(key)) {}

std::string TestActor::id() const {
    auto actor = detail::record_of(engine_, name_, key_);
    return actor ? actor->id : std::string();
}

Result<Json> TestActor::action(std::string name, Json args) const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    if (!args.is_array())
        args = Json::array({std::move(args)});
    return engine_->run(
        detail::stateless_action(engine_, actor, std::move(name), to_cbor(args)));
}

Result<std::shared_ptr<TestConnection>> TestActor::connect(Json params) const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    auto opened = engine_->run(detail::open_connection(engine_, actor, std::move(params)));
    if (!opened.ok())
        return std::move(opened).error();
    return std::shared_ptr<TestConnection>(new TestConnection(std::move(opened).value()));
}

Result<TestActor::HttpResponse> TestActor::fetch(
    std::string method, std::string path, std::string body,
    std::vector<std::pair<std::string, std::string>> headers) const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    core::HttpRequest request;
    request.method = std::move(method);
    request.path = std::move(path);
    for (auto& [k, v] : headers)
        request.headers[k] = v;
    request.body.assign(body.begin(), body.end());
    return engine_->run(detail::http_request(engine_, actor, std::move(request)));
}

Result<Json> TestActor::send(std::string queue, Json body, bool wait) const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    return engine_->run(
        detail::queue_send(engine_, actor, std::move(queue), to_cbor(body), wait));
}

Status TestActor::sleep() const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    return engine_->run(detail::stop_actor(engine_, actor, core::ShutdownKind::Sleep));
}

Status TestActor::destroy() const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return errors::actor_not_found(name_);
    if (!actor->running) {
        Status woke = engine_->run(detail::start_actor(engine_, actor));
        if (!woke.ok())
            return woke;
    }
    return engine_->run(detail::stop_actor(engine_, actor, core::ShutdownKind::Destroy));
}

void TestActor::crash() const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor || !actor->running)
        return;
    *actor->running->severed = true;
    actor->running->join.abort();
    // The user's event loop ends as it would with the process.
    actor->running->instance->ctx.configure_actor_events(std::nullopt);
    actor->running.reset();
    actor->starting = false;
    actor->stopping = false;
    detail::close_connections(*actor);
    engine_->rt.run_until_idle();
}

void TestActor::lose_next_reply() const {
    if (auto actor = detail::record_of(engine_, name_, key_))
        actor->lose_next_reply = true;
}

bool TestActor::awake() const {
    auto actor = detail::record_of(engine_, name_, key_);
    return actor && actor->running.has_value();
}

bool TestActor::destroyed() const {
    // A destroyed actor's key is free again: no record under it means destroyed (or never made,
    // which get_or_create rules out).
    return detail::record_of(engine_, name_, key_) == nullptr;
}

std::optional<Json> TestActor::saved_state() const {
    auto actor = detail::record_of(engine_, name_, key_);
    if (!actor)
        return std::nullopt;
    auto bytes = actor->kv->peek(core::keys::kPersistData);
    if (!bytes)
        return std::nullopt;
    auto persisted = core::decode_persisted_actor(*bytes);
    if (!persisted.ok() || persisted->state.empty())
        return std::nullopt;
    auto value = from_cbor(persisted->state);
    if (!value.ok())
        return std::nullopt;
    return std::move(value).value();
}

std::optional<std::int64_t> TestActor::alarm_at_ms() const {
    auto actor = detail::record_of(engine_, name_, key_);
    return actor ? actor->alarm_ts : std::nullopt;
}

// MARK: TestEngine

TestEngine::TestEngine() : TestEngine(Options{}) {}

TestEngine::TestEngine(Options options)
    : state_(std::make_shared<detail::EngineState>(options)) {
    state_->link = std::make_shared<detail::Link>(state_);
}

TestEngine::~TestEngine() {
    Status st = state_->run(detail::stop_all(state_));
    if (!st.ok()) {
        log::warn("test engine: stopping the actors at the end failed",
                  {{"error", st.error().to_string()}});
    }
    // The runtime's io_context goes with the engine: no database job may still be finishing.
    (void)sqlite::wait_for_workers(std::chrono::seconds(10));
}

TestEngine& TestEngine::use_factory(std::string name,
                                    std::shared_ptr<core::ActorFactory> factory) {
    state_->factories[std::move(name)] = std::move(factory);
    return *this;
}

TestActor TestEngine::get_or_create(std::string name, Key key, std::optional<Json> input) {
    const std::string key_text = core::registry::format_actor_key(key);
    if (!state_->ids.count({name, key_text})) {
        auto factory = state_->factories.find(name);
        if (factory == state_->factories.end())
            throw ErrorException(errors::actor_not_registered(name));
        auto actor = std::make_shared<detail::ActorRecord>();
        actor->id = "test-actor-" + std::to_string(state_->next_id++);
        actor->name = name;
        actor->key = key;
        actor->key_text = key_text;
        actor->factory = factory->second;
        if (input)
            actor->input = to_cbor(*input);
        state_->actors[actor->id] = actor;
        state_->ids[{name, key_text}] = actor->id;
    }
    return TestActor(state_, std::move(name), std::move(key));
}

void TestEngine::advance(std::chrono::milliseconds d) {
    try {
        state_->rt.advance(d);
    } catch (const rt::DeadlockError& e) {
        log::warn("test engine: advance stopped", {{"error", std::string(e.what())}});
    }
}

void TestEngine::run_until_idle() {
    state_->rt.run_until_idle();
}

std::int64_t TestEngine::now_ms() const {
    return state_->rt.clock().wall_now_ms();
}

void TestEngine::fail_kv_writes(std::size_t count) {
    state_->faults->fail_writes = count;
}

std::size_t TestEngine::kv_writes() const {
    return state_->faults->writes;
}

}  // namespace rivetkit::testing

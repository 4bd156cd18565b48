// CoreRegistry: actor generations started and stopped by the envoy, and admission of work.

#include "core/registry/registry.hpp"

#include "base/log.hpp"
#include "core/actor/envoy_kv.hpp"
#include "core/actor/internal_storage.hpp"
#include "core/actor/sqlite.hpp"
#include "sqlite/envoy_store.hpp"
#include "core/actor/metrics.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/persist.hpp"
#include "core/actor/preload.hpp"
#include "runtime/notify.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core::registry {

namespace asio = boost::asio;

// MARK: keys

std::vector<std::string> parse_actor_key(std::string_view key) {
    std::vector<std::string> parts;
    if (key.empty() || key == "/")
        return parts;
    std::string current;
    bool escaping = false;
    bool empty_marker = false;
    for (char ch : key) {
        if (escaping) {
            if (ch == '0')
                empty_marker = true;
            else
                current.push_back(ch);
            escaping = false;
        } else if (ch == '\\') {
            escaping = true;
        } else if (ch == '/') {
            parts.push_back(empty_marker ? std::string() : std::move(current));
            current.clear();
            empty_marker = false;
        } else {
            current.push_back(ch);
        }
    }
    if (escaping) {
        current.push_back('\\');
        parts.push_back(std::move(current));
    } else if (empty_marker) {
        parts.emplace_back();
    } else if (!current.empty() || !parts.empty()) {
        parts.push_back(std::move(current));
    }
    return parts;
}

std::string format_actor_key(const std::vector<std::string>& key) {
    if (key.empty())
        return "/";
    std::string out;
    for (std::size_t i = 0; i < key.size(); ++i) {
        if (i > 0)
            out.push_back('/');
        if (key[i].empty()) {
            out += "\\0";
            continue;
        }
        for (char ch : key[i]) {
            if (ch == '\\' || ch == '/')
                out.push_back('\\');
            out.push_back(ch);
        }
    }
    return out;
}

// MARK: the EnvoyLink core sees

class CoreRegistry::Link final : public EnvoyLink {
  public:
    Link(std::weak_ptr<CoreRegistry> registry, envoy::EnvoyHandle handle)
        : registry_(std::move(registry)), handle_(std::move(handle)) {}

    void sleep_actor(std::string_view actor_id, std::optional<std::uint32_t> generation) override {
        handle_.sleep_actor(std::string(actor_id), generation);
    }
    void destroy_actor(std::string_view actor_id,
                       std::optional<std::uint32_t> generation) override {
        handle_.destroy_actor(std::string(actor_id), generation);
    }
    // Protocol v8 acknowledges events only in batches, so the write counts as done once queued
    // on the connection (replayed after a reconnect until the engine acks it); one set while the
    // actor starts is queued with its Running event.
    rt::OneshotReceiver<Status> set_alarm(std::string_view actor_id,
                                          std::optional<std::uint32_t> generation,
                                          std::optional<std::int64_t> alarm_ts) override {
        return handle_.set_alarm(std::string(actor_id), alarm_ts, generation);
    }
    // The envoy re-attaches hibernating sockets itself (WebSocketOpen::restoring); sockets it
    // never saw open (another host process) are rebuilt from this persisted metadata.
    void restore_hibernating_requests(std::string_view actor_id,
                                      std::vector<HibernatingRequest> requests) override {
        std::vector<envoy::HibernatingWebSocketMeta> metas;
        metas.reserve(requests.size());
        for (auto& r : requests) {
            envoy::Headers headers(std::make_move_iterator(r.headers.begin()),
                                   std::make_move_iterator(r.headers.end()));
            metas.push_back(envoy::HibernatingWebSocketMeta{
                envoy::TunnelId{r.gateway_id, r.request_id}, r.last_client_index,
                std::move(r.path), std::move(headers)});
        }
        handle_.restore_hibernating_requests(std::string(actor_id), std::move(metas));
    }
    bool is_hibernating_request_live(std::string_view actor_id, const GatewayId& gateway_id,
                                     const RequestId& request_id) const override {
        return handle_.is_hibernating_request_live(std::string(actor_id),
                                                   envoy::TunnelId{gateway_id, request_id});
    }
    std::size_t active_http_request_count(std::string_view actor_id) const override {
        auto registry = registry_.lock();
        if (!registry)
            return 0;
        auto instance = registry->instances_.find(actor_id);
        return instance == registry->instances_.end() ? 0 : instance->second->http_in_flight;
    }

    envoy::EnvoyHandle& handle() noexcept { return handle_; }

  private:
    std::weak_ptr<CoreRegistry> registry_;
    envoy::EnvoyHandle handle_;
};

struct CoreRegistry::Starting {
    rt::Notify done;
    bool finished = false;
};

// MARK: construction

CoreRegistry::CoreRegistry(asio::any_io_executor executor, rt::Clock& clock,
                           RegistryOptions options)
    : executor_(std::move(executor)), clock_(clock), options_(std::move(options)) {}

CoreRegistry::~CoreRegistry() = default;

void CoreRegistry::register_actor(std::string name, std::shared_ptr<ActorFactory> factory) {
    factories_.insert_or_assign(std::move(name), std::move(factory));
}

std::vector<std::pair<std::string, std::string>> CoreRegistry::actor_names_metadata() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, factory] : factories_)
        out.emplace_back(name, "{}");
    return out;
}

std::optional<ActorContext> CoreRegistry::actor_context(const std::string& actor_id) const {
    auto it = instances_.find(actor_id);
    if (it == instances_.end())
        return std::nullopt;
    return it->second->ctx;
}

// MARK: start

namespace {

ShutdownKind shutdown_kind(envoy::StopReason reason) {
    switch (reason) {
        case envoy::StopReason::stop_intent:
        case envoy::StopReason::destroy:
            return ShutdownKind::Destroy;
        default:
            // Sleep intent, draining envoy, lost connection: the actor lives on elsewhere.
            return ShutdownKind::Sleep;
    }
}

}  // namespace

asio::awaitable<Status> CoreRegistry::on_actor_start(envoy::EnvoyHandle handle,
                                                     envoy::ActorStart start) {
    auto self = shared_from_this();
    // One copy of the id for everything this generation keeps (base/shared_string.hpp).
    const SharedString actor_id(start.actor_id);
    if (!link_)
        link_ = std::make_shared<Link>(weak_from_this(), handle);

    auto factory_it = factories_.find(start.config.name);
    if (factory_it == factories_.end()) {
        log::error("actor start for unregistered name",
                   {{"actor_id", actor_id}, {"name", start.config.name}});
        co_return errors::actor_not_registered(start.config.name);
    }
    std::shared_ptr<ActorFactory> factory = factory_it->second;

    auto starting = std::make_shared<Starting>();
    starting_[actor_id] = starting;
    auto finish_starting = [this, actor_id, starting] {
        starting->finished = true;
        auto it = starting_.find(actor_id);
        if (it != starting_.end() && it->second == starting)
            starting_.erase(it);
        starting->done.notify_waiters();
    };

    std::vector<std::string> key = parse_actor_key(start.config.key.value_or("/"));
    std::string key_text = start.config.key.value_or(format_actor_key(key));
    // Every record lives in the actor's SQLite database, as rivetkit 2.3.19 keeps it; the engine
    // KV is read once, by the legacy import. The start command's preloaded KV is that legacy
    // layout, so it is not a source of state here.
    auto pages =
        std::make_shared<sqlite::EnvoyPageStore>(handle, executor_, actor_id, start.generation);
    // A generation whose pages diverged from the engine's cannot save: it sleeps, and the next
    // one starts from what the engine holds.
    pages->on_diverged([handle, actor_id, generation = start.generation] {
        handle.sleep_actor(actor_id, generation);
    });
    auto database = std::make_shared<ActorSqlite>(
        actor_id.str() + "#" + std::to_string(start.generation), std::move(pages));
    Kv kv(std::make_shared<SqliteActorStore>(actor_id, database,
                                             std::make_shared<EnvoyKv>(handle, actor_id)),
          actor_id);
    ActorContext ctx(executor_, clock_, actor_id, start.config.name, key, options_.region,
                     std::move(kv));
    ctx.configure(factory->shared_config());
    ctx.configure_envoy(link_, start.generation);
    ctx.configure_sqlite(database);

    auto [ltx, lrx] = rt::unbounded_channel<LifecycleCommand>();
    auto [dtx, drx] = rt::unbounded_channel<DispatchCommand>();
    auto [etx, erx] = rt::unbounded_channel<LifecycleEvent>();
    ctx.configure_lifecycle_events(std::move(etx));
    ctx.set_local_alarm_callback([tx = ltx] {
        auto [reply, reply_rx] = rt::oneshot<Status>();
        tx.send(LifecycleCommand::fire_alarm(std::move(reply)));
    });

    auto task = std::make_unique<ActorTask>(actor_id, start.generation, std::move(lrx),
                                            std::move(drx), std::move(erx), factory, ctx,
                                            start.config.input, std::nullopt);

    auto instance = std::make_shared<Instance>(Instance{
        actor_id, start.config.name, start.generation, std::move(key_text), ctx, factory, ltx,
        std::move(dtx), std::nullopt, std::nullopt, 0});
    instance->join = ActorTask::spawn(executor_, std::move(task));
    // Visible at once so requests that arrive during start get actor/starting, not not_found.
    instances_[actor_id] = instance;

    auto [reply, reply_rx] = rt::oneshot<Status>();
    ltx.send(LifecycleCommand::start(std::move(reply)));
    auto started = co_await reply_rx.recv();
    Status result = started ? std::move(*started) : Status(errors::actor_dropped_reply());
    if (!result.ok()) {
        log::error("actor start failed",
                   {{"actor_id", actor_id}, {"error", result.error().to_string()}});
        ltx.release();
        co_await retire_failed_start(*instance);
        auto it = instances_.find(actor_id);
        if (it != instances_.end() && it->second == instance)
            instances_.erase(it);
        if (instances_.empty())
            idle_.notify_waiters();
        finish_starting();
        co_return result;
    }
    metrics_of(instance->ctx).actor_started();
    log::info("actor started", {{"actor_id", actor_id},
                                {"name", instance->name},
                                {"key", instance->key},
                                {"generation", static_cast<std::uint64_t>(start.generation)}});
    finish_starting();
    if (actor_observer_)
        actor_observer_(actor_id, true);
    co_return Status{};
}

// A failed start leaves its task waiting in Loading (a stop there answers not_ready), holding the
// database its load opened. Its inboxes are closed so it ends, and the database is closed, before
// the instance is forgotten: nothing of it may still be running on a database worker when the
// host stops its io_context after wait_idle().
asio::awaitable<void> CoreRegistry::retire_failed_start(Instance& instance) {
    instance.ctx.set_local_alarm_callback({});
    instance.ctx.configure_lifecycle_events(std::nullopt);
    instance.lifecycle.release();
    instance.dispatch.release();
    if (instance.join && instance.join->valid()) {
        (void)co_await instance.join->join();
        instance.join.reset();
    }
    co_await instance.ctx.cleanup_sqlite();
}

// MARK: stop

asio::awaitable<Status> CoreRegistry::on_actor_stop(envoy::EnvoyHandle, envoy::ActorStop stop) {
    auto self = shared_from_this();
    // A stop for an actor still starting waits for the start to settle, then stops it.
    if (auto it = starting_.find(stop.actor_id); it != starting_.end()) {
        auto starting = it->second;
        while (!starting->finished)
            co_await starting->done.notified();
    }
    auto it = instances_.find(stop.actor_id);
    if (it == instances_.end()) {
        log::debug("stop for an actor that is not running", {{"actor_id", stop.actor_id}});
        co_return Status{};
    }
    auto instance = it->second;
    const ShutdownKind reason = shutdown_kind(stop.reason);
    if (instance->stopping) {
        log::warn("duplicate stop for a stopping actor",
                  {{"actor_id", stop.actor_id}, {"reason", envoy::to_string(stop.reason)}});
    }
    instance->stopping = reason;
    log::debug("stopping actor", {{"actor_id", stop.actor_id},
                                 {"reason", envoy::to_string(stop.reason)},
                                 {"shutdown", shutdown_kind_label(reason)}});

    const auto stop_started = std::chrono::steady_clock::now();
    auto [reply, reply_rx] = rt::oneshot<Status>();
    Status result;
    if (instance->lifecycle.send(LifecycleCommand::stop(reason, std::move(reply)))) {
        auto replied = co_await reply_rx.recv();
        result = replied ? std::move(*replied) : Status(errors::actor_dropped_reply());
    } else {
        result = errors::actor_not_ready();
    }
    if (instance->join && instance->join->valid()) {
        auto joined = co_await instance->join->join();
        (void)joined;
        instance->join.reset();
    }
    instance->ctx.configure_lifecycle_events(std::nullopt);
    instance->ctx.set_local_alarm_callback({});
    {
        ActorMetrics& metrics = metrics_of(instance->ctx);
        metrics.shutdown_wait(reason, std::chrono::steady_clock::now() - stop_started);
        if (!result.ok() && result.error().is("actor", "shutdown_timeout"))
            metrics.shutdown_timeout(reason);
        metrics.actor_stopped();  // only started instances are in instances_
    }
    auto current = instances_.find(stop.actor_id);
    if (current != instances_.end() && current->second == instance)
        instances_.erase(current);
    if (instances_.empty())
        idle_.notify_waiters();
    if (!result.ok()) {
        log::warn("actor stop failed",
                  {{"actor_id", stop.actor_id}, {"error", result.error().to_string()}});
    } else {
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - stop_started);
        log::info("actor stopped", {{"actor_id", stop.actor_id},
                                    {"name", instance->name},
                                    {"reason", shutdown_kind_label(reason)},
                                    {"duration_ms", static_cast<std::int64_t>(took.count())}});
    }
    if (actor_observer_)
        actor_observer_(stop.actor_id, false);
    co_return result;
}

void CoreRegistry::on_connect(envoy::EnvoyHandle handle) {
    if (!link_)
        link_ = std::make_shared<Link>(weak_from_this(), std::move(handle));
    if (connection_observer_)
        connection_observer_(true);
}

void CoreRegistry::on_registered(envoy::EnvoyHandle) {
    if (registration_observer_)
        registration_observer_();
}

void CoreRegistry::on_disconnect(envoy::EnvoyHandle) {
    if (connection_observer_)
        connection_observer_(false);
}

asio::awaitable<void> CoreRegistry::wait_idle(std::chrono::milliseconds bound) {
    auto drained = [this]() -> asio::awaitable<void> {
        while (!instances_.empty())
            co_await idle_.notified();
    };
    if (!co_await rt::timeout(clock_, bound, drained()))
        log::warn("actors still stopping when the host stopped",
                  {{"actors", static_cast<std::uint64_t>(instances_.size())}});
}

void CoreRegistry::on_shutdown() {
    log::info("envoy shut down", {{"actors", static_cast<std::uint64_t>(instances_.size())}});
}

// MARK: admission

Result<std::shared_ptr<CoreRegistry::Instance>> CoreRegistry::admit(
    const std::string& actor_id) const {
    auto it = instances_.find(actor_id);
    if (it == instances_.end()) {
        log::warn("actor instance not found", {{"actor_id", actor_id}});
        return Error("actor", "not_found", "The actor does not exist or was destroyed.",
                     "{\"resource\":\"instance\",\"id\":\"" + actor_id + "\"}");
    }
    const auto& instance = it->second;
    const ActorContext& ctx = instance->ctx;
    if (instance->stopping) {
        if (*instance->stopping == ShutdownKind::Sleep && ctx.started())
            return instance;
        ctx.warn_work_sent_to_stopping_instance("active_actor");
        return *instance->stopping == ShutdownKind::Destroy ? errors::actor_destroying()
                                                            : errors::actor_stopping();
    }
    if (ctx.started()) {
        if (ctx.destroy_requested())
            return errors::actor_destroying();
        return instance;
    }
    if (ctx.destroy_requested())
        return errors::actor_destroying();
    if (ctx.sleep_requested())
        return errors::actor_stopping();
    return errors::actor_starting();
}

}  // namespace rivetkit::core::registry

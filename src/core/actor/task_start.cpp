// ActorTask: the start sequence (also used to wake a generation that terminated in-process).
//
// load persisted data (tri-state preload) → install it → mark initialized + persist (unless a
// manual-startup runtime owns that) → inspector token → restore and settle hibernatable
// connections → future-only alarm sync → Started → spawn run handler (wait for startup_ready
// when manual) → post-ready persist, idle timer, overdue schedule drain.

#include <cstdlib>
#include <exception>

#include "base/base64.hpp"
#include "base/log.hpp"
#include "base/random.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/task.hpp"

namespace rivetkit::core {
namespace {

Error key_error(std::string_view key, const Error& e) {
    return Error(e.group(), e.code(), "key " + std::string(key) + ": " + e.message(), e.metadata());
}

// What runs as the run handler when the runtime's entry threw before it made its coroutine: the
// exception, as a coroutine that threw would have ended.
boost::asio::awaitable<Status> rethrow(std::exception_ptr failure) {
    std::rethrow_exception(failure);
    co_return Status{};
}

}  // namespace

boost::asio::awaitable<Result<std::optional<Bytes>>> ActorTask::preload_or_live(BytesView key) {
    Bytes owned(key.begin(), key.end());
    if (const PreloadedKv* preload = preloaded_kv()) {
        if (auto known = preload->key_entry(owned))
            co_return std::move(*known);
    }
    co_return co_await ctx.kv().get(std::move(owned));
}

boost::asio::awaitable<Result<ActorTask::StartupData>> ActorTask::load_persisted_startup() {
    using Kind = PreloadedPersistedActor::Kind;
    static const StartInputs kNone;  // a later start: nothing preloaded, the input persisted
    const StartInputs& inputs = start_inputs_ ? *start_inputs_ : kNone;
    const Kind kind = inputs.persisted_actor ? inputs.persisted_actor->kind : Kind::NoBundle;
    StartupData out;
    std::optional<Bytes> actor_bytes;
    std::optional<Bytes> alarm_bytes;
    if (kind == Kind::BundleExistsButEmpty) {
        out.actor.input = inputs.input;
        co_return out;
    }
    if (kind == Kind::Some) {
        out.actor = inputs.persisted_actor->actor;
        auto alarm = co_await preload_or_live(keys::kLastPushedAlarm);
        if (!alarm.ok())
            co_return std::move(alarm).error();
        alarm_bytes = std::move(alarm).value();
    } else if (inputs.kv) {
        auto actor = co_await preload_or_live(keys::kPersistData);
        if (!actor.ok())
            co_return std::move(actor).error();
        actor_bytes = std::move(actor).value();
        auto alarm = co_await preload_or_live(keys::kLastPushedAlarm);
        if (!alarm.ok())
            co_return std::move(alarm).error();
        alarm_bytes = std::move(alarm).value();
    } else {
        std::vector<Bytes> startup_keys;
        startup_keys.push_back(keys::to_bytes(keys::kPersistData));
        startup_keys.push_back(keys::to_bytes(keys::kLastPushedAlarm));
        auto values = co_await ctx.kv().batch_get(std::move(startup_keys));
        if (!values.ok())
            co_return std::move(values).error();
        actor_bytes = std::move(values.value().at(0));
        alarm_bytes = std::move(values.value().at(1));
    }
    if (kind != Kind::Some) {
        if (actor_bytes) {
            auto decoded = decode_persisted_actor(*actor_bytes);
            if (!decoded.ok())
                co_return key_error("[1]", decoded.error());
            out.actor = std::move(decoded).value();
        } else {
            out.actor.input = inputs.input;
        }
    }
    if (alarm_bytes) {
        auto decoded = decode_last_pushed_alarm(*alarm_bytes);
        if (!decoded.ok())
            co_return key_error("[6]", decoded.error());
        out.last_pushed_alarm = decoded.value();
    }
    co_return out;
}

boost::asio::awaitable<Status> ActorTask::init_inspector_token() {
    if (std::getenv("_RIVET_TEST_INSPECTOR_TOKEN") != nullptr)
        co_return Status{};
    auto existing = co_await preload_or_live(keys::kInspectorToken);
    if (!existing.ok())
        co_return std::move(existing).error();
    if (existing.value())
        co_return Status{};
    Bytes raw(32);
    fill_os_random(raw.data(), raw.size());
    Bytes key = keys::to_bytes(keys::kInspectorToken);
    Bytes token = to_bytes(base64::encode_url_no_pad(raw));
    co_return co_await ctx.kv().put(std::move(key), std::move(token));
}

boost::asio::awaitable<Status> ActorTask::start_actor() {
    if (lifecycle == LifecycleState::Loading) {
        ctx.configure(factory->shared_config());
    }
    auto fail = [&](std::string_view step, Error error) {
        log::error("actor start failed",
                   {{"actor_id", ctx.actor_id()}, {"step", step}, {"error", error.to_string()}});
        return Status(std::move(error));
    };
    // A wake after an in-process shutdown starts from fresh shutdown bookkeeping.
    ctx.inner()->teardown_started = false;
    ctx.inner()->shutdown_deadline_token = rt::CancellationToken();
    ctx.resume_alarm_dispatch();
    deadline_reached_ = false;
    if (!run_handle && (!ctx.inner()->actor_events || !pending_events_rx_)) {
        auto [tx, rx] = rt::unbounded_channel<ActorEvent>();
        ctx.configure_actor_events(std::move(tx));
        pending_events_rx_.emplace(std::move(rx));
    }

    auto startup = co_await load_persisted_startup();
    if (!startup.ok())
        co_return fail("load persisted actor", std::move(startup).error());
    const bool is_new = !startup.value().actor.has_initialized;
    ctx.load_persisted_actor(std::move(startup.value().actor));
    ctx.load_last_pushed_alarm(startup.value().last_pushed_alarm);
    if (!(is_new && factory->manual_startup_ready())) {
        ctx.set_has_initialized(true);
        Status persisted = co_await ctx.persist_if_dirty();
        if (!persisted.ok())
            co_return fail("persist actor initialization", std::move(persisted).error());
    }
    Status token = co_await init_inspector_token();
    if (!token.ok())
        co_return fail("initialize inspector token", std::move(token).error());

    const PreloadedKv* preload = preloaded_kv();
    auto restored = co_await ctx.restore_hibernatable_connections(preload);
    if (!restored.ok())
        co_return fail("restore hibernatable connections", std::move(restored).error());
    std::vector<ConnHandle> survivors;
    std::vector<HibernatingRequest> live_requests;
    for (auto& conn : restored.value()) {
        auto meta = conn.hibernation();
        auto live = meta ? ctx.hibernated_connection_is_live(*meta) : Result<bool>(false);
        if (meta && live.ok() && live.value()) {
            live_requests.push_back({meta->gateway_id, meta->request_id,
                                     meta->server_message_index, meta->request_path,
                                     meta->request_headers});
            survivors.push_back(std::move(conn));
        } else {
            ctx.remove_conn(conn.id());
            ctx.request_hibernation_transport_removal(conn.id());
        }
    }
    if (!restored.value().empty() && ctx.envoy()) {
        ctx.envoy()->restore_hibernating_requests(ctx.actor_id(), std::move(live_requests));
    }
    ctx.sync_future_alarm();
    transition_to(LifecycleState::Started);

    Status ready = co_await spawn_run_handler(is_new, std::move(survivors));
    if (!ready.ok())
        co_return fail("runtime startup", std::move(ready).error());
    if (is_new) {
        ctx.set_has_initialized(true);
        Status persisted = co_await ctx.persist_if_dirty();
        if (!persisted.ok())
            co_return fail("persist actor initialization", std::move(persisted).error());
    }
    reset_sleep_deadline();
    Status drained = co_await ctx.drain_overdue_scheduled_events();
    if (!drained.ok())
        co_return fail("drain overdue scheduled events", std::move(drained).error());
    co_return Status{};
}

boost::asio::awaitable<Status> ActorTask::spawn_run_handler(bool is_new,
                                                            std::vector<ConnHandle> hibernated) {
    if (run_handle || !pending_events_rx_)
        co_return Status{};
    std::vector<std::pair<ConnHandle, Bytes>> restored;
    for (auto& conn : hibernated)
        restored.emplace_back(conn, conn.state());
    std::optional<rt::OneshotReceiver<Status>> ready_rx;
    std::optional<rt::OneshotSender<Status>> ready_tx;
    if (factory->manual_startup_ready()) {
        auto [tx, rx] = rt::oneshot<Status>();
        ready_tx.emplace(std::move(tx));
        ready_rx.emplace(std::move(rx));
    }
    std::optional<Bytes> snapshot;
    if (!is_new)
        snapshot = ctx.state();
    ActorStart start{ctx,
                     ctx.input(),
                     std::move(snapshot),
                     std::move(restored),
                     ActorEvents(ctx.shared_actor_id(), std::move(*pending_events_rx_)),
                     std::move(ready_tx),
                     std::nullopt};
    pending_events_rx_.reset();
    // The runtime's coroutine is the task itself, with no wrapper frame of ours around it (an
    // awake actor keeps it for its whole life, unless it hands its completion off): an exception
    // it throws ends the task failed, and handle_run_handle_outcome logs it.
    run_handle = rt::spawn_handing_off<Status>(ctx.executor(), [&](rt::Handoff<Status> handoff) {
        start.handoff.emplace(std::move(handoff));
        try {
            return factory->start(std::move(start));
        } catch (...) {
            return rethrow(std::current_exception());
        }
    });
    if (!ready_rx)
        co_return Status{};
    auto answer = co_await ready_rx->recv();
    if (!answer)
        co_return errors::actor_dropped_reply();
    co_return std::move(*answer);
}

}  // namespace rivetkit::core

// ActorTask: the two-phase stop (grace, then run_shutdown) and the Stop reply.

#include <fmt/format.h>

#include <boost/system/system_error.hpp>
#include <map>
#include <mutex>

#include "base/log.hpp"
#include "core/actor/task.hpp"
#include "runtime/select.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core {
namespace {

// Test hooks keyed by actor id. Process-global (tests may run on several threads), so guarded.
struct HookRegistry {
    std::mutex mutex;
    std::map<std::string, ShutdownCleanupHook, std::less<>> cleanup;
    std::map<std::string, ShutdownReplyHook, std::less<>> reply;
};

HookRegistry& hooks() {
    static HookRegistry registry;
    return registry;
}

template <typename Hook>
std::optional<Hook> find_hook(std::map<std::string, Hook, std::less<>>& map, std::string_view id) {
    std::lock_guard lock(hooks().mutex);
    auto it = map.find(id);
    if (it == map.end())
        return std::nullopt;
    return it->second;
}

// Watches one core-dispatched hook (DisconnectConn / RunGracefulCleanup); the region keeps the
// hook counted until the runtime answers or drops the reply.
boost::asio::awaitable<void> watch_core_hook(WorkRegion region, std::string actor_id,
                                             rt::OneshotReceiver<Status> rx) {
    auto answer = co_await rx.recv();
    if (!answer) {
        log::warn("core dispatched hook reply dropped", {{"actor_id", actor_id}});
    } else if (!answer->ok()) {
        log::warn("core dispatched hook failed",
                  {{"actor_id", actor_id}, {"error", answer->error().to_string()}});
    }
    region.release();
}

void log_step(std::string_view actor_id, ShutdownKind reason, std::string_view step) {
    log::debug("actor shutdown cleanup step completed",
               {{"actor_id", actor_id}, {"reason", shutdown_kind_label(reason)}, {"step", step}});
}

}  // namespace

TestHookGuard::~TestHookGuard() {
    std::lock_guard lock(hooks().mutex);
    if (cleanup_) {
        hooks().cleanup.erase(actor_id_);
    } else {
        hooks().reply.erase(actor_id_);
    }
}

TestHookGuard install_shutdown_cleanup_hook(std::string actor_id, ShutdownCleanupHook hook) {
    std::lock_guard lock(hooks().mutex);
    hooks().cleanup.insert_or_assign(actor_id, std::move(hook));
    return TestHookGuard(std::move(actor_id), true);
}

TestHookGuard install_shutdown_reply_hook(std::string actor_id, ShutdownReplyHook hook) {
    std::lock_guard lock(hooks().mutex);
    hooks().reply.insert_or_assign(actor_id, std::move(hook));
    return TestHookGuard(std::move(actor_id), false);
}

void ActorTask::register_shutdown_reply(rt::OneshotSender<Status> reply) {
    if (shutdown_reply_) {
        log::warn("duplicate Stop after shutdown reply was registered, dropping new reply",
                  {{"actor_id", ctx.actor_id()}});
        return;
    }
    shutdown_reply_.emplace(std::move(reply));
}

boost::asio::awaitable<std::optional<LiveExit>> ActorTask::begin_stop(
    ShutdownKind reason, rt::OneshotSender<Status> reply, bool drain_dispatch) {
    register_shutdown_reply(std::move(reply));
    if (drain_dispatch) {
        // Work the engine queued before the Stop still runs against this generation.
        for (auto queued = dispatch_inbox_.try_recv(); queued;
             queued = dispatch_inbox_.try_recv()) {
            dispatch_now(std::move(*queued));
        }
    }
    begin_grace(reason);
    co_return try_finish_grace();
}

void ActorTask::begin_grace(ShutdownKind reason) {
    log::debug("actor grace shutdown started",
               {{"actor_id", ctx.actor_id()}, {"reason", shutdown_kind_label(reason)}});
    ctx.suspend_alarm_dispatch();
    ctx.set_local_alarm_callback({});
    transition_to(reason == ShutdownKind::Sleep ? LifecycleState::SleepGrace
                                                : LifecycleState::DestroyGrace);
    grace_ = Grace{reason, ctx.clock().now() + ctx.config().effective_sleep_grace_period()};
    sleep_deadline_.reset();
    ctx.cancel_actor_abort();
    ctx.signal_activity();
    emit_grace_events(reason);
}

void ActorTask::send_core_hook(ActorEvent event, rt::OneshotReceiver<Status> reply_rx) {
    WorkRegion region = ctx.region(RegionKind::CoreHook);
    // On failure the event (and its reply) is destroyed here: the watcher sees dropped_reply.
    (void)ctx.try_send_actor_event(std::move(event), "core_hook");
    rt::spawn(ctx.executor(),
              watch_core_hook(std::move(region), ctx.actor_id(), std::move(reply_rx)));
}

void ActorTask::emit_grace_events(ShutdownKind reason) {
    for (const auto& conn : ctx.conns()) {
        if (reason == ShutdownKind::Sleep && conn.is_hibernatable()) {
            ctx.request_hibernation_transport_save(conn.id());
            continue;
        }
        auto [reply, rx] = Reply<void>::make();
        send_core_hook(event::DisconnectConn{conn.id(), std::move(reply)}, std::move(rx));
    }
    auto [reply, rx] = Reply<void>::make();
    send_core_hook(event::RunGracefulCleanup{reason, std::move(reply)}, std::move(rx));
    ctx.signal_activity();
}

std::optional<LiveExit> ActorTask::on_sleep_grace_deadline() {
    if (!grace_)
        return std::nullopt;
    const ShutdownKind reason = grace_->reason;
    const auto missed =
        std::chrono::duration_cast<std::chrono::milliseconds>(ctx.clock().now() - grace_->deadline);
    // The runtime is aborted after the final save (run_shutdown), not here: it is what answers
    // that save's SerializeState, so aborting it first lost every change since the last save
    // (an on_sleep hook's, say) whenever user work outlived the grace period.
    ctx.shutdown_deadline_token().cancel();
    deadline_reached_ = true;
    log::warn("actor shutdown reached the grace deadline",
              {{"actor_id", ctx.actor_id()},
               {"reason", shutdown_kind_label(reason)},
               {"deadline_missed_by_ms", static_cast<std::int64_t>(missed.count())},
               {"core_dispatched_hooks", ctx.core_dispatched_hook_count()},
               {"shutdown_tasks", ctx.shutdown_task_count()},
               {"keep_awake", ctx.keep_awake_count()},
               {"internal_keep_awake", ctx.internal_keep_awake_count()}});
    return LiveExit::shutdown(reason);
}

boost::asio::awaitable<Status> ActorTask::handle_stop(ShutdownKind reason) {
    auto [tx, rx] = rt::oneshot<Status>();
    register_shutdown_reply(std::move(tx));
    begin_grace(reason);
    rt::Clock& clock = ctx.clock();
    for (;;) {
        if (try_finish_grace())
            break;
        const std::size_t arm =
            co_await rt::select(ctx.inner()->activity, rt::deadline(clock, grace_->deadline));
        ctx.take_activity_dirty();
        if (arm == 1) {
            (void)on_sleep_grace_deadline();
            break;
        }
    }
    Status result = co_await run_shutdown_guarded(reason);
    deliver_shutdown_reply(reason, result);
    transition_to(LifecycleState::Terminated);
    auto replied = co_await rx.recv();
    if (!replied)
        co_return errors::actor_dropped_reply();
    co_return std::move(*replied);
}

// Any exception escaping the shutdown (a hook, a runtime bug) becomes an error result instead of
// tearing down the task loop. The text names the phase, as upstream's panic guard does.
boost::asio::awaitable<Status> ActorTask::run_shutdown_guarded(ShutdownKind reason) {
    std::string what;
    try {
        co_return co_await run_shutdown(reason);
    } catch (const boost::system::system_error& e) {
        if (e.code() == boost::asio::error::operation_aborted)
            throw;
        what = e.what();
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
        what = "unknown exception";
    }
    log::error("actor shutdown panicked", {{"actor_id", ctx.actor_id()}, {"error", what}});
    co_return Error(
        "core", "internal_error",
        fmt::format("shutdown panicked during {}: {}", shutdown_kind_name(reason), what));
}

boost::asio::awaitable<Status> ActorTask::save_final_state(ShutdownKind reason) {
    // A save tick's write still in flight goes first. The runtime hands a changed state over
    // once, so it may hold the newest state while this save gets none and only the removals of
    // fired events sealed with it; written before it, and the in-flight write then failing, the
    // removals were durable without their effects (found by the stack simulation, seed 3381: a
    // scheduled event lost). After it, a failed write's state is still pending and goes out here.
    (void)co_await ctx.wait_for_background_save();
    auto [reply, rx] = Reply<std::vector<StateDelta>>::make();
    std::vector<StateDelta> deltas;
    Status sent = ctx.try_send_actor_event(
        event::SerializeState{SerializeStateReason::Save, std::move(reply)}, "shutdown_serialize");
    if (!sent.ok()) {
        log::error("shutdown serialize-state enqueue failed",
                   {{"actor_id", ctx.actor_id()}, {"error", sent.error().to_string()}});
    } else {
        const auto cap = std::max<std::chrono::milliseconds>(
            kSerializeStateShutdownSanityCap, ctx.config().effective_sleep_grace_period());
        auto answer = co_await rt::recv_timeout(ctx.clock(), cap, rx);
        if (!answer) {
            log::error(
                "serializeState timed out; saving with empty deltas, prior persisted state "
                "retained",
                {{"actor_id", ctx.actor_id()}, {"reason", shutdown_kind_label(reason)}});
        } else if (!*answer || !(*answer)->ok()) {
            const std::string error = *answer ? (*answer)->error().to_string()
                                              : errors::actor_dropped_reply().to_string();
            log::error("shutdown serializeState failed; saving with empty deltas",
                       {{"actor_id", ctx.actor_id()}, {"error", error}});
        } else {
            deltas = std::move(**answer).value();
        }
    }
    Status saved = co_await ctx.save_state(std::move(deltas));
    // A final save whose write failed is tried again, up to three more times and at once (the
    // shutdown path arms no retry timers): what it could not write stays pending for the next
    // save, and a stop that gives up loses it. A save refused before its write (a connection
    // delta it could not apply) is not: its state was not kept.
    for (int retry = 0; !saved.ok() && saved.error().group() != "connection" && retry < 3;
         ++retry) {
        log::warn("actor final save failed, trying again",
                  {{"actor_id", ctx.actor_id()},
                   {"attempt", retry + 2},
                   {"error", saved.error().to_string()}});
        saved = co_await ctx.save_state({});
    }
    co_return saved;
}

boost::asio::awaitable<Status> ActorTask::run_shutdown(ShutdownKind reason) {
    grace_.reset();
    state_save_deadline.reset();
    inspector_serialize_state_deadline.reset();
    sleep_deadline_.reset();
    transition_to(reason == ShutdownKind::Sleep ? LifecycleState::SleepFinalize
                                                : LifecycleState::Destroying);
    Status saved = co_await save_final_state(reason);
    if (!saved.ok()) {
        // The generation still lets go of its database, so no statement of it is left running
        // on a SQLite worker after the stop is reported (its completion would resume on an
        // executor the host may be tearing down).
        co_await ctx.wait_for_pending_state_writes();
        co_await ctx.cleanup_sqlite();
        co_return saved;
    }

    ctx.configure_actor_events(std::nullopt);  // closes the runtime's event stream
    if (run_handle) {
        if (deadline_reached_)
            run_handle->abort();
        (void)co_await run_handle->join();
        run_handle.reset();
    }

    co_await ctx.teardown_sleep_state(deadline_reached_);
    log_step(ctx.actor_id(), reason, "teardown_sleep_state");
    if (auto hook = find_hook(hooks().cleanup, ctx.actor_id()))
        (*hook)(ctx, shutdown_kind_label(reason));
    co_await ctx.wait_for_pending_state_writes();
    log_step(ctx.actor_id(), reason, "wait_for_pending_state_writes");
    ctx.sync_alarm();
    log_step(ctx.actor_id(), reason, "sync_alarm");
    co_await ctx.wait_for_pending_alarm_writes();
    log_step(ctx.actor_id(), reason, "wait_for_pending_alarm_writes");
    // Last: the alarm's [6] record lives in the database too.
    co_await ctx.cleanup_sqlite();
    log_step(ctx.actor_id(), reason, "cleanup_sqlite");
    if (reason == ShutdownKind::Sleep) {
        // The engine alarm stays armed so the actor wakes for its next scheduled event.
        ctx.cancel_local_alarm_timeouts();
    } else {
        ctx.cancel_driver_alarm();
    }
    log_step(ctx.actor_id(), reason, "cancel_alarms");
    if (reason == ShutdownKind::Destroy)
        ctx.mark_destroy_completed();
    co_return Status{};
}

void ActorTask::deliver_shutdown_reply(ShutdownKind reason, const Status& result) {
    if (auto hook = find_hook(hooks().reply, ctx.actor_id()))
        (*hook)(ctx, reason);
    if (!shutdown_reply_)
        return;
    Status reply;
    if (!result.ok()) {
        const Error& e = result.error();
        // Internal failures reach the engine masked; the task's own result keeps the detail.
        Error sent = e.is("core", "internal_error") ? errors::internal_error(e.message()) : e;
        reply = Status(with_specifier(std::move(sent)));
    }
    const bool ok = reply.ok();
    const bool delivered = shutdown_reply_->send(std::move(reply));
    shutdown_reply_.reset();
    log::debug("actor lifecycle command replied", {{"actor_id", ctx.actor_id()},
                                                   {"command", "stop"},
                                                   {"reason", shutdown_kind_label(reason)},
                                                   {"shutdown_reason", shutdown_kind_label(reason)},
                                                   {"outcome", ok ? "ok" : "error"},
                                                   {"delivered", delivered}});
}

}  // namespace rivetkit::core

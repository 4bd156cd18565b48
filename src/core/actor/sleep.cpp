// ActorContext: work tracking, sleep readiness, and sleep/destroy requests.
//
// can_sleep() is the one place that decides whether an actor may go idle; its inputs are the
// counters below, each changed only through RAII regions or the tracked-work registry, and every
// change signals activity so the task re-evaluates (no polling anywhere).
//
// Tracked ("shutdown") work: wait_until, register_task, actions and scheduled actions. It delays
// grace completion; at the grace deadline it is aborted. Once teardown started, new work is
// refused: the future is destroyed unstarted (its captured state's destructors run at once).

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "runtime/select.hpp"

namespace rivetkit::core {

CanSleep ActorContext::can_sleep() const {
    const auto& s = *p_;
    if (!s.started)
        return CanSleep::NotReady;
    if (s.config->no_sleep)
        return CanSleep::NoSleep;
    if (s.envoy && s.envoy->active_http_request_count(s.actor_id) > 0) {
        return CanSleep::ActiveHttpRequests;
    }
    if (s.keep_awake > 0)
        return CanSleep::ActiveKeepAwake;
    if (s.internal_keep_awake > 0)
        return CanSleep::ActiveInternalKeepAwake;
    if (s.run_handlers > 0 && !s.queue_wait_active)
        return CanSleep::ActiveRunHandler;
    if (s.pending_disconnects > 0)
        return CanSleep::ActiveDisconnectCallbacks;
    if (!s.conns.empty())
        return CanSleep::ActiveConnections;
    if (s.websocket_callbacks > 0)
        return CanSleep::ActiveWebSocketCallbacks;
    return CanSleep::Yes;
}

// Connections and the idle window do not block finalize; everything that is still doing work does.
bool ActorContext::can_finalize_shutdown(ShutdownKind reason) const {
    const auto& s = *p_;
    if (s.core_hooks > 0)
        return false;
    if (reason == ShutdownKind::Sleep && s.run_handlers > 0)
        return false;
    if (!s.tracked_work_idle())
        return false;
    if (s.keep_awake > 0 || s.internal_keep_awake > 0)
        return false;
    if (s.envoy && s.envoy->active_http_request_count(s.actor_id) > 0)
        return false;
    if (s.websocket_callbacks > 0 || s.pending_disconnects > 0)
        return false;
    return true;
}

namespace {

// How tracked work that threw ended: an abort (teardown, the grace deadline) is the frame
// finishing; anything else is the user's work failing (upstream's rejected waitUntil promise).
void report_tracked_work_exception(const WeakActorContext& weak, std::string_view kind,
                                   const std::exception& e) {
    if (const auto* sys = dynamic_cast<const boost::system::system_error*>(&e);
        sys != nullptr && sys->code() == boost::asio::error::operation_aborted) {
        log::debug("actor tracked work aborted", {{"kind", kind}});
        return;
    }
    std::string actor_id;
    if (auto ctx = weak.upgrade())
        actor_id = ctx->actor_id();
    if (kind == "wait_until")
        log::warn("actor wait_until promise rejected",
                  {{"actor_id", actor_id}, {"error", std::string_view(e.what())}});
    else
        log::warn("actor tracked work failed",
                  {{"actor_id", actor_id}, {"kind", kind}, {"error", std::string_view(e.what())}});
}

// `kind` is always a string literal label, so a view is safe to keep in the frame.
boost::asio::awaitable<void> run_tracked_work(WeakActorContext weak, std::uint64_t id,
                                              std::string_view kind,
                                              boost::asio::awaitable<void> body,
                                              std::optional<WorkRegion> region) {
    try {
        co_await std::move(body);
    } catch (const std::exception& e) {
        report_tracked_work_exception(weak, kind, e);
    }
    region.reset();
    if (auto ctx = weak.upgrade()) {
        ctx->inner()->shutdown_tasks.edit().erase(id);
        ctx->signal_activity();
    }
}

}  // namespace

bool ActorContext::spawn_shutdown_task(std::string_view kind, boost::asio::awaitable<void> fut,
                                       bool keep_awake) const {
    auto& s = *p_;
    if (s.teardown_started) {
        // The spec's text for every refused detached spawn (see core-behaviour.md §7 note).
        log::warn("shutdown task spawned after teardown; aborting immediately",
                  {{"actor_id", s.actor_id}, {"kind", kind}});
        return false;  // `fut` is destroyed unstarted on return
    }
    const std::uint64_t id = s.next_work_id++;
    std::optional<WorkRegion> region;
    if (keep_awake)
        region.emplace(p_, RegionKind::InternalKeepAwake);
    auto handle = rt::spawn(
        s.executor, run_tracked_work(downgrade(), id, kind, std::move(fut), std::move(region)));
    s.shutdown_tasks.edit().emplace(id, std::move(handle));
    signal_activity();
    return true;
}

bool ActorContext::wait_until(boost::asio::awaitable<void> fut) const {
    return spawn_shutdown_task("wait_until", std::move(fut), false);
}

bool ActorContext::register_task(boost::asio::awaitable<void> fut) const {
    return spawn_shutdown_task("registered_task", std::move(fut), false);
}

boost::asio::awaitable<bool> ActorContext::wait_for_shutdown_tasks(Instant deadline) const {
    auto inner = p_;
    while (!inner->tracked_work_idle()) {
        const std::size_t winner =
            co_await rt::select(inner->work_changed, rt::deadline(*inner->clock, deadline));
        if (winner == 1 && !inner->tracked_work_idle())
            co_return false;
    }
    co_return true;
}

boost::asio::awaitable<void> ActorContext::teardown_sleep_state(bool deadline_reached) const {
    auto inner = p_;
    if (deadline_reached) {
        inner->teardown_started = true;
        auto tasks = std::exchange(inner->shutdown_tasks.edit(), {});
        for (auto& [id, handle] : tasks)
            handle.abort();
        for (auto& [id, handle] : tasks)
            (void)co_await handle.join();
        detail::release_tracked_replies(*inner, /*drop_callers=*/true);
    } else {
        while (!inner->tracked_work_idle())
            co_await inner->work_changed.notified();
        inner->teardown_started = true;
    }
}

Status ActorContext::sleep() const {
    auto& s = *p_;
    if (!s.started) {
        if (s.sleep_requested || s.destroy_requested)
            return errors::actor_stopping();
        return errors::actor_starting();
    }
    if (s.sleep_requested)
        return {};
    s.sleep_requested = true;
    ++s.sleep_request_count;
    if (s.envoy)
        s.envoy->sleep_actor(s.actor_id, s.generation);
    return {};
}

Status ActorContext::destroy() const {
    auto& s = *p_;
    if (s.destroy_requested)
        return errors::actor_stopping();
    if (!s.started) {
        if (s.sleep_requested)
            return errors::actor_stopping();
        return errors::actor_starting();
    }
    s.destroy_requested = true;
    s.destroy_completed = false;
    persist_now_tracked("destroy request");
    if (s.envoy)
        s.envoy->destroy_actor(s.actor_id, s.generation);
    return {};
}

void ActorContext::mark_destroy_completed() const {
    p_->destroy_completed = true;
    p_->destroy_completed_notify.notify_waiters();
}

boost::asio::awaitable<void> ActorContext::wait_for_destroy_completion_public() const {
    auto inner = p_;
    while (!inner->destroy_completed)
        co_await inner->destroy_completed_notify.notified();
}

}  // namespace rivetkit::core

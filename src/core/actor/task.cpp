// ActorTask: construction, the live loop, command/event handling and the save/inspector/idle
// timers. Start is in task_start.cpp, grace and shutdown in task_shutdown.cpp.

#include "core/actor/task.hpp"

#include <cassert>

#include "base/log.hpp"
#include "runtime/defer.hpp"
#include "runtime/select.hpp"

namespace rivetkit::core {
namespace {

// The live loop's arms (with_arms): what ready_arm returns when none is ready, and the last one,
// the timer the five deadlines share (which_timer tells which is due).
constexpr std::size_t kArms = 7;
constexpr std::size_t kTimerArm = kArms - 1;

// How long the actor's database goes unused before its connection is closed (its pages kept).
constexpr std::chrono::seconds kDatabaseIdleClose{2};
// How long the inboxes go unused before their queues' storage is given back (one slot of a large
// command each, ~0.5 KB per awake actor that has served one action).
constexpr std::chrono::seconds kInboxesQuiet{2};

std::string_view command_label(LifecycleCommand::Kind kind) {
    switch (kind) {
        case LifecycleCommand::Kind::Start:
            return "start";
        case LifecycleCommand::Kind::Stop:
            return "stop";
        case LifecycleCommand::Kind::FireAlarm:
            return "fire_alarm";
    }
    return "unknown";
}

std::string_view dispatch_label(const DispatchCommand& command) {
    struct V {
        std::string_view operator()(const dispatch::Action&) const { return "action"; }
        std::string_view operator()(const dispatch::QueueSend&) const { return "queue_send"; }
        std::string_view operator()(const dispatch::Http&) const { return "http"; }
        std::string_view operator()(const dispatch::OpenWebSocket&) const {
            return "open_websocket";
        }
        std::string_view operator()(const dispatch::WorkflowHistory&) const {
            return "workflow_history";
        }
        std::string_view operator()(const dispatch::WorkflowReplay&) const {
            return "workflow_replay";
        }
    };
    return std::visit(V{}, command);
}

bool accepts_ticks(LifecycleState s) {
    return s == LifecycleState::Started || s == LifecycleState::SleepGrace;
}

void warn_closed(std::string_view actor_id, std::string_view channel, std::string_view message) {
    log::warn(message,
              {{"actor_id", actor_id}, {"channel", channel}, {"reason", "all senders dropped"}});
}

}  // namespace

ActorTask::ActorTask(SharedString actor_id, std::uint32_t generation,
                     rt::Receiver<LifecycleCommand> lifecycle_inbox,
                     rt::Receiver<DispatchCommand> dispatch_inbox,
                     rt::Receiver<LifecycleEvent> lifecycle_events_rx,
                     std::shared_ptr<ActorFactory> factory_, ActorContext ctx_,
                     std::optional<Bytes> start_input,
                     std::optional<PreloadedPersistedActor> preloaded_persisted_actor)
    : factory(std::move(factory_)),
      ctx(std::move(ctx_)),
      lifecycle_events(std::move(lifecycle_events_rx)),
      actor_id_(std::move(actor_id)),
      generation_(generation),
      lifecycle_inbox_(std::move(lifecycle_inbox)),
      dispatch_inbox_(std::move(dispatch_inbox)) {
    if (start_input)
        start_inputs().input = std::move(start_input);
    if (preloaded_persisted_actor)
        start_inputs().persisted_actor = std::move(preloaded_persisted_actor);
    ctx.configure_inspector_runtime();
}

ActorTask::StartInputs& ActorTask::start_inputs() {
    if (!start_inputs_)
        start_inputs_ = std::make_unique<StartInputs>();
    return *start_inputs_;
}

ActorTask& ActorTask::with_preloaded_persisted_actor(PreloadedPersistedActor preloaded) {
    start_inputs().persisted_actor = std::move(preloaded);
    return *this;
}

ActorTask& ActorTask::with_preloaded_kv(std::optional<PreloadedKv> preloaded) {
    if (preloaded || start_inputs_)
        start_inputs().kv = std::move(preloaded);
    return *this;
}

Error ActorTask::with_specifier(Error error) const {
    if (auto spec = ctx.specifier())
        error.with_actor(*spec);
    return error;
}

boost::asio::awaitable<Status> ActorTask::run() {
    LiveExit exit = co_await run_live(Next{}, false);
    co_return co_await finish_live(exit);
}

rt::JoinHandle<Status> ActorTask::spawn(boost::asio::any_io_executor executor,
                                        std::unique_ptr<ActorTask> task) {
    return rt::spawn_handing_off<Status>(
        std::move(executor), [&task](const rt::Handoff<Status>& handoff) {
            std::shared_ptr<ActorTask> self(std::move(task));
            self->handoff_.emplace(handoff);
            self->self_ = self;
            return run_spawned(std::move(self), Next{});
        });
}

// A parked loop's task state owns `self`; this frame owns it while the loop runs as a coroutine.
boost::asio::awaitable<Status> ActorTask::run_spawned(std::shared_ptr<ActorTask> self,
                                                      Next next) {
    LiveExit exit = co_await self->run_live(next, true);
    if (exit.kind == LiveExit::Kind::Parked) {
        // False when an abort came first: the task is over (aborted) and `self` ends here.
        (void)self->handoff_->hand_off(self);
        co_return Status{};  // not the task's result: a handed-off body's return is ignored
    }
    co_return co_await self->finish_live(exit);
}

boost::asio::awaitable<Status> ActorTask::finish_live(LiveExit exit) {
    if (exit.kind == LiveExit::Kind::Terminated)
        co_return Status{};
    Status result = co_await run_shutdown_guarded(exit.reason);
    deliver_shutdown_reply(exit.reason, result);
    transition_to(LifecycleState::Terminated);
    co_return result;
}

bool ActorTask::accepts_dispatch() const noexcept {
    return lifecycle == LifecycleState::Started || lifecycle == LifecycleState::SleepGrace ||
           lifecycle == LifecycleState::DestroyGrace;
}

// The loop's arms in priority order; the five deadlines after the run handle share one timer arm
// (next_timer, which_timer).
template <typename F>
decltype(auto) ActorTask::with_arms(F&& f) {
    rt::Clock& clock = ctx.clock();
    std::optional<Instant> grace_deadline;
    if (grace_)
        grace_deadline = grace_->deadline;
    return std::forward<F>(f)(lifecycle_inbox_, lifecycle_events, ctx.inner()->activity,
                              rt::deadline(clock, grace_deadline),
                              rt::when(accepts_dispatch(), dispatch_inbox_), run_handle,
                              rt::deadline(clock, next_timer()));
}

ActorTask::Next ActorTask::advance() {
    using Kind = Next::Kind;
    auto exit_with = [](LiveExit exit) { return Next{Kind::Exit, exit}; };
    for (;;) {
        std::optional<LiveExit> exit;
        if (ctx.take_activity_dirty())
            exit = on_activity_signal();
        if (exit)
            return exit_with(*exit);
        if (!database_idle_deadline_ && ctx.take_database_touched())
            database_idle_deadline_ = ctx.clock().now() + kDatabaseIdleClose;
        if (!inboxes_quiet_deadline_ && std::exchange(inboxes_used_, false))
            inboxes_quiet_deadline_ = ctx.clock().now() + kInboxesQuiet;
        const std::size_t arm = with_arms([](auto&&... arms) { return rt::ready_arm(arms...); });
        if (arm == kArms)
            return Next{Kind::Wait};
        switch (arm == kTimerArm ? which_timer() : arm) {
            case 0:
                inboxes_used_ = true;
                return Next{Kind::Lifecycle};
            case 1: {
                inboxes_used_ = true;
                auto event = lifecycle_events.try_recv();
                if (!event) {
                    warn_closed(ctx.actor_id(), "lifecycle_events",
                                "actor task terminating because lifecycle event inbox closed");
                    return exit_with(LiveExit::terminated());
                }
                log::debug(
                    "actor lifecycle event drained",
                    {{"actor_id", ctx.actor_id()}, {"event", lifecycle_event_label(*event)}});
                exit = serve_event(*event);
                break;
            }
            case 2:
                ctx.take_activity_dirty();
                exit = on_activity_signal();
                break;
            case 3:
                exit = on_sleep_grace_deadline();
                break;
            case 4:
                inboxes_used_ = true;
                if (!dispatch_next())
                    return exit_with(LiveExit::terminated());
                break;
            case 5:
                return Next{Kind::RunHandle};
            case 6:
                return Next{Kind::Save};
            case 7:
                return Next{Kind::InspectorTick};
            case 8:
                on_sleep_tick();
                break;
            case 9:
                // Used again within the period: wait another one; else close it.
                database_idle_deadline_.reset();
                if (ctx.take_database_touched())
                    database_idle_deadline_ = ctx.clock().now() + kDatabaseIdleClose;
                else
                    ctx.close_database_if_idle();
                break;
            case 10:
                // Used again within the period: wait another one; else give their storage back.
                inboxes_quiet_deadline_.reset();
                if (std::exchange(inboxes_used_, false))
                    inboxes_quiet_deadline_ = ctx.clock().now() + kInboxesQuiet;
                else
                    release_idle_inboxes();
                break;
            default:
                break;
        }
        if (exit)
            return exit_with(*exit);
        if (lifecycle == LifecycleState::Terminated)
            return exit_with(LiveExit::terminated());
    }
}

boost::asio::awaitable<LiveExit> ActorTask::run_live(Next next, bool may_park) {
    using Kind = Next::Kind;
    for (;;) {
        std::optional<LiveExit> exit;
        switch (next.kind) {
            case Kind::Check:
                break;
            case Kind::Exit:
                co_return next.exit;
            case Kind::Wait:
                if (may_park) {
                    park();
                    co_return LiveExit::parked();
                }
                (void)co_await with_arms([](auto&&... arms) { return rt::wait_ready(arms...); });
                break;
            case Kind::Lifecycle: {
                auto command = lifecycle_inbox_.try_recv();
                if (!command) {
                    warn_closed(ctx.actor_id(), "lifecycle_inbox",
                                "actor task terminating because lifecycle command inbox closed");
                    co_return LiveExit::terminated();
                }
                exit = co_await serve_lifecycle(std::move(*command));
                break;
            }
            case Kind::RunHandle: {
                auto outcome = co_await wait_for_run_handle(&*run_handle);
                exit = handle_run_handle_outcome(std::move(outcome));
                break;
            }
            case Kind::Save:
                state_save_deadline.reset();
                (void)co_await begin_state_save();
                break;
            case Kind::InspectorTick:
                co_await on_inspector_serialize_state_tick();
                break;
        }
        if (exit)
            co_return *exit;
        if (lifecycle == LifecycleState::Terminated)
            co_return LiveExit::terminated();
        next = advance();
    }
}

// The arms of with_arms, the two deadlines as one timer at the earlier: a wake re-checks them all.
void ActorTask::park() {
    std::optional<Instant> wake_at = next_timer();
    if (grace_ && (!wake_at || grace_->deadline < *wake_at))
        wake_at = grace_->deadline;
    parked_.park(lifecycle_inbox_, lifecycle_events, ctx.inner()->activity,
                 rt::when(accepts_dispatch(), dispatch_inbox_), run_handle,
                 rt::deadline(ctx.clock(), wake_at));
}

// From the waker: serving is deferred to the run queue, and a wake after the task ended (its
// state destroyed the task, or the generation finished) finds nothing to lock.
void ActorTask::Parked::on_wake() noexcept {
    rt::defer(task_.ctx.executor(), task_.self_, [](const std::shared_ptr<void>& target) {
        auto self = std::static_pointer_cast<ActorTask>(target);
        self->serve_parked(self);
    });
}

// What the coroutine loop would do after its wait, without one: serve every ready arm that
// needs no await, then park again, or resume the coroutine at the arm that awaits (or at the
// live phase's end, which it finishes).
void ActorTask::serve_parked(const std::shared_ptr<ActorTask>& self) {
    parked_.unpark();
    Next next;
    try {
        next = advance();
    } catch (...) {
        handoff_->finish(rt::Joined<Status>::failed(std::current_exception()));
        return;
    }
    if (next.kind == Next::Kind::Wait)
        park();
    else
        (void)handoff_->resume(run_spawned(self, next));
}

bool ActorTask::dispatch_next() {
    auto command = dispatch_inbox_.try_recv();
    if (!command) {
        warn_closed(ctx.actor_id(), "dispatch_inbox",
                    "actor task terminating because dispatch inbox closed");
        return false;
    }
    dispatch_now(std::move(*command));
    return true;
}

void ActorTask::transition_to(LifecycleState next) {
    log::debug("actor lifecycle transition", {{"actor_id", ctx.actor_id()},
                                             {"old", lifecycle_state_name(lifecycle)},
                                             {"new", lifecycle_state_name(next)}});
    lifecycle = next;
    if (next == LifecycleState::Started) {
        ctx.renew_actor_abort_token();
        ctx.clear_sleep_requested();
    }
    ctx.set_started(next == LifecycleState::Started || next == LifecycleState::SleepGrace);
}

void ActorTask::reply_lifecycle(std::string_view command, std::optional<ShutdownKind> reason,
                                rt::OneshotSender<Status> reply, Status result) {
    const bool ok = result.ok();
    if (!ok)
        result = Status(with_specifier(std::move(result).error()));
    const bool delivered = reply.send(std::move(result));
    log::debug("actor lifecycle command replied",
               {{"actor_id", ctx.actor_id()},
                {"command", command},
                {"reason", reason ? shutdown_kind_label(*reason) : std::string_view()},
                {"outcome", ok ? "ok" : "error"},
                {"delivered", delivered}});
}

boost::asio::awaitable<void> ActorTask::handle_lifecycle(LifecycleCommand command) {
    (void)co_await serve_lifecycle(std::move(command));
}

boost::asio::awaitable<std::optional<LiveExit>> ActorTask::serve_lifecycle(
    LifecycleCommand command) {
    const std::string_view label = command_label(command.kind);
    const bool is_stop = command.kind == LifecycleCommand::Kind::Stop;
    log::debug("actor lifecycle command received",
               {{"actor_id", ctx.actor_id()},
                {"command", label},
                {"reason", is_stop ? shutdown_kind_label(command.reason) : std::string_view()}});
    const bool grace =
        lifecycle == LifecycleState::SleepGrace || lifecycle == LifecycleState::DestroyGrace;
    switch (command.kind) {
        case LifecycleCommand::Kind::Start: {
            Status result = grace ? Status(errors::actor_stopping()) : Status{};
            if (lifecycle == LifecycleState::Loading || lifecycle == LifecycleState::Started ||
                lifecycle == LifecycleState::Terminated) {
                result = co_await start_actor();
                if (result.ok())
                    start_inputs_.reset();  // a later start reads what this one persisted
            } else if (!grace) {
                result = errors::actor_stopping();
            }
            reply_lifecycle(label, std::nullopt, std::move(command.reply), std::move(result));
            co_return std::nullopt;
        }
        case LifecycleCommand::Kind::Stop: {
            if (lifecycle == LifecycleState::Loading) {
                reply_lifecycle(label, command.reason, std::move(command.reply),
                                errors::actor_not_ready());
                co_return std::nullopt;
            }
            if (lifecycle == LifecycleState::Started) {
                co_return co_await begin_stop(command.reason, std::move(command.reply), true);
            }
            if (grace && grace_ && grace_->reason != command.reason) {
                // Upstream debug-asserts here: a conflicting Stop during grace is an engine bug.
                assert(false && "conflicting Stop during grace");
                log::warn("conflicting Stop during grace, ignoring",
                          {{"actor_id", ctx.actor_id()},
                           {"reason", shutdown_kind_label(command.reason)},
                           {"current_reason", shutdown_kind_label(grace_->reason)}});
            } else if (lifecycle == LifecycleState::SleepFinalize ||
                       lifecycle == LifecycleState::Destroying) {
                assert(false && "duplicate Stop after shutdown started");
                log::warn("duplicate Stop after shutdown started, ignoring",
                          {{"actor_id", ctx.actor_id()},
                           {"reason", shutdown_kind_label(command.reason)}});
            }
            reply_lifecycle(label, command.reason, std::move(command.reply), Status{});
            co_return std::nullopt;
        }
        case LifecycleCommand::Kind::FireAlarm: {
            Status result = co_await fire_due_alarms();
            reply_lifecycle(label, std::nullopt, std::move(command.reply), std::move(result));
            co_return std::nullopt;
        }
    }
    co_return std::nullopt;
}

boost::asio::awaitable<Status> ActorTask::fire_due_alarms() {
    if (lifecycle != LifecycleState::Started && lifecycle != LifecycleState::SleepGrace &&
        lifecycle != LifecycleState::DestroyGrace) {
        co_return Status{};
    }
    co_return co_await ctx.drain_overdue_scheduled_events();
}

std::optional<Error> ActorTask::dispatch_rejection() {
    if (ctx.destroy_requested()) {
        ctx.warn_work_sent_to_stopping_instance("dispatch");
        return errors::actor_destroying();
    }
    switch (lifecycle) {
        case LifecycleState::Loading:
            ctx.warn_self_call_risk("dispatch");
            return errors::actor_not_ready();
        case LifecycleState::Started:
        case LifecycleState::SleepGrace:
            return std::nullopt;
        case LifecycleState::DestroyGrace:
        case LifecycleState::SleepFinalize:
            ctx.warn_work_sent_to_stopping_instance("dispatch");
            return errors::actor_stopping();
        case LifecycleState::Destroying:
        case LifecycleState::Terminated:
            ctx.warn_work_sent_to_stopping_instance("dispatch");
            return errors::actor_destroying();
    }
    return errors::actor_not_ready();
}

boost::asio::awaitable<void> ActorTask::handle_dispatch(DispatchCommand command) {
    dispatch_now(std::move(command));
    co_return;
}

void ActorTask::dispatch_now(DispatchCommand command) {
    const std::string_view label = dispatch_label(command);
    log::debug("actor dispatch command received",
               {{"actor_id", ctx.actor_id()}, {"command", label}});
    if (auto rejection = dispatch_rejection()) {
        Error error = with_specifier(std::move(*rejection));
        std::visit([&](auto& c) { c.reply.send(error); }, command);
        log::debug(
            "actor dispatch command handled",
            {{"actor_id", ctx.actor_id()}, {"command", label}, {"outcome", "rejected_lifecycle"}});
        return;
    }
    dispatch_accepted(std::move(command));
}

void ActorTask::dispatch_accepted(DispatchCommand command) {
    const std::string_view label = dispatch_label(command);
    Status sent;
    if (auto* action = std::get_if<dispatch::Action>(&command)) {
        if (!ctx.actor_event_inbox_open()) {
            action->reply.send(with_specifier(errors::actor_not_ready()));
            sent = errors::actor_not_ready();
        } else {
            sent = ctx.try_send_actor_event(
                event::Action{std::move(action->name), std::move(action->args), action->conn,
                              ctx.track_reply(std::move(action->reply)),
                              std::move(action->on_result)},
                label);
        }
    } else if (auto* q = std::get_if<dispatch::QueueSend>(&command)) {
        sent = ctx.try_send_actor_event(
            event::QueueSend{std::move(q->name), std::move(q->body), q->conn, std::move(q->request),
                             q->wait, q->timeout_ms, Reply<QueueSendResult>(std::move(q->reply))},
            label);
    } else if (auto* http = std::get_if<dispatch::Http>(&command)) {
        sent = ctx.try_send_actor_event(
            event::HttpRequestEv{std::move(http->request),
                                 Reply<HttpResponse>(std::move(http->reply))},
            label);
    } else if (auto* ws = std::get_if<dispatch::OpenWebSocket>(&command)) {
        sent = ctx.try_send_actor_event(event::WebSocketOpen{ws->conn, std::move(ws->request),
                                                             Reply<void>(std::move(ws->reply)),
                                                             std::move(ws->socket)},
                                        label);
    } else if (auto* history = std::get_if<dispatch::WorkflowHistory>(&command)) {
        sent = ctx.try_send_actor_event(
            event::WorkflowHistoryRequested{Reply<std::optional<Bytes>>(std::move(history->reply))},
            label);
    } else if (auto* replay = std::get_if<dispatch::WorkflowReplay>(&command)) {
        sent = ctx.try_send_actor_event(
            event::WorkflowReplayRequested{std::move(replay->entry_id),
                                           Reply<std::optional<Bytes>>(std::move(replay->reply))},
            label);
    }
    log::debug("actor dispatch command handled",
               {{"actor_id", ctx.actor_id()},
                {"command", label},
                {"outcome", sent.ok() ? "enqueued" : "enqueue_failed"}});
}

boost::asio::awaitable<void> ActorTask::handle_event(LifecycleEvent event) {
    log::debug("actor lifecycle event drained",
               {{"actor_id", ctx.actor_id()}, {"event", lifecycle_event_label(event)}});
    (void)serve_event(event);
    co_return;
}

std::optional<LiveExit> ActorTask::serve_event(LifecycleEvent event) {
    switch (event.kind) {
        case LifecycleEvent::Kind::SaveRequested:
            schedule_state_save(event.immediate);
            sync_inspector_serialize_deadline();
            break;
        case LifecycleEvent::Kind::InspectorSerializeRequested:
        case LifecycleEvent::Kind::InspectorAttachmentsChanged:
            sync_inspector_serialize_deadline();
            break;
        case LifecycleEvent::Kind::SleepTick:
            on_sleep_tick();
            break;
    }
    return std::nullopt;
}

void ActorTask::schedule_state_save(bool immediate) {
    if (!accepts_ticks(lifecycle) || !ctx.save_requested()) {
        state_save_deadline.reset();
        return;
    }
    const Instant next = ctx.save_deadline(immediate);
    state_save_deadline = state_save_deadline ? std::min(*state_save_deadline, next) : next;
}

void ActorTask::sync_inspector_serialize_deadline() {
    if (!accepts_ticks(lifecycle) || ctx.inspector_attach_count() == 0 || !ctx.save_requested()) {
        inspector_serialize_state_deadline.reset();
        return;
    }
    if (!inspector_serialize_state_deadline) {
        inspector_serialize_state_deadline = ctx.clock().now() + kInspectorSerializeStateInterval;
    }
}

boost::asio::awaitable<void> ActorTask::on_state_save_tick() {
    if (!co_await begin_state_save())
        co_return;
    const bool saved = co_await ctx.wait_for_background_save();
    if (ctx.save_requested())
        schedule_state_save(!saved || ctx.save_requested_immediate());
}

// Serializes on the loop and hands the write to save_state_in_background: the loop goes on
// serving actions while the KV write is with the engine. False when no write was started.
boost::asio::awaitable<bool> ActorTask::begin_state_save() {
    state_save_deadline.reset();
    inspector_serialize_state_deadline.reset();
    if (!accepts_ticks(lifecycle) || !ctx.save_requested())
        co_return false;
    if (ctx.background_save_in_flight())
        co_return false;  // its end asks for the next save
    const std::uint64_t revision = ctx.cover_save_requests();
    auto [reply, rx] = Reply<std::vector<StateDelta>>::make();
    Status sent = ctx.try_send_actor_event(
        event::SerializeState{SerializeStateReason::Save, std::move(reply)}, "save_tick");
    if (!sent.ok()) {
        log::warn("failed to enqueue save tick",
                  {{"actor_id", ctx.actor_id()}, {"error", sent.error().to_string()}});
        schedule_state_save(true);
        co_return false;
    }
    auto answer = co_await rx.recv();
    Result<std::vector<StateDelta>> deltas =
        answer ? std::move(*answer)
               : Result<std::vector<StateDelta>>(errors::actor_dropped_reply());
    if (!deltas.ok()) {
        log::error("actor serializeState failed",
                   {{"actor_id", ctx.actor_id()}, {"error", deltas.error().to_string()}});
        schedule_state_save(true);
        sync_inspector_serialize_deadline();
        co_return false;
    }
    log::debug("actor serializeState completed", {{"actor_id", ctx.actor_id()},
                                                  {"reason", "save"},
                                                  {"delta_count", deltas.value().size()},
                                                  {"save_request_revision", revision}});
    ctx.save_state_in_background(std::move(deltas).value(), revision);
    co_return true;
}

boost::asio::awaitable<void> ActorTask::on_inspector_serialize_state_tick() {
    inspector_serialize_state_deadline.reset();
    if (!accepts_ticks(lifecycle) || ctx.inspector_attach_count() == 0 || !ctx.save_requested()) {
        co_return;
    }
    auto [reply, rx] = Reply<std::vector<StateDelta>>::make();
    Status sent = ctx.try_send_actor_event(
        event::SerializeState{SerializeStateReason::Inspector, std::move(reply)}, "inspector_tick");
    if (!sent.ok()) {
        sync_inspector_serialize_deadline();
        co_return;
    }
    auto answer = co_await rx.recv();
    if (!answer || !answer->ok()) {
        sync_inspector_serialize_deadline();
        co_return;
    }
    // Overlay only: nothing is persisted and the save request stays pending.
    ctx.broadcast_inspector_overlay(answer->value());
}

std::optional<LiveExit> ActorTask::on_activity_signal() {
    switch (lifecycle) {
        case LifecycleState::Started:
            reset_sleep_deadline();
            return std::nullopt;
        case LifecycleState::SleepGrace:
        case LifecycleState::DestroyGrace:
            return try_finish_grace();
        default:
            return std::nullopt;
    }
}

void ActorTask::reset_sleep_deadline() {
    if (lifecycle != LifecycleState::Started) {
        sleep_deadline_.reset();
        return;
    }
    const CanSleep can = ctx.can_sleep();
    if (can == CanSleep::Yes) {
        sleep_deadline_ = ctx.clock().now() + ctx.config().sleep_timeout;
    } else {
        sleep_deadline_.reset();
    }
}

void ActorTask::on_sleep_tick() {
    sleep_deadline_.reset();
    if (lifecycle != LifecycleState::Started)
        return;
    if (ctx.can_sleep() == CanSleep::Yes) {
        log::debug("sleep idle deadline elapsed", {{"actor_id", ctx.actor_id()}});
        Status requested = ctx.sleep();
        if (!requested.ok()) {
            log::debug("sleep idle deadline request suppressed",
                       {{"actor_id", ctx.actor_id()}, {"error", requested.error().to_string()}});
        }
        return;
    }
    log::warn("sleep idle deadline elapsed but actor stayed awake",
              {{"actor_id", ctx.actor_id()}, {"reason", can_sleep_name(ctx.can_sleep())}});
    reset_sleep_deadline();
}

// run_live's timers -- the state save, the inspector's serialize tick, the sleep deadline, the
// database's idle close and the inboxes' quiet period -- wait as one select arm (each arm is a
// timer armed at every wait, and a node in the loop's frame for the actor's whole life). It wins
// only when every earlier arm is idle; which_timer then picks the first of the five that is due,
// the one that five arms in this order would have picked.
std::optional<Instant> ActorTask::next_timer() const {
    std::optional<Instant> first;
    for (const std::optional<Instant>* at :
         {&state_save_deadline, &inspector_serialize_state_deadline, &sleep_deadline_,
          &database_idle_deadline_, &inboxes_quiet_deadline_}) {
        if (*at && (!first || **at < *first))
            first = **at;
    }
    return first;
}

std::size_t ActorTask::which_timer() const {
    const Instant now = ctx.clock().now();
    auto due = [now](const std::optional<Instant>& at) { return at && now >= *at; };
    if (due(state_save_deadline))
        return 6;
    if (due(inspector_serialize_state_deadline))
        return 7;
    if (due(sleep_deadline_))
        return 8;
    if (due(database_idle_deadline_))
        return 9;
    if (due(inboxes_quiet_deadline_))
        return 10;
    return 11;  // none (not reached: the arm is ready only once one is due)
}

void ActorTask::release_idle_inboxes() {
    lifecycle_inbox_.release_idle_storage();
    dispatch_inbox_.release_idle_storage();
    lifecycle_events.release_idle_storage();
    // The runtime's event inbox, from this end.
    if (const auto& events = ctx.inner()->actor_events)
        events->release_idle_storage();
}

boost::asio::awaitable<rt::Joined<Status>> ActorTask::wait_for_run_handle(
    rt::JoinHandle<Status>* handle) {
    co_return co_await handle->join();
}

// A clean exit is not terminal: the generation stays Started and waits for the engine's Stop.
std::optional<LiveExit> ActorTask::handle_run_handle_outcome(rt::Joined<Status> outcome) {
    run_handle.reset();
    if (outcome.is_ok()) {
        const Status& result = outcome.value();
        if (!result.ok()) {
            const Error& e = result.error();
            log::error("actor run handler failed", {{"actor_id", ctx.actor_id()},
                                                    {"group", e.group()},
                                                    {"code", e.code()},
                                                    {"message", e.message()},
                                                    {"metadata", e.metadata().value_or("")}});
        } else if (lifecycle == LifecycleState::Started) {
            log::debug("actor run handler exited cleanly while awaiting engine stop",
                       {{"actor_id", ctx.actor_id()}});
        }
    } else if (outcome.is_failed()) {
        // The runtime's coroutine threw (upstream: it panicked).
        std::string what = "unknown exception";
        try {
            std::rethrow_exception(outcome.exception());
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        log::error("actor run handler join failed",
                   {{"actor_id", ctx.actor_id()}, {"error", std::string_view(what)}});
    }
    if (lifecycle == LifecycleState::SleepGrace || lifecycle == LifecycleState::DestroyGrace) {
        return try_finish_grace();
    }
    return std::nullopt;
}

std::optional<LiveExit> ActorTask::try_finish_grace() {
    if (!grace_)
        return std::nullopt;
    if (!ctx.can_finalize_shutdown(grace_->reason))
        return std::nullopt;
    return LiveExit::shutdown(grace_->reason);
}

boost::asio::awaitable<bool> ActorTask::drain_tracked_work(ShutdownKind reason, std::string phase,
                                                           Instant deadline) {
    rt::Clock& clock = ctx.clock();
    auto inner = ctx.inner();
    const Instant started = clock.now();
    std::optional<Instant> warn_at = started + kLongShutdownDrainWarningThreshold;
    auto drained = [&] { return inner->tracked_work_idle() && inner->websocket_callbacks == 0; };
    for (;;) {
        if (drained())
            co_return true;
        const std::size_t arm = co_await rt::select(
            inner->work_changed, rt::deadline(clock, deadline), rt::deadline(clock, warn_at));
        if (arm == 1)
            co_return drained();
        if (arm == 2) {
            warn_at.reset();
            if (!drained()) {
                const auto elapsed =
                    std::chrono::duration_cast<std::chrono::milliseconds>(clock.now() - started);
                log::warn("actor shutdown drain is taking longer than expected",
                          {{"actor_id", ctx.actor_id()},
                           {"reason", shutdown_kind_label(reason)},
                           {"phase", phase},
                           {"elapsed_ms", static_cast<std::int64_t>(elapsed.count())}});
            }
        }
    }
}

}  // namespace rivetkit::core

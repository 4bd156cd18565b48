#pragma once
// ActorTask: the lifecycle state machine of one actor generation.
//
// The task owns three inboxes and serves them from one biased select, in upstream's priority:
//   activity flag (checked first) > lifecycle commands > lifecycle events > activity notify >
//   grace deadline > dispatch (Started/grace only) > run-handler exit > save tick >
//   inspector tick > idle-sleep tick.
// Handlers run inline; while one awaits (e.g. a SerializeState reply) no other arm is served, so
// the runtime must answer SerializeState without needing this loop. Spawned (spawn()), the loop
// keeps no coroutine while nothing is ready: it parks, its arms subscribed, and a wake serves
// the arms that need no await from a posted handler; the others resume it as a coroutine.
//
// Stop is two-phase: grace (hooks dispatched, work still accepted for sleep, finishes as soon as
// can_finalize_shutdown() holds or at the grace deadline), then run_shutdown: final
// serialize+save → close events and join run handler → drain tracked work → pending state writes →
// alarm sync → pending alarm writes → local (sleep) or driver (destroy) alarm cancel. Destroy
// completion is marked before the Stop reply is sent.
//
// Threading: one io_context thread; the task and its context are never touched from elsewhere.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "base/shared_string.hpp"
#include "core/actor/context.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/preload.hpp"
#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/select.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::core {

// A drain taking longer than this logs one warning.
inline constexpr std::chrono::milliseconds kLongShutdownDrainWarningThreshold{1'000};
inline constexpr std::chrono::milliseconds kSerializeStateShutdownSanityCap{15'000};
inline constexpr std::chrono::milliseconds kInspectorSerializeStateInterval{50};

struct LifecycleCommand {
    enum class Kind : std::uint8_t { Start, Stop, FireAlarm };
    Kind kind;
    ShutdownKind reason;  // Stop only
    rt::OneshotSender<Status> reply;

    static LifecycleCommand start(rt::OneshotSender<Status> reply) {
        return {Kind::Start, ShutdownKind::Sleep, std::move(reply)};
    }
    static LifecycleCommand stop(ShutdownKind reason, rt::OneshotSender<Status> reply) {
        return {Kind::Stop, reason, std::move(reply)};
    }
    static LifecycleCommand fire_alarm(rt::OneshotSender<Status> reply) {
        return {Kind::FireAlarm, ShutdownKind::Sleep, std::move(reply)};
    }
};

namespace dispatch {
struct Action {
    std::string name;
    Bytes args;
    ConnHandle conn;
    ActionCaller reply;
    std::function<void()> on_result{};  // event::Action::on_result
};
struct QueueSend {
    std::string name;
    Bytes body;
    ConnHandle conn;
    HttpRequest request;
    bool wait = false;
    std::optional<std::uint64_t> timeout_ms;
    rt::OneshotSender<Result<QueueSendResult>> reply;
};
struct Http {
    HttpRequest request;
    rt::OneshotSender<Result<HttpResponse>> reply;
};
struct OpenWebSocket {
    ConnHandle conn;
    std::optional<HttpRequest> request;
    rt::OneshotSender<Status> reply;
    std::shared_ptr<RawWebSocket> socket;
};
struct WorkflowHistory {
    rt::OneshotSender<Result<std::optional<Bytes>>> reply;
};
struct WorkflowReplay {
    std::optional<std::string> entry_id;
    rt::OneshotSender<Result<std::optional<Bytes>>> reply;
};
}  // namespace dispatch

using DispatchCommand =
    std::variant<dispatch::Action, dispatch::QueueSend, dispatch::Http, dispatch::OpenWebSocket,
                 dispatch::WorkflowHistory, dispatch::WorkflowReplay>;

struct LiveExit {
    // Parked: nothing to do, the loop waits without a coroutine (ActorTask::spawn only).
    enum class Kind : std::uint8_t { Shutdown, Terminated, Parked };
    Kind kind = Kind::Terminated;
    ShutdownKind reason = ShutdownKind::Sleep;

    static LiveExit shutdown(ShutdownKind reason) { return {Kind::Shutdown, reason}; }
    static LiveExit terminated() { return {}; }
    static LiveExit parked() { return {Kind::Parked, ShutdownKind::Sleep}; }
};

// Test-only hooks, scoped to one actor id so parallel tests never see each other's hooks. The
// cleanup hook runs inside run_shutdown right after tracked work was drained; the reply hook runs
// just before the Stop reply is sent. An exception thrown by a hook fails the shutdown.
using ShutdownCleanupHook = std::function<void(const ActorContext&, std::string_view reason)>;
using ShutdownReplyHook = std::function<void(const ActorContext&, ShutdownKind reason)>;

class TestHookGuard {
  public:
    TestHookGuard(std::string actor_id, bool cleanup)
        : actor_id_(std::move(actor_id)), cleanup_(cleanup) {}
    TestHookGuard(const TestHookGuard&) = delete;
    TestHookGuard& operator=(const TestHookGuard&) = delete;
    ~TestHookGuard();

  private:
    std::string actor_id_;
    bool cleanup_;
};

[[nodiscard]] TestHookGuard install_shutdown_cleanup_hook(std::string actor_id,
                                                          ShutdownCleanupHook hook);
[[nodiscard]] TestHookGuard install_shutdown_reply_hook(std::string actor_id,
                                                        ShutdownReplyHook hook);

class ActorTask {
  public:
    template <typename T>
    using Task = boost::asio::awaitable<T>;

    ActorTask(SharedString actor_id, std::uint32_t generation,
              rt::Receiver<LifecycleCommand> lifecycle_inbox,
              rt::Receiver<DispatchCommand> dispatch_inbox,
              rt::Receiver<LifecycleEvent> lifecycle_events, std::shared_ptr<ActorFactory> factory,
              ActorContext ctx, std::optional<Bytes> start_input,
              std::optional<PreloadedPersistedActor> preloaded_persisted_actor);
    ActorTask(const ActorTask&) = delete;
    ActorTask& operator=(const ActorTask&) = delete;

    ActorTask& with_preloaded_persisted_actor(PreloadedPersistedActor preloaded);
    ActorTask& with_preloaded_kv(std::optional<PreloadedKv> preloaded);

    // The whole life of the generation. The task must outlive the returned awaitable, whose
    // coroutine waits whenever the actor is idle; spawn() is how a host runs one.
    Task<Status> run();
    // The whole life of the generation as a task on `executor` that owns `task`. While the actor
    // has nothing to do, no coroutine of it is suspended: its loop waits parked on its inboxes
    // and timers, and a wake serves what needs no await (dispatch, events, ticks) from a posted
    // handler, resuming a coroutine only for what does (lifecycle commands, saves). Dropping
    // the handle ends the task as abort() does.
    static rt::JoinHandle<Status> spawn(boost::asio::any_io_executor executor,
                                        std::unique_ptr<ActorTask> task);
    // A spawned task waiting without a coroutine (diagnostics and tests).
    bool parked() const noexcept { return parked_.parked(); }

    Task<void> handle_lifecycle(LifecycleCommand command);
    // Upstream's async shape (the spec tests await it); the loops call dispatch_now directly.
    Task<void> handle_dispatch(DispatchCommand command);
    void dispatch_now(DispatchCommand command);
    // The next queued dispatch command, served; false once the inbox closed.
    bool dispatch_next();
    Task<void> handle_event(LifecycleEvent event);
    // Registers a Stop reply, begins grace without draining dispatch, waits for grace to finish
    // (activity or deadline) and runs the guarded shutdown; returns what the Stop reply got.
    Task<Status> handle_stop(ShutdownKind reason);
    // The save tick as upstream's tests drive it: serialize, write, and reschedule when a save
    // is still requested. The live loop calls begin_state_save() and does not wait for the write.
    Task<void> on_state_save_tick();
    Task<void> on_inspector_serialize_state_tick();
    Task<Status> fire_due_alarms();
    std::optional<LiveExit> try_finish_grace();
    Task<Status> run_shutdown(ShutdownKind reason);
    void deliver_shutdown_reply(ShutdownKind reason, const Status& result);
    void transition_to(LifecycleState next);
    static Task<rt::Joined<Status>> wait_for_run_handle(rt::JoinHandle<Status>* handle);
    std::optional<LiveExit> handle_run_handle_outcome(rt::Joined<Status> outcome);
    Task<bool> drain_tracked_work(ShutdownKind reason, std::string phase, Instant deadline);

    // Read (and in tests set) directly, as upstream's tests do.
    LifecycleState lifecycle = LifecycleState::Loading;
    std::shared_ptr<ActorFactory> factory;
    ActorContext ctx;
    rt::Receiver<LifecycleEvent> lifecycle_events;
    std::optional<Instant> state_save_deadline;
    std::optional<Instant> inspector_serialize_state_deadline;
    std::optional<rt::JoinHandle<Status>> run_handle;

  private:
    // What the live loop does next, decided without awaiting (advance()).
    struct Next {
        enum class Kind : std::uint8_t {
            Check,          // look at the arms (the loop's first step)
            Wait,           // nothing is ready
            Exit,           // the live phase is over: `exit`
            Lifecycle,      // a lifecycle command is queued (or its inbox closed)
            RunHandle,      // the run handler finished
            Save,           // the state save is due
            InspectorTick,  // the inspector's serialize tick is due
        };
        Kind kind = Kind::Check;
        LiveExit exit{};
    };
    // The live loop's wait while parked: lifecycle, events, activity, dispatch and run-handle
    // arms, and one timer at the earliest of the grace and timer deadlines.
    class Parked final : public rt::Parking<5, 1> {
      public:
        explicit Parked(ActorTask& task) noexcept : task_(task) {}

      private:
        void on_wake() noexcept override;
        ActorTask& task_;
    };

    std::optional<Instant> next_timer() const;
    std::size_t which_timer() const;
    bool accepts_dispatch() const noexcept;  // Started or in grace
    template <typename F>
    decltype(auto) with_arms(F&& f);
    Next advance();
    // Spawned tasks: the coroutine body, from the start or resumed at `next`; parking; a wake.
    static Task<Status> run_spawned(std::shared_ptr<ActorTask> self, Next next);
    void park();
    void serve_parked(const std::shared_ptr<ActorTask>& self);
    Task<Status> finish_live(LiveExit exit);

    struct Grace {
        ShutdownKind reason;
        Instant deadline;
    };
    struct StartupData {
        PersistedActor actor;
        std::optional<std::int64_t> last_pushed_alarm;
    };

    // Serves the arms from `next` on until the live phase ends; with `may_park`, returns
    // LiveExit::parked() instead of waiting, its arms subscribed by park().
    Task<LiveExit> run_live(Next next, bool may_park);
    Task<bool> begin_state_save();
    Task<std::optional<LiveExit>> serve_lifecycle(LifecycleCommand command);
    std::optional<LiveExit> serve_event(LifecycleEvent event);
    Task<std::optional<LiveExit>> begin_stop(ShutdownKind reason, rt::OneshotSender<Status> reply,
                                             bool drain_dispatch);
    Task<Status> run_shutdown_guarded(ShutdownKind reason);
    void reply_lifecycle(std::string_view command, std::optional<ShutdownKind> reason,
                         rt::OneshotSender<Status> reply, Status result);
    void register_shutdown_reply(rt::OneshotSender<Status> reply);

    // Start sequence (task_start.cpp).
    Task<Status> start_actor();
    Task<Result<StartupData>> load_persisted_startup();
    Task<Result<std::optional<Bytes>>> preload_or_live(BytesView key);
    Task<Status> init_inspector_token();
    Task<Status> spawn_run_handler(bool is_new, std::vector<ConnHandle> hibernated);

    // Grace and shutdown (task_shutdown.cpp).
    void begin_grace(ShutdownKind reason);
    void emit_grace_events(ShutdownKind reason);
    void send_core_hook(ActorEvent event, rt::OneshotReceiver<Status> reply_rx);
    std::optional<LiveExit> on_sleep_grace_deadline();
    Task<Status> save_final_state(ShutdownKind reason);

    // Dispatch and timers (task.cpp).
    std::optional<Error> dispatch_rejection();
    void dispatch_accepted(DispatchCommand command);
    void schedule_state_save(bool immediate);
    void sync_inspector_serialize_deadline();
    std::optional<LiveExit> on_activity_signal();
    void reset_sleep_deadline();
    void on_sleep_tick();
    void release_idle_inboxes();
    Error with_specifier(Error error) const;

    // The engine's id for this generation; logs and hooks use ctx.actor_id(), which is the same
    // in production and is what tests scope hooks by.
    SharedString actor_id_;
    std::uint32_t generation_;
    rt::Receiver<LifecycleCommand> lifecycle_inbox_;
    rt::Receiver<DispatchCommand> dispatch_inbox_;
    // What only the start reads (the create input, the engine's preloaded records), on the heap
    // and let go of once a start succeeded: an awake actor does not carry their empty slots.
    struct StartInputs {
        std::optional<Bytes> input;
        std::optional<PreloadedPersistedActor> persisted_actor;
        std::optional<PreloadedKv> kv;
    };
    StartInputs& start_inputs();
    const PreloadedKv* preloaded_kv() const {
        return start_inputs_ && start_inputs_->kv ? &*start_inputs_->kv : nullptr;
    }
    std::unique_ptr<StartInputs> start_inputs_;
    std::optional<rt::Receiver<ActorEvent>> pending_events_rx_;
    std::optional<Grace> grace_;
    std::optional<Instant> sleep_deadline_;
    // When the database's connection is closed if nothing used it meanwhile (its pages stay in
    // memory; the next use reopens it without reading the engine): an awake actor whose storage
    // is quiet holds no SQLite connection and parsed schema (~25 KB).
    std::optional<Instant> database_idle_deadline_;
    // When the inboxes' queues give their storage back if no command came meanwhile
    // (release_idle_inboxes).
    std::optional<Instant> inboxes_quiet_deadline_;
    bool inboxes_used_ = false;
    std::optional<rt::OneshotSender<Status>> shutdown_reply_;
    bool deadline_reached_ = false;
    // Spawned tasks only: the task's completion, handed the task while it is parked, and the
    // owner a posted wake locks (a wake after the task ended finds nothing).
    std::optional<rt::Handoff<Status>> handoff_;
    std::weak_ptr<ActorTask> self_;
    // Last: its nodes leave the inboxes' wait lists before the inboxes go.
    Parked parked_{*this};
};

}  // namespace rivetkit::core

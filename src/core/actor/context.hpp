#pragma once
// ActorContext: the cheap-copy handle every part of an actor shares (task, runtime, connections).
//
// All storage sits on one ActorContextInner; behaviour is split by concern across state.cpp
// (persistence and save requests), sleep.cpp (work tracking, can_sleep, sleep/destroy requests),
// schedule.cpp (scheduled events and alarms), connection.cpp (connections and hibernation) and
// inspector.cpp (inspector attach and overlay). Threading: an actor lives on one io_context
// thread; the context is not synchronised and must only be touched from that thread.
//
// Ownership invariant: nothing stored inside the inner state may hold a strong ActorContext
// (hooks and spawned work hold WeakActorContext), so dropping every handle frees the actor.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/shared_string.hpp"
#include "core/actor/config.hpp"
#include "core/actor/connection.hpp"
#include "core/actor/diagnostics.hpp"
#include "core/actor/envoy_link.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/messages.hpp"
#include "core/actor/persist.hpp"
#include "core/actor/preload.hpp"
#include "core/actor/task_types.hpp"
#include "runtime/cancellation.hpp"
#include "runtime/channel.hpp"
#include "runtime/clock.hpp"
#include "runtime/notify.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::core {

using Instant = rt::Clock::time_point;

inline constexpr std::size_t kInspectorOverlayCapacity = 32;

// What an attached inspector is told changed (upstream's InspectorSignal): state after a save of
// [1], the connection set, the queue's contents, workflow history, the scheduled events.
enum class InspectorSignal : std::uint8_t {
    StateUpdated,
    ConnectionsUpdated,
    QueueUpdated,
    WorkflowHistoryUpdated,
    SchedulesUpdated,
};
inline constexpr std::size_t kInspectorSignalCount = 5;

// Counters a region can hold open (see can_sleep and can_finalize_shutdown).
enum class RegionKind : std::uint8_t {
    KeepAwake,
    InternalKeepAwake,
    WebSocketCallback,
    DisconnectCallback,
    CoreHook,
    RunHandler,
};

struct QueueState;
class ActorMetrics;
class ActorSqlite;
}  // namespace rivetkit::core
namespace rivetkit::sqlite {
class Database;
class PageStore;
}  // namespace rivetkit::sqlite
namespace rivetkit::core {

// A group of an actor's bookkeeping that most actors never use, made on its first write: an awake
// actor's context is smaller by each group it leaves empty. Reading a group never made reads an
// empty one.
template <typename T>
class OnDemand {
  public:
    T& edit() {
        if (!p_)
            p_ = std::make_unique<T>();
        return *p_;
    }
    const T& view() const {
        static const T kEmpty{};
        return p_ ? *p_ : kEmpty;
    }
    void reset() noexcept { p_.reset(); }

  private:
    std::unique_ptr<T> p_;
};

// Fired scheduled events on their way out of the schedule (schedule.cpp): dispatched, no outcome
// yet (in flight); outcome final, so their effect is in the runtime's state (consumed); that
// state serialized for a save (sealed: they leave the schedule in that save). All stay in the
// persisted actor until then -- a write of it without the runtime's state (a cancel's) keeps
// them -- and none is due again.
struct ScheduleBook {
    std::set<std::string, std::less<>> in_flight;
    // Events scheduled since the last save: they are written with the state of the action that
    // scheduled them (a save), never by a write of the persisted actor without that state (a
    // cancel's).
    std::set<std::string, std::less<>> unsaved;
    std::vector<std::string> consumed;
    std::vector<std::string> sealed;
    bool leaving(std::string_view id) const {
        auto is = [id](const std::string& e) { return e == id; };
        return in_flight.contains(id) || std::any_of(consumed.begin(), consumed.end(), is) ||
               std::any_of(sealed.begin(), sealed.end(), is);
    }
};

// Hibernatable connections whose record the next save writes or deletes, by connection id.
struct HibernationBook {
    std::set<std::string, std::less<>> updates;
    std::set<std::string> removals;
};

// The inspector's live subscribers (inspector.cpp).
struct InspectorSubscribers {
    std::vector<rt::Sender<Bytes>> overlay;
    std::vector<rt::Sender<InspectorSignal>> signal;
};

struct ActorContextInner {
    // Identity and plumbing.
    SharedString actor_id;
    std::string name;
    std::vector<std::string> key;
    std::string region;
    boost::asio::any_io_executor executor;
    rt::Clock* clock = nullptr;
    Kv kv;
    // kv's records under [4] (internal_storage.hpp UserKv), made on first use (user_kv()).
    std::unique_ptr<Kv> user_kv;
    std::shared_ptr<ActorSqlite> sqlite;  // sqlite.cpp
    // Shared by every actor of one type (the factory's), never changed once configured.
    std::shared_ptr<const ActorConfig> config = default_actor_config();
    std::shared_ptr<EnvoyLink> envoy;
    std::optional<std::uint32_t> generation;
    std::optional<rt::Sender<LifecycleEvent>> lifecycle_events;
    std::optional<rt::Sender<ActorEvent>> actor_events;

    // Activity: any change to a sleep input sets the dirty flag and wakes the task once.
    rt::Notify activity;
    bool activity_dirty = false;
    bool started = false;

    // State and saving (state.cpp).
    // `persisted` differs from what was last written. Set it with mark_dirty(): a write clears it
    // only if no change came in while it was in flight (state_revision unchanged).
    bool dirty = false;
    bool save_requested = false;
    bool save_requested_immediate = false;
    bool persist_busy = false;
    bool background_save_in_flight = false;
    bool last_background_save_ok = true;
    // Saves that failed in a row: the first is retried at once, the next ones back off
    // (save_deadline), so storage that fails fast is not hammered by a loop.
    std::uint32_t save_failures_in_a_row = 0;
    PersistedActor persisted;
    OnDemand<ScheduleBook> schedule;
    std::uint64_t state_revision = 0;
    void mark_dirty() noexcept {
        dirty = true;
        ++state_revision;
    }
    std::uint64_t state_patches = 0;
    std::uint64_t save_request_revision = 0;
    std::uint64_t completed_save_revision = 0;
    std::optional<Instant> save_max_wait_deadline;
    std::optional<Instant> last_save_at;
    rt::Notify save_progress;  // notify_waiters on completed revision / write count changes
    OnDemand<HibernationBook> hibernation;
    // The actor state of a save whose write failed, written by the next save (unless that one
    // carries a newer state). Rare: null otherwise.
    std::unique_ptr<Bytes> unsaved_actor_state;
    std::size_t in_flight_writes = 0;
    std::size_t tracked_persists = 0;

    // Work tracking (sleep.cpp).
    std::uint32_t keep_awake = 0;
    std::uint32_t internal_keep_awake = 0;
    std::uint32_t core_hooks = 0;
    std::uint32_t websocket_callbacks = 0;
    std::uint32_t pending_disconnects = 0;
    std::uint32_t run_handlers = 0;
    bool queue_wait_active = false;
    bool teardown_started = false;
    bool sleep_requested = false;
    bool destroy_requested = false;
    bool destroy_completed = false;
    // waitUntil / registered tasks by id, made on the first.
    OnDemand<std::map<std::uint64_t, rt::JoinHandle<void>>> shutdown_tasks;
    // In-flight actions: tracked like shutdown tasks, but as reply slots rather than tasks.
    detail::TrackedReply* tracked_replies = nullptr;
    std::size_t tracked_reply_count = 0;
    std::uint64_t next_work_id = 0;
    rt::Notify work_changed;  // notify_waiters whenever a counter or the task set changes
    rt::CancellationToken abort_token;
    rt::CancellationToken shutdown_deadline_token;
    rt::Notify destroy_completed_notify;
    std::size_t sleep_request_count = 0;

    // Schedule and alarms (schedule.cpp).
    bool schedule_dirty_since_push = true;
    bool alarm_dispatch_suspended = false;
    // Pushes numbered in order, and the newest whose ack was persisted: acks that resume out of
    // push order must not leave an older timestamp in last_pushed_alarm's record.
    std::uint32_t alarm_pushes = 0;
    std::uint32_t alarm_pushes_persisted = 0;
    std::optional<std::int64_t> last_pushed_alarm;
    std::size_t pending_alarm_writes = 0;
    rt::Notify alarm_writes_changed;
    std::function<void()> local_alarm_callback;
    std::optional<rt::JoinHandle<void>> local_alarm_timer;
    std::size_t driver_alarm_cancel_count = 0;

    // Connections (connection.cpp), ordered by id.
    std::map<std::string, ConnHandle> conns;
    // How many of `conns` subscribe to each event: broadcast() skips the walk over every
    // connection for an event nobody subscribes to.
    std::map<std::string, std::size_t, std::less<>> subscribers;
    std::unique_ptr<std::set<std::pair<GatewayId, RequestId>>> liveness_override;  // tests

    // Inspector (inspector.cpp).
    bool inspector_configured = false;
    std::size_t inspector_attached = 0;
    OnDemand<InspectorSubscribers> inspector_subscribers;

    // Rate-limited warnings (diagnostics.cpp).
    OnDemand<ActorWarningWindows> warning_windows;

    // Durable queue (queue.cpp) and this actor name's metrics (metrics.cpp), made on first use.
    std::shared_ptr<QueueState> queue;
    std::shared_ptr<ActorMetrics> metrics;

    // Opaque user vars, created by the runtime.
    std::shared_ptr<void> vars;

    ActorContextInner() = default;
    ActorContextInner(const ActorContextInner&) = delete;
    ActorContextInner& operator=(const ActorContextInner&) = delete;
    ~ActorContextInner();  // lets go of in-flight reply slots (their callers still get answers)

    bool tracked_work_idle() const noexcept {
        return shutdown_tasks.view().empty() && tracked_reply_count == 0;
    }
    void signal_activity();
};

namespace detail {
// Releases every in-flight action's reply slot (and the keep-awake each holds).
void release_tracked_replies(ActorContextInner& s, bool drop_callers);
}  // namespace detail

// The specifier errors carry once the actor has a generation (ActorContext::specifier).
std::optional<ActorSpecifier> specifier_of(const ActorContextInner& s);

// How a new connection is opened (ActorContext::connect_conn).
struct ConnectOptions {
    Bytes params;  // CBOR; empty when the client sent none
    bool is_hibernatable = false;
    std::optional<HibernatableConnectionMetadata> hibernation;
    std::optional<HttpRequest> request;
    // Runs on the new handle before the runtime sees it (transport wiring); an error aborts.
    std::function<Status(const ConnHandle&)> prepare;
};

class ActorContext;

class WeakActorContext {
  public:
    WeakActorContext() = default;
    explicit WeakActorContext(std::weak_ptr<ActorContextInner> p) : p_(std::move(p)) {}
    std::optional<ActorContext> upgrade() const;

  private:
    std::weak_ptr<ActorContextInner> p_;
};

// Holds one unit of a counter open; releasing it signals activity.
class WorkRegion {
  public:
    WorkRegion(std::shared_ptr<ActorContextInner> inner, RegionKind kind);
    WorkRegion(WorkRegion&& other) noexcept;
    WorkRegion& operator=(WorkRegion&& other) noexcept;
    WorkRegion(const WorkRegion&) = delete;
    WorkRegion& operator=(const WorkRegion&) = delete;
    ~WorkRegion();
    void release() noexcept;

  private:
    std::shared_ptr<ActorContextInner> inner_;
    RegionKind kind_;
};

// Held while an inspector is attached; the 0→1 and 1→0 edges notify the task.
class InspectorAttachGuard {
  public:
    explicit InspectorAttachGuard(std::shared_ptr<ActorContextInner> inner);
    InspectorAttachGuard(InspectorAttachGuard&&) noexcept = default;
    InspectorAttachGuard& operator=(InspectorAttachGuard&&) noexcept = delete;
    InspectorAttachGuard(const InspectorAttachGuard&) = delete;
    ~InspectorAttachGuard();

  private:
    std::shared_ptr<ActorContextInner> inner_;
};

class ActorContext {
  public:
    template <typename T>
    using Task = boost::asio::awaitable<T>;

    ActorContext(boost::asio::any_io_executor executor, rt::Clock& clock, SharedString actor_id,
                 std::string name, std::vector<std::string> key, std::string region, Kv kv = {});
    explicit ActorContext(std::shared_ptr<ActorContextInner> inner) : p_(std::move(inner)) {}

    // MARK: identity and wiring (context.cpp)
    const std::string& actor_id() const noexcept { return p_->actor_id; }
    // The same, to keep: copies share one block (base/shared_string.hpp).
    const SharedString& shared_actor_id() const noexcept { return p_->actor_id; }
    const std::string& name() const noexcept { return p_->name; }
    const std::vector<std::string>& key() const noexcept { return p_->key; }
    const std::string& region() const noexcept { return p_->region; }
    const boost::asio::any_io_executor& executor() const noexcept { return p_->executor; }
    rt::Clock& clock() const noexcept { return *p_->clock; }
    // The actor's records (core use). user_kv(): the user KV API, the same store under [4].
    const Kv& kv() const noexcept { return p_->kv; }
    const Kv& user_kv() const;
    const ActorConfig& config() const noexcept { return *p_->config; }
    void configure(std::shared_ptr<const ActorConfig> config) const {
        p_->config = std::move(config);
    }
    void configure(ActorConfig config) const {
        p_->config = std::make_shared<const ActorConfig>(std::move(config));
    }
    WeakActorContext downgrade() const { return WeakActorContext(p_); }
    const std::shared_ptr<ActorContextInner>& inner() const noexcept { return p_; }
    std::optional<ActorSpecifier> specifier() const;

    void configure_lifecycle_events(std::optional<rt::Sender<LifecycleEvent>> tx) const;
    void configure_actor_events(std::optional<rt::Sender<ActorEvent>> tx) const;
    void configure_envoy(std::shared_ptr<EnvoyLink> envoy,
                         std::optional<std::uint32_t> generation) const;
    const std::shared_ptr<EnvoyLink>& envoy() const noexcept { return p_->envoy; }
    std::optional<std::uint32_t> generation() const noexcept { return p_->generation; }
    // MARK: SQLite (sqlite.cpp). Configure after configure_envoy (the name includes the
    // generation). db() opens the database on first use; cleanup_sqlite() is a shutdown step.
    void configure_sqlite(std::shared_ptr<sqlite::PageStore> store) const;
    // The same with a database made by the caller (whose storage may already hold it).
    void configure_sqlite(std::shared_ptr<ActorSqlite> database) const;
    Task<Result<std::shared_ptr<sqlite::Database>>> db() const;
    Task<void> cleanup_sqlite() const;
    // Whether db() has opened the database in this generation (and it is not closed yet).
    bool db_opened() const;
    // The database's idle close (sqlite/database.hpp): whether it was used since the last call,
    // and closing its connection (its pages kept) unless someone keeps it open.
    bool take_database_touched() const;
    void close_database_if_idle() const;
    // Sends an event to the runtime; actor/not_configured or actor/not_ready when it cannot.
    Status try_send_actor_event(ActorEvent event, std::string_view operation) const;
    void send_lifecycle_event(LifecycleEvent event) const;

    template <typename T>
    std::shared_ptr<T> vars() const {
        return std::static_pointer_cast<T>(p_->vars);
    }
    void set_vars(std::shared_ptr<void> vars) const { p_->vars = std::move(vars); }

    // MARK: state (state.cpp)
    Bytes state() const { return p_->persisted.state; }
    // Boot-time replace (also what a runtime mutation looks like to core): marks dirty.
    void set_state_initial(Bytes state) const;
    void request_save(RequestSaveOpts opts) const;
    Task<Status> request_save_and_wait(RequestSaveOpts opts) const;
    Task<Status> save_state(std::vector<StateDelta> deltas) const;
    // The state replaced from outside the runtime (the inspector's PatchState): saved, then
    // counted in state_patches() so a runtime holding its own copy takes state() over before it
    // serves its next event.
    Task<Status> patch_state(Bytes state) const;
    std::uint64_t state_patches() const noexcept { return p_->state_patches; }
    bool save_requested() const noexcept { return p_->save_requested; }
    bool save_requested_immediate() const noexcept { return p_->save_requested_immediate; }
    std::uint64_t save_request_revision() const noexcept { return p_->save_request_revision; }
    // For a save about to serialize: the revision it covers. The max-wait bounds of the requests
    // up to it are that save's to meet, so requests after it start a bound of their own (kept
    // from the first request instead, a steady stream of requests would find it passed and
    // save back to back).
    std::uint64_t cover_save_requests() const noexcept {
        p_->save_max_wait_deadline.reset();
        return p_->save_request_revision;
    }
    Instant save_deadline(bool immediate) const;
    PersistedActor persisted_actor() const { return p_->persisted; }
    void load_persisted_actor(PersistedActor persisted) const;
    void set_has_initialized(bool value) const;
    bool has_initialized() const noexcept { return p_->persisted.has_initialized; }
    void set_input(std::optional<Bytes> input) const;
    std::optional<Bytes> input() const { return p_->persisted.input; }
    void set_scheduled_events(std::vector<PersistedScheduleEvent> events) const;
    WorkRegion begin_on_state_change() const;
    // Writes [1] now if anything core-owned changed.
    Task<Status> persist_if_dirty() const;
    // A background persist of [1] that wait_for_pending_state_writes() awaits.
    void persist_now_tracked(std::string_view description) const;
    Task<void> wait_for_pending_state_writes() const;
    // Writes of [1] and connections run one at a time: a save waits for the one before it.
    Task<Status> save_state_with_revision(std::vector<StateDelta> deltas,
                                          std::uint64_t revision) const;
    // The save tick's write, off the actor's loop: actions keep running while the KV write is
    // with the engine. One at a time; when it ends, a save still requested (or a failed one)
    // is asked for again through the lifecycle events. wait_for_pending_state_writes() awaits it.
    void save_state_in_background(std::vector<StateDelta> deltas, std::uint64_t revision) const;
    bool background_save_in_flight() const noexcept { return p_->background_save_in_flight; }
    // Waits for the background save in flight, if any; false when that write failed.
    Task<bool> wait_for_background_save() const;

    // MARK: work tracking, sleep and destroy (sleep.cpp)
    CanSleep can_sleep() const;
    bool can_finalize_shutdown(ShutdownKind reason) const;
    bool started() const noexcept { return p_->started; }
    void set_started(bool started) const;
    WorkRegion keep_awake_region() const { return WorkRegion(p_, RegionKind::KeepAwake); }
    WorkRegion internal_keep_awake_region() const {
        return WorkRegion(p_, RegionKind::InternalKeepAwake);
    }
    WorkRegion region(RegionKind kind) const { return WorkRegion(p_, kind); }
    // Runs `fut` while holding a keep-awake region.
    template <typename T>
    Task<T> keep_awake(Task<T> fut) const {
        return keep_awake_impl(*this, std::move(fut));
    }
    // Detached work that delays shutdown (but not idle sleep) and is cancelled at the grace
    // deadline. After teardown started the future is dropped at once with one WARN.
    bool wait_until(Task<void> fut) const;
    bool register_task(Task<void> fut) const;
    // Same, optionally holding an internal keep-awake region (blocks idle sleep too). `kind` is
    // a static label (string literal): the running work keeps the view.
    bool spawn_shutdown_task(std::string_view kind, Task<void> fut, bool keep_awake) const;
    std::size_t keep_awake_count() const noexcept { return p_->keep_awake; }
    std::size_t internal_keep_awake_count() const noexcept { return p_->internal_keep_awake; }
    std::size_t core_dispatched_hook_count() const noexcept { return p_->core_hooks; }
    std::size_t shutdown_task_count() const noexcept {
        return p_->shutdown_tasks.view().size() + p_->tracked_reply_count;
    }
    // The reply an action hands to the runtime: counted as tracked work holding the actor awake
    // until answered or dropped. After teardown began the caller is dropped (logged) instead.
    Reply<Bytes> track_reply(ActionCaller caller) const;
    // Rate-limited (3 per 30 s per actor and process-wide, as upstream's diagnostics).
    void warn_work_sent_to_stopping_instance(std::string_view operation) const;
    void warn_self_call_risk(std::string_view operation) const;
    bool actor_event_inbox_open() const noexcept {
        return p_->actor_events && !p_->actor_events->is_closed();
    }
    Task<bool> wait_for_shutdown_tasks(Instant deadline) const;
    // Drains tracked work at shutdown: abort-and-join when the deadline was reached, otherwise
    // wait for it to finish. Either way later spawns are refused afterwards.
    Task<void> teardown_sleep_state(bool deadline_reached) const;
    void signal_activity() const;
    bool take_activity_dirty() const;

    Status sleep() const;
    Status destroy() const;
    bool sleep_requested() const noexcept { return p_->sleep_requested; }
    void clear_sleep_requested() const { p_->sleep_requested = false; }
    bool destroy_requested() const noexcept { return p_->destroy_requested; }
    std::size_t sleep_request_count() const noexcept { return p_->sleep_request_count; }
    void mark_destroy_completed() const;
    bool destroy_completed() const noexcept { return p_->destroy_completed; }
    Task<void> wait_for_destroy_completion_public() const;
    bool actor_aborted() const { return p_->abort_token.is_cancelled(); }
    const rt::CancellationToken& actor_abort_signal() const { return p_->abort_token; }
    void cancel_actor_abort() const { p_->abort_token.cancel(); }
    void renew_actor_abort_token() const;
    const rt::CancellationToken& shutdown_deadline_token() const {
        return p_->shutdown_deadline_token;
    }

    // MARK: schedule and alarms (schedule.cpp)
    // actor/too_many_scheduled_events when max_scheduled_events are already pending.
    Status after(std::chrono::milliseconds delay, std::string action, Bytes args) const;
    Status at(std::int64_t timestamp_ms, std::string action, Bytes args) const;
    std::optional<PersistedScheduleEvent> next_event() const;
    // Removes the event (upstream's cancel_scheduled_event); false when there is none with that id.
    bool cancel_scheduled_event(std::string_view event_id) const;
    // A dispatched event's action has its outcome (the runtime's on_result): the event leaves
    // the schedule in the save whose state the runtime serializes next. Idempotent.
    void consume_scheduled_event(std::string_view event_id) const;
    // Called by the runtime as it serializes its state for a save: the events consumed so far
    // have their effect in that state and leave the schedule with it.
    void seal_consumed_schedule() const;
    Task<Status> drain_overdue_scheduled_events() const;
    void sync_alarm() const;
    void sync_future_alarm() const;
    Task<void> wait_for_pending_alarm_writes() const;
    std::optional<std::int64_t> last_pushed_alarm() const noexcept { return p_->last_pushed_alarm; }
    void load_last_pushed_alarm(std::optional<std::int64_t> ts) const {
        p_->last_pushed_alarm = ts;
    }
    void set_local_alarm_callback(std::function<void()> callback) const;
    void suspend_alarm_dispatch() const { p_->alarm_dispatch_suspended = true; }
    void resume_alarm_dispatch() const { p_->alarm_dispatch_suspended = false; }
    void cancel_local_alarm_timeouts() const;
    void cancel_driver_alarm() const;
    std::size_t test_driver_alarm_cancel_count() const noexcept {
        return p_->driver_alarm_cancel_count;
    }

    // MARK: connections (connection.cpp)
    // The connect path: ConnectionPreflight to the runtime (bounded by on_before_connect +
    // create_conn_state timeouts), the connection joins the actor, then ConnectionOpen (bounded
    // by on_connect_timeout); a failed open removes it again. actor/callback_timed_out on a
    // timeout, the runtime's error otherwise.
    Task<Result<ConnHandle>> connect_conn(ConnectOptions options) const;
    // The restored hibernatable connection a re-attached socket belongs to.
    Result<ConnHandle> reconnect_hibernatable_conn(const GatewayId& gateway_id,
                                                   const RequestId& request_id) const;
    // Sends the event to every connection subscribed to `name` (args: CBOR array).
    void broadcast(std::string_view name, const Bytes& args) const;
    // Managed disconnect: removes the connection, queues its hibernation record for deletion,
    // and tells the runtime (ConnectionClosed) under a disconnect-callback region.
    void prepare_managed_conn(const ConnHandle& conn) const;
    void add_conn(ConnHandle conn) const;
    // actor/too_many_subscriptions when `conn` already has max_subscriptions_per_connection
    // other subscriptions (logged with the actor and connection ids).
    Status admit_subscription(const ConnHandle& conn, std::string_view event) const;
    std::optional<ConnHandle> remove_conn(std::string_view id) const;
    std::optional<ConnHandle> conn(std::string_view id) const;
    std::vector<ConnHandle> conns() const;
    Task<Status> disconnect_conn(std::string id) const;
    Task<Status> disconnect_conns(std::function<bool(const ConnHandle&)> predicate) const;
    void request_hibernation_transport_save(std::string_view id) const;
    void request_hibernation_transport_removal(std::string id) const;
    void set_hibernated_connection_liveness_override(
        std::vector<std::pair<Bytes, Bytes>> pairs) const;
    Result<bool> hibernated_connection_is_live(const HibernatableConnectionMetadata& meta) const;
    // Reads every [2] record (preload first) and adds the decodable ones to the map.
    Task<Result<std::vector<ConnHandle>>> restore_hibernatable_connections(
        const PreloadedKv* preload) const;
    // Removes dead restored connections and queues their records for deletion.
    void settle_restored_connections() const;

    // MARK: inspector (inspector.cpp)
    void configure_inspector_runtime() const;
    std::optional<InspectorAttachGuard> inspector_attach() const;
    std::size_t inspector_attach_count() const noexcept { return p_->inspector_attached; }
    // Each subscriber keeps at most kInspectorOverlayCapacity overlays queued; a slower one
    // loses the oldest (upstream's broadcast channel of 32).
    std::optional<rt::Receiver<Bytes>> subscribe_inspector() const;
    void broadcast_inspector_overlay(const std::vector<StateDelta>& deltas) const;
    // Every signal recorded while the receiver lives (an inspector socket's session).
    rt::Receiver<InspectorSignal> subscribe_inspector_signals() const;
    void record_inspector_signal(InspectorSignal signal) const;

  private:
    Task<Status> save_state_exclusive(std::vector<StateDelta> deltas,
                                      std::uint64_t revision) const;
    template <typename T>
    static Task<T> keep_awake_impl(ActorContext self, Task<T> fut) {
        WorkRegion region = self.keep_awake_region();
        co_return co_await std::move(fut);
    }

    std::shared_ptr<ActorContextInner> p_;
};

}  // namespace rivetkit::core

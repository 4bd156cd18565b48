#pragma once
// The contexts a typed actor's actions and hooks receive: ActorContext<State> (state, events,
// scheduling, sleep/destroy, KV, connections) and ActionContext<State> (plus the calling
// connection). Both are cheap views on one running actor instance and live for one call.
//
// State changes are found by comparison: a handler that took a mutable state() reference has
// its state re-encoded when it returns, and a changed encoding marks the state dirty and asks
// core for a (debounced) save. Nothing needs to be reported by hand.
//
// Vars (the second template parameter, NoVars when unused) are upstream's `vars`: per-generation
// state that is never persisted, made by Actor::create_vars when the actor starts or wakes
// (sockets, caches, handles). vars() gives mutable access without marking anything for saving.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "core/actor/connection.hpp"
#include "core/actor/kv.hpp"
#include "runtime/cancellation.hpp"
#include "rivetkit/options.hpp"
#include "rivetkit/queue.hpp"
#include "rivetkit/sqlite.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

struct Request;  // rivetkit/raw.hpp

namespace core {
class ActorContext;
}

// The Vars of an actor that declares none.
struct NoVars {};

// The State of an actor without state (upstream's actor with neither `state` nor
// `createState`): nothing of it is saved, the inspector reports state as not enabled, and
// `c.state()` throws ErrorException actor/state_not_enabled.
struct Stateless {};
inline void to_json(Json& j, const Stateless&) { j = nullptr; }
inline void from_json(const Json&, Stateless&) {}

// One client connection.
class Conn {
  public:
    explicit Conn(core::ConnHandle handle) : handle_(std::move(handle)) {}

    const std::string& id() const noexcept { return handle_.id(); }
    // An actor-connect WebSocket (or a raw socket of an actor that lets them hibernate): kept
    // across a sleep. HTTP callers' connections are not.
    bool is_hibernatable() const noexcept { return handle_.is_hibernatable(); }
    // The params the client connected with; null when it sent none. Throws ErrorException
    // (actor/invalid_request) when they are not valid CBOR.
    Json params() const;
    template <typename T>
    T params_as() const {
        return params().template get<T>();
    }

    // Per-connection state (upstream's `conn.state`), stored in core's connection as CBOR; made
    // by Actor::create_conn_state before on_connect. For a hibernatable connection set_state
    // queues a save of its [2] record, so the state survives the actor sleeping.
    // state_json(): null when none was set; throws ErrorException when the bytes are not CBOR.
    Json state_json() const;
    // The state decoded as T; a default T when none was set (T default-constructible).
    template <typename T>
    T state() const {
        Json value = state_json();
        if constexpr (std::is_default_constructible_v<T>) {
            if (value.is_null())
                return T{};
        }
        return value.template get<T>();
    }
    template <typename T>
    void set_state(const T& value) const {
        const Json encoded = value;
        handle_.set_state(to_cbor(encoded));
    }
    // Sends event `name` with `args` to this connection only (logged, not thrown, on failure).
    template <typename... Args>
    void send(std::string_view name, const Args&... args) const {
        handle_.send(name, cbor_args(args...));
    }
    const core::ConnHandle& handle() const noexcept { return handle_; }

    // Closes this connection (upstream's `conn.disconnect(reason)`): its transport is closed with
    // `reason`, it leaves the actor and on_disconnect runs; resolves when it is gone.
    boost::asio::awaitable<Status> disconnect(std::string reason) const {
        return handle_.disconnect(reason.empty() ? std::nullopt
                                                 : std::optional<std::string>(std::move(reason)));
    }

  private:
    core::ConnHandle handle_;
};

namespace detail {

// The untyped part of a running actor: its core context and the state bookkeeping. Defined in
// src/api so the public headers stay free of core's context and runtime headers.
class InstanceCore {
  public:
    InstanceCore();
    virtual ~InstanceCore();
    InstanceCore(const InstanceCore&) = delete;
    InstanceCore& operator=(const InstanceCore&) = delete;

    void bind(const core::ActorContext& ctx);
    const core::ActorContext& ctx() const { return *ctx_; }

    // Set whenever a handler takes a mutable state reference; cleared by sync_state().
    bool touched = false;
    // While on_state_change runs: mutable state access is refused.
    bool in_state_change = false;
    // ActorOptions::database == false: db() throws actor/database_not_configured.
    bool database_disabled = false;
    // While the start hooks run (on_migrate to on_wake): core serves no save tick until they
    // are done, so save_state() writes directly.
    bool starting = false;
    // After a handler: a touched state is compared with the last one seen, and a change marks it
    // dirty, counts in state_version() and, with `request_save`, asks core for a save. A
    // trivially copyable state is compared by its bytes and encoded only when sync_state asks
    // (a save, an inspector read); any other is encoded and compared by its encoding.
    void settle(bool request_save);
    // settle(request_save), then the current encoding.
    const Bytes& sync_state(bool request_save);
    // Counts the state changes sync_state() found (on_state_change is run when it moves).
    std::uint64_t state_version() const noexcept { return version_; }
    // The state_version() on_state_change last ran for (the runtime's bookkeeping).
    std::uint64_t notified_version = 0;
    // Installs the state's encoding as saved (a snapshot loaded, or the initial state).
    void set_saved_state(Bytes cbor) {
        encoded_ = std::move(cbor);
        stale_ = false;
        (void)state_changed();  // the state seen is this one
    }
    // Whether the state changed since the last take_dirty().
    bool take_dirty() noexcept { return std::exchange(dirty_, false); }
    // Takes over a state that was replaced from outside (the inspector's PatchState) since the
    // last call; true when it did. A patch that does not decode as the state type is logged and
    // overwritten by the next save of the current state.
    bool adopt_patched_state();

    virtual Bytes encode_state() const = 0;
    virtual void load_state(const Json& value) = 0;
    // Whether the state differs from the one seen at the last call, which it then becomes;
    // nullopt for a type that is compared by its encoding instead.
    virtual std::optional<bool> state_changed() { return std::nullopt; }

    // Helpers behind the typed contexts.
    const std::string& actor_id() const;
    const std::string& name() const;
    const std::vector<std::string>& key() const;
    std::int64_t now_ms() const;
    void broadcast(std::string_view name, const Bytes& args) const;
    void schedule_at(std::int64_t timestamp_ms, std::string action, Bytes args) const;
    void schedule_after(std::chrono::milliseconds delay, std::string action, Bytes args) const;
    void sleep() const;
    void destroy() const;
    const core::Kv& kv() const;
    boost::asio::awaitable<std::shared_ptr<Database>> db() const;
    std::vector<Conn> conns() const;
    boost::asio::awaitable<void> save_state(SaveStateOptions options);
    // A keep-awake region (core RegionKind::KeepAwake) held until the returned guard is dropped.
    std::shared_ptr<void> keep_awake_guard() const;
    bool wait_until(boost::asio::awaitable<void> work) const;
    const rt::CancellationToken& abort_signal() const;
    boost::asio::awaitable<bool> sleep_for(std::chrono::milliseconds delay);

  private:
    std::unique_ptr<core::ActorContext> ctx_;
    Bytes encoded_;
    bool dirty_ = false;
    // Changed since encoded_ was made (settle found it by state_changed, without encoding).
    bool stale_ = false;
    std::uint64_t version_ = 0;
    std::uint64_t seen_patches_ = 0;
};

template <typename State, typename Vars = NoVars>
class Instance final : public InstanceCore {
  public:
    State state{};
    // Made at every generation start (create_vars, or default-constructed); empty before.
    std::optional<Vars> vars;

    Bytes encode_state() const override {
        const Json value = state;
        return to_cbor(value);
    }
    void load_state(const Json& value) override { state = value.get<State>(); }
    std::optional<bool> state_changed() override {
        if constexpr (std::is_trivially_copyable_v<State> && !std::is_empty_v<State>) {
            // Equal bytes are an equal value; unequal ones (padding, -0.0) at worst a save of
            // an equal encoding.
            if (std::memcmp(&seen_, &state, sizeof(State)) == 0)
                return false;
            std::memcpy(&seen_, &state, sizeof(State));
            return true;
        } else {
            return std::nullopt;
        }
    }

  private:
    struct Nothing {};
    [[no_unique_address]] std::conditional_t<std::is_trivially_copyable_v<State>, State, Nothing>
        seen_{};
};

}  // namespace detail

template <typename State, typename Vars = NoVars>
class ActorContext {
  public:
    explicit ActorContext(std::shared_ptr<detail::Instance<State, Vars>> instance,
                          const Request* request = nullptr)
        : instance_(std::move(instance)), request_(request) {}

    // Mutable access: whatever the handler changes through it is saved. Inside on_state_change
    // it throws ErrorException actor/state_mutation_reentrant (as upstream: the hook observes).
    State& state() {
        if constexpr (std::is_same_v<State, Stateless>)
            throw ErrorException(errors::actor_state_not_enabled());
        if (instance_->in_state_change)
            throw ErrorException(errors::actor_state_mutation_reentrant());
        touched_ = true;
        instance_->touched = true;
        return instance_->state;
    }
    const State& state() const {
        if constexpr (std::is_same_v<State, Stateless>)
            throw ErrorException(errors::actor_state_not_enabled());
        return instance_->state;
    }

    // This generation's vars (never saved). Throws std::logic_error before create_vars ran
    // (in on_create, which upstream also runs before createVars).
    Vars& vars() const {
        if (!instance_->vars)
            throw std::logic_error("vars are not created yet (create_vars runs after on_create)");
        return *instance_->vars;
    }

    const std::string& actor_id() const { return instance_->actor_id(); }
    const std::string& name() const { return instance_->name(); }
    const std::vector<std::string>& key() const { return instance_->key(); }
    // Wall-clock milliseconds since the Unix epoch (virtual in tests).
    std::int64_t now_ms() const { return instance_->now_ms(); }

    // Sends event `name` to every connection subscribed to it.
    template <typename... Args>
    void broadcast(std::string_view name, const Args&... args) const {
        instance_->broadcast(name, cbor_args(args...));
    }
    // Calls action `action` with `args` later; persisted, so it survives sleep. Throws
    // ErrorException actor/too_many_scheduled_events past the actor's max_scheduled_events.
    template <typename... Args>
    void schedule_after(std::chrono::milliseconds delay, std::string action,
                        const Args&... args) const {
        instance_->schedule_after(delay, std::move(action), cbor_args(args...));
    }
    template <typename... Args>
    void schedule_at(std::int64_t timestamp_ms, std::string action, const Args&... args) const {
        instance_->schedule_at(timestamp_ms, std::move(action), cbor_args(args...));
    }

    // Ask core to put the actor to sleep / destroy it once the current work is done. Throw
    // ErrorException when core refuses.
    void sleep() const { instance_->sleep(); }
    void destroy() const { instance_->destroy(); }

    // Saves the state and waits until it is durable (throws ErrorException on failure): now, or
    // with `{.immediate = false, .max_wait = d}` within d (upstream's `c.saveState(opts)`).
    boost::asio::awaitable<void> save_state(SaveStateOptions options = {}) {
        if (touched_)
            instance_->touched = true;
        return instance_->save_state(options);
    }

    const core::Kv& kv() const { return instance_->kv(); }
    // The actor's SQLite database (rivetkit/sqlite.hpp), opened on first use. Throws
    // ErrorException (sqlite/*) when it cannot be opened, actor/database_not_configured when the
    // actor declared none (ActorOptions::database = false).
    boost::asio::awaitable<std::shared_ptr<Database>> db() const { return instance_->db(); }
    // The actor's durable queue (see rivetkit/queue.hpp); a view for this call, don't keep it.
    // Views taken in one handler call share its pending completable messages: receiving again
    // before complete() throws queue/previous_message_not_completed.
    Queue queue() const {
        if (!pending_completions_)
            pending_completions_ = std::make_shared<detail::PendingCompletions>();
        return Queue(instance_->ctx(), pending_completions_);
    }
    std::vector<Conn> conns() const { return instance_->conns(); }

    // Runs `work` while holding a keep-awake region: the actor does not go to sleep while it is
    // pending (core's ActorContext::keep_awake, upstream's `c.keepAwake(promise)`).
    template <typename T>
    boost::asio::awaitable<T> keep_awake(boost::asio::awaitable<T> work) const {
        return keep_awake_impl<T>(instance_->keep_awake_guard(), std::move(work));
    }
    // Detached work that delays shutdown (not idle sleep) until it finishes or the grace period
    // ends (core's ActorContext::wait_until, upstream's `c.waitUntil(promise)`). False when the
    // actor is already tearing down (the work is dropped).
    bool wait_until(boost::asio::awaitable<void> work) const {
        return instance_->wait_until(std::move(work));
    }

    // Cancelled when the actor starts shutting down (sleep or destroy grace); what a `run`
    // handler watches to end (upstream's `c.abortSignal`).
    const rt::CancellationToken& abort_signal() const { return instance_->abort_signal(); }
    bool aborted() const { return abort_signal().is_cancelled(); }
    // Waits `delay` (virtual in tests); false when the actor was aborted first. State changes
    // made so far are saved (debounced) before waiting.
    boost::asio::awaitable<bool> sleep_for(std::chrono::milliseconds delay) {
        if (touched_)
            instance_->touched = true;
        touched_ = false;
        return instance_->sleep_for(delay);
    }
    // The HTTP request behind this call (upstream's `c.request`): the connecting request in
    // on_before_connect and create_conn_state (the WebSocket upgrade, or the HTTP action/queue
    // request), the upgrade in on_websocket, the request in on_request; nullptr elsewhere
    // (actions, scheduled calls, lifecycle hooks) and for a connection restored after a sleep.
    const Request* request() const noexcept { return request_; }

    // The core context underneath (include core/actor/context.hpp to use it).
    const core::ActorContext& core_context() const { return instance_->ctx(); }

    bool touched() const noexcept { return touched_; }

  protected:
    template <typename T>
    static boost::asio::awaitable<T> keep_awake_impl(std::shared_ptr<void> guard,
                                                     boost::asio::awaitable<T> work) {
        if constexpr (std::is_void_v<T>) {
            co_await std::move(work);
            guard.reset();
        } else {
            T out = co_await std::move(work);
            guard.reset();
            co_return out;
        }
    }

    std::shared_ptr<detail::Instance<State, Vars>> instance_;
    const Request* request_ = nullptr;
    mutable std::shared_ptr<detail::PendingCompletions> pending_completions_;
    bool touched_ = false;
};

template <typename State, typename Vars = NoVars>
class ActionContext : public ActorContext<State, Vars> {
  public:
    ActionContext(std::shared_ptr<detail::Instance<State, Vars>> instance,
                  std::optional<Conn> conn)
        : ActorContext<State, Vars>(std::move(instance)), conn_(std::move(conn)) {}

    // The calling connection; none for scheduled calls.
    const std::optional<Conn>& conn() const noexcept { return conn_; }

  private:
    std::optional<Conn> conn_;
};

}  // namespace rivetkit

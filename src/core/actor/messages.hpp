#pragma once
// The ActorEvent contract between core and the user runtime (the `run` handler), and the reply
// handles that travel inside events.
//
// A Reply that is destroyed unanswered answers actor/dropped_reply, so a runtime that ignores an
// event still completes it: core counts hooks as done, gives the caller an error, and treats an
// unanswered SerializeState as "no deltas".

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/shared_string.hpp"
#include "core/actor/connection.hpp"
#include "core/actor/task_types.hpp"
#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"

namespace rivetkit::core {

struct ActorContextInner;

// Called in place with an action's outcome, by whoever holds the action's ActionCaller.
class ActionAnswer {
  public:
    virtual ~ActionAnswer() = default;
    virtual void answer(Result<Bytes> outcome) noexcept = 0;
};

// Who waits for an action's outcome: a oneshot receiver, or an ActionAnswer called in place when
// the outcome is sent (an actor-connect socket answers its client from there, without a task of
// its own per action). Dropped unsent, either side observes actor/dropped_reply.
class ActionCaller {
  public:
    ActionCaller() = default;
    ActionCaller(rt::OneshotSender<Result<Bytes>> tx) : tx_(std::move(tx)) {}  // NOLINT: implicit
    explicit ActionCaller(std::unique_ptr<ActionAnswer> answer) : answer_(std::move(answer)) {}
    ActionCaller(ActionCaller&&) noexcept = default;
    ActionCaller& operator=(ActionCaller&& other) noexcept {
        if (this != &other) {
            drop();
            tx_ = std::move(other.tx_);
            answer_ = std::move(other.answer_);
        }
        return *this;
    }
    ActionCaller(const ActionCaller&) = delete;
    ActionCaller& operator=(const ActionCaller&) = delete;
    ~ActionCaller() { drop(); }

    // Delivers once; false when a oneshot receiver is gone or this caller was already used.
    bool send(Result<Bytes> outcome) {
        if (answer_) {
            const std::unique_ptr<ActionAnswer> answer = std::move(answer_);
            answer->answer(std::move(outcome));
            return true;
        }
        return tx_.valid() && tx_.send(std::move(outcome));
    }

  private:
    void drop() noexcept {
        if (answer_)
            send(errors::actor_dropped_reply());
    }
    rt::OneshotSender<Result<Bytes>> tx_;
    std::unique_ptr<ActionAnswer> answer_;
};

namespace detail {
// An in-flight action's answer slot. The actor counts it as tracked work (and holds the actor
// awake) until the runtime answers or drops the reply; at a grace deadline the actor lets go of
// it (owner = null, caller dropped). One allocation per action, no task.
struct TrackedReply {
    ActionCaller caller;
    ActorContextInner* owner = nullptr;
    TrackedReply* prev = nullptr;
    TrackedReply* next = nullptr;
};
// Answers the caller (errors gain the actor specifier), releases the work, frees the slot.
bool complete_tracked_reply(TrackedReply* slot, Result<Bytes> result);
}  // namespace detail

template <typename T>
class Reply {
  public:
    explicit Reply(rt::OneshotSender<Result<T>> tx) : tx_(std::move(tx)) {}
    // A reply counted as the actor's tracked work (actions; see ActorContext::track_reply).
    explicit Reply(detail::TrackedReply* tracked)
        requires std::is_same_v<T, Bytes>
        : tracked_(tracked) {}
    // A moved-from reply is spent (not "dropped"): its destructor answers nothing.
    Reply(Reply&& other) noexcept
        : tx_(std::move(other.tx_)), tracked_(std::exchange(other.tracked_, nullptr)) {}
    Reply& operator=(Reply&& other) noexcept {
        if (this != &other) {
            drop();
            tx_ = std::move(other.tx_);
            tracked_ = std::exchange(other.tracked_, nullptr);
        }
        return *this;
    }
    Reply(const Reply&) = delete;
    Reply& operator=(const Reply&) = delete;
    ~Reply() { drop(); }

    // Delivers once; false when the requester is gone or this reply was already used.
    bool send(Result<T> result) {
        if constexpr (std::is_same_v<T, Bytes>) {
            if (tracked_ != nullptr)
                return detail::complete_tracked_reply(std::exchange(tracked_, nullptr),
                                                       std::move(result));
        }
        if (!tx_.valid())
            return false;
        return tx_.send(std::move(result));
    }
    bool answered() const noexcept { return !tx_.valid() && tracked_ == nullptr; }

    // A reply plus the receiver its answer arrives on.
    static std::pair<Reply, rt::OneshotReceiver<Result<T>>> make() {
        auto [tx, rx] = rt::oneshot<Result<T>>();
        return {Reply(std::move(tx)), std::move(rx)};
    }

  private:
    void drop() {
        if (!answered())
            send(errors::actor_dropped_reply());
    }
    rt::OneshotSender<Result<T>> tx_;
    detail::TrackedReply* tracked_ = nullptr;  // only ever set when T is Bytes
};

// Minimal HTTP request/response as they cross into the runtime.
struct HttpRequest {
    std::string method = "GET";
    std::string path = "/";
    std::map<std::string, std::string> headers;
    Bytes body;
};
struct HttpResponse {
    std::uint16_t status = 200;
    std::map<std::string, std::string> headers;
    Bytes body;
};

// A raw WebSocket (`/websocket/...`) handed to the runtime: send and close go straight to the
// transport; inbound frames arrive in order through recv(), which yields nullopt once the socket
// closed (close_frame() then tells how). Cheap to share; calls after the close are ignored.
class RawWebSocket {
  public:
    struct Message {
        Bytes data;
        bool binary = false;
        // A hibernatable socket's message index (the gateway's numbering); none otherwise.
        std::optional<std::uint16_t> index;
    };
    struct Close {
        std::optional<std::uint16_t> code;
        std::string reason;
    };
    using Inbound = std::variant<Message, Close>;
    using SendFn = std::function<void(Bytes data, bool binary)>;
    using CloseFn = std::function<void(std::uint16_t code, std::string reason)>;

    RawWebSocket(SendFn send, CloseFn close, rt::Receiver<Inbound> inbound)
        : send_(std::move(send)), close_(std::move(close)), inbound_(std::move(inbound)) {}

    void send(Bytes data, bool binary) const {
        if (!closed_)
            send_(std::move(data), binary);
    }
    void send_text(std::string_view text) const { send(to_bytes(text), false); }
    void close(std::uint16_t code = 1000, std::string reason = {}) {
        if (closed_)
            return;
        closed_ = true;
        close_(code, std::move(reason));
    }
    // The next inbound frame; nullopt after the peer closed. `this` must outlive the await.
    boost::asio::awaitable<std::optional<Message>> recv() {
        while (auto item = co_await inbound_.recv()) {
            if (auto* m = std::get_if<Message>(&*item))
                co_return std::move(*m);
            close_frame_ = std::get<Close>(std::move(*item));
            closed_ = true;
            co_return std::nullopt;
        }
        closed_ = true;
        co_return std::nullopt;
    }
    const std::optional<Close>& close_frame() const noexcept { return close_frame_; }
    bool closed() const noexcept { return closed_; }

  private:
    SendFn send_;
    CloseFn close_;
    rt::Receiver<Inbound> inbound_;
    std::optional<Close> close_frame_;
    bool closed_ = false;
};

enum class SerializeStateReason : std::uint8_t { Save, Inspector };

// What the runtime returns from SerializeState.
struct StateDelta {
    enum class Kind : std::uint8_t { ActorState, ConnHibernation, ConnHibernationRemoved };
    Kind kind = Kind::ActorState;
    std::string conn;  // ConnHibernation / ConnHibernationRemoved
    Bytes bytes;       // ActorState / ConnHibernation

    static StateDelta actor_state(Bytes b) { return {Kind::ActorState, {}, std::move(b)}; }
    static StateDelta conn_hibernation(std::string c, Bytes b) {
        return {Kind::ConnHibernation, std::move(c), std::move(b)};
    }
    static StateDelta conn_hibernation_removed(std::string c) {
        return {Kind::ConnHibernationRemoved, std::move(c), {}};
    }
    friend bool operator==(const StateDelta&, const StateDelta&) = default;
};

// The inspector overlay payload: CBOR of the delta list in upstream's serde layout.
Bytes encode_state_deltas_cbor(const std::vector<StateDelta>& deltas);
std::optional<std::vector<StateDelta>> decode_state_deltas_cbor(BytesView payload);

struct QueueSendResult {
    enum class Status : std::uint8_t { Completed, TimedOut };
    Status status = Status::Completed;
    std::optional<Bytes> response;
};

namespace event {
struct Action {
    std::string name;
    Bytes args;
    std::optional<ConnHandle> conn;  // None for schedule-originated calls
    Reply<Bytes> reply;
    // Called by the runtime once the handler's outcome is final, before it waits for a
    // reply-after-durable save: a hibernatable connection records the message as handled there,
    // so the save that makes the action's effect durable carries its message index too (a crash
    // after it does not deliver the message again). Empty: handled when the reply arrives.
    std::function<void()> on_result{};
};
struct HttpRequestEv {
    HttpRequest request;
    Reply<HttpResponse> reply;
};
struct QueueSend {
    std::string name;
    Bytes body;
    ConnHandle conn;
    HttpRequest request;
    bool wait = false;
    std::optional<std::uint64_t> timeout_ms;
    Reply<QueueSendResult> reply;
};
struct WebSocketOpen {
    ConnHandle conn;
    std::optional<HttpRequest> request;
    Reply<void> reply;
    // The socket itself (raw /websocket routes); answer `reply` to accept, an error to refuse.
    std::shared_ptr<RawWebSocket> socket;
};
struct ConnectionPreflight {
    ConnHandle conn;
    Bytes params;
    std::optional<HttpRequest> request;
    Reply<void> reply;
};
struct ConnectionOpen {
    ConnHandle conn;
    std::optional<HttpRequest> request;
    Reply<void> reply;
};
struct ConnectionClosed {
    ConnHandle conn;
};
struct SubscribeRequest {
    ConnHandle conn;
    std::string event_name;
    Reply<void> reply;
};
struct SerializeState {
    SerializeStateReason reason;
    Reply<std::vector<StateDelta>> reply;
};
struct RunGracefulCleanup {
    ShutdownKind reason;
    Reply<void> reply;
};
struct DisconnectConn {
    std::string conn_id;
    Reply<void> reply;
};
struct WorkflowHistoryRequested {
    Reply<std::optional<Bytes>> reply;
};
struct WorkflowReplayRequested {
    std::optional<std::string> entry_id;
    Reply<std::optional<Bytes>> reply;
};
}  // namespace event

using ActorEvent =
    std::variant<event::Action, event::HttpRequestEv, event::QueueSend, event::WebSocketOpen,
                 event::ConnectionPreflight, event::ConnectionOpen, event::ConnectionClosed,
                 event::SubscribeRequest, event::SerializeState, event::RunGracefulCleanup,
                 event::DisconnectConn, event::WorkflowHistoryRequested,
                 event::WorkflowReplayRequested>;

// The kind label used in logs ("action", "serialize_state_save", "run_sleep_cleanup", ...).
std::string_view event_kind(const ActorEvent& event) noexcept;

// The runtime's end of the actor-event stream. Every event handed out logs "actor event drained".
class ActorEvents {
  public:
    ActorEvents(SharedString actor_id, rt::Receiver<ActorEvent> rx)
        : actor_id_(std::move(actor_id)), rx_(std::move(rx)) {}
    ActorEvents(ActorEvents&&) noexcept = default;
    ActorEvents& operator=(ActorEvents&&) noexcept = default;

    // The next event; nullopt once core closed the stream. `this` must outlive the await.
    boost::asio::awaitable<std::optional<ActorEvent>> recv();
    std::optional<ActorEvent> try_recv();

    // Readiness, for a runtime that idles without an event slot in its frames (recv's chain of
    // coroutines holds one at each level for as long as it waits, which is an awake actor's
    // whole life): wait() until ready(), then try_recv() what is queued; once that is drained,
    // ended() tells that core closed the stream.
    bool ready() const noexcept { return rx_.ready(); }
    bool ended() const noexcept { return rx_.is_empty() && rx_.ready(); }
    // Completes at the next send or close (maybe spuriously); call only while !ready(). `this`
    // must outlive the await.
    boost::asio::awaitable<void> wait() { return rt::detail::wait_on(rx_.waiters()); }
    // The same readiness without a coroutine: `waiter` is woken (once) at the next send or close.
    void subscribe(rt::detail::Waiter& waiter) { rx_.waiters().push(waiter); }

  private:
    void log_drained(const ActorEvent& event) const;
    SharedString actor_id_;
    rt::Receiver<ActorEvent> rx_;
};

}  // namespace rivetkit::core

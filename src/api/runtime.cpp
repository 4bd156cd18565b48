// The runtime behind every typed actor: one generation's ActorEvent loop, generalising the
// hand-written tests/support/counter_actor.cpp.
//
// Start: on_migrate, snapshot → state (or create_state(input) for a new actor, then on_create),
// on_wake, then startup_ready, so core persists the first state together with has_initialized.
//
// Loop invariants:
//  - Every event's Reply is answered (a dropped one would read as actor/dropped_reply), except
//    the workflow requests, dropped on purpose: a typed actor has no workflow.
//  - SerializeState is answered inline, never behind user code: core's save path (including an
//    action's own reply_after_durable wait) needs it while user code is suspended.
//  - User handlers run in their own coroutine, started inline: a synchronous handler finishes
//    before the loop looks at the next event; a suspended one lets the loop go on.
//  - After each handler the state is compared with its last encoding; a change marks it dirty,
//    requests a debounced save and runs on_state_change.
//  - Start order: on_migrate, state (snapshot, or create_state + on_create), create_vars, on_wake,
//    startup_ready, then the run handler (under core's RunHandler region) beside the event loop.
//  - Preflight: on_before_connect, then create_conn_state (the connection's CBOR state bytes).
//  - A raw WebSocket is accepted when on_websocket returns or first suspends, refused when it
//    throws before that.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <utility>
#include <variant>

#include "base/log.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/queue.hpp"
#include "rivetkit/detail/callable.hpp"
#include "rivetkit/detail/definition.hpp"
#include "runtime/defer.hpp"

namespace rivetkit::detail {
namespace {

using DefinitionPtr = std::shared_ptr<const Definition>;
namespace event = core::event;

// Makes a hook's awaitable; may itself throw (decoding its arguments).
using MakeHook = std::function<boost::asio::awaitable<void>()>;

// Runs a handler's awaitable to a Status.
boost::asio::awaitable<Status> guarded(MakeHook make) {
    std::exception_ptr failure;
    try {
        boost::asio::awaitable<void> pending = make();
        co_await std::move(pending);
        co_return Status{};
    } catch (...) {
        failure = std::current_exception();
    }
    co_return error_from_exception(failure);
}

// Syncs the state after a handler; a change requests a save and runs on_state_change once
// (whose own changes are saved, not notified again).
void sync_state(const Definition& def, const InstancePtr& instance) {
    instance->settle(true);
    if (instance->state_version() == instance->notified_version)
        return;
    instance->notified_version = instance->state_version();
    if (!def.on_state_change)
        return;
    try {
        def.on_state_change(instance);
    } catch (...) {
        const Error error = error_from_exception(std::current_exception());
        log::warn("actor on_state_change failed",
                  {{"actor_id", instance->actor_id()}, {"error", error.to_string()}});
    }
    instance->settle(true);
    instance->notified_version = instance->state_version();
}

boost::asio::awaitable<Result<Bytes>> invoke_action(const ActionEntry& entry, InstancePtr instance,
                                                    std::optional<core::ConnHandle> conn,
                                                    Bytes args_cbor) {
    std::exception_ptr failure;
    try {
        boost::asio::awaitable<Bytes> pending =
            entry.invoke(std::move(instance), std::move(conn), std::move(args_cbor));
        Bytes out = co_await std::move(pending);
        co_return out;
    } catch (...) {
        failure = std::current_exception();
    }
    co_return error_from_exception(failure);
}

// A synchronous action's call (ActionEntry::invoke_now).
Result<Bytes> call_action_now(const ActionEntry& entry, InstancePtr instance,
                              std::optional<core::ConnHandle> conn, const Bytes& args_cbor) {
    try {
        return entry.invoke_now(std::move(instance), std::move(conn), args_cbor);
    } catch (...) {
        return error_from_exception(std::current_exception());
    }
}

// What follows an action's outcome before its reply: the state synced (a change requests a
// save) and the caller's on_result.
void action_done(const Definition& def, const InstancePtr& instance, event::Action& action) {
    sync_state(def, instance);
    if (action.on_result)
        action.on_result();
}

// An action that suspends or asked for reply_after_durable, in a coroutine of its own. `entry`
// lives in `def`.
boost::asio::awaitable<void> run_action(DefinitionPtr def, InstancePtr instance,
                                        event::Action action, const ActionEntry* entry) {
    Result<Bytes> result = Bytes{};
    if (entry->invoke_now) {
        result = call_action_now(*entry, instance, std::move(action.conn), action.args);
    } else {
        boost::asio::awaitable<Result<Bytes>> pending =
            invoke_action(*entry, instance, std::move(action.conn), std::move(action.args));
        result = co_await std::move(pending);
    }
    action_done(*def, instance, action);
    if (result.ok() && entry->options.reply_after_durable) {
        core::RequestSaveOpts opts{true, std::nullopt};
        Status saved = co_await instance->ctx().request_save_and_wait(opts);
        if (!saved.ok())
            result = std::move(saved).error();
    }
    action.reply.send(std::move(result));
}

// A lifecycle or connection hook; an absent (empty) hook succeeds.
boost::asio::awaitable<void> run_hook(DefinitionPtr def, InstancePtr instance, MakeHook make,
                                      std::optional<core::Reply<void>> reply) {
    Status status;
    if (make)
        status = co_await guarded(std::move(make));
    sync_state(*def, instance);
    if (reply)
        reply->send(std::move(status));
    else if (!status.ok())
        log::warn("actor hook failed",
                  {{"actor_id", instance->actor_id()}, {"error", status.error().to_string()}});
}

// The connection params a raw request carries (x-rivet-conn-params, JSON) as CBOR; empty when
// none.
Result<Bytes> raw_request_params(const Request& request) {
    std::optional<std::string> raw = request.header("x-rivet-conn-params");
    if (!raw)
        return Bytes{};
    Json parsed = Json::parse(*raw, nullptr, false);
    if (parsed.is_discarded())
        return errors::protocol_invalid_http_request("invalid x-rivet-conn-params");
    return to_cbor(parsed);
}

// A raw request is served on a connection of its own, as upstream's runtime does: the params from
// x-rivet-conn-params go through on_before_connect and create_conn_state (which may refuse the
// request: auth/forbidden answers 403), on_connect and on_disconnect run around it.
boost::asio::awaitable<void> run_request(DefinitionPtr def, InstancePtr instance,
                                         event::HttpRequestEv ev) {
    core::ConnectOptions options;
    options.request = ev.request;
    Request request{std::move(ev.request.method), std::move(ev.request.path),
                    std::move(ev.request.headers), std::move(ev.request.body)};
    Result<Bytes> params = raw_request_params(request);
    if (!params.ok()) {
        ev.reply.send(std::move(params).error());
        co_return;
    }
    options.params = std::move(params).value();
    const core::ActorContext& ctx = instance->ctx();
    Result<core::ConnHandle> connected = co_await ctx.connect_conn(std::move(options));
    if (!connected.ok()) {
        ev.reply.send(std::move(connected).error());
        co_return;
    }
    core::ConnHandle conn = std::move(connected).value();
    std::exception_ptr failure;
    std::optional<Response> response;
    try {
        boost::asio::awaitable<Response> pending = def->on_request(instance, std::move(request));
        response = co_await std::move(pending);
    } catch (...) {
        failure = std::current_exception();
    }
    sync_state(*def, instance);
    Status disconnected = co_await conn.disconnect(std::nullopt);
    if (!disconnected.ok())
        log::debug("raw request connection did not disconnect cleanly",
                   {{"actor_id", instance->actor_id()},
                    {"conn_id", conn.id()},
                    {"error", disconnected.error().to_string()}});
    if (!response) {
        ev.reply.send(error_from_exception(failure));
        co_return;
    }
    core::HttpResponse out;
    out.status = response->status;
    out.headers = std::move(response->headers);
    out.body = std::move(response->body);
    ev.reply.send(std::move(out));
}

// Runs on_websocket; `accept` is answered here when the hook returns or throws without having
// suspended, otherwise by Loop::serve once the hook first suspended.
boost::asio::awaitable<void> run_websocket(DefinitionPtr def, InstancePtr instance,
                                           WebSocket socket, Request upgrade,
                                           std::shared_ptr<core::Reply<void>> accept) {
    // Named, not a temporary inside the co_await: GCC 12 destroys such temporaries twice.
    MakeHook make = [def, instance, socket, upgrade = std::move(upgrade)]() {
        return def->on_websocket(instance, socket, upgrade);
    };
    Status status = co_await guarded(std::move(make));
    if (!accept->answered()) {
        accept->send(status);
    } else if (!status.ok()) {
        log::warn("actor on_websocket failed; closing the socket",
                  {{"actor_id", instance->actor_id()}, {"error", status.error().to_string()}});
        socket.close(1011, "internal error");
    }
    sync_state(*def, instance);
}

// on_before_connect, then create_conn_state.
boost::asio::awaitable<void> preflight(DefinitionPtr def, InstancePtr instance,
                                       core::ConnHandle conn, Bytes params_cbor,
                                       std::shared_ptr<const Request> request) {
    Json params = nullptr;
    if (!params_cbor.empty()) {
        auto decoded = from_cbor(params_cbor);
        if (!decoded.ok())
            throw ErrorException(
                errors::actor_invalid_request("connection params: " + decoded.error().message()));
        params = std::move(decoded).value();
    }
    if (def->on_before_connect) {
        boost::asio::awaitable<void> pending =
            def->on_before_connect(instance, conn, params, request);
        co_await std::move(pending);
    }
    if (def->create_conn_state) {
        boost::asio::awaitable<void> pending =
            def->create_conn_state(instance, conn, params, request);
        co_await std::move(pending);
    }
}

// Runs an event's or queue's access check; a throw is its error.
boost::asio::awaitable<Result<bool>> check_access(const ConnCheck& check, InstancePtr instance,
                                                  core::ConnHandle conn,
                                                  std::shared_ptr<const Request> request) {
    std::exception_ptr failure;
    try {
        boost::asio::awaitable<bool> pending =
            check(std::move(instance), std::move(conn), std::move(request));
        co_return co_await std::move(pending);
    } catch (...) {
        failure = std::current_exception();
    }
    co_return error_from_exception(failure);
}

// A subscription to a declared event with a check: refused with auth/forbidden unless it passes.
boost::asio::awaitable<void> run_subscribe(DefinitionPtr def, InstancePtr instance,
                                           event::SubscribeRequest ev, ConnCheck check) {
    Result<bool> allowed = co_await check_access(check, instance, ev.conn, nullptr);
    sync_state(*def, instance);
    if (!allowed.ok())
        ev.reply.send(std::move(allowed).error());
    else if (!allowed.value())
        ev.reply.send(errors::auth_forbidden());
    else
        ev.reply.send(Status{});
}

// POST /queue/{name}: enqueue (and with `wait`, wait for the receiver's completion, bounded by the
// request's timeout: a timeout answers status timedOut, as upstream's runtime does; the actor
// starting to shut down ends the wait with actor/aborted, as upstream's abort token does).
boost::asio::awaitable<void> run_queue_send(DefinitionPtr def, InstancePtr instance,
                                            event::QueueSend ev) {
    core::QueueSendResult result;
    auto declared = def->queues.find(ev.name);
    if (declared == def->queues.end()) {
        // Upstream's rule: only declared queues take client messages; others are acknowledged
        // and dropped.
        log::debug("queue send to an undeclared queue dropped",
                   {{"actor_id", instance->actor_id()}, {"queue", ev.name}});
        ev.reply.send(std::move(result));
        co_return;
    }
    if (const ConnCheck& can_publish = declared->second) {
        auto request = std::make_shared<const Request>(
            Request{ev.request.method, ev.request.path, ev.request.headers, ev.request.body});
        Result<bool> allowed = co_await check_access(can_publish, instance, ev.conn, request);
        sync_state(*def, instance);
        if (!allowed.ok() || !allowed.value()) {
            ev.reply.send(allowed.ok() ? errors::auth_forbidden() : std::move(allowed).error());
            co_return;
        }
    }
    core::ActorQueue queue(instance->ctx());
    if (ev.wait) {
        core::EnqueueAndWaitOpts opts;
        if (ev.timeout_ms)
            opts.timeout = std::chrono::milliseconds(*ev.timeout_ms);
        // The request must not outlive the actor: shutting down ends the wait (actor/aborted).
        opts.signal = instance->ctx().actor_abort_signal();
        Result<std::optional<Bytes>> got =
            co_await queue.enqueue_and_wait(std::move(ev.name), std::move(ev.body), opts);
        if (!got.ok() && got.error().is("queue", "timed_out")) {
            result.status = core::QueueSendResult::Status::TimedOut;
        } else if (!got.ok()) {
            ev.reply.send(std::move(got).error());
            co_return;
        } else {
            result.response = std::move(got).value();
        }
    } else {
        Result<core::QueueMessage> sent =
            co_await queue.send(std::move(ev.name), std::move(ev.body));
        if (!sent.ok()) {
            ev.reply.send(std::move(sent).error());
            co_return;
        }
    }
    ev.reply.send(std::move(result));
}

// The run handler, under core's RunHandler region until it returns.
boost::asio::awaitable<void> run_handler(DefinitionPtr def, InstancePtr instance) {
    core::WorkRegion region = instance->ctx().region(core::RegionKind::RunHandler);
    MakeHook make = [def, instance]() { return def->run(instance); };
    Status status = co_await guarded(std::move(make));
    sync_state(*def, instance);
    if (!status.ok() && status.error().is("actor", "aborted"))
        log::debug("actor run handler ended by abort", {{"actor_id", instance->actor_id()}});
    else if (!status.ok())
        log::warn("actor run handler failed",
                  {{"actor_id", instance->actor_id()}, {"error", status.error().to_string()}});
    region.release();
}

// Starts `work` now; it runs inline until its first suspension.
void start(const core::ActorContext& ctx, boost::asio::awaitable<void> work) {
    boost::asio::co_spawn(ctx.executor(), std::move(work), boost::asio::detached);
}

class Loop {
  public:
    Loop(DefinitionPtr def, InstancePtr instance)
        : def_(std::move(def)), inst_(std::move(instance)) {}

    void handle(core::ActorEvent& ev) {
        // A state patched from the inspector since the last event is this event's state.
        if (inst_->adopt_patched_state())
            sync_state(*def_, inst_);
        std::visit([this](auto& e) { serve(e); }, ev);
    }

    boost::asio::any_io_executor executor() const { return ctx().executor(); }

  private:
    const core::ActorContext& ctx() const { return inst_->ctx(); }

    // A synchronous action without reply_after_durable is answered here, before the next event,
    // as its coroutine would have been: it never suspends.
    void serve(event::Action& e) {
        auto found = def_->actions.find(e.name);
        if (found == def_->actions.end()) {
            e.reply.send(errors::actor_action_not_found(e.name));
            return;
        }
        const ActionEntry& entry = found->second;
        if (!entry.invoke_now || entry.options.reply_after_durable) {
            start(ctx(), run_action(def_, inst_, std::move(e), &entry));
            return;
        }
        Result<Bytes> result = call_action_now(entry, inst_, std::move(e.conn), e.args);
        action_done(*def_, inst_, e);
        e.reply.send(std::move(result));
    }

    void serve(event::SerializeState& e) {
        Bytes encoded = inst_->sync_state(false);
        std::vector<core::StateDelta> deltas;
        // An inspector read must not consume the dirty flag, or the next save would skip it.
        const bool inspector = e.reason == core::SerializeStateReason::Inspector;
        if (!inspector)
            ctx().seal_consumed_schedule();  // their effects are in this state
        if (inspector || inst_->take_dirty())
            deltas.push_back(core::StateDelta::actor_state(std::move(encoded)));
        e.reply.send(std::move(deltas));
    }

    void serve(event::ConnectionPreflight& e) {
        MakeHook make;
        if (def_->on_before_connect || def_->create_conn_state)
            // Moved, not copied: an HTTP action makes a connection, so a preflight, per call.
            make = [def = def_, instance = inst_, conn = e.conn, params = std::move(e.params),
                    request = e.request
                                  ? std::make_shared<const Request>(Request{
                                        std::move(e.request->method), std::move(e.request->path),
                                        std::move(e.request->headers), std::move(e.request->body)})
                                  : nullptr]() {
                return preflight(def, instance, conn, params, request);
            };
        hook_or_answer(std::move(make), std::move(e.reply));
    }

    void serve(event::ConnectionOpen& e) {
        hook_or_answer(conn_call(def_->on_connect, e.conn), std::move(e.reply));
    }

    // on_disconnect holds a disconnect-callback region while it runs: the actor does not go to
    // sleep before it finished (what it writes lands first), as upstream's runtime.
    void serve(event::ConnectionClosed& e) {
        MakeHook call = conn_call(def_->on_disconnect, e.conn);
        if (call) {
            auto region = std::make_shared<core::WorkRegion>(
                ctx().region(core::RegionKind::DisconnectCallback));
            call = [call = std::move(call), region]() { return call(); };
            start(ctx(), run_hook(def_, inst_, std::move(call), std::nullopt));
        } else {
            sync_state(*def_, inst_);
        }
    }

    void serve(event::RunGracefulCleanup& e) {
        const Hook& hook =
            e.reason == core::ShutdownKind::Sleep ? def_->on_sleep : def_->on_destroy;
        MakeHook make;
        if (hook)
            make = [hook, instance = inst_]() { return hook(instance); };
        start(ctx(), run_hook(def_, inst_, std::move(make), std::move(e.reply)));
    }

    void serve(event::SubscribeRequest& e) {
        auto declared = def_->events.find(e.event_name);
        if (declared == def_->events.end() || !declared->second) {
            e.reply.send(Status{});
            return;
        }
        start(ctx(), run_subscribe(def_, inst_, std::move(e), declared->second));
    }
    void serve(event::DisconnectConn& e) { e.reply.send(Status{}); }

    void serve(event::HttpRequestEv& e) {
        if (def_->on_request) {
            start(ctx(), run_request(def_, inst_, std::move(e)));
            return;
        }
        core::HttpResponse response;
        response.status = 404;
        response.headers["content-type"] = "text/plain";
        response.body = to_bytes("this actor does not handle raw HTTP requests");
        e.reply.send(std::move(response));
    }
    void serve(event::WebSocketOpen& e) {
        if (def_->on_websocket && e.socket) {
            auto accept = std::make_shared<core::Reply<void>>(std::move(e.reply));
            Request upgrade;
            if (e.request)
                upgrade = Request{std::move(e.request->method), std::move(e.request->path),
                                  std::move(e.request->headers), std::move(e.request->body)};
            start(ctx(), run_websocket(def_, inst_, WebSocket(e.socket, e.conn), std::move(upgrade),
                                       accept));
            if (!accept->answered()) {
                // The hook suspended: the socket is its now.
                accept->send(Status{});
                sync_state(*def_, inst_);
            }
            return;
        }
        e.reply.send(errors::actor_invalid_operation("this actor does not accept raw websockets"));
    }
    void serve(event::QueueSend& e) { start(ctx(), run_queue_send(def_, inst_, std::move(e))); }
    // A typed actor has no workflow: the request is dropped unanswered, which is how core (as
    // upstream's) learns that and reports isWorkflowEnabled false to the inspector.
    void serve(event::WorkflowHistoryRequested&) {}
    void serve(event::WorkflowReplayRequested&) {}

    // Without a hook there is nothing to run: answered here, not by a task spawned for it (an
    // HTTP action opens a connection, so this is per call). The state is still synced, as after
    // any event: a suspended handler (run, an action) may have changed it meanwhile.
    void hook_or_answer(MakeHook make, core::Reply<void> reply) {
        if (!make) {
            sync_state(*def_, inst_);
            reply.send(Status{});
            return;
        }
        start(ctx(), run_hook(def_, inst_, std::move(make), std::move(reply)));
    }

    MakeHook conn_call(const ConnHook& hook, const core::ConnHandle& conn) const {
        if (!hook)
            return {};
        return [hook, instance = inst_, conn]() { return hook(instance, conn); };
    }

    DefinitionPtr def_;
    InstancePtr inst_;
};

// Loads or creates the state and runs the start hooks.
boost::asio::awaitable<Status> prepare(const Definition& def, const InstancePtr& instance,
                                       const core::ActorStart& start_info) {
    std::exception_ptr failure;
    try {
        if (def.on_migrate) {
            boost::asio::awaitable<void> migrated =
                def.on_migrate(instance, !start_info.snapshot.has_value());
            co_await std::move(migrated);
        }
        if (start_info.snapshot && def.stateless) {
            instance->set_saved_state(*start_info.snapshot);
        } else if (start_info.snapshot) {
            auto value = from_cbor(*start_info.snapshot);
            if (!value.ok())
                co_return errors::protocol_invalid_persisted_data("actor state: " +
                                                                  value.error().message());
            instance->load_state(*value);
            instance->set_saved_state(*start_info.snapshot);
        } else {
            Json input = nullptr;
            if (start_info.input) {
                auto decoded = from_cbor(*start_info.input);
                if (!decoded.ok())
                    co_return errors::actor_invalid_request("input: " + decoded.error().message());
                input = std::move(decoded).value();
            }
            {
                boost::asio::awaitable<void> created = def.create_state(instance, input);
                co_await std::move(created);
            }
            Bytes initial = instance->encode_state();
            instance->set_saved_state(initial);
            instance->ctx().set_state_initial(std::move(initial));
            if (def.on_create) {
                boost::asio::awaitable<void> pending = def.on_create(instance, std::move(input));
                co_await std::move(pending);
            }
        }
        {
            boost::asio::awaitable<void> vars = def.create_vars(instance);
            co_await std::move(vars);
        }
        if (def.on_wake) {
            boost::asio::awaitable<void> pending = def.on_wake(instance);
            co_await std::move(pending);
        }
        // A new actor's start-hook changes are part of the first state, which core persists
        // with has_initialized; a woken actor's are saved like any other change.
        if (!start_info.snapshot && instance->touched) {
            Bytes current = instance->sync_state(false);
            (void)instance->take_dirty();
            instance->ctx().set_state_initial(std::move(current));
        } else {
            instance->settle(true);
        }
        // Start-hook changes are not state-change notifications.
        instance->notified_version = instance->state_version();
        co_return Status{};
    } catch (...) {
        failure = std::current_exception();
    }
    co_return error_from_exception(failure);
}

// A started generation, served by wakes instead of a coroutine: what an idle actor keeps is this
// object, subscribed to its event stream. Once its run task handed off to it, the task's state
// owns it, and it finishes that task at the end of the stream.
class Generation final : public rt::detail::Waiter,
                         public std::enable_shared_from_this<Generation> {
  public:
    Generation(DefinitionPtr def, InstancePtr instance, core::ActorEvents ev,
               rt::Handoff<Status> handoff)
        : loop_(std::move(def), std::move(instance)),
          events_(std::move(ev)),
          handoff_(std::move(handoff)) {}
    // Off the stream's wait list before the stream (a member) goes.
    ~Generation() override { unlink(); }

    // From the run task's body: the task's state owns this from now on, and it serves.
    void take_over() {
        if (handoff_.hand_off(shared_from_this()))
            serve();
    }

    // Serves every queued event, then waits for the next; at the end of the stream (or when an
    // event's handler threw, as the generation's coroutine would have) finishes the run task,
    // which destroys this object once the caller lets go of it.
    void serve() {
        try {
            while (auto ev = events_.try_recv())
                loop_.handle(*ev);
        } catch (...) {
            handoff_.finish(rt::Joined<Status>::failed(std::current_exception()));
            return;
        }
        if (events_.ended()) {
            handoff_.finish(rt::Joined<Status>::ok(Status{}));
            return;
        }
        events_.subscribe(*this);
    }

  private:
    // From the stream's sender: serving runs user code, so it is deferred, never run inline.
    void wake() noexcept override {
        rt::defer(loop_.executor(), weak_from_this(), [](const std::shared_ptr<void>& target) {
            static_cast<Generation*>(target.get())->serve();
        });
    }

    Loop loop_;
    core::ActorEvents events_;
    rt::Handoff<Status> handoff_;
};

// The start: the instance, prepare, startup_ready, the run handler; then the event loop takes
// over from this coroutine, whose frames are gone while the actor idles.
boost::asio::awaitable<Status> run_generation(DefinitionPtr def,
                                              std::unique_ptr<core::ActorStart> start_info) {
    InstancePtr instance = def->make_instance();
    instance->bind(start_info->ctx);
    instance->database_disabled = def->options.database == false;
    instance->starting = true;
    Status prepared = co_await prepare(*def, instance, *start_info);
    instance->starting = false;
    if (start_info->startup_ready)
        start_info->startup_ready->send(prepared);
    if (!prepared.ok())
        co_return prepared;
    if (def->run)
        start(instance->ctx(), run_handler(def, instance));
    if (!start_info->handoff)
        co_return errors::internal_error("the actor was started without its run handoff");
    auto generation =
        std::make_shared<Generation>(std::move(def), std::move(instance),
                                     std::move(start_info->events), std::move(*start_info->handoff));
    generation->take_over();
    co_return Status{};
}

}  // namespace

std::shared_ptr<core::ActorFactory> make_factory(std::shared_ptr<const Definition> definition) {
    std::vector<std::string> names;
    for (const auto& [name, entry] : definition->actions)
        names.push_back(name);
    core::ActorConfig config = to_actor_config(definition->options, names);
    config.has_state = !definition->stateless;
    config.connection_events = definition->on_before_connect || definition->create_conn_state ||
                               definition->on_connect || definition->on_disconnect;
    core::ActorEntry entry = [definition](core::ActorStart start_info) {
        return run_generation(definition,
                              std::make_unique<core::ActorStart>(std::move(start_info)));
    };
    return std::make_shared<core::ActorFactory>(
        core::ActorFactory::with_manual_startup_ready(std::move(config), std::move(entry)));
}

}  // namespace rivetkit::detail

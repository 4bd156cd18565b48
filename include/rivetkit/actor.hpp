#pragma once
// rivetkit::Actor<State>: a typed actor definition, upstream's `actor({ state, actions, onWake,
// ... })` in C++.
//
//   struct CounterState { std::int64_t count = 0; };
//   NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CounterState, count)
//
//   auto counter = rivetkit::Actor<CounterState>()
//       .action("increment", [](rivetkit::ActionContext<CounterState>& c, std::int64_t amount) {
//           c.state().count += amount;
//           c.broadcast("newCount", c.state().count);
//           return c.state().count;
//       })
//       .action("getCount", [](rivetkit::ActionContext<CounterState>& c) {
//           return std::as_const(c).state().count;
//       });
//   registry.register_actor("counter", counter.factory());
//
// State is any type with nlohmann to_json/from_json; it is stored as the CBOR of its JSON form
// (a map for a struct, as upstream stores `c.state`). A handler that takes the state mutably has
// changed it when its encoding changed; a trivially copyable state is compared by its bytes
// instead and encoded only for saves (so a pointer or view in it is compared, not what it points
// to). Action parameters after the context are decoded from the client's args array with
// nlohmann `get<T>()` (trailing std::optional parameters may be omitted; integers must be
// integers in range); a mismatch answers actor/validation_error naming the zero-based argument
// position. Results are encoded with nlohmann; a handler may return void, a value, Result<T>, or
// boost::asio::awaitable of those. An action whose parameters are booleans, integers wider than
// a byte, double or std::string (or std::optional of those) reads them straight from the CBOR,
// and a scalar result is written straight to it: the same values and errors, without JSON.
// Handlers must spell out their parameter types (no generic lambdas).
//
// Concurrency: one actor runs on one thread. A synchronous action runs to completion before the
// next event is looked at; a coroutine action runs until it suspends, and other events are
// served meanwhile, as in upstream's JS runtime.

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "rivetkit/context.hpp"
#include "rivetkit/detail/callable.hpp"
#include "rivetkit/detail/definition.hpp"
#include "rivetkit/error.hpp"
#include "rivetkit/options.hpp"
#include "rivetkit/raw.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

template <typename State, typename Vars = NoVars>
class Actor {
  public:
    using Context = ActorContext<State, Vars>;
    using Action = ActionContext<State, Vars>;
    using TypedInstance = detail::Instance<State, Vars>;

    Actor() {
        def_.stateless = std::is_same_v<State, Stateless>;
        def_.make_instance = [] { return std::make_shared<TypedInstance>(); };
        def_.create_vars = [](detail::InstancePtr instance) -> boost::asio::awaitable<void> {
            if constexpr (std::is_default_constructible_v<Vars>)
                typed(std::move(instance))->vars.emplace();
            else
                throw std::logic_error(
                    "Actor: Vars is not default-constructible; call create_vars");
            co_return;
        };
        def_.create_state = [](detail::InstancePtr instance, const Json&) {
            as_typed(*instance).state = State{};
            return done();
        };
    }

    // The first state of every new actor (upstream's `state: {...}`).
    Actor& state(State initial) {
        def_.create_state = [initial = std::move(initial)](detail::InstancePtr instance,
                                                           const Json&) {
            as_typed(*instance).state = initial;
            return done();
        };
        return *this;
    }

    // The first state computed from the actor's input (upstream's `createState`): `State(Input
    // input)`, `State(Context&, Input input)` or `State(Context&)`, any of them returning
    // awaitable<State> instead. Input is decoded from the creation input (null when none was
    // given; take `const Json&` to see it raw). With the context it may use `c.db()`, `c.kv()`
    // and the actor's identity; its state is not there yet.
    template <typename F>
    Actor& create_state(F fn) {
        def_.create_state = [fn = std::move(fn)](detail::InstancePtr instance, Json input) {
            return make_state(fn, std::move(instance), std::move(input));
        };
        return *this;
    }

    // Upstream's `onMigrate`: `(Context&)` or `(Context&, bool is_new)`, returning void or
    // awaitable<void>; runs at every generation start before anything else (before create_state
    // or the saved state is loaded, so `c.state()` is not usable), which makes it the place for
    // the actor database's schema: create_state, on_create, create_vars and on_wake may query it.
    // A throw fails the start.
    template <typename F>
    Actor& on_migrate(F fn) {
        def_.on_migrate = [fn = std::move(fn)](detail::InstancePtr instance, bool is_new) {
            if constexpr (std::is_invocable_v<F&, Context&>)
                return call_hook(fn, std::move(instance));
            else
                return call_hook(fn, std::move(instance), is_new);
        };
        return *this;
    }

    // New actors only, after the state was created: `(Context&)` or `(Context&, const Json&
    // input)`.
    template <typename F>
    Actor& on_create(F fn) {
        def_.on_create = [fn = std::move(fn)](detail::InstancePtr instance, Json input) {
            if constexpr (std::is_invocable_v<F&, Context&>) {
                return call_hook(fn, std::move(instance));
            } else {
                return call_hook(fn, std::move(instance), std::move(input));
            }
        };
        return *this;
    }
    // Every generation start, new or woken, before the first action: `(Context&)`.
    template <typename F>
    Actor& on_wake(F fn) {
        def_.on_wake = hook(std::move(fn));
        return *this;
    }
    // Before sleeping (and before on_destroy's counterpart, destroy): `(Context&)`.
    template <typename F>
    Actor& on_sleep(F fn) {
        def_.on_sleep = hook(std::move(fn));
        return *this;
    }
    template <typename F>
    Actor& on_destroy(F fn) {
        def_.on_destroy = hook(std::move(fn));
        return *this;
    }

    // `(Context&, Params params)`, Params decoded from the connection params; throw (e.g.
    // UserError) to refuse the connection.
    template <typename F>
    Actor& on_before_connect(F fn) {
        using Params =
            std::remove_cvref_t<std::tuple_element_t<1, typename detail::SignatureOf<F>::args>>;
        def_.on_before_connect = [fn = std::move(fn)](detail::InstancePtr instance,
                                                      core::ConnHandle, Json params,
                                                      std::shared_ptr<const Request> request) {
            auto decoded = detail::decode_value<Params>(params);
            if (!decoded.ok())
                throw ErrorException(
                    errors::actor_validation_error("connection params", decoded.error().message()));
            return call_hook_with(std::move(request), fn, std::move(instance),
                                  std::move(decoded).value());
        };
        return *this;
    }
    // Upstream's `createConnState`: `(Context&, Params params) -> ConnState` or `(Context&) ->
    // ConnState`, or `awaitable<ConnState>` of either; run for each new connection after
    // on_before_connect, in the same preflight (bounded by create_conn_state_timeout; a throw
    // refuses the connection, which never becomes visible in conns()). The result is stored as
    // the CBOR of its JSON form in core's connection state (saved with a hibernatable
    // connection's [2] record); read it with `conn.state<ConnState>()`, change it with
    // `conn.set_state(value)`.
    template <typename F>
    Actor& create_conn_state(F fn) {
        def_.create_conn_state =
            [fn = std::move(fn)](
                detail::InstancePtr instance, core::ConnHandle conn, Json params,
                std::shared_ptr<const Request> request) -> boost::asio::awaitable<void> {
            using Args = typename detail::SignatureOf<F>::args;
            using R = typename detail::SignatureOf<F>::result;
            Context c(typed(instance), request.get());
            Json made;
            if constexpr (std::tuple_size_v<Args> == 1) {
                if constexpr (detail::Awaited<R>::is_async) {
                    R pending = fn(c);
                    made = co_await std::move(pending);
                } else {
                    made = fn(c);
                }
            } else {
                using Params = std::remove_cvref_t<std::tuple_element_t<1, Args>>;
                auto decoded = detail::decode_value<Params>(params);
                if (!decoded.ok())
                    throw ErrorException(errors::actor_validation_error("connection params",
                                                                        decoded.error().message()));
                if constexpr (detail::Awaited<R>::is_async) {
                    R pending = fn(c, std::move(decoded).value());
                    made = co_await std::move(pending);
                } else {
                    made = fn(c, std::move(decoded).value());
                }
            }
            conn.set_state(to_cbor(made));
            if (c.touched())
                instance->touched = true;
        };
        return *this;
    }

    // `(Context&, Conn& conn)` once the connection joined / after it left.
    template <typename F>
    Actor& on_connect(F fn) {
        def_.on_connect = conn_hook(std::move(fn));
        return *this;
    }
    template <typename F>
    Actor& on_disconnect(F fn) {
        def_.on_disconnect = conn_hook(std::move(fn));
        return *this;
    }

    // Upstream's `createVars`: `(Context&) -> Vars` (or awaitable<Vars>), run at every generation
    // start (new or woken) after on_create and before on_wake; the vars are never saved. Without
    // it Vars is default-constructed.
    template <typename F>
    Actor& create_vars(F fn) {
        def_.create_vars = [fn = std::move(fn)](detail::InstancePtr instance) {
            return make_vars(fn, std::move(instance));
        };
        return *this;
    }

    // Upstream's `run`: `(Context&) -> awaitable<void>`, started once the actor is ready (after
    // on_wake, every generation) and running beside the events. While it runs core counts a run
    // handler: the actor does not idle-sleep, and a sleep waits for it to return. It must end
    // when `c.abort_signal()` is cancelled (sleep or destroy began): loop on
    // `co_await c.sleep_for(d)` (false once aborted) or check `c.aborted()`. Returning early is
    // allowed (the actor then sleeps normally); a throw is logged. State changes are saved at
    // each sleep_for and when it returns.
    template <typename F>
    Actor& run(F fn) {
        static_assert(detail::Awaited<std::invoke_result_t<F&, Context&>>::is_async,
                      "run returns boost::asio::awaitable<void>");
        def_.run = hook(std::move(fn));
        return *this;
    }

    // Upstream's `onStateChange`: `(Context&, const State& state)`, synchronous, run after an
    // action or hook (connection, request, websocket, sleep/destroy) ended with a state that
    // differs from the last one seen (compared by encoding, as saves are). Not run for the start
    // hooks. It observes: taking the mutable `c.state()` inside it throws ErrorException
    // actor/state_mutation_reentrant (vars may change). An exception is logged and ignored.
    template <typename F>
    Actor& on_state_change(F fn) {
        static_assert(!detail::Awaited<std::invoke_result_t<F&, Context&, const State&>>::is_async,
                      "on_state_change is synchronous");
        def_.on_state_change = [fn = std::move(fn)](detail::InstancePtr instance) {
            auto t = typed(instance);
            Context c(t);
            struct Observing {
                detail::InstanceCore& core;
                explicit Observing(detail::InstanceCore& i) : core(i) {
                    core.in_state_change = true;
                }
                ~Observing() { core.in_state_change = false; }
            } observing(*instance);
            fn(c, std::as_const(t->state));
        };
        return *this;
    }

    // Upstream's `onRequest`, for `/request/...`: `(Context&, const Request& req) -> Response`
    // (or awaitable<Response>). A thrown UserError answers with its structured error, any other
    // exception with the masked core/internal_error (encoded like an action's error).
    template <typename F>
    Actor& on_request(F fn) {
        def_.on_request = [fn = std::move(fn)](
                              detail::InstancePtr instance,
                              Request request) -> boost::asio::awaitable<Response> {
            Context c(typed(instance), &request);
            using R = std::invoke_result_t<F&, Context&, Request&>;
            Response out;
            if constexpr (detail::Awaited<R>::is_async) {
                R pending = fn(c, request);
                out = co_await std::move(pending);
            } else {
                out = fn(c, request);
            }
            if (c.touched())
                instance->touched = true;
            co_return out;
        };
        return *this;
    }

    // Upstream's `onWebSocket`, for `/websocket/...`: `(Context&, WebSocket ws)` or `(Context&,
    // WebSocket ws, const Request& upgrade)` (path after /websocket, headers), returning void or
    // awaitable<void>. The socket is accepted when the hook returns or first suspends, and
    // refused (with the error) when it throws before that; decide before the first co_await. A
    // coroutine hook may serve the socket for its whole life (`while (auto m = co_await
    // ws.recv())`); other events are served meanwhile. A throw after the accept closes the socket
    // with 1011. Returning does not close it (keep a copy in vars to send later).
    template <typename F>
    Actor& on_websocket(F fn) {
        def_.on_websocket = [fn = std::move(fn)](detail::InstancePtr instance, WebSocket socket,
                                                 Request upgrade) {
            auto request = std::make_shared<const Request>(upgrade);
            if constexpr (std::is_invocable_v<F&, Context&, WebSocket&>)
                return call_hook_with(std::move(request), fn, std::move(instance),
                                      std::move(socket));
            else
                return call_hook_with(std::move(request), fn, std::move(instance),
                                      std::move(socket), std::move(upgrade));
        };
        return *this;
    }

    // Declares event `name` (upstream's `events: { name: event({ canSubscribe }) }`) with the
    // check a connection's subscription to it must pass: `(Context&, const Conn& conn) -> bool`
    // (or awaitable<bool>). False refuses the subscription with auth/forbidden: the connection is
    // closed with 1011 "auth.forbidden" and its pending calls fail with that error. The check may
    // change the state (it is saved). Events not declared may be subscribed to by anyone, and
    // broadcasting any name is allowed.
    template <typename F>
    Actor& event(std::string name, F can_subscribe) {
        def_.events.insert_or_assign(std::move(name), conn_check(std::move(can_subscribe)));
        return *this;
    }

    // Declares queue `name`, to which clients may send (POST /queue/{name}, a handle's send).
    // Sends to a name the actor did not declare are answered "completed" and dropped, never
    // enqueued — so an actor that declares no queue takes no messages from clients (as
    // upstream's 2.3.19 runtime). The actor itself may send to any name (c.queue().send).
    Actor& queue(std::string name) {
        def_.queues.insert_or_assign(std::move(name), ConnCheck{});
        return *this;
    }
    // With the check each send must pass: `(Context&, const Conn& sender) -> bool` (or
    // awaitable<bool>), c.request() being the send's HTTP request. False refuses the send with
    // auth/forbidden (HTTP 403).
    template <typename F>
    Actor& queue(std::string name, F can_publish) {
        def_.queues.insert_or_assign(std::move(name), conn_check(std::move(can_publish)));
        return *this;
    }

    // `(Action& c, Args... args) -> R`, R as described above.
    template <typename F>
    Actor& action(std::string name, F fn, ActionOptions options = {}) {
        using Sig = detail::SignatureOf<F>;
        static_assert(std::tuple_size_v<typename Sig::args> >= 1 &&
                          std::is_same_v<std::tuple_element_t<0, typename Sig::args>, Action&>,
                      "an action takes ActionContext<State>& first");
        using Params = typename detail::DropFirst<typename Sig::args>::type;
        detail::ActionEntry entry;
        if constexpr (detail::Awaited<typename Sig::result>::is_async) {
            entry.invoke = [fn = std::move(fn), name](detail::InstancePtr instance,
                                                      std::optional<core::ConnHandle> conn,
                                                      Bytes args) {
                return invoke_action<F, Params>(fn, name, std::move(instance), std::move(conn),
                                                std::move(args));
            };
        } else {
            entry.invoke_now = [fn = std::move(fn), name](detail::InstancePtr instance,
                                                          std::optional<core::ConnHandle> conn,
                                                          BytesView args) {
                return call_action<F, Params>(fn, name, std::move(instance), std::move(conn),
                                              args);
            };
        }
        entry.options = options;
        def_.actions.insert_or_assign(std::move(name), std::move(entry));
        return *this;
    }

    Actor& options(ActorOptions options) {
        def_.options = std::move(options);
        return *this;
    }

    // The core factory to register (CoreRegistry::register_actor). Later builder calls do not
    // change factories already made.
    std::shared_ptr<core::ActorFactory> factory() const {
        return detail::make_factory(std::make_shared<const detail::Definition>(def_));
    }

  private:
    static TypedInstance& as_typed(detail::InstanceCore& instance) {
        return static_cast<TypedInstance&>(instance);
    }
    static std::shared_ptr<TypedInstance> typed(detail::InstancePtr instance) {
        return std::static_pointer_cast<TypedInstance>(std::move(instance));
    }

    static boost::asio::awaitable<void> done() { co_return; }

    template <typename F>
    static boost::asio::awaitable<void> make_state(F fn, detail::InstancePtr instance, Json input) {
        using Args = typename detail::SignatureOf<F>::args;
        constexpr std::size_t arity = std::tuple_size_v<Args>;
        static_assert(arity == 1 || arity == 2,
                      "create_state takes (Input), (Context&, Input) or (Context&)");
        constexpr bool with_context =
            std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, Args>>, Context>;
        auto t = typed(instance);
        Context c(t);
        if constexpr (with_context && arity == 1) {
            using R = std::invoke_result_t<F&, Context&>;
            if constexpr (detail::Awaited<R>::is_async) {
                R pending = fn(c);
                State made = co_await std::move(pending);
                t->state = std::move(made);
            } else {
                t->state = fn(c);
            }
        } else {
            using Input = std::remove_cvref_t<std::tuple_element_t<with_context ? 1 : 0, Args>>;
            auto decoded = detail::decode_value<Input>(input);
            if (!decoded.ok())
                throw ErrorException(
                    errors::actor_invalid_request("input: " + decoded.error().message()));
            if constexpr (with_context) {
                using R = std::invoke_result_t<F&, Context&, Input>;
                if constexpr (detail::Awaited<R>::is_async) {
                    R pending = fn(c, std::move(decoded).value());
                    State made = co_await std::move(pending);
                    t->state = std::move(made);
                } else {
                    t->state = fn(c, std::move(decoded).value());
                }
            } else {
                using R = std::invoke_result_t<F&, Input>;
                if constexpr (detail::Awaited<R>::is_async) {
                    R pending = fn(std::move(decoded).value());
                    State made = co_await std::move(pending);
                    t->state = std::move(made);
                } else {
                    t->state = fn(std::move(decoded).value());
                }
            }
        }
    }

    template <typename F>
    static boost::asio::awaitable<void> make_vars(F fn, detail::InstancePtr instance) {
        auto t = typed(instance);
        if constexpr (std::is_invocable_v<F&>) {
            using R = std::invoke_result_t<F&>;
            if constexpr (detail::Awaited<R>::is_async) {
                R pending = fn();
                Vars made = co_await std::move(pending);
                t->vars.emplace(std::move(made));
            } else {
                t->vars.emplace(fn());
            }
        } else {
            Context c(t);
            using R = std::invoke_result_t<F&, Context&>;
            if constexpr (detail::Awaited<R>::is_async) {
                R pending = fn(c);
                Vars made = co_await std::move(pending);
                t->vars.emplace(std::move(made));
            } else {
                t->vars.emplace(fn(c));
            }
            if (c.touched())
                instance->touched = true;
        }
    }

    // Runs a hook `fn(Context&, extra...)`. Parameters are taken by value: they live in the
    // coroutine frame for as long as a suspended user coroutine may refer to them.
    template <typename F, typename... Extra>
    static boost::asio::awaitable<void> call_hook(F fn, detail::InstancePtr instance,
                                                  Extra... extra) {
        return call_hook_with(nullptr, std::move(fn), std::move(instance), std::move(extra)...);
    }

    // call_hook with `c.request()` set; the request lives in the coroutine frame.
    template <typename F, typename... Extra>
    static boost::asio::awaitable<void> call_hook_with(std::shared_ptr<const Request> request, F fn,
                                                       detail::InstancePtr instance,
                                                       Extra... extra) {
        Context c(typed(instance), request.get());
        using R = std::invoke_result_t<F&, Context&, Extra&...>;
        if constexpr (detail::Awaited<R>::is_async) {
            R pending = fn(c, extra...);
            co_await std::move(pending);
        } else {
            fn(c, extra...);
        }
        if (c.touched())
            instance->touched = true;
    }

    template <typename F>
    static detail::Hook hook(F fn) {
        return [fn = std::move(fn)](detail::InstancePtr instance) {
            return call_hook(fn, std::move(instance));
        };
    }
    using ConnCheck = detail::ConnCheck;
    template <typename F>
    static ConnCheck conn_check(F fn) {
        static_assert(std::is_invocable_v<F&, Context&, const Conn&>,
                      "an access check takes (Context&, const Conn&)");
        return [fn = std::move(fn)](detail::InstancePtr instance, core::ConnHandle handle,
                                    std::shared_ptr<const Request> request)
                   -> boost::asio::awaitable<bool> {
            Context c(typed(instance), request.get());
            const Conn conn(std::move(handle));
            using R = std::invoke_result_t<F&, Context&, const Conn&>;
            bool allowed = false;
            if constexpr (detail::Awaited<R>::is_async) {
                R pending = fn(c, conn);
                allowed = co_await std::move(pending);
            } else {
                allowed = fn(c, conn);
            }
            if (c.touched())
                instance->touched = true;
            co_return allowed;
        };
    }

    template <typename F>
    static detail::ConnHook conn_hook(F fn) {
        return [fn = std::move(fn)](detail::InstancePtr instance, core::ConnHandle handle) {
            return call_hook(fn, std::move(instance), Conn(std::move(handle)));
        };
    }

    static Action action_context(detail::InstancePtr instance,
                                 std::optional<core::ConnHandle> conn) {
        if (!conn)
            return Action(typed(std::move(instance)), std::nullopt);
        return Action(typed(std::move(instance)), Conn(std::move(*conn)));
    }

    // An action's parameters from its args' CBOR: scalar parameters in their plain CBOR form are
    // read without a Json array; any other args go through from_cbor and decode_args (the same
    // values, and the actor/validation_error thrown for a mismatch).
    template <typename Params>
    static Params action_params(const std::string& name, BytesView args) {
        if constexpr (detail::PlainParams<Params>::value) {
            Params params{};
            if (detail::decode_plain_args(args, params))
                return params;
        }
        Result<Json> json = detail::action_args(args);
        if (!json.ok())
            throw ErrorException(std::move(json).error());
        auto decoded = detail::decode_args<Params>(name, *json);
        if (!decoded.ok())
            throw ErrorException(std::move(decoded).error());
        return std::move(decoded).value();
    }

    // A handler's result as CBOR: a scalar written straight, anything else through Json.
    template <typename R>
    static Bytes action_result(R&& r) {
        Bytes out;
        if constexpr (detail::PlainResult<std::remove_cvref_t<R>>::value) {
            out.reserve(16);
            detail::write_plain_result(out, std::forward<R>(r));
        } else {
            out = to_cbor(detail::result_to_json(std::forward<R>(r)));
        }
        return out;
    }

    template <typename F, typename Params>
    static boost::asio::awaitable<Bytes> invoke_action(F fn, std::string name,
                                                       detail::InstancePtr instance,
                                                       std::optional<core::ConnHandle> conn,
                                                       Bytes args) {
        Params params = action_params<Params>(name, args);
        Action context = action_context(instance, std::move(conn));
        using R = typename detail::SignatureOf<F>::result;
        using Value = typename detail::Awaited<R>::type;
        auto start = [&](auto&... a) -> R { return fn(context, std::move(a)...); };
        R pending = std::apply(start, params);
        Bytes out;
        if constexpr (std::is_void_v<Value>) {
            co_await std::move(pending);
            out.push_back(0xf6);
        } else {
            Value value = co_await std::move(pending);
            out = action_result(std::move(value));
        }
        if (context.touched())
            instance->touched = true;
        co_return out;
    }

    // A synchronous action's call on its args' CBOR, answered with the result's CBOR.
    template <typename F, typename Params>
    static Bytes call_action(F fn, const std::string& name, detail::InstancePtr instance,
                             std::optional<core::ConnHandle> conn, BytesView args) {
        Params params = action_params<Params>(name, args);
        Action context = action_context(instance, std::move(conn));
        using R = typename detail::SignatureOf<F>::result;
        auto run = [&](auto&... a) -> R { return fn(context, std::move(a)...); };
        Bytes out;
        if constexpr (std::is_void_v<R>) {
            std::apply(run, params);
            out.push_back(0xf6);
        } else {
            out = action_result(std::apply(run, params));
        }
        if (context.touched())
            instance->touched = true;
        return out;
    }

    detail::Definition def_;
};

}  // namespace rivetkit

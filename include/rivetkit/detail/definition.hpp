#pragma once
// The type-erased actor definition the typed builder fills and the runtime (src/api/runtime.cpp)
// serves. Every handler returns an awaitable (synchronous user handlers finish it without
// suspending), except a synchronous action's ActionEntry::invoke_now. Handlers report failure by
// throwing (ErrorException for structured errors).

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/actor/connection.hpp"
#include "rivetkit/context.hpp"
#include "rivetkit/options.hpp"
#include "rivetkit/raw.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit::core {
class ActorFactory;
}

namespace rivetkit::detail {

using InstancePtr = std::shared_ptr<InstanceCore>;

// One of the two is set: `invoke` for a handler that returns an awaitable, `invoke_now` for one
// that returns its value. The runtime calls the latter inline, with no coroutine of its own. Both
// take the args' CBOR as it came and answer with the result's CBOR: scalar parameters and results
// skip the JSON values in between (detail::decode_plain_args, write_plain_result).
struct ActionEntry {
    std::function<boost::asio::awaitable<Bytes>(InstancePtr, std::optional<core::ConnHandle>,
                                                Bytes args)>
        invoke;
    std::function<Bytes(InstancePtr, std::optional<core::ConnHandle>, BytesView args)> invoke_now;
    ActionOptions options;
};

using Hook = std::function<boost::asio::awaitable<void>(InstancePtr)>;
using InputHook = std::function<boost::asio::awaitable<void>(InstancePtr, Json input)>;
using ConnHook = std::function<boost::asio::awaitable<void>(InstancePtr, core::ConnHandle)>;
using RequestHook = std::function<boost::asio::awaitable<Response>(InstancePtr, Request)>;
using WebSocketHook =
    std::function<boost::asio::awaitable<void>(InstancePtr, WebSocket, Request upgrade)>;
// `request`: the connecting request, if the connection came with one (nullptr otherwise).
using ParamsHook = std::function<boost::asio::awaitable<void>(
    InstancePtr, core::ConnHandle, Json params, std::shared_ptr<const Request> request)>;

// An access check asked for a connection: an event's can_subscribe, a queue's can_publish.
// `request`: the request behind it (a queue send's HTTP request), nullptr when none.
using ConnCheck = std::function<boost::asio::awaitable<bool>(
    InstancePtr, core::ConnHandle, std::shared_ptr<const Request> request)>;

struct Definition {
    ActorOptions options;
    // Actor<Stateless>: core's has_state is false and no snapshot is decoded.
    bool stateless = false;
    // Declared events with their subscription check (empty: none); undeclared events are open.
    std::map<std::string, ConnCheck, std::less<>> events;
    // Declared queues with their publish check (empty: none). Clients may send only to these: a
    // send to another name is answered "completed" and dropped, as upstream does.
    std::map<std::string, ConnCheck, std::less<>> queues;
    std::map<std::string, ActionEntry, std::less<>> actions;
    std::function<InstancePtr()> make_instance;
    // Runs first at every generation start, before the state is created or loaded (upstream's
    // onMigrate); the flag says whether the actor is new. Empty: none.
    std::function<boost::asio::awaitable<void>(InstancePtr, bool is_new)> on_migrate;
    // Sets the first state of a new actor from its input (null when none was given).
    InputHook create_state;
    InputHook on_create;
    Hook on_wake;
    Hook on_sleep;
    Hook on_destroy;
    ParamsHook on_before_connect;
    // Sets the connection's state bytes (after on_before_connect, in the same preflight).
    ParamsHook create_conn_state;
    ConnHook on_connect;
    ConnHook on_disconnect;
    // Makes the generation's vars (after on_create, before on_wake); always set.
    Hook create_vars;
    // Raw HTTP / raw WebSocket; empty: 404 / refused.
    RequestHook on_request;
    WebSocketHook on_websocket;
    // Started once the generation is ready (after on_wake); holds core's RunHandler region.
    Hook run;
    // Synchronous; run after a handler changed the state.
    std::function<void(InstancePtr)> on_state_change;
};

// The core factory that runs `definition` for each actor generation.
std::shared_ptr<core::ActorFactory> make_factory(std::shared_ptr<const Definition> definition);

}  // namespace rivetkit::detail

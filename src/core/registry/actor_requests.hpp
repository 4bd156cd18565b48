#pragma once
// Requests to the actor task that several routes share: an action on a transient connection
// (HTTP /action, the inspector's RPC over HTTP and WebSocket) and the runtime's workflow history
// or replay (the inspector's HTTP routes and WebSocket).

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <optional>
#include <string>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "core/registry/registry.hpp"

namespace rivetkit::rt {
class Clock;
}

namespace rivetkit::core::registry {

struct WorkflowAnswer {
    bool enabled = false;
    std::optional<Bytes> history;  // CBOR
};

// Asks the runtime, holding the actor awake meanwhile. A runtime that drops the request has no
// workflow (upstream infers support the same way).
boost::asio::awaitable<Result<WorkflowAnswer>> ask_workflow(
    std::shared_ptr<CoreRegistry::Instance> instance, bool replay,
    std::optional<std::string> entry_id);

// An action outside a client connection, as upstream runs HTTP actions and inspector RPCs: a
// transient connection made with `options`, the action (CBOR args) through the actor task bounded
// by action_timeout and counted as a user action, then the connection goes away. The CBOR output,
// or the connect/action error.
boost::asio::awaitable<Result<Bytes>> run_transient_action(
    std::shared_ptr<CoreRegistry::Instance> instance, rt::Clock& clock, ConnectOptions options,
    std::string name, Bytes args);

}  // namespace rivetkit::core::registry

#pragma once
// What the inspector's WebSocket and HTTP routes both do through the actor task: ask the runtime
// for its workflow history (or a replay), and run an action as upstream's inspector RPC.

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

// Upstream's inspector RPC: a transient connection, the action (CBOR args) through the actor task
// bounded by action_timeout as HTTP actions are, then the connection goes away. The CBOR output.
boost::asio::awaitable<Result<Bytes>> run_inspector_action(
    std::shared_ptr<CoreRegistry::Instance> instance, rt::Clock& clock, std::string name,
    Bytes args);

}  // namespace rivetkit::core::registry

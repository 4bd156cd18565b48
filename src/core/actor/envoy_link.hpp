#pragma once
// What core needs from the engine connection, as a small interface so core/actor never includes
// src/envoy. The registry adapts the real envoy client to it; tests use a recording double.
//
// Every call is made on the actor's io thread and must not block.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "core/actor/connection.hpp"
#include "runtime/oneshot.hpp"

namespace rivetkit::core {

struct HibernatingRequest {
    GatewayId gateway_id{};
    RequestId request_id{};
    // What the actor persisted about the socket, so a process that never saw it open can
    // re-attach it: the last client message index made durable, the upgrade's path and headers.
    std::uint16_t last_client_index = 0;
    std::string path;
    std::map<std::string, std::string> headers;
};

class EnvoyLink {
  public:
    virtual ~EnvoyLink() = default;

    // Ask the engine to stop this generation; the actual Stop arrives later as a command.
    virtual void sleep_actor(std::string_view actor_id,
                             std::optional<std::uint32_t> generation) = 0;
    virtual void destroy_actor(std::string_view actor_id,
                               std::optional<std::uint32_t> generation) = 0;
    // Sends SetAlarm at once (None clears the alarm); the receiver resolves on the engine's ack.
    virtual rt::OneshotReceiver<Status> set_alarm(std::string_view actor_id,
                                                  std::optional<std::uint32_t> generation,
                                                  std::optional<std::int64_t> alarm_ts) = 0;
    virtual void restore_hibernating_requests(std::string_view actor_id,
                                              std::vector<HibernatingRequest> requests) = 0;
    virtual bool is_hibernating_request_live(std::string_view actor_id, const GatewayId& gateway_id,
                                             const RequestId& request_id) const = 0;
    // HTTP requests in flight for this actor; the actor cannot sleep while any is open.
    virtual std::size_t active_http_request_count(std::string_view actor_id) const = 0;
};

}  // namespace rivetkit::core

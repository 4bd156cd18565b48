#pragma once
// EnvoyCallbacks for tests: records starts and stops, echoes HTTP and WebSocket traffic, and
// wakes waiters on every change so tests wait on events, never on sleeps.

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "envoy/callbacks.hpp"
#include "runtime/clock.hpp"
#include "runtime/notify.hpp"

namespace rivetkit::envoy::testing {

struct WsLog {
    std::vector<std::string> received;
    int hibernations = 0;
    int opens = 0;
    int restores = 0;
    std::vector<std::string> restored_paths;
    std::vector<CloseFrame> closes;
};

class RecordingCallbacks final : public EnvoyCallbacks {
  public:
    std::vector<ActorStart> starts;
    std::vector<ActorStop> stops;
    std::vector<HttpRequest> requests;
    std::shared_ptr<WsLog> ws = std::make_shared<WsLog>();
    std::shared_ptr<rt::Notify> changed = std::make_shared<rt::Notify>();
    int connects = 0;
    int disconnects = 0;
    int shutdowns = 0;
    Status start_result;
    // Asked of the handle while the start is still running (before Running is reported), as a
    // run handler that puts its actor to sleep at once does: "sleep" or "destroy".
    std::string intent_during_start;
    // An alarm set through the handle while the start is still running (as the core's alarm sync
    // does), and what its write resolved to once the start was over.
    std::optional<std::int64_t> alarm_during_start;
    bool alarm_acked_during_start = false;
    std::shared_ptr<std::vector<std::optional<Status>>> alarm_acks =
        std::make_shared<std::vector<std::optional<Status>>>();
    // Sent on every new socket from the open callback, before it returns (a welcome message).
    std::string welcome;
    bool hibernate = false;
    // The listener acks itself (acks_messages): every message except those starting "defer:",
    // which it receives but leaves un-acked, as the registry does for an action that arrives
    // while its actor is entering sleep.
    bool listener_acks = false;
    // Streamed request bodies (stream_request_body): fetch reads the HttpBodyStream piece by
    // piece, each read waiting for a permit on `read_gate` when one is set.
    bool stream_bodies = false;
    std::shared_ptr<rt::Notify> read_gate;
    std::vector<Bytes> body_pieces;
    std::vector<Error> body_errors;
    int fetches_started = 0;
    // Handed to EnvoyHandle::restore_hibernating_requests during every start, as the core does
    // with its persisted connections; `listed_live` records is_hibernating_request_live for each
    // of the start's hibernating requests, asked before that.
    std::vector<HibernatingWebSocketMeta> persisted_sockets;
    std::vector<bool> listed_live;
    // Requests whose liveness on_actor_start also asks for (listed or not), and the answers.
    std::vector<TunnelId> probe_live;
    std::vector<bool> probed_live;

    void on_connect(EnvoyHandle) override;
    void on_disconnect(EnvoyHandle) override;
    boost::asio::awaitable<Status> on_actor_start(EnvoyHandle handle, ActorStart start) override;
    boost::asio::awaitable<Status> on_actor_stop(EnvoyHandle handle, ActorStop stop) override;
    // 200, echoing the body; "/big/<n>" answers n pattern bytes. Headers x-path, x-method,
    // x-body-len describe the request as received.
    boost::asio::awaitable<HttpResponse> fetch(EnvoyHandle handle, HttpRequest request) override;
    bool stream_request_body(const HttpRequest&) override { return stream_bodies; }
    // Echoes every message back as "echo:<text>".
    boost::asio::awaitable<Result<std::shared_ptr<WebSocketListener>>> websocket(
        EnvoyHandle handle, WebSocketOpen open, WebSocketSender sender) override;
    bool can_hibernate(const WebSocketOpen&) override { return hibernate; }
    void on_shutdown() override;

    std::size_t starts_of(const std::string& actor_id) const;
};

// Waits until `pred` holds, re-checking on every `changed` notification; false on timeout.
boost::asio::awaitable<bool> wait_until(rt::Clock& clock, rt::Notify& changed,
                                        std::chrono::milliseconds timeout,
                                        std::function<bool()> pred);

Bytes pattern_bytes(std::size_t n);

// The test handlers' answer: 200 with x-path / x-method / x-body-len, and as body either
// pattern_bytes(N) for a path containing "/big/N" or the request body echoed.
HttpResponse echo_response(const HttpRequest& request);

}  // namespace rivetkit::envoy::testing

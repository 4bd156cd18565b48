#pragma once
// Starting an envoy: the client that hosts actors for a Rivet Engine pool over protocol v8.
//
//   auto handle = envoy::start_envoy(io.get_executor(), clock, config, callbacks);
//   ...
//   handle.shutdown();
//   co_await handle.wait_stopped();
//
// The envoy connects, reconnects with jittered exponential backoff (not after an eviction),
// answers pings, runs start/stop commands through the callbacks and reports events, serves KV
// and tunnel traffic. It lives until shut down or evicted; the handle keeps its state alive.

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "envoy/callbacks.hpp"
#include "envoy/config.hpp"
#include "envoy/handle.hpp"
#include "envoy/transport.hpp"
#include "runtime/clock.hpp"

namespace rivetkit::envoy {

// `clock` must outlive the envoy. `transports` defaults to the Beast WebSocket.
EnvoyHandle start_envoy(boost::asio::any_io_executor executor, rt::Clock& clock, EnvoyConfig config,
                        std::shared_ptr<EnvoyCallbacks> callbacks,
                        std::shared_ptr<TransportFactory> transports = nullptr);

}  // namespace rivetkit::envoy

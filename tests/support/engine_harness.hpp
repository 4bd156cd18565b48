#pragma once
// A real Rivet Engine for integration tests: the pinned binary ($RIVET_ENGINE_BIN) on free
// loopback ports with a fresh data directory, RUST_BACKTRACE=0 (with backtraces the engine
// spends most of its CPU capturing them), started in setup and killed by pid in the destructor —
// also when the test fails. The child gets PR_SET_PDEATHSIG, so even a crashed test process
// leaves no engine behind.
//
// Blocking by design: it runs on the test thread, while the envoy under test runs its own
// io_context thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace rivetkit::testing {

struct EngineOptions {
    // Streaming gateway ("gateway 3"): chunked bodies with credit windows.
    bool gateway_v3 = false;
    std::vector<std::pair<std::string, std::string>> extra_env;
    std::chrono::milliseconds ready_timeout{60'000};
};

struct HttpResult {
    unsigned status = 0;
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    std::optional<std::string> header(std::string_view name) const;
};

// Blocking HTTP/1.1 request to 127.0.0.1:port (Connection: close), bounded by `timeout`.
Result<HttpResult> http_request(std::uint16_t port, std::string method, std::string target,
                                std::string body = {},
                                std::vector<std::pair<std::string, std::string>> headers = {},
                                std::chrono::milliseconds timeout = std::chrono::seconds(30));

// The gateway's query-routed target for the actor `name` got or created with `key` in the
// default namespace and pool (crash policy sleep), then `path`: "/action/increment", "/connect".
std::string gateway_target(std::string_view name, std::string_view key, std::string_view path);

// Loopback ports nobody listens on right now (n distinct ones).
std::uint16_t free_loopback_port();
std::vector<std::uint16_t> free_loopback_ports(std::size_t n);

class EngineHarness {
  public:
    // Starts the engine and waits until GET /health answers 200.
    static Result<std::unique_ptr<EngineHarness>> start(EngineOptions options = {});
    ~EngineHarness();
    EngineHarness(const EngineHarness&) = delete;
    EngineHarness& operator=(const EngineHarness&) = delete;

    std::uint16_t guard_port() const noexcept { return guard_port_; }
    std::string endpoint() const;  // http://127.0.0.1:<guard>
    pid_t pid() const noexcept { return pid_; }
    const std::filesystem::path& root() const noexcept { return root_; }

    // PUT /runner-configs/<pool> for a serverful ("normal") pool in datacenter `default`.
    Status create_pool(const std::string& pool, const std::string& ns = "default");
    // The inspector token an actor stored under its KV key [3], read through the engine's API.
    Result<std::string> inspector_token(const std::string& actor_id,
                                        const std::string& ns = "default");
    // POST /actors; returns the actor id. crash_policy: restart | sleep | destroy.
    Result<std::string> create_actor(const std::string& name, const std::string& key,
                                     const std::string& pool,
                                     const std::string& crash_policy = "sleep",
                                     const std::string& ns = "default");
    Result<HttpResult> api(std::string method, std::string target, std::string body = {});
    // Waits until GET /envoys lists `envoy_key`, i.e. the engine's registration of a connected
    // envoy (including its load-balancer entry) has committed. ToEnvoyInit is sent concurrently
    // with that registration, so an actor created right after it can find no eligible envoy and
    // then waits out the engine's allocation retry backoff. An empty `envoy_key` waits for any
    // envoy (a host whose key the test does not know, such as the TypeScript host).
    Status wait_envoy_registered(const std::string& envoy_key,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                 const std::string& ns = "default");

    // kill -9 and wait for the process.
    void kill_hard();
    // Starts the binary again on the same ports and data directory.
    Status restart();
    // The last `max` bytes of the engine's log, for failure messages.
    std::string log_tail(std::size_t max = 4000) const;

  private:
    EngineHarness() = default;
    Status spawn();
    Status wait_ready();

    EngineOptions options_;
    std::filesystem::path root_;
    std::uint16_t guard_port_ = 0;
    std::uint16_t api_peer_port_ = 0;
    std::uint16_t metrics_port_ = 0;
    pid_t pid_ = -1;
};

}  // namespace rivetkit::testing

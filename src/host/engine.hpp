#pragma once
// The host's view of a Rivet Engine: blocking HTTP to its guard, and — for the no-argument
// default — a local engine process it starts itself (the pinned binary, data under the user's
// data directory) or reuses when one already answers on the endpoint.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "base/result.hpp"

namespace rivetkit::host {

struct Endpoint {
    std::string host;
    std::uint16_t port = 6420;
    std::string text;  // as given, without a trailing slash
};

Result<Endpoint> parse_endpoint(std::string_view url);

struct HttpReply {
    unsigned status = 0;
    std::string body;
};

// One request on a fresh connection (Connection: close), bounded by `timeout`.
Result<HttpReply> http_call(const Endpoint& endpoint, const std::string& method,
                            const std::string& target, const std::string& body,
                            const std::optional<std::string>& token,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

// PUT /runner-configs/<pool> (a serverful pool in datacenter "default"), retried while the
// engine is still coming up. `engine_starting`: the engine was started a moment ago, so a
// missing namespace is retried too (a fresh engine creates `default` only after /health
// answers); otherwise a missing namespace is the user's error and fails at once.
Status ensure_pool(const Endpoint& endpoint, const std::string& ns, const std::string& pool,
                   const std::optional<std::string>& token, bool engine_starting = false);

// True for the engine's 400 {"group":"namespace","code":"not_found"} answer.
bool is_namespace_not_found(const HttpReply& reply);

class LocalEngine {
  public:
    // Starts `binary` with its data in `data_dir`, serving the guard on endpoint's port, and
    // waits until GET /health answers.
    static Result<LocalEngine> start(const std::filesystem::path& binary,
                                     const std::filesystem::path& data_dir,
                                     const Endpoint& endpoint);
    LocalEngine(LocalEngine&& other) noexcept : pid_(other.pid_), log_(std::move(other.log_)) {
        other.pid_ = -1;
    }
    LocalEngine& operator=(LocalEngine&&) = delete;
    ~LocalEngine();
    // SIGTERM, then SIGKILL after `grace`.
    void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
    const std::filesystem::path& log_path() const noexcept { return log_; }

  private:
    LocalEngine(pid_t pid, std::filesystem::path log) : pid_(pid), log_(std::move(log)) {}
    pid_t pid_ = -1;
    std::filesystem::path log_;
};

bool engine_healthy(const Endpoint& endpoint);

// The engine binary to start, first match: `explicit_binary` (HostConfig::engine_binary /
// RIVET_ENGINE_BIN), the one installed with the package (registered by rivetkit/registry.hpp in
// the program's own code), libexec/rivetkit/rivet-engine beside this executable's bin/, and the
// pinned one of the source tree this library was built in. Error host/engine_missing lists the
// places tried and how to get a binary.
Result<std::filesystem::path> find_engine_binary(const std::optional<std::string>& explicit_binary);

// The package's engine path as seen from the program (see registry.hpp); empty forgets it.
// Any thread, any time.
void set_package_engine_binary(std::string path);

// $XDG_DATA_HOME/rivetkit-cpp/engine, else ~/.local/share/rivetkit-cpp/engine.
std::filesystem::path default_engine_data_dir();

}  // namespace rivetkit::host

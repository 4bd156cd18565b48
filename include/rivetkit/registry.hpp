#pragma once
// A program that hosts actors: register them, then run.
//
//   int main(int argc, char** argv) {
//       rivetkit::Registry registry;
//       registry.use("counter", counter());
//       return registry.run(argc, argv);  // until SIGINT/SIGTERM; --help lists every setting
//   }
//
// Configuration comes from the environment as upstream's hosts read it (HostConfig::from_env), or
// from code. Without an endpoint the registry uses a local engine on http://127.0.0.1:6420: the
// one already answering there, or the engine binary started with its data under the user's data
// directory and stopped with the program. The pool's runner config is created when missing.
//
// The host runs one io thread per core by default (HostConfig::threads). Each thread has its own
// engine connection (an envoy in the pool), and the actors the engine starts on that connection
// live on that thread only: nothing on an actor's path is shared between threads or locked. Actor
// definitions are shared by every thread, so what an actor's callbacks capture must be safe to use
// from several threads (captures of immutable data are; a captured counter needs an atomic).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace rivetkit {

namespace core {
class ActorFactory;
}

struct HostConfig {
    // The engine: http(s)://host:port. RIVET_ENDPOINT. Unset: the local engine (see above).
    std::optional<std::string> endpoint;
    // RIVET_TOKEN.
    std::optional<std::string> token;
    // RIVET_NAMESPACE.
    std::string ns = "default";
    // The pool this host serves (upstream's runner name). RIVET_POOL.
    std::string pool = "default";
    // io threads, each with its own engine connection. RIVET_THREADS; 0: one per core.
    unsigned threads = 0;
    // SQLite connections the actors' databases keep open between uses, process-wide, least
    // recently used closed first (a quiet database closes its own after two seconds anyway).
    // Each costs ~22 KB; a database used again after its connection was closed reopens it
    // (~0.1 ms, reading nothing from the engine). RIVET_SQLITE_CONNECTIONS; 0: 16.
    std::size_t sqlite_connections = 0;
    // The engine binary started when no endpoint is given. RIVET_ENGINE_BIN; unset: the one
    // installed with the package (cmake --install puts it in libexec/rivetkit), else the pinned
    // binary of the source tree the library was built in.
    std::optional<std::string> engine_binary;

    // The fields above from their environment variables (unset or empty ones keep the default).
    static HostConfig from_env();
};

// What a running host serves, passed to Registry::on_ready.
struct HostInfo {
    std::string endpoint;
    std::string ns;
    std::string pool;
    unsigned threads = 0;
    std::size_t sqlite_connections = 0;  // the limit in force (HostConfig::sqlite_connections)
    bool local_engine_started = false;   // this program started the engine it uses
};

class RunningHost;

namespace detail {
// Where the package's engine is, as the program's build saw it (find_package(rivetkit) sets
// RIVETKIT_PACKAGE_ENGINE_BIN for programs linking rivetkit::host).
void register_package_engine_binary(const char* path);
}  // namespace detail

#ifdef RIVETKIT_PACKAGE_ENGINE_BIN
namespace {
[[maybe_unused]] const bool rivetkit_package_engine_registered =
    (::rivetkit::detail::register_package_engine_binary(RIVETKIT_PACKAGE_ENGINE_BIN), true);
}  // namespace
#endif

class Registry {
  public:
    Registry();
    ~Registry();
    Registry(Registry&&) noexcept;
    Registry& operator=(Registry&&) noexcept;

    // Registers `actor` (an rivetkit::Actor<…>, or anything with factory()) under `name`, the
    // name clients use.
    template <typename A>
    Registry& use(std::string name, const A& actor) {
        return use_factory(std::move(name), actor.factory());
    }
    Registry& use_factory(std::string name, std::shared_ptr<core::ActorFactory> factory);

    // Called once, from a host thread, when the engine has registered every engine connection
    // (it allocates actors to them from then on).
    Registry& on_ready(std::function<void(const HostInfo&)> callback);
    // A line or two about the program for --help (after the usage line).
    Registry& describe(std::string text);

    // run() with the command line over the environment: --endpoint, --token, --namespace,
    // --pool, --threads, --engine-bin, --log-level, --log-format override the RIVET_* variables;
    // --help prints every option and variable (and the registered actors), --version the
    // versions. Logging is configured from RIVET_LOG_LEVEL / RIVET_LOG_FORMAT (info, logfmt by
    // default: one line per actor start and stop). Exit code as run(), 2 for a bad argument.
    int run(int argc, char** argv);

    // Serves until SIGINT or SIGTERM: the first drains (the engine stops every actor, their state
    // is saved), a second stops at once. Returns the process exit code: 0 after a signal, 1 when
    // the host could not start or an engine connection ended for good, 2 for a bad configuration.
    int run(HostConfig config = HostConfig::from_env());

    // Starts serving and returns at once; the host runs on its own threads until stopped. No
    // signal handling: the caller decides when to stop. Throws rivetkit::ErrorException (error.hpp) when
    // the configuration is invalid or the engine cannot be reached or started.
    RunningHost start(HostConfig config = HostConfig::from_env());

  private:
    struct Actors;
    std::shared_ptr<Actors> actors_;
};

class RunningHost {
  public:
    RunningHost(RunningHost&&) noexcept;
    RunningHost& operator=(RunningHost&&) noexcept;
    // Stops (immediately) and waits if still running.
    ~RunningHost();

    const HostInfo& info() const;
    // Asks every engine connection to stop: drained (actors stopped by the engine, state saved)
    // unless `immediate`. Returns at once; callable from any thread, more than once.
    void stop(bool immediate = false);
    // Blocks until every host thread has ended (after stop(), or when the engine connections
    // ended for good) and stops a local engine this host started. Returns 0 after stop(), 1 when
    // a connection ended without being asked to.
    int wait();

    struct State;

  private:
    friend class Registry;
    explicit RunningHost(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace rivetkit

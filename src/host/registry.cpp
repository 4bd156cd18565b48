// rivetkit::Registry (include/rivetkit/registry.hpp): the engine (given, reused or started), the
// pool, and one shard per io thread — an io_context, a clock, a core registry and an envoy, all
// used by that thread only. Other threads reach a shard only by posting to its io_context.

#include "rivetkit/registry.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "base/version.hpp"
#include "core/registry/registry.hpp"
#include "envoy/envoy.hpp"
#include "host/engine.hpp"
#include "rivetkit_inspector_ui.hpp"
#include "rivetkit/client.hpp"
#include "rivetkit/error.hpp"
#include "runtime/steady_clock.hpp"
#include "sqlite/database.hpp"

namespace rivetkit {

namespace asio = boost::asio;

namespace {

// A whole number from 0 to `max` (a thread count, a connection limit; 0 is the default of
// each). A sign is refused: strtoull would read "-1" as its largest value.
std::optional<unsigned long long> parse_count(const std::string& text, unsigned long long max) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || text.find('-') != std::string::npos || n > max)
        return std::nullopt;
    return n;
}
constexpr unsigned long long kMaxThreads = 1024;
constexpr unsigned long long kMaxSqliteConnections = 1'000'000;

std::optional<std::string> env(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0')
        return std::nullopt;
    return std::string(v);
}

}  // namespace

namespace detail {
void register_package_engine_binary(const char* path) {
    if (path != nullptr && *path != '\0')
        host::set_package_engine_binary(path);
}
}  // namespace detail

HostConfig HostConfig::from_env() {
    HostConfig c;
    c.endpoint = env("RIVET_ENDPOINT");
    c.token = env("RIVET_TOKEN");
    if (auto v = env("RIVET_NAMESPACE"))
        c.ns = *v;
    if (auto v = env("RIVET_POOL"))
        c.pool = *v;
    if (auto v = env("RIVET_THREADS")) {
        if (auto n = parse_count(*v, kMaxThreads))
            c.threads = static_cast<unsigned>(*n);
        else
            log::warn("RIVET_THREADS ignored: not a number from 0 to 1024", {{"value", *v}});
    }
    if (auto v = env("RIVET_SQLITE_CONNECTIONS")) {
        if (auto n = parse_count(*v, kMaxSqliteConnections))
            c.sqlite_connections = static_cast<std::size_t>(*n);
        else
            log::warn("RIVET_SQLITE_CONNECTIONS ignored: not a number from 0 to 1000000",
                      {{"value", *v}});
    }
    c.engine_binary = env("RIVET_ENGINE_BIN");
    return c;
}

struct Registry::Actors {
    std::vector<std::pair<std::string, std::shared_ptr<core::ActorFactory>>> factories;
    std::function<void(const HostInfo&)> on_ready;
    std::string description;
};

Registry::Registry() : actors_(std::make_shared<Actors>()) {}
Registry::~Registry() = default;
Registry::Registry(Registry&&) noexcept = default;
Registry& Registry::operator=(Registry&&) noexcept = default;

Registry& Registry::use_factory(std::string name, std::shared_ptr<core::ActorFactory> factory) {
    actors_->factories.emplace_back(std::move(name), std::move(factory));
    return *this;
}

Registry& Registry::on_ready(std::function<void(const HostInfo&)> callback) {
    actors_->on_ready = std::move(callback);
    return *this;
}

Registry& Registry::describe(std::string text) {
    actors_->description = std::move(text);
    return *this;
}

namespace {

std::string program_name(const char* argv0) {
    std::string_view name = argv0 != nullptr ? argv0 : "rivetkit-host";
    if (auto slash = name.rfind('/'); slash != std::string_view::npos)
        name.remove_prefix(slash + 1);
    return std::string(name);
}

void print_usage(FILE* out, const std::string& program, const std::string& description,
                 const std::vector<std::string>& actors) {
    std::string names;
    for (const auto& a : actors)
        names += (names.empty() ? "" : ", ") + a;
    std::fprintf(
        out,
        "usage: %s [options]\n"
        "%s%s"
        "Actors: %s\n"
        "\n"
        "Options (each overrides its environment variable):\n"
        "  --endpoint URL    RIVET_ENDPOINT    the engine, http(s)://host:port. Unset: a local\n"
        "                                      engine on http://127.0.0.1:6420, reused when one\n"
        "                                      answers there, else started (and stopped at exit)\n"
        "                                      with its data in $XDG_DATA_HOME/rivetkit-cpp/engine\n"
        "  --token T         RIVET_TOKEN       the engine's admin token\n"
        "  --namespace NS    RIVET_NAMESPACE   namespace (default: default)\n"
        "  --pool P          RIVET_POOL        pool this host serves; created if missing\n"
        "                                      (default: default)\n"
        "  --threads N       RIVET_THREADS     io threads, each with its own engine connection\n"
        "                                      (default 0: one per core)\n"
        "  --sqlite-connections N\n"
        "                    RIVET_SQLITE_CONNECTIONS\n"
        "                                      SQLite connections the actors' databases keep\n"
        "                                      open between uses, least recently used closed\n"
        "                                      first (~22 KB each; default 0: 16)\n"
        "  --engine-bin PATH RIVET_ENGINE_BIN  the engine binary to start (default: the one\n"
        "                                      installed with rivetkit-cpp)\n"
        "  --log-level L     RIVET_LOG_LEVEL   trace, debug, info (default), warn, error\n"
        "  --log-format F    RIVET_LOG_FORMAT  logfmt (default) or json\n"
        "  --version         the versions of this host, the engine it targets and the protocol\n"
        "  --help            this text\n"
        "\n"
        "SIGINT or SIGTERM drains (the engine stops every actor, their state is saved), a\n"
        "second one stops at once. Exit status: 0 after a signal, 1 when the host could not\n"
        "start or lost the engine, 2 for a bad argument or configuration.\n",
        program.c_str(), description.c_str(), description.empty() ? "" : "\n", names.c_str());
}

}  // namespace

int Registry::run(int argc, char** argv) {
    log::init_from_env();
    const std::string program = program_name(argc > 0 ? argv[0] : nullptr);
    std::vector<std::string> names;
    for (const auto& [name, _] : actors_->factories)
        names.push_back(name);
    HostConfig config = HostConfig::from_env();
    // A bad argument: said on stderr, exit status 2.
    auto refuse = [&program](const std::string& message) {
        std::fprintf(stderr, "%s: %s\n", program.c_str(), message.c_str());
        return 2;
    };
    for (int i = 1; i < argc; ++i) {
        std::string_view arg(argv[i]);
        if (arg == "--help" || arg == "-h") {
            print_usage(stdout, program, actors_->description, names);
            return 0;
        }
        if (arg == "--version") {
            std::printf("%s: rivetkit-cpp %s (Rivet Engine %s, envoy protocol v%u)\n",
                        program.c_str(), kVersion, kEngineVersion, kEnvoyProtocolVersion);
            return 0;
        }
        static constexpr std::string_view kValued[] = {
            "--endpoint",   "--token",     "--namespace", "--pool",      "--threads",
            "--engine-bin", "--log-level", "--log-format", "--sqlite-connections"};
        if (std::find(std::begin(kValued), std::end(kValued), arg) == std::end(kValued))
            return refuse("unknown argument '" + std::string(arg) + "' (--help lists the options)");
        if (i + 1 >= argc)
            return refuse(std::string(arg) + " needs a value");
        std::string value = argv[++i];
        if (arg == "--endpoint") {
            config.endpoint = value;
        } else if (arg == "--token") {
            config.token = value;
        } else if (arg == "--namespace") {
            config.ns = value;
        } else if (arg == "--pool") {
            config.pool = value;
        } else if (arg == "--engine-bin") {
            config.engine_binary = value;
        } else if (arg == "--sqlite-connections") {
            auto n = parse_count(value, kMaxSqliteConnections);
            if (!n)
                return refuse("--sqlite-connections needs a number from 0 to 1000000");
            config.sqlite_connections = static_cast<std::size_t>(*n);
        } else if (arg == "--log-level") {
            auto level = log::parse_level(value);
            if (!level)
                return refuse("--log-level is one of trace, debug, info, warn, error");
            log::set_level(*level);
        } else if (arg == "--log-format") {
            if (value != "logfmt" && value != "json")
                return refuse("--log-format is logfmt or json");
            log::set_format(value == "json" ? log::Format::json : log::Format::logfmt);
        } else {
            auto n = parse_count(value, kMaxThreads);
            if (!n)
                return refuse("--threads needs a number from 0 to 1024");
            config.threads = static_cast<unsigned>(*n);
        }
    }
    return run(std::move(config));
}

namespace {

// One io thread and everything that runs on it.
class Shard {
  public:
    using Factories = std::vector<std::pair<std::string, std::shared_ptr<core::ActorFactory>>>;
    Shard(unsigned index, const Factories& factories, envoy::EnvoyConfig config)
        : index_(index), config_(std::move(config)) {
        core::registry::RegistryOptions options;
        options.inspector_ui = &inspector_ui::bundle();
        registry_ = std::make_shared<core::registry::CoreRegistry>(io_.get_executor(), clock_,
                                                                   std::move(options));
        for (const auto& [name, factory] : factories)
            registry_->register_actor(name, factory);
        config_.prepopulate_actor_names = registry_->actor_names_metadata();
    }

    // `registered(index)` the first time the engine has registered this shard's connection (it
    // then allocates actors to it); `ended(index)` when the thread is about to end. A held shard
    // opens its connection only on release().
    void start(std::function<void(unsigned)> registered, std::function<void(unsigned)> ended,
               bool held) {
        thread_ = std::thread([this, registered = std::move(registered), ended = std::move(ended),
                               held]() mutable {
            registry_->set_registration_observer([this, registered] {
                if (!announced_) {
                    announced_ = true;
                    registered(index_);
                }
            });
            if (held)
                hold_.emplace(io_.get_executor());
            else
                connect();
            io_.run();
            // A database job's last step touches this io_context after its result was handed
            // over; the io_context lives until no such step is left.
            if (!sqlite::wait_for_workers(std::chrono::seconds(10)))
                log::warn("database workers still busy at host stop", {{"thread", index_}});
            ended(index_);
        });
    }

    // Any thread.
    void release() {
        asio::post(io_, [this] {
            if (hold_ && !stopped_) {
                hold_.reset();
                connect();
            }
        });
    }

    // Any thread.
    void stop(bool immediate) {
        asio::post(io_, [this, immediate] {
            stopped_ = true;
            if (handle_) {
                handle_->shutdown(immediate);
            } else if (hold_) {
                hold_.reset();  // never connected: nothing to drain
                io_.stop();
            }
        });
    }

    void join() {
        if (thread_.joinable())
            thread_.join();
    }

  private:
    void connect() {
        handle_.emplace(envoy::start_envoy(io_.get_executor(), clock_, config_, registry_));
        asio::co_spawn(
            io_,
            [this]() -> asio::awaitable<void> {
                co_await handle_->wait_stopped();
                co_await registry_->wait_idle(std::chrono::seconds(10));
                io_.stop();
            },
            asio::detached);
    }

    unsigned index_;
    bool announced_ = false;  // this thread only
    bool stopped_ = false;    // this thread only
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> hold_;
    envoy::EnvoyConfig config_;
    asio::io_context io_{1};
    rt::SteadyClock clock_{io_.get_executor()};
    std::shared_ptr<core::registry::CoreRegistry> registry_;
    std::optional<envoy::EnvoyHandle> handle_;
    std::thread thread_;
};

}  // namespace

struct RunningHost::State {
    HostInfo info;
    std::optional<host::LocalEngine> engine;
    std::vector<std::unique_ptr<Shard>> shards;
    std::function<void(const HostInfo&)> on_ready;
    std::function<void()> on_ended;  // the last shard ended (set before start, used by run())

    std::mutex mutex;
    std::condition_variable cv;
    unsigned registered = 0;
    unsigned running = 0;
    bool stop_requested = false;
    bool ended_unasked = false;
    bool waited = false;
    int exit_code = 0;

    void shard_registered(unsigned index) {
        if (index == 0) {
            // Engine 2.3.19 caches a pool's config (whether it serves envoys) for 5 s. Connections
            // that register at once on a pool new to envoys can leave that cache saying "no
            // envoys" after the first one's commit, and an actor created then waits for a runner
            // that never comes. So the first connection registers alone, the others after it.
            for (std::size_t i = 1; i < shards.size(); ++i)
                shards[i]->release();
        }
        bool all = false;
        {
            std::lock_guard lock(mutex);
            all = ++registered == shards.size();
        }
        if (all) {
            log::info("host ready", {{"endpoint", info.endpoint},
                                     {"namespace", info.ns},
                                     {"pool", info.pool},
                                     {"threads", info.threads},
                                     {"sqlite_connections", info.sqlite_connections}});
            if (on_ready)
                on_ready(info);
        }
    }

    void shard_ended(unsigned index) {
        bool last = false;
        bool stop_others = false;
        {
            std::lock_guard lock(mutex);
            last = --running == 0;
            if (!stop_requested) {
                // An engine connection that ended on its own: the host does not go on with part of
                // its threads; the others drain and the host reports the failure.
                ended_unasked = true;
                stop_requested = true;
                stop_others = true;
            }
        }
        if (stop_others) {
            log::error("engine connection ended without a stop request; stopping the host",
                       {{"thread", index}});
            for (auto& s : shards)
                s->stop(false);
        }
        if (last) {
            std::function<void()> ended;
            {
                std::lock_guard lock(mutex);
                ended = on_ended;
            }
            cv.notify_all();
            if (ended)
                ended();
        }
    }

    void stop(bool immediate) {
        {
            std::lock_guard lock(mutex);
            stop_requested = true;
        }
        for (auto& s : shards)
            s->stop(immediate);
    }

    int wait() {
        {
            std::unique_lock lock(mutex);
            if (waited)
                return exit_code;
            cv.wait(lock, [&] { return running == 0; });
        }
        for (auto& s : shards)
            s->join();
        if (engine) {
            log::info("stopping local engine", {{"log", engine->log_path().string()}});
            engine->stop();
            engine.reset();
        }
        std::lock_guard lock(mutex);
        waited = true;
        exit_code = ended_unasked ? 1 : 0;
        return exit_code;
    }
};

RunningHost::RunningHost(std::unique_ptr<State> state) : state_(std::move(state)) {}
RunningHost::RunningHost(RunningHost&&) noexcept = default;
RunningHost& RunningHost::operator=(RunningHost&&) noexcept = default;
RunningHost::~RunningHost() {
    if (state_) {
        state_->stop(true);
        state_->wait();
    }
}
const HostInfo& RunningHost::info() const {
    return state_->info;
}
void RunningHost::stop(bool immediate) {
    state_->stop(immediate);
}
int RunningHost::wait() {
    return state_->wait();
}

namespace {

[[noreturn]] void fail(std::string code, std::string message) {
    throw ErrorException(Error("host", std::move(code), std::move(message)));
}

// Everything up to the shards: the engine and the pool. Throws on failure.
std::unique_ptr<RunningHost::State> prepare(const HostConfig& config) {
    auto state = std::make_unique<RunningHost::State>();
    const bool joined = config.endpoint.has_value();
    auto endpoint = host::parse_endpoint(config.endpoint.value_or("http://127.0.0.1:6420"));
    if (!endpoint.ok())
        fail("invalid_endpoint", endpoint.error().message());
    if (!joined && !host::engine_healthy(*endpoint)) {
        auto binary = host::find_engine_binary(config.engine_binary);
        if (!binary.ok())
            fail("engine_missing", binary.error().message());
        const auto data_dir = host::default_engine_data_dir();
        log::info("starting local engine",
                  {{"binary", binary->string()}, {"data_dir", data_dir.string()}});
        auto started = host::LocalEngine::start(*binary, data_dir, *endpoint);
        if (!started.ok())
            fail("engine_start_failed",
                 started.error().message() +
                     " (set RIVET_ENGINE_BIN to a rivet-engine binary, or RIVET_ENDPOINT to a "
                     "running engine)");
        state->engine.emplace(std::move(started).value());
        state->info.local_engine_started = true;
    } else if (!joined) {
        log::info("reusing the engine already running", {{"endpoint", endpoint->text}});
    }
    if (Status pool = host::ensure_pool(
            *endpoint, config.ns, config.pool, config.token,
            // An engine on this machine may have been started a moment ago (by this host or
            // another one); it creates `default` right after it answers /health.
            state->info.local_engine_started || (!joined && config.ns == "default"));
        !pool.ok()) {
        fail("pool_unavailable", "could not create pool '" + config.pool + "': " +
                                     pool.error().to_string());
    }
    state->info.endpoint = endpoint->text;
    state->info.ns = config.ns;
    state->info.pool = config.pool;
    state->info.threads =
        config.threads != 0 ? config.threads : std::max(1u, std::thread::hardware_concurrency());
    state->info.sqlite_connections = config.sqlite_connections != 0
                                         ? config.sqlite_connections
                                         : sqlite::kDefaultReusableConnectionLimit;
    sqlite::set_reusable_connection_limit(state->info.sqlite_connections);

    // Actors calling other actors (rivetkit::client::actor_client) use this host's settings.
    client::ClientConfig peers;
    peers.endpoint = endpoint->text;
    peers.ns = config.ns;
    peers.token = config.token;
    peers.pool = config.pool;
    client::set_host_config(std::move(peers));
    return state;
}

void launch(RunningHost::State& state, const Shard::Factories& factories,
            std::function<void(const HostInfo&)> on_ready, const HostConfig& config) {
    envoy::EnvoyConfig base;
    base.endpoint = state.info.endpoint;
    base.token = config.token;
    base.namespace_name = state.info.ns;
    base.pool_name = state.info.pool;
    for (unsigned i = 0; i < state.info.threads; ++i)
        state.shards.push_back(std::make_unique<Shard>(i, factories, base));
    state.on_ready = std::move(on_ready);
    state.running = state.info.threads;
    for (std::size_t i = 0; i < state.shards.size(); ++i) {
        state.shards[i]->start([&state](unsigned index) { state.shard_registered(index); },
                               [&state](unsigned index) { state.shard_ended(index); }, i != 0);
    }
}

}  // namespace

RunningHost Registry::start(HostConfig config) {
    auto state = prepare(config);
    launch(*state, actors_->factories, actors_->on_ready, config);
    return RunningHost(std::move(state));
}

int Registry::run(HostConfig config) {
    std::unique_ptr<RunningHost::State> state;
    try {
        state = prepare(config);
    } catch (const ErrorException& e) {
        log::error("host could not start", {{"error", e.error().to_string()}});
        return e.error().code() == "invalid_endpoint" ? 2 : 1;
    }
    asio::io_context io;
    asio::signal_set signals(io, SIGINT, SIGTERM);
    state->on_ended = [&io] { asio::post(io, [&io] { io.stop(); }); };
    launch(*state, actors_->factories, actors_->on_ready, config);
    RunningHost host(std::move(state));

    int signals_seen = 0;
    std::function<void(const boost::system::error_code&, int)> on_signal =
        [&](const boost::system::error_code& ec, int signo) {
            if (ec)
                return;
            ++signals_seen;
            const bool immediate = signals_seen > 1;
            log::info("signal received, draining", {{"signal", signo}, {"immediate", immediate}});
            host.stop(immediate);
            signals.async_wait(on_signal);
        };
    signals.async_wait(on_signal);
    io.run();
    const int code = host.wait();
    log::info("rivetkit host exiting", {{"reason", signals_seen > 0 ? "signal" : "engine connection ended"}});
    return signals_seen > 0 ? 0 : (code != 0 ? code : 1);
}

}  // namespace rivetkit

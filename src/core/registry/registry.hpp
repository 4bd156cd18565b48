#pragma once
// CoreRegistry: the actor host behind one envoy. It advertises the registered actor names, runs
// one ActorTask per started actor generation, and serves what the gateway tunnels to an actor:
// the framework HTTP routes (/action, /queue, /health, /metadata, /, /metrics, /inspector) with
// the client protocol's json/cbor/bare encodings, raw /request passthrough, the actor-connect
// WebSocket (/connect), the inspector WebSocket (/inspector/connect) and raw /websocket passthrough.
//
//   auto registry = std::make_shared<CoreRegistry>(io.get_executor(), clock);
//   registry->register_actor("counter", counter_factory);
//   EnvoyConfig config = ...; config.prepopulate_actor_names = registry->actor_names_metadata();
//   auto envoy = envoy::start_envoy(io.get_executor(), clock, config, registry);
//
// Threading: every callback arrives on the envoy's io thread; actors run on that same thread.

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/shared_string.hpp"
#include "core/actor/factory.hpp"
#include "core/registry/encoding.hpp"
#include "core/actor/task.hpp"
#include "core/inspector/ui_bundle.hpp"
#include "envoy/callbacks.hpp"
#include "runtime/clock.hpp"
#include "runtime/notify.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::core::registry {

struct Route;

struct RegistryOptions {
    // Region reported in actor contexts.
    std::string region = "local";
    // The inspector UI served at /inspector/ui/ (rivetkit::inspector_ui::bundle(), linked by the
    // host); null: those paths answer 404.
    const inspector::UiBundle* inspector_ui = nullptr;
};

// Actor key as the engine stores it: parts joined by '/', '\' escapes, "\0" an empty part,
// "/" the empty key.
std::vector<std::string> parse_actor_key(std::string_view serialized);
std::string format_actor_key(const std::vector<std::string>& key);

class CoreRegistry final : public envoy::EnvoyCallbacks,
                           public std::enable_shared_from_this<CoreRegistry> {
  public:
    CoreRegistry(boost::asio::any_io_executor executor, rt::Clock& clock,
                 RegistryOptions options = {});
    ~CoreRegistry() override;

    void register_actor(std::string name, std::shared_ptr<ActorFactory> factory);
    // name → metadata JSON, for EnvoyConfig::prepopulate_actor_names.
    std::vector<std::pair<std::string, std::string>> actor_names_metadata() const;

    // MARK: envoy callbacks
    boost::asio::awaitable<Status> on_actor_start(envoy::EnvoyHandle handle,
                                                  envoy::ActorStart start) override;
    boost::asio::awaitable<Status> on_actor_stop(envoy::EnvoyHandle handle,
                                                 envoy::ActorStop stop) override;
    boost::asio::awaitable<envoy::HttpResponse> fetch(envoy::EnvoyHandle handle,
                                                      envoy::HttpRequest request) override;
    boost::asio::awaitable<Result<std::shared_ptr<envoy::WebSocketListener>>> websocket(
        envoy::EnvoyHandle handle, envoy::WebSocketOpen open,
        envoy::WebSocketSender sender) override;
    bool can_hibernate(const envoy::WebSocketOpen& open) override;
    void on_connect(envoy::EnvoyHandle handle) override;
    void on_disconnect(envoy::EnvoyHandle handle) override;
    void on_registered(envoy::EnvoyHandle handle) override;
    void on_shutdown() override;

    // Called (on the io thread) after an actor generation started (true) or stopped (false).
    void set_actor_observer(std::function<void(const std::string& actor_id, bool running)> observer) {
        actor_observer_ = std::move(observer);
    }
    // Called (on the io thread) whenever the envoy's connection comes up or goes down.
    void set_connection_observer(std::function<void(bool connected)> observer) {
        connection_observer_ = std::move(observer);
    }
    // Called (on the io thread) when the engine has committed a connection's registration
    // (EnvoyCallbacks::on_registered): from then on it allocates actors to this envoy.
    void set_registration_observer(std::function<void()> observer) {
        registration_observer_ = std::move(observer);
    }

    // MARK: introspection (tests, host status)
    std::size_t active_actor_count() const noexcept { return instances_.size(); }
    // Resolves once no actor instance is left (every stop finished, its final save done through
    // the database's worker), or after `bound`. A host awaits it after its engine connection
    // stopped and before its io_context stops, so no actor is left mid-save when the executor
    // its SQLite completions resume on goes away.
    boost::asio::awaitable<void> wait_idle(std::chrono::milliseconds bound);
    std::optional<ActorContext> actor_context(const std::string& actor_id) const;

    // One started generation. Shared by the registry and in-flight requests.
    struct Instance {
        SharedString actor_id;
        std::string name;
        std::uint32_t generation = 0;
        std::string key;  // serialized
        ActorContext ctx;
        std::shared_ptr<ActorFactory> factory;
        rt::Sender<LifecycleCommand> lifecycle;
        rt::Sender<DispatchCommand> dispatch;
        std::optional<rt::JoinHandle<Status>> join;
        std::optional<ShutdownKind> stopping;
        std::size_t http_in_flight = 0;

        ActorSpecifier specifier() const { return {actor_id, generation, key}; }
    };

  private:
    class Link;
    struct Starting;
    template <typename T>
    using Task = boost::asio::awaitable<T>;

    Result<std::shared_ptr<Instance>> admit(const std::string& actor_id) const;
    Task<void> retire_failed_start(Instance& instance);

    // HTTP (http.cpp)
    // `encoding`: the request's x-rivet-encoding, as fetch read it.
    Task<envoy::HttpResponse> serve_http(std::shared_ptr<Instance> instance, HttpRequest request,
                                         Route route, Encoding encoding);
    Task<envoy::HttpResponse> serve_action(std::shared_ptr<Instance> instance,
                                           HttpRequest request, std::string name,
                                           Encoding encoding, Bytes params);
    Task<envoy::HttpResponse> serve_queue(std::shared_ptr<Instance> instance, HttpRequest request,
                                          std::string name, Encoding encoding, Bytes params);
    Task<envoy::HttpResponse> serve_inspector(std::shared_ptr<Instance> instance,
                                              HttpRequest request, Route route);
    Task<envoy::HttpResponse> serve_inspector_authorized(std::shared_ptr<Instance> instance,
                                                         HttpRequest request, Route route);
    std::string render_metrics() const;

    // WebSockets (actor_connect.cpp)
    Task<Result<std::shared_ptr<envoy::WebSocketListener>>> open_actor_connect(
        std::shared_ptr<Instance> instance, envoy::WebSocketOpen open,
        envoy::WebSocketSender sender);
    Task<Result<std::shared_ptr<envoy::WebSocketListener>>> open_raw_websocket(
        std::shared_ptr<Instance> instance, envoy::WebSocketOpen open,
        envoy::WebSocketSender sender);
    // inspector_ws.cpp
    Task<Result<std::shared_ptr<envoy::WebSocketListener>>> open_inspector_websocket(
        std::shared_ptr<Instance> instance, envoy::WebSocketOpen open,
        envoy::WebSocketSender sender);

    boost::asio::any_io_executor executor_;
    rt::Clock& clock_;
    RegistryOptions options_;
    std::map<std::string, std::shared_ptr<ActorFactory>> factories_;
    std::map<SharedString, std::shared_ptr<Instance>, std::less<>> instances_;
    rt::Notify idle_;  // notified when instances_ becomes empty
    std::map<std::string, std::shared_ptr<Starting>> starting_;
    std::shared_ptr<Link> link_;
    std::function<void(bool)> connection_observer_;
    std::function<void()> registration_observer_;
    std::function<void(const std::string&, bool)> actor_observer_;
};

}  // namespace rivetkit::core::registry

#pragma once
// Unit tests for your actors: no engine, no network, no threads of your own — and time that only
// moves when the test says so.
//
//   rivetkit::testing::TestEngine engine;
//   engine.use("counter", counter());
//   auto counter = engine.get_or_create("counter", {"room-1"});
//   EXPECT_EQ(counter.call<std::int64_t>("increment", 5).value(), 5);
//   engine.advance(std::chrono::seconds(60));    // timers, schedules and sleep run as due
//   counter.sleep();                              // the engine's Stop(Sleep): state saved
//   EXPECT_EQ(counter.call<std::int64_t>("getCount").value(), 5);  // woken from its saved bytes
//
// TestEngine stands in for the Rivet Engine: it keeps each actor's KV (and SQLite pages) in
// memory, starts an actor on its first call, delivers alarms (waking a sleeping actor), and
// carries out the actor's sleep and destroy requests. The actors run through the same core as on
// the real engine (rivetkit-host), on a virtual clock: `advance(d)` runs everything that falls due
// within `d`, in order; a call that waits on a timer (an action that sleeps, a queue receive with
// a timeout) moves the clock to that timer by itself. Calls run synchronously: each returns once
// the actor answered. Actions and connections look like the client's (rivetkit/client.hpp):
// `action`, `call<T>`, `connect`, `on`.
//
// Faults: a KV write that fails (`fail_kv_writes`), a crash between two saves (`crash()`: like
// kill -9, only what was saved survives), and a lost reply (`lose_next_reply()`: the action runs,
// the caller never hears back).
//
// One TestEngine per test, used from one thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rivetkit/error.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit::core {
class ActorFactory;
}

namespace rivetkit::testing {

using Key = std::vector<std::string>;

namespace detail {
struct EngineState;
struct ConnectionState;
}  // namespace detail


// A connection to an actor (the client's Connection): actions from it, the events it receives.
class TestConnection {
  public:
    using EventHandler = std::function<void(const Json& args)>;

    ~TestConnection();
    TestConnection(const TestConnection&) = delete;
    TestConnection& operator=(const TestConnection&) = delete;

    // Subscribes to `event` (for the first listener) and calls `handler` with each one's
    // arguments (the array the actor broadcast).
    std::uint64_t on(std::string event, EventHandler handler);
    void off(std::uint64_t listener);
    // Every event of this name received so far, oldest first (needs a listener or subscribe()).
    std::vector<Json> events(std::string_view event) const;
    // Subscribes without a handler (events() collects them). A subscription the actor refuses
    // (an event's can_subscribe) closes the connection, as a real client's: its later calls fail
    // with the refusal's error (auth/forbidden).
    void subscribe(std::string event);

    Result<Json> action(std::string name, Json args = Json::array());
    template <typename T, typename... Args>
    Result<T> call(std::string name, const Args&... args) {
        return result_as<T>(action(std::move(name), Json::array({Json(args)...})));
    }

    // Open until dispose(), the actor disconnects it, or the actor stops (a connection does not
    // survive sleep here; connections that hibernate are the real engine's business).
    bool is_open() const;
    const std::string& id() const;
    // Closes it (the actor's on_disconnect runs). Idempotent.
    void dispose();

  private:
    friend class TestActor;
    explicit TestConnection(std::shared_ptr<detail::ConnectionState> state);
    std::shared_ptr<detail::ConnectionState> state_;
};

// An actor by name and key (the client's ActorHandle). Cheap to copy.
class TestActor {
  public:
    const std::string& name() const noexcept { return name_; }
    const Key& key() const noexcept { return key_; }
    // The actor's id (created on first use).
    std::string id() const;

    // A stateless action, as over HTTP (a connection made for the call and closed after it).
    // Wakes the actor when it sleeps; actor/not_found once it was destroyed.
    Result<Json> action(std::string name, Json args = Json::array()) const;
    template <typename T, typename... Args>
    Result<T> call(std::string name, const Args&... args) const {
        return result_as<T>(action(std::move(name), Json::array({Json(args)...})));
    }
    // A connection with `params` (what on_before_connect and create_conn_state receive).
    Result<std::shared_ptr<TestConnection>> connect(Json params = nullptr) const;
    // Raw HTTP to on_request ("/request" stripped, as the actor sees it).
    struct HttpResponse {
        std::uint16_t status = 0;
        std::vector<std::pair<std::string, std::string>> headers;
        std::string body;
    };
    Result<HttpResponse> fetch(std::string method, std::string path, std::string body = {},
                               std::vector<std::pair<std::string, std::string>> headers = {}) const;
    // Sends `body` to the actor's queue `queue` (as POST /queue/{queue}); with `wait`, returns
    // once the actor completed the message, with its response.
    Result<Json> send(std::string queue, Json body, bool wait = false) const;

    // The engine puts the actor to sleep (Stop with reason sleep): it saves its state, and the
    // next call starts it again from what was saved.
    Status sleep() const;
    // The engine destroys the actor: on_destroy runs, its KV is deleted; calls then fail with
    // actor/not_found.
    Status destroy() const;
    // The process dies (kill -9): no hook runs and nothing more is written. Whatever the actor
    // had not saved is gone; the next call starts it from its saved bytes.
    void crash() const;
    // The next action on this actor (stateless or from a connection) runs, but its reply is
    // lost: the caller gets client/reply_lost, as a client whose connection dropped would.
    void lose_next_reply() const;

    bool awake() const;
    bool destroyed() const;
    // The actor's state as last saved (decoded from its persisted bytes); nullopt before the
    // first save or for an actor without state.
    std::optional<Json> saved_state() const;
    template <typename T>
    std::optional<T> saved_state_as() const {
        auto j = saved_state();
        if (!j)
            return std::nullopt;
        return j->template get<T>();
    }
    // The wall-clock time (ms) of the alarm the actor asked the engine for, if any.
    std::optional<std::int64_t> alarm_at_ms() const;

  private:
    friend class TestEngine;
    TestActor(std::shared_ptr<detail::EngineState> engine, std::string name, Key key);
    std::shared_ptr<detail::EngineState> engine_;
    std::string name_;
    Key key_;
};

class TestEngine {
  public:
    struct Options {
        // The actors' wall clock at the start (ms since the epoch); moves with virtual time.
        std::int64_t wall_start_ms = 1'700'000'000'000;
    };

    TestEngine();
    explicit TestEngine(Options options);
    // Stops every awake actor (as a sleep) before going.
    ~TestEngine();
    TestEngine(const TestEngine&) = delete;
    TestEngine& operator=(const TestEngine&) = delete;

    template <typename A>
    TestEngine& use(std::string name, const A& actor) {
        return use_factory(std::move(name), actor.factory());
    }
    TestEngine& use_factory(std::string name, std::shared_ptr<core::ActorFactory> factory);

    // The actor `name` with `key`, created (with `input`) on its first call.
    TestActor get_or_create(std::string name, Key key = {},
                            std::optional<Json> input = std::nullopt);

    // Moves virtual time by `d`, running everything due on the way: state saves, schedules and
    // alarms (a sleeping actor wakes for its alarm), idle actors going to sleep.
    void advance(std::chrono::milliseconds d);
    // Runs what is ready without moving time.
    void run_until_idle();
    // The actors' wall clock (ms since the epoch).
    std::int64_t now_ms() const;

    // The next `count` KV writes (by any actor) fail with kv/injected_failure.
    void fail_kv_writes(std::size_t count = 1);
    // KV writes made so far (puts, deletes and batches of them, each counted once).
    std::size_t kv_writes() const;

  private:
    std::shared_ptr<detail::EngineState> state_;
};

}  // namespace rivetkit::testing

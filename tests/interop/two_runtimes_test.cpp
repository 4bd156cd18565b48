// One pool, two runtimes: the `vault` actor moves between upstream's TypeScript host (rivetkit
// 2.3.19, tests/interop/js/ts_host.mjs) and rivetkit-cpp (rivetkit::Registry with the C++ twin
// below) on one engine, with nothing lost in either direction. The official client
// (tests/interop/js/two_runtimes.mjs) writes through one host and reads through the other, in
// json, cbor and bare: state, user KV, a queue message left waiting, a row in the actor's own
// SQLite table, an action scheduled on one host that fires on the other, and the inspector token
// the dashboard reads. Each host is stopped the way an operator does (SIGTERM / stop()), so its
// actors sleep with their state saved, and the next one takes the pool over.

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <set>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/actor/keys.hpp"
#include "core/actor/persist.hpp"
#include "counter/counter.hpp"
#include "engine_harness.hpp"
#include "live_envoy.hpp"
#include "rivetkit/registry.hpp"
#include "rivetkit/rivetkit.hpp"
#include "rivetkit/sqlite.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct VaultState {
    std::int64_t count = 0;
    std::int64_t reminded = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VaultState, count, reminded)

using VaultAction = ActionContext<VaultState>;
using Task = boost::asio::awaitable<Json>;

boost::asio::awaitable<std::shared_ptr<Database>> notes_db(VaultAction& c) {
    std::shared_ptr<Database> db = co_await c.db();
    std::string create = "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)";
    (co_await db->exec(create)).value();
    co_return db;
}

// The C++ twin of ts_host.mjs's `vault`.
Actor<VaultState> vault_actor() {
    ActorOptions options;
    options.database = true;
    return Actor<VaultState>()
        .options(options)
        .action("increment", [](VaultAction& c, std::int64_t n) { return c.state().count += n; })
        .action("getCount", [](VaultAction& c) { return std::as_const(c).state().count; })
        .action("kvPut",
                [](VaultAction& c, std::string key, std::string value) -> Task {
                    (co_await c.kv().put(to_bytes(key), to_bytes(value))).value();
                    co_return Json(nullptr);
                })
        .action("kvGet",
                [](VaultAction& c, std::string key) -> Task {
                    auto value = (co_await c.kv().get(to_bytes(key))).value();
                    if (!value)
                        co_return Json(nullptr);
                    co_return Json(std::string(value->begin(), value->end()));
                })
        .action("enqueue",
                [](VaultAction& c, Json body) -> Task {
                    co_await c.queue().send("jobs", std::move(body));
                    co_return Json(nullptr);
                })
        .action("takeJobs",
                [](VaultAction& c) -> Task {
                    QueueReceiveOptions opts;
                    opts.names = {"jobs"};
                    opts.count = 100;
                    auto messages = co_await c.queue().try_next_batch(opts);
                    Json bodies = Json::array();
                    for (const auto& m : messages)
                        bodies.push_back(m.body);
                    co_return bodies;
                })
        .action("remindIn",
                [](VaultAction& c, std::int64_t ms) {
                    c.schedule_after(std::chrono::milliseconds(ms), "remind");
                })
        .action("remind", [](VaultAction& c) { return c.state().reminded += 1; })
        .action("getReminded", [](VaultAction& c) { return std::as_const(c).state().reminded; })
        .action("note",
                [](VaultAction& c, std::string text) -> Task {
                    auto db = co_await notes_db(c);
                    std::vector<SqlValue> params{SqlValue(std::move(text))};
                    std::string insert = "INSERT INTO notes (text) VALUES (?)";
                    (co_await db->run(insert, params)).value();
                    co_return Json(nullptr);
                })
        .action("notes",
                [](VaultAction& c) -> Task {
                    auto db = co_await notes_db(c);
                    std::string select = "SELECT text FROM notes ORDER BY id";
                    auto rows = (co_await db->query(select)).value();
                    Json out = Json::array();
                    for (const auto& row : rows.rows)
                        out.push_back(sql_value_to_json(row.at(0)));
                    co_return out;
                })
        .action("goToSleep", [](VaultAction& c) { c.sleep(); });
}

class TwoRuntimes : public ::testing::Test {
  protected:
    void SetUp() override {
        auto engine = EngineHarness::start();
        ASSERT_TRUE(engine.ok()) << engine.error().to_string();
        engine_ = std::move(engine).value();
        ASSERT_TRUE(engine_->create_pool("default").ok());
    }

    void start_ts_host() {
        auto host = ChildProcess::spawn(
            {node_binary(), std::string(RIVETKIT_INTEROP_JS_DIR) + "/ts_host.mjs"},
            {{"RIVET_ENDPOINT", engine_->endpoint()}, {"RIVET_LOG_LEVEL", "warn"}});
        ASSERT_TRUE(host.ok()) << host.error().to_string();
        ts_host_ = std::move(host).value();
        ASSERT_TRUE(ts_host_->wait_for_stdout("ready", 60s))
            << ts_host_->err() << engine_->log_tail();
        // See ClientOnTsHost: "ready" can precede the engine's committed registration.
        ASSERT_TRUE(engine_->wait_envoy_registered("").ok()) << engine_->log_tail();
    }
    void stop_ts_host() {
        ts_host_->signal(SIGTERM);
        EXPECT_TRUE(ts_host_->wait(60s).has_value()) << tail(ts_host_->err());
        ts_host_.reset();
    }
    void start_cpp_host() {
        cpp_registry_ = std::make_unique<Registry>();
        cpp_registry_->use("vault", vault_actor());
        cpp_registry_->use("counter", examples::counter_actor());
        HostConfig config;
        config.endpoint = engine_->endpoint();
        cpp_host_ = std::make_unique<RunningHost>(cpp_registry_->start(config));
    }
    void stop_cpp_host() {
        cpp_host_->stop();
        EXPECT_EQ(cpp_host_->wait(), 0);
        cpp_host_.reset();
        cpp_registry_.reset();
    }

    // One run of two_runtimes.mjs; its result line.
    json phase(const std::string& name, const std::string& encoding, std::vector<std::string> extra,
               std::string key = {}) {
        std::vector<std::string> args{name, "--encoding", encoding, "--key",
                                      key.empty() ? "vault-" + encoding : key};
        args.insert(args.end(), extra.begin(), extra.end());
        auto run = run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/two_runtimes.mjs",
                                     std::move(args), engine_->endpoint(), std::chrono::minutes(3));
        EXPECT_EQ(run.failure, "")
            << (ts_host_ ? "\nts host: " + tail(ts_host_->err(), 4000) : std::string{});
        return run.result;
    }

    std::unique_ptr<EngineHarness> engine_;
    std::unique_ptr<ChildProcess> ts_host_;
    std::unique_ptr<Registry> cpp_registry_;
    std::unique_ptr<RunningHost> cpp_host_;
};

const std::vector<std::string> kEncodings{"json", "cbor", "bare"};

// An older host: writes the vault actor's records in the KV layout (actor-persist v4 values under
// [1], [3], [4]+key, [5,1,1], [5,1,2]+id) into the actor's engine KV when the actor starts.
class LegacyKvHost final : public envoy::EnvoyCallbacks {
  public:
    // Actors whose key is in `corrupt` get an undecodable [1] record instead.
    std::set<std::string> corrupt;

    boost::asio::awaitable<Status> on_actor_start(envoy::EnvoyHandle handle,
                                                  envoy::ActorStart start) override {
        core::PersistedActor actor;
        actor.has_initialized = true;
        auto state = json::to_cbor(json{{"count", 7}, {"reminded", 0}});
        actor.state = Bytes(state.begin(), state.end());
        core::PersistedQueueMessage message;
        message.name = "jobs";
        auto body = json::to_cbor(json{{"n", 9}});
        message.body = Bytes(body.begin(), body.end());
        message.created_at = 1'700'000'000'000;
        std::vector<envoy::KvEntry> entries;
        const bool bad = corrupt.contains(start.config.key.value_or(""));
        entries.push_back({core::keys::to_bytes(core::keys::kPersistData),
                           bad ? Bytes{0x04, 0x00, 0xff, 0xff} : core::encode_persisted_actor(actor)});
        entries.push_back({core::keys::to_bytes(core::keys::kInspectorToken),
                           to_bytes("legacy-token")});
        entries.push_back({core::keys::user_key(to_bytes("greeting")), to_bytes("hello-legacy")});
        entries.push_back({core::keys::to_bytes(core::keys::kQueueMetadata),
                           core::encode_queue_metadata({4, 1})});
        entries.push_back({core::keys::queue_message_key(3), core::encode_queue_message(message)});
        Status put = co_await handle.kv_put(start.actor_id, std::move(entries));
        {
            std::lock_guard lock(mutex_);
            written_ += put.ok() ? 1 : 0;
            generations_[start.actor_id] = start.generation;
        }
        cv_.notify_all();
        co_return put;
    }
    boost::asio::awaitable<Status> on_actor_stop(envoy::EnvoyHandle, envoy::ActorStop) override {
        {
            std::lock_guard lock(mutex_);
            ++stopped_;
        }
        cv_.notify_all();
        co_return Status{};
    }
    boost::asio::awaitable<envoy::HttpResponse> fetch(envoy::EnvoyHandle,
                                                      envoy::HttpRequest) override {
        envoy::HttpResponse r;
        r.status = 503;
        co_return r;
    }
    boost::asio::awaitable<Result<std::shared_ptr<envoy::WebSocketListener>>> websocket(
        envoy::EnvoyHandle, envoy::WebSocketOpen, envoy::WebSocketSender) override {
        co_return Error("test", "no_websockets", "the legacy host serves no sockets");
    }

    template <typename Pred>
    bool wait(Pred pred) {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, 60s, [&] { return pred(*this); });
    }
    int written_ = 0;
    int stopped_ = 0;
    std::map<std::string, std::uint32_t> generations_;

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
};

TEST_F(TwoRuntimes, AnActorMovesFromTheTypeScriptHostToCppAndBackWithNothingLost) {
    std::map<std::string, json> written;

    // Round 1 on the TypeScript host.
    start_ts_host();
    for (const auto& enc : kEncodings) {
        json w = phase("write", enc, {"--round", "1", "--remindMs", "6000"});
        EXPECT_EQ(w["count"], 5) << enc << w.dump();
        EXPECT_TRUE(w["token"].is_string() && !w["token"].get<std::string>().empty()) << w.dump();
        written[enc] = w;
    }
    stop_ts_host();

    // rivetkit-cpp takes the pool over: it reads what the TypeScript host wrote, and the
    // reminder set there fires here.
    start_cpp_host();
    for (const auto& enc : kEncodings) {
        SCOPED_TRACE(enc);
        json r = phase("read", enc, {"--reminders", "1"});
        EXPECT_EQ(r["actorId"], written[enc]["actorId"]) << r.dump();
        EXPECT_EQ(r["count"], 5) << r.dump();
        EXPECT_EQ(r["greeting"], "hello-1") << r.dump();
        EXPECT_EQ(r["jobs"], json::array({json{{"n", 1}}})) << r.dump();
        EXPECT_EQ(r["notes"], json::array({"note-1"})) << r.dump();
        EXPECT_EQ(r["reminded"], 1) << r.dump();
        EXPECT_EQ(r["token"], written[enc]["token"]) << r.dump();
        json w = phase("write", enc, {"--round", "2", "--remindMs", "6000"});
        EXPECT_EQ(w["count"], 10) << w.dump();
    }
    stop_cpp_host();

    // And back: the TypeScript host reads what rivetkit-cpp wrote.
    start_ts_host();
    for (const auto& enc : kEncodings) {
        SCOPED_TRACE(enc);
        json r = phase("read", enc, {"--reminders", "2"});
        EXPECT_EQ(r["count"], 10) << r.dump();
        EXPECT_EQ(r["greeting"], "hello-2") << r.dump();
        EXPECT_EQ(r["jobs"], json::array({json{{"n", 2}}})) << r.dump();
        EXPECT_EQ(r["notes"], json::array({"note-1", "note-2"})) << r.dump();
        EXPECT_EQ(r["reminded"], 2) << r.dump();
        EXPECT_EQ(r["token"], written[enc]["token"]) << r.dump();
    }
    stop_ts_host();
}

// An actor an older host stored in the KV layout is imported into SQLite on its first start here
// (the real engine's actor KV, read through the envoy), then served: state, user KV, the queue
// message left waiting, the inspector token. One whose record cannot be decoded fails closed: it
// does not start as if new, the error names it, its legacy record is left as it was, and the host
// goes on serving the others.
TEST_F(TwoRuntimes, AnActorStoredInTheLegacyKvLayoutIsImportedOnItsFirstStart) {
    auto legacy = std::make_shared<LegacyKvHost>();
    legacy->corrupt = {"vault-corrupt"};
    std::map<std::string, std::string> ids;
    {
        envoy::EnvoyConfig config;
        config.endpoint = engine_->endpoint();
        config.pool_name = "default";
        config.prepopulate_actor_names = {{"vault", "{}"}};
        envoy::testing::LiveEnvoy old_host(config, legacy);
        ASSERT_TRUE(engine_->wait_envoy_registered(old_host.handle().envoy_key()).ok());
        for (const std::string key : {"vault-legacy", "vault-corrupt"}) {
            auto id = engine_->create_actor("vault", key, "default");
            ASSERT_TRUE(id.ok()) << id.error().to_string();
            ids[key] = *id;
        }
        ASSERT_TRUE(legacy->wait([](const LegacyKvHost& h) { return h.written_ == 2; }))
            << engine_->log_tail();
        for (const auto& [key, id] : ids) {
            const std::uint32_t generation = legacy->generations_[id];
            old_host.run([h = old_host.handle(), actor = id, generation]() -> boost::asio::awaitable<bool> {
                h.sleep_actor(actor, generation);
                co_return true;
            });
        }
        ASSERT_TRUE(legacy->wait([](const LegacyKvHost& h) { return h.stopped_ == 2; }));
    }
    start_cpp_host();
    json r = phase("read", "cbor", {}, "vault-legacy");
    EXPECT_EQ(r["count"], 7) << r.dump();
    EXPECT_EQ(r["greeting"], "hello-legacy") << r.dump();
    EXPECT_EQ(r["jobs"], json::array({json{{"n", 9}}})) << r.dump();
    EXPECT_EQ(r["notes"], json::array()) << r.dump();
    EXPECT_EQ(r["token"], "legacy-token") << r.dump();
    // Served from SQLite from now on.
    json w = phase("write", "cbor", {"--round", "2", "--remindMs", "600000"}, "vault-legacy");
    EXPECT_EQ(w["count"], 12) << w.dump();

    // The corrupt one: an action fails (the actor never started), and [1] is what the old host wrote.
    auto failed = http_request(engine_->guard_port(), "POST",
                               "/gateway/" + ids["vault-corrupt"] + "/action/getCount",
                               R"({"args":[]})", {{"content-type", "application/json"}});
    ASSERT_TRUE(failed.ok()) << failed.error().to_string();
    EXPECT_NE(failed->status, 200u) << failed->body;
    auto record = engine_->api("GET", "/actors/" + ids["vault-corrupt"] + "/kv/keys/AQ%3D%3D?namespace=default");
    ASSERT_TRUE(record.ok());
    EXPECT_EQ(json::parse(record->body, nullptr, false).value("value", std::string{}), "BAD//w==")
        << record->body;
    // And the host still serves the healthy actor.
    json again = phase("read", "cbor", {}, "vault-legacy");
    EXPECT_EQ(again["count"], 12) << again.dump();
    stop_cpp_host();
}

// A hibernatable connection of the official client opened against one runtime keeps working,
// with the same connection id and no reconnect, after the other runtime took the pool over (the
// example counter on both; tests/interop/js/host_restart.mjs holds the connection across the
// hand-over), in both directions.
TEST_F(TwoRuntimes, AHibernatableConnectionSurvivesTheHandOverInBothDirections) {
    struct Direction {
        std::string name;
        bool ts_first;
        std::string encoding;
    };
    for (const Direction& d : {Direction{"ts-to-cpp", true, "bare"},
                               Direction{"cpp-to-ts", false, "json"}}) {
        SCOPED_TRACE(d.name);
        if (d.ts_first)
            start_ts_host();
        else
            start_cpp_host();
        auto client = ChildProcess::spawn(
            {node_binary(), std::string(RIVETKIT_INTEROP_JS_DIR) + "/host_restart.mjs",
             "conn-survives-restart", "--encoding", d.encoding, "--key", "hib-" + d.name,
             "--timeout", "150"},
            {{"RIVET_ENDPOINT", engine_->endpoint()}});
        ASSERT_TRUE(client.ok()) << client.error().to_string();
        auto& node = **client;
        ASSERT_TRUE(node.wait_for_stdout("\"ready\":true", 60s)) << node.out() << node.err();
        if (d.ts_first) {
            stop_ts_host();
            start_cpp_host();
        } else {
            stop_cpp_host();
            start_ts_host();
        }
        node.signal(SIGUSR2);
        ASSERT_EQ(node.wait(120s), std::optional<int>(0)) << node.out() << node.err();
        const std::string& out = node.out();
        auto last = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
        json r = json::parse(out.substr(last == std::string::npos ? 0 : last + 1), nullptr, false);
        ASSERT_FALSE(r.is_discarded()) << out;
        ASSERT_EQ(r.value("ok", false), true) << r.dump(2) << node.err();
        EXPECT_EQ(r["first"], 1);
        EXPECT_EQ(r["second"], 2);
        EXPECT_EQ(r["count"], 2);
        EXPECT_EQ(r["sameConnId"], true) << r.dump(2) << node.err();
        EXPECT_EQ(r["opens"], 1) << "the connection must not be re-opened: " << r.dump(2);
        EXPECT_EQ(r["closed"], false) << r.dump(2);
        if (d.ts_first)
            stop_cpp_host();
        else
            stop_ts_host();
    }
}

}  // namespace
}  // namespace rivetkit::testing

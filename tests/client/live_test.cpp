// The C++ client on the real engine 2.3.19: against the C++ examples served by a CoreRegistry in
// this process (every encoding), across an engine restart, and against upstream's TypeScript
// host (tests/interop/js/ts_host.mjs, rivetkit 2.3.19 on NAPI rivetkit-core).

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>
#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "examples.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "rivetkit/client.hpp"
#include "rivetkit/rivetkit.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;
using client::Client;
using client::ClientConfig;
using client::Encoding;

const std::vector<Encoding> kEncodings{Encoding::bare, Encoding::json, Encoding::cbor};

struct EchoState {
    int requests = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EchoState, requests)

// A raw actor for fetch / websocket: echoes requests and socket messages.
void register_raw_echo(core::registry::CoreRegistry& registry) {
    auto echo = Actor<EchoState>()
                    .on_request([](auto& c, const Request& req) {
                        c.state().requests += 1;
                        return Response::json({{"method", req.method},
                                               {"path", req.path},
                                               {"body", std::string(req.body_text())},
                                               {"x-test", req.header("x-test").value_or("")}});
                    })
                    .on_websocket([](auto&, WebSocket ws) -> boost::asio::awaitable<void> {
                        while (auto m = co_await ws.recv())
                            ws.send_text("echo:" + std::string(m->text()));
                    });
    registry.register_actor("rawEcho", echo.factory());
}

// Actor-to-actor: an async action calls another actor through client::actor_client() — the
// host's engine settings on the actor's own executor (the `_async` forms; nothing blocks the
// actor's thread).
std::string g_engine_endpoint;  // set once the engine is up, read by the action

struct RelayState {
    std::int64_t forwarded = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RelayState, forwarded)

boost::asio::awaitable<std::int64_t> forward_increment(std::string key, std::int64_t amount) {
    auto peers = co_await client::actor_client();
    EXPECT_EQ(peers->config().endpoint, g_engine_endpoint);
    auto target = peers->get_or_create("counter", {key});
    Json args = Json::array({amount});
    std::string action = "increment";
    auto out = co_await target.action_async(std::move(action), std::move(args));
    if (!out.ok())
        throw UserError("peer_failed", out.error().id() + ": " + out.error().message());
    co_return out->get<std::int64_t>();
}

void register_relay(core::registry::CoreRegistry& registry) {
    auto relay = Actor<RelayState>().action(
        "forward", [](ActionContext<RelayState>& c, std::string key, std::int64_t amount) {
            c.state().forwarded += 1;
            return forward_increment(std::move(key), amount);
        });
    registry.register_actor("relay", relay.factory());
}

// A queue for ActorHandle::send: "jobs" is declared (an undeclared name is dropped, as
// upstream), the run handler completes each "jobs" message it takes with `done:<body>` when the
// body says so, and `drain` returns what is waiting.
struct MailboxState {
    std::int64_t completed = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MailboxState, completed)

void register_mailbox(core::registry::CoreRegistry& registry) {
    using MailCtx = ActorContext<MailboxState>;
    auto mailbox =
        Actor<MailboxState>()
            .queue("jobs")
            .queue("replies")
            .run([](MailCtx& c) -> boost::asio::awaitable<void> {
                Queue queue = c.queue();
                for (;;) {
                    QueueReceiveOptions opts;
                    opts.names = {"replies"};
                    opts.completable = true;
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    if (!m)
                        break;
                    c.state().completed += 1;
                    Json reply = "done:" + m->body.dump();
                    co_await m->complete(std::move(reply));
                }
            })
            .action("drain", [](ActionContext<MailboxState>& c) -> boost::asio::awaitable<Json> {
                Queue queue = c.queue();
                QueueReceiveOptions opts;
                opts.names = {"jobs"};
                opts.count = 100;
                std::vector<QueueMessage> taken = co_await queue.try_next_batch(std::move(opts));
                Json bodies = Json::array();
                for (const QueueMessage& m : taken)
                    bodies.push_back(m.body);
                co_return bodies;
            });
    registry.register_actor("mailbox", mailbox.factory());
}

// Records what a connection sees, with bounded waits.
struct Recorder {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> log;
    int opens = 0;
    int closes = 0;

    void attach(client::Connection& conn, const std::string& event) {
        conn.on(event, [this, event](const json& args) { push(event + ":" + args.dump()); });
        conn.on_open([this](const std::string&, const std::string&) {
            std::lock_guard lock(mu);
            ++opens;
            cv.notify_all();
        });
        conn.on_close([this](const Error&) {
            std::lock_guard lock(mu);
            ++closes;
            cv.notify_all();
        });
    }
    void push(std::string s) {
        std::lock_guard lock(mu);
        log.push_back(std::move(s));
        cv.notify_all();
    }
    template <typename P>
    bool wait(P pred, std::chrono::seconds timeout = std::chrono::seconds(30)) {
        std::unique_lock lock(mu);
        return cv.wait_for(lock, timeout, [&] { return pred(); });
    }
    std::vector<std::string> snapshot() {
        std::lock_guard lock(mu);
        return log;
    }
};

ClientConfig config_for(const EngineHarness& engine, Encoding encoding) {
    ClientConfig c;
    c.endpoint = engine.endpoint();
    c.encoding = encoding;
    return c;
}

std::string suffix(Encoding e) { return std::string(client::encoding_name(e)); }

class ClientOnCppHost : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            examples::register_examples(r);
            register_raw_echo(r);
            register_relay(r);
            register_mailbox(r);
        });
        ASSERT_TRUE(stack.ok()) << stack.error().to_string();
        stack_ = new LiveStack(std::move(stack).value());
        g_engine_endpoint = stack_->engine->endpoint();
        // What rivetkit-host does once it has joined the engine.
        ClientConfig host;
        host.endpoint = g_engine_endpoint;
        client::set_host_config(host);
    }
    static void TearDownTestSuite() {
        delete stack_;
        stack_ = nullptr;
    }
    void SetUp() override { ASSERT_NE(stack_, nullptr); }
    EngineHarness& engine() { return *stack_->engine; }

    static LiveStack* stack_;
};
LiveStack* ClientOnCppHost::stack_ = nullptr;

// ActorHandle::send (upstream's handle.send): messages reach the declared queue in order with
// their values intact; with wait, the reply the actor completes the message with comes back; a
// send to an undeclared queue is answered "completed" and dropped.
TEST_F(ClientOnCppHost, QueueSendsReachTheActorAndWaitForItsReply) {
    for (Encoding enc : kEncodings) {
        SCOPED_TRACE(suffix(enc));
        Client client(config_for(engine(), enc));
        auto mailbox = client.get_or_create("mailbox", {"send-" + suffix(enc)});
        const json big = json::array({"$BigInt", "9007199254740993"});
        for (const json& body : {json(1), json{{"text", "héllo"}}, big}) {
            auto sent = mailbox.send("jobs", body);
            ASSERT_TRUE(sent.ok()) << sent.error().to_string();
            EXPECT_TRUE(sent->completed()) << sent->status;
            EXPECT_FALSE(sent->response.has_value());
        }
        auto dropped = mailbox.send("undeclared", json("lost"));
        ASSERT_TRUE(dropped.ok()) << dropped.error().to_string();
        EXPECT_TRUE(dropped->completed());
        auto drained = mailbox.action("drain");
        ASSERT_TRUE(drained.ok()) << drained.error().to_string();
        EXPECT_EQ(*drained, json::array({1, json{{"text", "héllo"}}, big}));

        client::QueueSendOptions wait;
        wait.wait = true;
        wait.timeout = std::chrono::seconds(30);
        auto replied = mailbox.send("replies", json("ping"), wait);
        ASSERT_TRUE(replied.ok()) << replied.error().to_string();
        EXPECT_TRUE(replied->completed()) << replied->status;
        EXPECT_EQ(replied->response, std::optional<json>(json("done:\"ping\"")));
    }
}

TEST_F(ClientOnCppHost, ActionsThroughEveryAddressingForm) {
    for (Encoding enc : kEncodings) {
        SCOPED_TRACE(suffix(enc));
        Client client(config_for(engine(), enc));
        const std::string key = "addr-" + suffix(enc);
        auto counter = client.get_or_create("counter", {key});
        auto first = counter.call<std::int64_t>("increment", 2);
        ASSERT_TRUE(first.ok()) << first.error().to_string();
        EXPECT_EQ(*first, 2);
        auto id = counter.resolve();
        ASSERT_TRUE(id.ok()) << id.error().to_string();
        EXPECT_FALSE(id->empty());
        // get (query form), get_for_id (direct form), get().resolve (engine API) agree.
        auto via_get = client.get("counter", {key}).call<std::int64_t>("increment", 3);
        ASSERT_TRUE(via_get.ok()) << via_get.error().to_string();
        EXPECT_EQ(*via_get, 5);
        auto via_id = client.get_for_id("counter", *id).call<std::int64_t>("getCount");
        ASSERT_TRUE(via_id.ok()) << via_id.error().to_string();
        EXPECT_EQ(*via_id, 5);
        auto resolved = client.get("counter", {key}).resolve();
        ASSERT_TRUE(resolved.ok()) << resolved.error().to_string();
        EXPECT_EQ(*resolved, *id);
        // create (engine API POST /actors) → a new actor, addressed by id.
        auto created = client.create("counter", {"created-" + suffix(enc)});
        ASSERT_TRUE(created.ok()) << created.error().to_string();
        EXPECT_EQ(created->method(), client::ActorHandle::Method::ForId);
        auto fresh = created->call<std::int64_t>("increment", 1);
        ASSERT_TRUE(fresh.ok()) << fresh.error().to_string();
        EXPECT_EQ(*fresh, 1);
        EXPECT_NE(*created->resolve(), *id);
        // Values round-trip through the actor unchanged (chatRoom keeps what it is sent).
        auto room = client.get_or_create("chatRoom", {"values-" + suffix(enc)});
        auto sent = room.action("sendMessage", json::array({"ann", "héllo \"quoted\""}));
        ASSERT_TRUE(sent.ok()) << sent.error().to_string();
        auto history = room.action("getHistory");
        ASSERT_TRUE(history.ok()) << history.error().to_string();
        ASSERT_EQ(history->size(), 1u) << history->dump();
        EXPECT_EQ((*history)[0].value("text", ""), "héllo \"quoted\"") << history->dump();
    }
}

TEST_F(ClientOnCppHost, ErrorsCarryGroupCodeMessageAndMetadata) {
    for (Encoding enc : kEncodings) {
        SCOPED_TRACE(suffix(enc));
        Client client(config_for(engine(), enc));
        auto counter = client.get_or_create("counter", {"errors-" + suffix(enc)});
        auto id = counter.resolve();
        ASSERT_TRUE(id.ok()) << id.error().to_string();

        auto failed = counter.action("fail");
        ASSERT_FALSE(failed.ok());
        const Error& e = failed.error();
        EXPECT_EQ(e.group(), "user");
        EXPECT_EQ(e.code(), "deliberate_failure");
        EXPECT_EQ(e.message(), "counter failed on purpose");
        ASSERT_TRUE(e.metadata().has_value());
        EXPECT_EQ(json::parse(*e.metadata()), json({{"reason", "test"}}));
        ASSERT_TRUE(e.actor().has_value());
        EXPECT_EQ(e.actor()->actor_id, *id);

        auto unknown = counter.action("nope");
        ASSERT_FALSE(unknown.ok());
        EXPECT_TRUE(unknown.error().is("actor", "action_not_found")) << unknown.error().to_string();

        auto missing = client.get("counter", {"never-created-" + suffix(enc)}).action("getCount");
        ASSERT_FALSE(missing.ok());
        EXPECT_TRUE(missing.error().is("actor", "not_found")) << missing.error().to_string();
        auto missing_resolve = client.get("counter", {"never-created-" + suffix(enc)}).resolve();
        ASSERT_FALSE(missing_resolve.ok());
        EXPECT_TRUE(missing_resolve.error().is("actor", "not_found"));

        auto dup = client.create("counter", {"errors-" + suffix(enc)});
        ASSERT_FALSE(dup.ok());
        // Engine 2.3.19 answers a create on a taken key with actor/duplicate_key or, when it
        // noticed the clash only while placing the new actor, actor/destroyed_during_creation.
        EXPECT_EQ(dup.error().group(), "actor") << dup.error().to_string();
        EXPECT_TRUE(dup.error().code() == "duplicate_key" ||
                    dup.error().code() == "destroyed_during_creation")
            << dup.error().to_string();

        // The same error through a connection, which stays usable.
        auto conn = counter.connect();
        auto conn_failed = conn->action("fail");
        ASSERT_FALSE(conn_failed.ok());
        EXPECT_TRUE(conn_failed.error().is("user", "deliberate_failure"))
            << conn_failed.error().to_string();
        EXPECT_EQ(conn_failed.error().message(), "counter failed on purpose");
        auto after = conn->call<std::int64_t>("getCount");
        ASSERT_TRUE(after.ok()) << after.error().to_string();
        EXPECT_EQ(*after, 0);
    }
}

TEST_F(ClientOnCppHost, ConnectionEventsArriveBeforeTheReplyAndStopAfterOff) {
    for (Encoding enc : kEncodings) {
        SCOPED_TRACE(suffix(enc));
        Client client(config_for(engine(), enc));
        auto counter = client.get_or_create("counter", {"events-" + suffix(enc)});
        Recorder rec;  // before the connection: it outlives the connection's handlers
        auto conn = counter.connect();
        std::uint64_t listener =
            conn->on("newCount", [&rec](const json& args) { rec.push("event:" + args.dump()); });
        ASSERT_TRUE(conn->wait_open());
        EXPECT_EQ(conn->actor_id(), *counter.resolve());
        auto r = conn->call<std::int64_t>("increment", 5);
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        rec.push("reply:" + std::to_string(*r));
        // An HTTP action from another handle reaches the subscribed connection too.
        ASSERT_TRUE(counter.call<std::int64_t>("increment", 2).ok());
        ASSERT_TRUE(rec.wait([&] { return rec.log.size() >= 3; }));
        EXPECT_EQ(rec.snapshot(),
                  (std::vector<std::string>{"event:[5]", "reply:5", "event:[7]"}));
        // After off() the server stops sending: the reply (which would follow the event) comes
        // with no event before it.
        conn->off(listener);
        auto r2 = conn->call<std::int64_t>("increment", 1);
        ASSERT_TRUE(r2.ok());
        EXPECT_EQ(*r2, 8);
        EXPECT_EQ(rec.snapshot().size(), 3u);
        conn->dispose();
        auto disposed = conn->action("getCount");
        ASSERT_FALSE(disposed.ok());
        EXPECT_TRUE(disposed.error().is("client", "disposed")) << disposed.error().to_string();
    }
}

// A connection whose actor does not exist fails its queued actions with the failed attempt's
// error instead of holding them while it retries; it keeps retrying and opens once the actor
// exists.
TEST_F(ClientOnCppHost, ActionsQueuedOnAConnectionToAMissingActorFailInsteadOfWaiting) {
    Client client(config_for(engine(), Encoding::bare));
    auto call_with_deadline = [](client::Connection& conn) -> std::optional<Result<json>> {
        auto fut = std::async(std::launch::async, [&conn] { return conn.action("getCount"); });
        if (fut.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
            conn.dispose();  // unblocks the call so the future can be destroyed
            return std::nullopt;
        }
        return fut.get();
    };

    auto by_id = client.get_for_id("counter", "0000000000000000000000000000").connect();
    std::vector<std::string> errors;
    std::mutex mu;
    by_id->on_error([&](const Error& e) {
        std::lock_guard lock(mu);
        errors.push_back(e.group() + "." + e.code());
    });
    auto missing = call_with_deadline(*by_id);
    ASSERT_TRUE(missing.has_value()) << "the queued action still waits after 60 s";
    ASSERT_FALSE(missing->ok());
    // Engine 2.3.19's gateway accepts the upgrade for an unknown actor id and then resets the
    // socket, so the error is the lost connection's, not a structured actor error.
    EXPECT_TRUE(missing->error().is("client", "connection_lost") ||
                missing->error().group() == "actor")
        << missing->error().to_string();
    {
        std::lock_guard lock(mu);
        EXPECT_FALSE(errors.empty());
    }
    by_id->dispose();

    // `get` of a key nobody created: the same answer; once the actor is created by someone else
    // the still-retrying connection opens and serves actions.
    const std::string key = "created-later";
    auto by_key = client.get("counter", {key}).connect();
    auto before = call_with_deadline(*by_key);
    ASSERT_TRUE(before.has_value()) << "the queued action still waits after 60 s";
    ASSERT_FALSE(before->ok());
    EXPECT_FALSE(before->error().is("client", "disposed")) << before->error().to_string();
    auto created = client.get_or_create("counter", {key}).call<std::int64_t>("increment", 4);
    ASSERT_TRUE(created.ok()) << created.error().to_string();
    ASSERT_TRUE(by_key->wait_open(std::chrono::seconds(60)));
    auto after = by_key->call<std::int64_t>("getCount");
    ASSERT_TRUE(after.ok()) << after.error().to_string();
    EXPECT_EQ(*after, 4);
    by_key->dispose();
}

// The same events as a stream: a blocking reader, a coroutine on another io_context, events
// buffered while nobody waits, and the end of the stream when the connection is disposed.
TEST_F(ClientOnCppHost, EventStreamServesBlockingReadersAndCoroutines) {
    Client client(config_for(engine(), Encoding::bare));
    auto counter = client.get_or_create("counter", {"event-stream"});
    auto conn = counter.connect();
    auto stream = conn->subscribe("newCount");
    ASSERT_TRUE(conn->wait_open());
    ASSERT_TRUE(conn->call<std::int64_t>("increment", 2).ok());
    ASSERT_TRUE(conn->call<std::int64_t>("increment", 3).ok());
    // Both were buffered before anyone asked.
    EXPECT_EQ(stream->next(std::chrono::seconds(10)), json::array({2}));
    EXPECT_EQ(stream->next(std::chrono::seconds(10)), json::array({5}));
    EXPECT_EQ(stream->next(std::chrono::milliseconds(0)), std::nullopt);

    boost::asio::io_context io;
    auto waiting = boost::asio::co_spawn(
        io,
        [&stream]() -> boost::asio::awaitable<std::optional<json>> {
            auto op = stream->next_async();
            auto first = co_await std::move(op);
            co_return first;
        },
        boost::asio::use_future);
    std::thread runner([&io] { io.run(); });
    ASSERT_TRUE(conn->call<std::int64_t>("increment", 4).ok());
    ASSERT_EQ(waiting.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(waiting.get(), json::array({9}));
    runner.join();
    EXPECT_EQ(stream->dropped(), 0u);

    // Disposing the connection ends the stream for a waiting coroutine and for readers.
    io.restart();
    auto ended = boost::asio::co_spawn(
        io,
        [&stream]() -> boost::asio::awaitable<std::optional<json>> {
            auto op = stream->next_async();
            auto value = co_await std::move(op);
            co_return value;
        },
        boost::asio::use_future);
    std::thread runner2([&io] { io.run_for(std::chrono::seconds(20)); });
    conn->dispose();
    ASSERT_EQ(ended.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_EQ(ended.get(), std::nullopt);
    runner2.join();
    EXPECT_EQ(stream->next(std::chrono::seconds(5)), std::nullopt);
}

TEST_F(ClientOnCppHost, RawFetchAndWebSocket) {
    Client client(config_for(engine(), Encoding::bare));
    auto echo = client.get_or_create("rawEcho", {"raw"});
    client::HttpRequest req;
    req.method = "POST";
    req.path = "/foo/bar?x=1";
    req.headers.emplace_back("x-test", "yes");
    req.body = "payload";
    auto res = echo.fetch(req);
    ASSERT_TRUE(res.ok()) << res.error().to_string();
    EXPECT_EQ(res->status, 200u) << res->body;
    json body = json::parse(res->body, nullptr, false);
    EXPECT_EQ(body["method"], "POST") << res->body;
    EXPECT_EQ(body["path"], "/foo/bar?x=1") << res->body;
    EXPECT_EQ(body["body"], "payload");
    EXPECT_EQ(body["x-test"], "yes");
    EXPECT_TRUE(res->header("x-rivet-actor").has_value());

    auto ws = echo.websocket("/sock?y=2");
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    ASSERT_TRUE((*ws)->send("hello").ok());
    auto m = (*ws)->recv();
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->data, "echo:hello");
    (*ws)->close();
}

TEST_F(ClientOnCppHost, ActorCallsAnotherActorThroughTheClient) {
    Client client(config_for(engine(), Encoding::bare));
    auto relay = client.get_or_create("relay", {"r"});
    auto first = relay.call<std::int64_t>("forward", "relayed", 4);
    ASSERT_TRUE(first.ok()) << first.error().to_string();
    EXPECT_EQ(*first, 4);
    auto second = relay.call<std::int64_t>("forward", "relayed", 3);
    ASSERT_TRUE(second.ok()) << second.error().to_string();
    EXPECT_EQ(*second, 7);
    auto direct = client.get_or_create("counter", {"relayed"}).call<std::int64_t>("getCount");
    ASSERT_TRUE(direct.ok());
    EXPECT_EQ(*direct, 7);
    // The callee's error reaches the caller's caller with its group and code.
    auto missing = relay.call<std::int64_t>("forward", "bad,key", 1);
    ASSERT_FALSE(missing.ok());
    EXPECT_TRUE(missing.error().is("user", "peer_failed")) << missing.error().to_string();
    EXPECT_NE(missing.error().message().find("invalid_key"), std::string::npos)
        << missing.error().to_string();
}

// The command line: `rivetkit call` prints the output / the structured error; `rivetkit watch`
// prints each event's args as one JSON line.
TEST_F(ClientOnCppHost, CommandLineCallAndWatch) {
    const std::string endpoint = engine().endpoint();
    auto call = run_process({RIVETKIT_CLI_BIN, "call", "counter", "cli", "increment", "[5]",
                             "--endpoint", endpoint},
                            {}, std::chrono::seconds(60));
    ASSERT_TRUE(call.ok()) << call.error().to_string();
    EXPECT_EQ(call->exit_code, 0) << call->err;
    EXPECT_EQ(call->out, "5\n");
    auto json_call = run_process({RIVETKIT_CLI_BIN, "call", "counter", "cli", "getCount",
                                  "--encoding", "json", "--endpoint", endpoint},
                                 {}, std::chrono::seconds(60));
    ASSERT_TRUE(json_call.ok());
    EXPECT_EQ(json_call->out, "5\n") << json_call->err;

    auto failed = run_process(
        {RIVETKIT_CLI_BIN, "call", "counter", "cli", "fail", "--endpoint", endpoint}, {},
        std::chrono::seconds(60));
    ASSERT_TRUE(failed.ok());
    EXPECT_EQ(failed->exit_code, 1);
    EXPECT_NE(failed->err.find("error: user.deliberate_failure: counter failed on purpose"),
              std::string::npos)
        << failed->err;
    EXPECT_NE(failed->err.find(R"(metadata: {"reason":"test"})"), std::string::npos)
        << failed->err;
    auto usage = run_process({RIVETKIT_CLI_BIN, "call", "counter"}, {}, std::chrono::seconds(10));
    ASSERT_TRUE(usage.ok());
    EXPECT_EQ(usage->exit_code, 2);

    auto watch = ChildProcess::spawn({RIVETKIT_CLI_BIN, "watch", "counter", "cli", "newCount",
                                      "--count", "1", "--ready-line", "--endpoint", endpoint},
                                     {});
    ASSERT_TRUE(watch.ok()) << watch.error().to_string();
    ASSERT_TRUE((*watch)->wait_for_stdout("ready\n", std::chrono::seconds(30))) << (*watch)->err();
    // "ready" means the subscription was sent, not that the actor has processed it (the
    // protocol has no acknowledgement), so increment until the watcher has seen one event.
    Client client(config_for(engine(), Encoding::bare));
    auto counter = client.get_or_create("counter", {"cli"});
    std::vector<std::string> counts;
    std::optional<int> exited;
    for (int i = 0; i < 10 && !exited; ++i) {
        auto n = counter.call<std::int64_t>("increment", 1);
        ASSERT_TRUE(n.ok()) << n.error().to_string();
        counts.push_back(std::to_string(*n));
        exited = (*watch)->wait(std::chrono::seconds(2));
    }
    ASSERT_EQ(exited, std::optional<int>(0)) << (*watch)->err();
    const std::string& out = (*watch)->out();
    ASSERT_EQ(out.rfind("ready\n[", 0), 0u) << out;
    const std::string seen = out.substr(7, out.size() - 9);
    EXPECT_NE(std::find(counts.begin(), counts.end(), seen), counts.end()) << out;
    EXPECT_EQ(out.back(), '\n');
}

// The engine is killed and started again on the same ports and data: the connection reports the
// loss, reconnects with backoff on its own, re-subscribes, and events and actions flow again.
TEST(ClientReconnect, ConnectionSurvivesAnEngineRestart) {
    auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
        examples::register_examples(r);
    });
    ASSERT_TRUE(stack.ok()) << stack.error().to_string();
    ClientConfig config = config_for(*stack->engine, Encoding::bare);
    config.reconnect_max = std::chrono::milliseconds(2000);
    Client client(config);
    auto counter = client.get_or_create("counter", {"restart"});
    Recorder rec;  // before the connection: it outlives the connection's handlers
    auto conn = counter.connect();
    rec.attach(*conn, "newCount");
    ASSERT_TRUE(rec.wait([&] { return rec.opens >= 1; }));
    auto before = conn->call<std::int64_t>("increment", 1);
    ASSERT_TRUE(before.ok()) << before.error().to_string();

    stack->engine->kill_hard();
    ASSERT_TRUE(rec.wait([&] { return rec.closes >= 1; }));
    ASSERT_TRUE(stack->engine->restart().ok());
    ASSERT_TRUE(rec.wait([&] { return rec.opens >= 2; }, std::chrono::seconds(120)))
        << stack->engine->log_tail();
    auto after = conn->call<std::int64_t>("increment", 10);
    ASSERT_TRUE(after.ok()) << after.error().to_string();
    // 11 when the first increment was saved before the kill, 10 when the engine lost it; either
    // way the re-subscribed connection gets the event of its own action, before the reply.
    EXPECT_TRUE(*after == 11 || *after == 10) << *after;
    ASSERT_TRUE(rec.wait([&] { return rec.log.size() >= 2; }));
    EXPECT_EQ(rec.snapshot(), (std::vector<std::string>{
                                  "newCount:[1]", "newCount:[" + std::to_string(*after) + "]"}));
    conn->dispose();
}

// The other direction of the protocol: this client against upstream's own TypeScript actor host.
TEST(ClientOnTsHost, ActionsEventsAndErrors) {
    auto engine = EngineHarness::start();
    ASSERT_TRUE(engine.ok()) << engine.error().to_string();
    ASSERT_TRUE((*engine)->create_pool("default").ok());
    const char* node_env = std::getenv("RIVET_NODE_BIN");
    std::string node = node_env != nullptr && *node_env != '\0' ? node_env : "node";
    auto host = ChildProcess::spawn(
        {node, std::string(RIVETKIT_INTEROP_JS_DIR) + "/ts_host.mjs"},
        {{"RIVET_ENDPOINT", (*engine)->endpoint()}, {"RIVET_LOG_LEVEL", "warn"}});
    ASSERT_TRUE(host.ok()) << host.error().to_string();
    ASSERT_TRUE((*host)->wait_for_stdout("ready", std::chrono::seconds(60)))
        << (*host)->err() << (*engine)->log_tail();
    // "ready" can come before the engine has committed the host's registration; an actor created
    // in between waits out the engine's allocation backoff (CI once saw actor_ready_timeout).
    ASSERT_TRUE((*engine)->wait_envoy_registered("").ok()) << (*engine)->log_tail();

    for (Encoding enc : kEncodings) {
        SCOPED_TRACE(suffix(enc));
        Client client(config_for(**engine, enc));
        client::GetOrCreateOptions with_input;
        with_input.input = json{{"start", 10}};
        auto counter = client.get_or_create("counter", {"ts-" + suffix(enc)}, with_input);
        auto first = counter.call<std::int64_t>("increment", 1);
        ASSERT_TRUE(first.ok()) << first.error().to_string() << "\n"
                                << (*host)->err() << (*engine)->log_tail();
        EXPECT_EQ(*first, 11);
        auto input = counter.action("getInput");
        ASSERT_TRUE(input.ok());
        EXPECT_EQ(*input, json({{"start", 10}}));

        auto failed = counter.action("fail");
        ASSERT_FALSE(failed.ok());
        EXPECT_TRUE(failed.error().is("user", "deliberate_failure")) << failed.error().to_string();
        EXPECT_EQ(failed.error().message(), "counter failed on purpose");
        ASSERT_TRUE(failed.error().metadata().has_value());
        EXPECT_EQ(json::parse(*failed.error().metadata()), json({{"reason", "test"}}));

        Recorder rec;  // before the connection: it outlives the connection's handlers
        auto conn = counter.connect();
        conn->on("newCount", [&rec](const json& args) { rec.push("event:" + args.dump()); });
        auto r = conn->call<std::int64_t>("increment", 4);
        ASSERT_TRUE(r.ok()) << r.error().to_string();
        rec.push("reply:" + std::to_string(*r));
        EXPECT_EQ(rec.snapshot(), (std::vector<std::string>{"event:[15]", "reply:15"}));
        auto unknown = conn->action("nope");
        ASSERT_FALSE(unknown.ok());
        EXPECT_TRUE(unknown.error().is("actor", "action_not_found")) << unknown.error().to_string();
        conn->dispose();
    }
    (*host)->signal(SIGTERM);
    (void)(*host)->wait(std::chrono::seconds(20));
}

}  // namespace
}  // namespace rivetkit::testing

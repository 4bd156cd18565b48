// Raw WebSockets that hibernate (ActorOptions::can_hibernate_websocket_if), through the typed API
// on the real engine 2.3.19: a socket the predicate accepts stays open at the gateway while its
// actor sleeps, its next message wakes the actor and reaches on_websocket, which runs again with
// the same connection; a socket the predicate refuses is closed when the actor sleeps.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "live_stack.hpp"
#include "rivetkit/rivetkit.hpp"
#include "test_websocket.hpp"

namespace rivetkit::testing {
namespace {

template <typename T>
using Awaitable = boost::asio::awaitable<T>;

struct ChatState {
    std::vector<std::string> seen;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ChatState, seen)

// The next text message, or the error's text (so a failure shows what happened).
std::string next_text(TestWebSocket& ws) {
    auto r = ws.read_text();
    return r.ok() ? std::move(r).value() : "<" + r.error().to_string() + ">";
}

Actor<ChatState> chat_actor() {
    using Ctx = ActorContext<ChatState>;
    using Action = ActionContext<ChatState>;
    ActorOptions options;
    options.can_hibernate_websocket_if = [](const Request& upgrade) {
        const std::string_view path = upgrade.path;
        return path.substr(0, path.find('?')).find("/keep") != std::string_view::npos;
    };
    return Actor<ChatState>()
        .options(options)
        .on_websocket([](Ctx& c, WebSocket ws, const Request& upgrade) -> Awaitable<void> {
            const std::string_view path = upgrade.path;
            const bool keep =
                path.substr(0, path.find('?')).find("/keep") != std::string_view::npos;
            const std::string name = keep ? "keep" : "plain";
            c.state().seen.push_back("open:" + name);
            while (auto message = co_await ws.recv()) {
                const std::string text(message->text());
                if (text == "bye") {
                    ws.close(4000, "bye");
                    break;
                }
                c.state().seen.push_back(name + ":" + text);
                ws.send_text("echo:" + text);
            }
        })
        .action("seen", [](Action& c) { return std::as_const(c).state().seen; })
        .action("goToSleep", [](Action& c) { c.sleep(); });
}

std::string chat_gateway(const std::string& path) {
    return gateway_target("chat", "h1", path);
}

HttpResult call(EngineHarness& engine, const std::string& action) {
    auto r = http_request(engine.guard_port(), "POST", chat_gateway("/action/" + action),
                          R"({"args":[]})", {{"x-rivet-encoding", "json"}});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    return r.ok() ? std::move(r).value() : HttpResult{};
}

std::vector<std::string> conn_ids(LiveHost& host, const std::string& actor_id) {
    return host.call([&] {
        std::vector<std::string> ids;
        if (auto ctx = host.registry().actor_context(actor_id)) {
            for (const auto& c : ctx->conns())
                ids.push_back(c.id());
        }
        return ids;
    });
}

}  // namespace

TEST(RawWebSocketHibernation, SocketStaysOpenAcrossSleepAndKeepsItsConnection) {
    auto stack = LiveStack::start(
        [](core::registry::CoreRegistry& r) { r.register_actor("chat", chat_actor().factory()); });
    ASSERT_TRUE(stack.ok()) << stack.error().to_string();
    EngineHarness& engine = *stack->engine;
    LiveHost& host = *stack->host;

    auto keep = TestWebSocket::connect(engine.guard_port(), chat_gateway("/websocket/keep"),
                                       {"rivet", "rivet_encoding.bare"});
    ASSERT_TRUE(keep.ok()) << keep.error().to_string();
    ASSERT_TRUE((*keep)->send_text("a").ok());
    auto echoed = (*keep)->read_text();
    ASSERT_TRUE(echoed.ok()) << echoed.error().to_string();
    EXPECT_EQ(*echoed, "echo:a");

    auto plain = TestWebSocket::connect(engine.guard_port(), chat_gateway("/websocket/plain"),
                                        {"rivet", "rivet_encoding.bare"});
    ASSERT_TRUE(plain.ok()) << plain.error().to_string();
    ASSERT_TRUE((*plain)->send_text("p").ok());
    EXPECT_EQ(next_text(**plain), "echo:p");

    auto before = call(engine, "seen");
    ASSERT_EQ(before.status, 200u) << before.body;
    const std::string actor_id = before.header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor_id.empty());
    const auto conns_before = conn_ids(host, actor_id);
    ASSERT_EQ(conns_before.size(), 2u);

    // What the envoy asks per upgrade: the predicate for raw sockets, always for /connect, never
    // for the inspector's socket.
    auto hibernates = [&](const std::string& path) {
        return host.call([&] {
            envoy::WebSocketOpen open;
            open.actor_id = actor_id;
            open.path = path;
            return host.registry().can_hibernate(open);
        });
    };
    EXPECT_TRUE(hibernates("/websocket/keep?x=1"));
    EXPECT_FALSE(hibernates("/websocket/plain"));
    EXPECT_TRUE(hibernates("/connect"));
    EXPECT_FALSE(hibernates("/inspector/connect"));

    ASSERT_EQ(call(engine, "goToSleep").status, 200u);
    ASSERT_TRUE(host.wait_actor(actor_id, false)) << "the actor did not sleep";

    // The refused socket was closed with its actor; the hibernating one was not.
    EXPECT_FALSE((*plain)->read_text().ok());
    EXPECT_TRUE((*plain)->close_frame().has_value());

    // Its next message wakes the actor: a new generation, on_websocket again, the message once.
    ASSERT_TRUE((*keep)->send_text("b").ok());
    auto after = (*keep)->read_text();
    ASSERT_TRUE(after.ok()) << after.error().to_string() << "\n" << engine.log_tail();
    EXPECT_EQ(*after, "echo:b");
    ASSERT_TRUE((*keep)->send_text("c").ok());
    EXPECT_EQ(next_text(**keep), "echo:c");

    auto seen = call(engine, "seen");
    ASSERT_EQ(seen.status, 200u) << seen.body;
    EXPECT_EQ(seen.header("x-rivet-actor-generation").value_or(""), "2");
    const auto body = nlohmann::json::parse(seen.body, nullptr, false);
    const nlohmann::json expected = {"open:keep", "keep:a", "open:plain", "plain:p",
                                     "open:keep", "keep:b", "keep:c"};
    EXPECT_EQ(body["output"], expected) << seen.body;

    // The same connection (id kept) is the only one; the plain socket's connection is gone.
    const auto conns_after = conn_ids(host, actor_id);
    ASSERT_EQ(conns_after.size(), 1u);
    EXPECT_NE(std::find(conns_before.begin(), conns_before.end(), conns_after[0]),
              conns_before.end());

    // The actor closes the socket: its connection ends, and the saved record with it, so the
    // next generation restores nothing.
    ASSERT_TRUE((*keep)->send_text("bye").ok());
    EXPECT_FALSE((*keep)->read_text().ok());
    ASSERT_TRUE((*keep)->close_frame().has_value());
    EXPECT_EQ((*keep)->close_frame()->first, 4000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!conn_ids(host, actor_id).empty() && std::chrono::steady_clock::now() < deadline) {
        // Poll: the disconnect finishes on the host's io thread, with no signal to wait on.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(conn_ids(host, actor_id).empty());
    ASSERT_EQ(call(engine, "goToSleep").status, 200u);
    ASSERT_TRUE(host.wait_actor(actor_id, false, 2)) << "the actor did not sleep again";
    auto third = call(engine, "seen");
    ASSERT_EQ(third.status, 200u) << third.body;
    EXPECT_EQ(third.header("x-rivet-actor-generation").value_or(""), "3");
    EXPECT_EQ(nlohmann::json::parse(third.body, nullptr, false)["output"], expected);
    EXPECT_TRUE(conn_ids(host, actor_id).empty());
}

}  // namespace rivetkit::testing

namespace rivetkit::testing {
namespace {

struct BumpState {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(BumpState, count)

// An action answered after durable, called over an actor-connect (hibernatable) connection: the
// save that makes its effect durable carries its message index, so when its reply arrives the
// saved index already covers it — a host that crashes right after the reply has the message
// neither lost nor delivered again (the chaos runner saw it delivered twice when the index rode
// only the next save, up to the 5 s ack deadline later).
TEST(HibernatableConnect, ADurableActionsSaveCarriesItsMessageIndex) {
    ActionOptions durable;
    durable.reply_after_durable = true;
    auto tally = Actor<BumpState>().action(
        "bump",
        [](ActionContext<BumpState>& c) { return ++c.state().count; }, durable);
    auto stack = LiveStack::start(
        [&](core::registry::CoreRegistry& r) { r.register_actor("tally", tally.factory()); });
    ASSERT_TRUE(stack.ok()) << stack.error().to_string();
    EngineHarness& engine = *stack->engine;
    LiveHost& host = *stack->host;

    auto ws = TestWebSocket::connect(engine.guard_port(), gateway_target("tally", "t1", "/connect"),
                                     {"rivet", "rivet_encoding.json"});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = (*ws)->read_text();
    ASSERT_TRUE(init.ok()) << init.error().to_string();
    const std::string actor_id =
        nlohmann::json::parse(*init, nullptr, false)["body"]["val"]["actorId"];
    auto saved_index = [&]() -> std::optional<std::uint16_t> {
        return host.call([&]() -> std::optional<std::uint16_t> {
            auto ctx = host.registry().actor_context(actor_id);
            if (!ctx || ctx->conns().size() != 1)
                return std::nullopt;
            return ctx->conns().front().saved_server_message_index();
        });
    };
    std::optional<std::uint16_t> previous;
    for (int i = 1; i <= 5; ++i) {
        ASSERT_TRUE((*ws)->send_text(R"({"body":{"tag":"ActionRequest","val":{"id":)" +
                                     std::to_string(i) + R"(,"name":"bump","args":[]}}})")
                        .ok());
        auto reply = (*ws)->read_text();
        ASSERT_TRUE(reply.ok()) << reply.error().to_string();
        EXPECT_EQ(nlohmann::json::parse(*reply, nullptr, false)["body"]["val"]["output"], i);
        const auto now = saved_index();
        ASSERT_TRUE(now.has_value()) << "reply " << i << " came before any index was saved";
        if (previous) {
            EXPECT_EQ(*now, static_cast<std::uint16_t>(*previous + 1))
                << "reply " << i << " came before its message's index was saved";
        }
        previous = now;
    }
    (*ws)->close();
}

}  // namespace
}  // namespace rivetkit::testing

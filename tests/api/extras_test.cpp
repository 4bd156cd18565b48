// Typed API extras on virtual time: per-connection state, the run handler, keep_awake and
// wait_until.

#include "api_test_support.hpp"

namespace rivetkit::api_test {
namespace {

struct RoomState {
    std::int64_t ticks = 0;
    std::vector<std::string> log;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RoomState, ticks, log)

struct MemberParams {
    std::string name;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MemberParams, name)

struct Member {
    std::string name;
    std::int64_t messages = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Member, name, messages)

using Room = ActorContext<RoomState>;
using RoomAction = ActionContext<RoomState>;

Json conn_state_of(const core::ConnHandle& conn) {
    auto decoded = from_cbor(conn.state());
    return decoded.ok() ? *decoded : Json("<not cbor>");
}

Actor<RoomState> member_room() {
    return Actor<RoomState>()
        .create_conn_state([](Room& c, const MemberParams& params) {
            if (params.name.empty())
                throw UserError("no_name", "a name is required");
            c.state().log.push_back("state for " + params.name);
            return Member{params.name, 0};
        })
        .on_connect([](Room&, Conn& conn) {
            auto member = conn.state<Member>();
            member.messages += 1;
            conn.set_state(member);
            conn.send("hello", member.name, member.messages);
        })
        .on_disconnect([](Room& c, Conn& conn) {
            const auto member = conn.state<Member>();
            c.state().log.push_back("left " + member.name + " " + std::to_string(member.messages));
        })
        .action("bumpAll",
                [](RoomAction& c) {
                    std::int64_t total = 0;
                    for (const Conn& conn : c.conns()) {
                        auto member = conn.state<Member>();
                        member.messages += 10;
                        conn.set_state(member);
                        total += member.messages;
                    }
                    return total;
                })
        .action("log", [](RoomAction& c) { return std::as_const(c).state().log; });
}

TEST(TypedExtras, conn_state_is_created_typed_and_stored_as_cbor) {
    ActorHarness h(member_room().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        const Json nameless{{"name", ""}};
        auto refused = co_await h.connect(nameless, inbox);
        CO_ASSERT(!refused.ok());
        EXPECT_EQ(refused.error().code(), "no_name") << refused.error().to_string();
        const Json numeric{{"name", 7}};
        auto bad = co_await h.connect(numeric, inbox);
        CO_ASSERT(!bad.ok());
        EXPECT_TRUE(bad.error().is("actor", "validation_error")) << bad.error().to_string();

        const Json alice{{"name", "alice"}};
        auto conn = co_await h.connect(alice, inbox);
        CO_ASSERT(conn.ok());
        CO_ASSERT(inbox->size() == 1);
        EXPECT_EQ(inbox->front(), (ReceivedEvent{"hello", Json::array({"alice", 1})}));
        EXPECT_EQ(conn_state_of(*conn), (Json{{"name", "alice"}, {"messages", 1}}))
            << "the core connection holds the CBOR of the typed state";

        auto total = co_await h.call("bumpAll");
        EXPECT_EQ(total.ok() ? *total : Json(), Json(11));
        EXPECT_EQ(conn_state_of(*conn), (Json{{"name", "alice"}, {"messages", 11}}));

        CO_ASSERT((co_await conn->disconnect(std::nullopt)).ok());
        for (int i = 0; i < 10; ++i)
            co_await h.clock().sleep_for(1ms);
        auto log = co_await h.call("log");
        EXPECT_EQ(log.ok() ? *log : Json(), (Json{"state for alice", "left alice 11"}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedExtras, hibernatable_conn_state_is_saved_in_its_conn_record) {
    ActorHarness h(member_room().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        core::ConnectOptions options;
        const Json bob{{"name", "bob"}};
        options.params = to_cbor(bob);
        options.is_hibernatable = true;
        core::HibernatableConnectionMetadata meta;
        meta.gateway_id = {1, 2, 3, 4};
        meta.request_id = {5, 6, 7, 8};
        meta.request_path = "/connect";
        options.hibernation = meta;
        auto conn = co_await h.ctx().connect_conn(std::move(options));
        CO_ASSERT(conn.ok());
        auto total = co_await h.call("bumpAll");
        EXPECT_EQ(total.ok() ? *total : Json(), Json(11));
        co_await h.clock().sleep_for(2s);  // past the save interval
        auto record = h.kv().peek(core::keys::connection_key(conn->id()));
        CO_ASSERT(record.has_value());
        auto persisted = core::decode_persisted_connection(*record);
        CO_ASSERT(persisted.ok());
        auto state = from_cbor(persisted->state);
        EXPECT_EQ(state.ok() ? *state : Json(), (Json{{"name", "bob"}, {"messages", 11}}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedExtras, conn_state_without_create_conn_state_defaults) {
    auto factory = Actor<RoomState>()
                       .on_connect([](Room& c, Conn& conn) {
                           c.state().log.push_back(conn.state_json().is_null() ? "null" : "set");
                           c.state().ticks = conn.state<Member>().messages;
                       })
                       .action("log", [](RoomAction& c) { return std::as_const(c).state().log; })
                       .factory();
    ActorHarness h(factory);
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        auto conn = co_await h.connect(Json(), inbox);
        CO_ASSERT(conn.ok());
        auto log = co_await h.call("log");
        EXPECT_EQ(log.ok() ? *log : Json(), (Json{"null"}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

Actor<RoomState> ticker() {
    return Actor<RoomState>()
        .on_wake([](Room& c) { c.state().log.push_back("wake"); })
        .run([](Room& c) -> Task<void> {
            c.state().log.push_back("run");
            while (co_await c.sleep_for(100ms))
                c.state().ticks += 1;
            c.state().log.push_back("run end");
        })
        .action("ticks", [](RoomAction& c) { return std::as_const(c).state().ticks; });
}

TEST(TypedExtras, run_starts_after_on_wake_keeps_the_actor_awake_and_ends_on_abort) {
    ActorHarness h(ticker().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        co_await h.clock().sleep_for(350ms);
        auto ticks = co_await h.call("ticks");
        EXPECT_EQ(ticks.ok() ? *ticks : Json(), Json(3));
        EXPECT_EQ(h.ctx().can_sleep(), core::CanSleep::ActiveRunHandler);
        // Long past the idle sleep timeout: the run handler keeps the actor awake.
        co_await h.clock().sleep_for(60s);
        EXPECT_EQ(h.ctx().can_sleep(), core::CanSleep::ActiveRunHandler);
        EXPECT_FALSE(h.ctx().sleep_requested());

        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        const Json stored = h.stored_state().value_or(Json());
        EXPECT_EQ(stored["log"], (Json{"wake", "run", "run end"}));
        EXPECT_GE(stored["ticks"].get<std::int64_t>(), 603);

        CO_ASSERT((co_await h.start()).ok());
        co_await h.clock().sleep_for(1ms);
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Destroy)).ok());
        EXPECT_EQ(h.stored_state().value_or(Json())["log"],
                  (Json{"wake", "run", "run end", "wake", "run", "run end"}));
    }());
}

TEST(TypedExtras, run_returning_early_lets_the_actor_sleep) {
    auto factory = Actor<RoomState>()
                       .run([](Room& c) -> Task<void> {
                           co_await c.sleep_for(50ms);
                           c.state().log.push_back("done");
                       })
                       .factory();
    ActorHarness h(factory);
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ(h.ctx().can_sleep(), core::CanSleep::ActiveRunHandler);
        co_await h.clock().sleep_for(60ms);
        EXPECT_NE(h.ctx().can_sleep(), core::CanSleep::ActiveRunHandler);
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        EXPECT_EQ(h.stored_state().value_or(Json())["log"], (Json{"done"}));
    }());
}

Task<void> pause(core::ActorContext ctx, std::chrono::milliseconds d) {
    co_await ctx.clock().sleep_for(d);
}

Task<void> finish_later(Room c, std::chrono::milliseconds d) {
    co_await c.core_context().clock().sleep_for(d);
    c.state().log.push_back("background done");
}

Actor<RoomState> worker() {
    return Actor<RoomState>()
        .action("hold",
                [](RoomAction& c, std::int64_t ms) -> Task<std::int64_t> {
                    Task<void> work = pause(c.core_context(), std::chrono::milliseconds(ms));
                    Task<void> held = c.keep_awake(std::move(work));
                    co_await std::move(held);
                    co_return ms;
                })
        .action("background",
                [](RoomAction& c, std::int64_t ms) {
                    Room base = c;
                    return c.wait_until(finish_later(base, std::chrono::milliseconds(ms)));
                })
        .action("log", [](RoomAction& c) { return std::as_const(c).state().log; });
}

TEST(TypedExtras, keep_awake_holds_a_region_while_pending) {
    ActorHarness h(worker().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ(h.ctx().keep_awake_count(), 0u);
        auto call = rt::spawn(h.runtime().executor(), h.call("hold", 300));
        co_await h.clock().sleep_for(100ms);
        EXPECT_EQ(h.ctx().keep_awake_count(), 1u);
        EXPECT_EQ(h.ctx().can_sleep(), core::CanSleep::ActiveKeepAwake);
        auto joined = co_await call.join();
        CO_ASSERT(joined.is_ok());
        EXPECT_EQ(h.ctx().keep_awake_count(), 0u);
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedExtras, wait_until_delays_shutdown_until_the_work_is_done) {
    ActorHarness h(worker().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto accepted = co_await h.call("background", 500);
        EXPECT_EQ(accepted.ok() ? *accepted : Json(), Json(true));
        EXPECT_EQ(h.ctx().shutdown_task_count(), 1u);
        EXPECT_EQ(h.ctx().keep_awake_count(), 0u) << "wait_until does not block idle sleep";
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        EXPECT_EQ(h.ctx().shutdown_task_count(), 0u);
        EXPECT_EQ(h.stored_state().value_or(Json())["log"], (Json{"background done"}));
    }());
}

}  // namespace
}  // namespace rivetkit::api_test

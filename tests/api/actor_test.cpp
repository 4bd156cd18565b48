// The typed actor API (include/rivetkit) driven through a real ActorTask on virtual time.

#include <stdexcept>

#include "api_test_support.hpp"
#include "counter/counter.hpp"

namespace rivetkit::api_test {
namespace {

struct ProbeState {
    std::int64_t value = 0;
    std::vector<std::string> log;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ProbeState, value, log)

struct JoinParams {
    std::string name;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JoinParams, name)

using Probe = ActionContext<ProbeState>;

Actor<ProbeState> probe_actor() {
    return Actor<ProbeState>()
        .action("describe",
                [](Probe&, std::int64_t a, std::string b, std::optional<double> c) {
                    return Json{{"a", a}, {"b", b}, {"c", c ? Json(*c) : Json(nullptr)}};
                })
        .action("narrow",
                [](Probe&, std::uint8_t small, bool flag) {
                    return Json::array({small, flag});
                })
        .action("set", [](Probe& c, std::int64_t v) { c.state().value = v; })
        .action(
            "setDurable", [](Probe& c, std::int64_t v) { c.state().value = v; },
            ActionOptions{.reply_after_durable = true})
        .action("get", [](Probe& c) { return std::as_const(c).state().value; })
        .action("touchOnly", [](Probe& c) { return c.state().value; })
        .action("userError",
                [](Probe&) -> int {
                    throw UserError("deliberate_failure", "counter failed on purpose",
                                    {{"reason", "test"}});
                })
        .action("resultError",
                [](Probe&) -> Result<int> { return errors::user("nope", "returned error"); })
        .action("crash", [](Probe&) -> int { throw std::runtime_error("boom"); })
        .action("caller", [](Probe& c) { return c.conn() ? Json(c.conn()->id()) : Json(nullptr); })
        .action("slowSet",
                [](Probe& c, std::int64_t v) -> Task<std::int64_t> {
                    co_await c.core_context().clock().sleep_for(100ms);
                    c.state().value = v;
                    co_return v;
                })
        .action("scheduleSet",
                [](Probe& c, std::int64_t ms, std::int64_t v) {
                    c.schedule_after(std::chrono::milliseconds(ms), "recordCaller", v);
                })
        .action("recordCaller",
                [](Probe& c, std::int64_t v) {
                    c.state().value = v;
                    c.state().log.push_back(c.conn() ? "conn" : "scheduled");
                })
        .action("log", [](Probe& c) { return std::as_const(c).state().log; })
        .on_create([](ActorContext<ProbeState>& c) { c.state().log.push_back("create"); })
        .on_wake([](ActorContext<ProbeState>& c) { c.state().log.push_back("wake"); })
        .on_sleep([](ActorContext<ProbeState>& c) { c.state().log.push_back("sleep"); })
        .on_before_connect([](ActorContext<ProbeState>&, const JoinParams& params) {
            if (params.name == "mallory")
                throw UserError("forbidden", "not you", {{"name", params.name}});
        })
        .on_connect([](ActorContext<ProbeState>& c, Conn& conn) {
            c.state().log.push_back("connect " + conn.params_as<JoinParams>().name);
            conn.send("welcome", conn.id());
        })
        .on_disconnect([](ActorContext<ProbeState>& c, const Conn& conn) {
            c.state().log.push_back("disconnect " + conn.id());
        });
}

void expect_error(const Result<Json>& r, std::string_view group, std::string_view code,
                  std::string_view message_part) {
    ASSERT_FALSE(r.ok()) << r->dump();
    EXPECT_EQ(r.error().group(), group) << r.error().to_string();
    EXPECT_EQ(r.error().code(), code) << r.error().to_string();
    // A validation error's detail is in its metadata (issues[].message), as upstream's.
    const std::string text = r.error().message() + " " + r.error().metadata().value_or("");
    EXPECT_NE(text.find(message_part), std::string::npos) << text;
}

TEST(TypedActor, typed_args_decode_and_results_encode) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto two = co_await h.call("describe", 7, "x");
        CO_ASSERT(two.ok());
        EXPECT_EQ(*two, (Json{{"a", 7}, {"b", "x"}, {"c", nullptr}}));
        auto three = co_await h.call("describe", -1, "y", 2.5);
        CO_ASSERT(three.ok());
        EXPECT_EQ(*three, (Json{{"a", -1}, {"b", "y"}, {"c", 2.5}}));
        auto null_optional = co_await h.call("describe", 1, "z", nullptr);
        CO_ASSERT(null_optional.ok());
        EXPECT_EQ((*null_optional)["c"], Json(nullptr));
        auto narrow = co_await h.call("narrow", 255, true);
        CO_ASSERT(narrow.ok());
        EXPECT_EQ(*narrow, Json::array({255, true}));
        auto none = co_await h.call("set", 3);
        CO_ASSERT(none.ok());
        EXPECT_EQ(*none, Json(nullptr));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, wrong_argument_type_names_its_position) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        expect_error(co_await h.call("describe", "7", "x"), "actor", "validation_error",
                     "argument 0: expected an integer");
        expect_error(co_await h.call("describe", 7, 8), "actor", "validation_error",
                     "argument 1: type must be string, but is number");
        expect_error(co_await h.call("describe", 7, "x", "nan"), "actor", "validation_error",
                     "argument 2: expected a number, got string");
        expect_error(co_await h.call("narrow", 256, true), "actor", "validation_error",
                     "argument 0: integer out of range");
        expect_error(co_await h.call("narrow", -1, true), "actor", "validation_error",
                     "argument 0: integer out of range");
        expect_error(co_await h.call("narrow", 1.5, true), "actor", "validation_error",
                     "argument 0: expected an integer, got number");
        expect_error(co_await h.call("narrow", 1, 1), "actor", "validation_error",
                     "argument 1: expected a boolean, got number");
        // Upstream's shape: "Invalid action `<name>` arguments", metadata {"issues": [{message,
        // path}]}, the path naming the argument.
        auto shaped = co_await h.call("describe", 7, 8);
        CO_ASSERT(!shaped.ok());
        EXPECT_EQ(shaped.error().message(), "Invalid action `describe` arguments");
        EXPECT_EQ(Json::parse(shaped.error().metadata().value_or("null")),
                  (Json{{"issues",
                         {{{"message", "argument 1: type must be string, but is number"},
                           {"path", {1}}}}}}));
        EXPECT_TRUE(is_public(shaped.error()));
        // The actor keeps serving after bad calls.
        auto fine = co_await h.call("describe", 7, "x");
        EXPECT_TRUE(fine.ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, wrong_arity_is_a_validation_error) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        expect_error(co_await h.call("describe"), "actor", "validation_error",
                     "Invalid action `describe` arguments");
        expect_error(co_await h.call("describe"), "actor", "validation_error",
                     "expected 2 to 3 arguments, got 0");
        expect_error(co_await h.call("describe", 1, "x", 2, 3), "actor", "validation_error",
                     "expected 2 to 3 arguments, got 4");
        expect_error(co_await h.call("get", 1), "actor", "validation_error",
                     "expected 0 arguments, got 1");
        expect_error(co_await h.call("set"), "actor", "validation_error",
                     "expected 1 argument, got 0");
        // Not an array at all (raw CBOR 5), and not CBOR at all.
        const Bytes scalar_args{0x05};
        const Bytes garbage_args{0x9f, 0x01};
        auto scalar = co_await h.call_raw("set", scalar_args);
        CO_ASSERT(!scalar.ok());
        EXPECT_EQ(scalar.error().code(), "validation_error");
        auto garbage = co_await h.call_raw("set", garbage_args);
        CO_ASSERT(!garbage.ok());
        EXPECT_EQ(garbage.error().code(), "invalid_request");
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, args_with_one_byte_cbor_tags_decode) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        // [1(5), "x"]: tag 1 (epoch time) as JS encoders emit it, which nlohmann 3.11 refuses.
        const Bytes tagged{0x82, 0xc1, 0x05, 0x61, 'x'};
        auto raw = co_await h.call_raw("describe", tagged);
        CO_ASSERT(raw.ok());
        auto value = from_cbor(*raw);
        CO_ASSERT(value.ok());
        EXPECT_EQ(*value, (Json{{"a", 5}, {"b", "x"}, {"c", nullptr}}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, errors_reach_the_caller_structured) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto thrown = co_await h.call("userError");
        CO_ASSERT(!thrown.ok());
        EXPECT_EQ(thrown.error(), errors::user("deliberate_failure", "counter failed on purpose",
                                               R"({"reason":"test"})"));
        EXPECT_TRUE(is_public(thrown.error()));
        auto returned = co_await h.call("resultError");
        CO_ASSERT(!returned.ok());
        EXPECT_EQ(returned.error(), errors::user("nope", "returned error"));
        auto crashed = co_await h.call("crash");
        CO_ASSERT(!crashed.ok());
        EXPECT_TRUE(crashed.error().is("core", "internal_error"));
        EXPECT_FALSE(is_public(crashed.error()));
        auto missing = co_await h.call("nope");
        CO_ASSERT(!missing.ok());
        EXPECT_TRUE(missing.error().is("actor", "action_not_found"));
        // Still alive.
        EXPECT_TRUE((co_await h.call("get")).ok());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// Only an actor with a connection hook hears of connections: without one, the core admits a
// connection (every HTTP action makes one) without a round trip to the typed runtime.
TEST(TypedActor, only_actors_with_a_connection_hook_hear_of_connections) {
    EXPECT_FALSE(examples::counter_actor().factory()->config().connection_events);
    EXPECT_TRUE(probe_actor().factory()->config().connection_events);
    auto bare = [] { return Actor<ProbeState>().action("get", [](Probe&) { return 1; }); };
    EXPECT_TRUE(bare().on_connect([](ActorContext<ProbeState>&, Conn&) {})
                    .factory()
                    ->config()
                    .connection_events);
    EXPECT_TRUE(bare().on_disconnect([](ActorContext<ProbeState>&, const Conn&) {})
                    .factory()
                    ->config()
                    .connection_events);
    EXPECT_TRUE(bare().on_before_connect([](ActorContext<ProbeState>&, const JoinParams&) {})
                    .factory()
                    ->config()
                    .connection_events);
    EXPECT_TRUE(bare().create_conn_state([](ActorContext<ProbeState>&) { return Json::object(); })
                    .factory()
                    ->config()
                    .connection_events);
}

// Without hooks, an action over a transient connection (an HTTP action) still sees its caller.
TEST(TypedActor, an_actor_without_connection_hooks_still_sees_its_caller) {
    auto actor = Actor<ProbeState>().action(
        "caller", [](Probe& c) { return c.conn() ? Json(c.conn()->id()) : Json(nullptr); });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto conn = co_await h.ctx().connect_conn(core::ConnectOptions{});
        CO_ASSERT(conn.ok());
        auto caller = co_await h.call_from(conn->id(), "caller");
        CO_ASSERT(caller.ok());
        EXPECT_EQ(*caller, Json(conn->id()));
        EXPECT_TRUE((co_await conn->disconnect(std::nullopt)).ok());
        EXPECT_TRUE(h.ctx().conns().empty());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, state_is_saved_as_a_cbor_map_after_the_debounce) {
    ActorHarness h(examples::counter_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        // The first state is persisted with the actor's creation.
        EXPECT_EQ(h.stored_state(), (Json{{"count", 0}}));
        auto five = co_await h.call("increment", 5);
        CO_ASSERT(five.ok());
        EXPECT_EQ(*five, Json(5));
        EXPECT_TRUE(h.ctx().save_requested());
        EXPECT_EQ(h.stored_state(), (Json{{"count", 0}})) << "saves are debounced";
        co_await h.clock().sleep_for(1100ms);
        auto bytes = h.stored_state_bytes();
        CO_ASSERT(bytes.has_value());
        // {"count": 5}: a one-entry CBOR map, the shape TS rivetkit stores.
        EXPECT_EQ(*bytes, (Bytes{0xa1, 0x65, 'c', 'o', 'u', 'n', 't', 0x05}));
        EXPECT_FALSE(h.ctx().save_requested());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, actions_that_change_nothing_request_no_save) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        co_await h.clock().sleep_for(1100ms);
        CO_ASSERT(!h.ctx().save_requested());
        CO_ASSERT((co_await h.call("get")).ok());
        EXPECT_FALSE(h.ctx().save_requested());
        // A mutable reference alone is not a change.
        CO_ASSERT((co_await h.call("touchOnly")).ok());
        EXPECT_FALSE(h.ctx().save_requested());
        CO_ASSERT((co_await h.call("set", 0)).ok());
        EXPECT_FALSE(h.ctx().save_requested()) << "setting the same value is not a change";
        CO_ASSERT((co_await h.call("set", 1)).ok());
        EXPECT_TRUE(h.ctx().save_requested());
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// A trivially copyable state is compared by its bytes after each handler and encoded only for
// the save: the same contract as the encoding comparison (nothing changed, no save requested;
// a change saved and notified once), including right after a wake, where the state last seen is
// the loaded snapshot, not the type's default.
struct Tally {
    std::int64_t count = 0;
    bool flag = false;
};
int tally_encodes = 0;  // to_json calls: the state's encodings
void to_json(Json& j, const Tally& t) {
    ++tally_encodes;
    j = Json{{"count", t.count}, {"flag", t.flag}};
}
void from_json(const Json& j, Tally& t) {
    t.count = j.value("count", std::int64_t{0});
    t.flag = j.value("flag", false);
}
static_assert(std::is_trivially_copyable_v<Tally>);

TEST(TypedActor, a_trivially_copyable_state_is_compared_by_value_and_encoded_for_the_save) {
    using TallyAction = ActionContext<Tally>;
    auto changes = std::make_shared<std::vector<std::int64_t>>();
    auto actor = Actor<Tally>()
                     .action("set", [](TallyAction& c, std::int64_t v) { c.state().count = v; })
                     .action("touchOnly", [](TallyAction& c) { return c.state().count; })
                     .on_state_change([changes](ActorContext<Tally>&, const Tally& state) {
                         changes->push_back(state.count);
                     });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        co_await h.clock().sleep_for(1100ms);
        CO_ASSERT(!h.ctx().save_requested());
        CO_ASSERT((co_await h.call("touchOnly")).ok());
        CO_ASSERT((co_await h.call("set", 0)).ok());
        EXPECT_FALSE(h.ctx().save_requested()) << "nothing changed";

        // Twenty changes within one save interval: encoded for the saves (the first may go at
        // once, the interval since the last save having passed), not after each handler.
        const int encodes = tally_encodes;
        for (std::int64_t v = 20; v > 7; --v)
            CO_ASSERT((co_await h.call("set", v)).ok());
        CO_ASSERT((co_await h.call("set", 7)).ok());
        EXPECT_TRUE(h.ctx().save_requested());
        EXPECT_LE(tally_encodes, encodes + 1);
        co_await h.clock().sleep_for(1100ms);
        EXPECT_LE(tally_encodes, encodes + 2);
        EXPECT_EQ(h.stored_state(), (Json{{"count", 7}, {"flag", false}}));
        CO_ASSERT((co_await h.call("set", 7)).ok());
        EXPECT_FALSE(h.ctx().save_requested()) << "the same value again";
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());

        // Woken with count 7: setting the type's default value is a change.
        CO_ASSERT((co_await h.start()).ok());
        CO_ASSERT((co_await h.call("set", 0)).ok());
        EXPECT_TRUE(h.ctx().save_requested());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        EXPECT_EQ(h.stored_state(), (Json{{"count", 0}, {"flag", false}}));
        EXPECT_EQ(changes->size(), 15u);  // 20 down to 7, then 0
        EXPECT_EQ(changes->back(), 0);
    }());
}

TEST(TypedActor, reply_after_durable_replies_only_after_the_kv_write) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto value_in_kv = [&] { return h.stored_state().value_or(Json())["value"]; };
        const auto writes_before = h.kv().apply_batch_call_count();

        // Plain action: the reply comes first, the save a debounce later.
        CO_ASSERT((co_await h.call("set", 1)).ok());
        EXPECT_EQ(value_in_kv(), Json(0));
        EXPECT_EQ(h.kv().apply_batch_call_count(), writes_before);

        // Durable action: by the time the reply arrives the new state is in KV, without waiting
        // for the debounce.
        const auto sent_at = h.clock().now();
        CO_ASSERT((co_await h.call("setDurable", 2)).ok());
        EXPECT_EQ(value_in_kv(), Json(2));
        EXPECT_GT(h.kv().apply_batch_call_count(), writes_before);
        EXPECT_LT(h.clock().now() - sent_at, std::chrono::milliseconds(1000));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, coroutine_action_lets_other_events_through) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto slow = rt::spawn(h.runtime().executor(), h.call("slowSet", 9));
        co_await h.clock().sleep_for(10ms);
        // Served while slowSet is suspended.
        auto quick = co_await h.call("get");
        CO_ASSERT(quick.ok());
        EXPECT_EQ(*quick, Json(0));
        auto joined = co_await slow.join();
        CO_ASSERT(joined.is_ok());
        CO_ASSERT(joined.value().ok());
        EXPECT_EQ(*joined.value(), Json(9));
        EXPECT_TRUE(h.ctx().save_requested()) << "a change after a suspension is still saved";
        auto after = co_await h.call("get");
        EXPECT_EQ(after.ok() ? *after : Json(), Json(9));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, schedule_after_calls_the_action_without_a_connection) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto caller = co_await h.call_from("conn-7", "caller");
        EXPECT_EQ(caller.ok() ? *caller : Json(), Json("conn-7"));
        CO_ASSERT((co_await h.call("scheduleSet", 500, 42)).ok());
        EXPECT_TRUE(h.ctx().next_event().has_value());
        co_await h.clock().sleep_for(400ms);
        CO_ASSERT((co_await h.fire_alarm()).ok());
        auto early = co_await h.call("get");
        EXPECT_EQ(early.ok() ? *early : Json(), Json(0)) << "not due yet";
        co_await h.clock().sleep_for(200ms);
        CO_ASSERT((co_await h.fire_alarm()).ok());
        Json value;
        for (int i = 0; i < 20 && value != Json(42); ++i) {
            co_await h.clock().sleep_for(10ms);
            auto got = co_await h.call("get");
            value = got.ok() ? *got : Json();
        }
        EXPECT_EQ(value, Json(42));
        auto log = co_await h.call("log");
        EXPECT_EQ(log.ok() ? *log : Json(), (Json{"create", "wake", "scheduled"}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, lifecycle_hooks_and_state_across_sleep) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        EXPECT_EQ(h.stored_state().value_or(Json())["log"], (Json{"create", "wake"}))
            << "start-hook changes are part of the first persisted state";
        CO_ASSERT((co_await h.call("set", 5)).ok());
        CO_ASSERT((co_await h.stop(core::ShutdownKind::Sleep)).ok());
        EXPECT_EQ(h.stored_state(), (Json{{"value", 5}, {"log", {"create", "wake", "sleep"}}}));

        CO_ASSERT((co_await h.start()).ok());
        auto value = co_await h.call("get");
        EXPECT_EQ(value.ok() ? *value : Json(), Json(5));
        auto log = co_await h.call("log");
        EXPECT_EQ(log.ok() ? *log : Json(), (Json{"create", "wake", "sleep", "wake"}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, connections_params_hooks_and_events) {
    ActorHarness h(probe_actor().factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        const Json mallory{{"name", "mallory"}};
        const Json numeric{{"name", 3}};
        const Json alice{{"name", "alice"}};
        auto refused = co_await h.connect(mallory, inbox);
        CO_ASSERT(!refused.ok());
        EXPECT_EQ(refused.error(), errors::user("forbidden", "not you", R"({"name":"mallory"})"));
        auto bad_params = co_await h.connect(numeric, inbox);
        CO_ASSERT(!bad_params.ok());
        EXPECT_TRUE(bad_params.error().is("actor", "validation_error"))
            << bad_params.error().to_string();

        auto conn = co_await h.connect(alice, inbox);
        CO_ASSERT(conn.ok());
        CO_ASSERT(inbox->size() == 1);
        EXPECT_EQ(inbox->front(), (ReceivedEvent{"welcome", Json::array({conn->id()})}));
        CO_ASSERT((co_await conn->disconnect(std::nullopt)).ok());
        for (int i = 0; i < 10; ++i)
            co_await h.clock().sleep_for(1ms);
        auto log = co_await h.call("log");
        EXPECT_EQ(log.ok() ? *log : Json(),
                  (Json{"create", "wake", "connect alice", "disconnect " + conn->id()}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, options_map_to_core_config_with_upstream_names) {
    ActorOptions options;
    options.action_timeout = 5s;
    options.sleep_timeout = 2s;
    options.no_sleep = true;
    options.sleep_grace_period = 3s;
    options.max_incoming_message_size = 1024;
    auto factory = Actor<ProbeState>()
                       .options(options)
                       .action("b", [](Probe&) {})
                       .action("a", [](Probe&) {})
                       .factory();
    const core::ActorConfig& config = factory->config();
    EXPECT_EQ(config.action_timeout, 5s);
    EXPECT_EQ(config.sleep_timeout, 2s);
    EXPECT_TRUE(config.no_sleep);
    EXPECT_EQ(config.sleep_grace_period, 3s);
    EXPECT_TRUE(config.sleep_grace_period_overridden);
    EXPECT_EQ(config.max_incoming_message_size, 1024u);
    EXPECT_EQ(config.state_save_interval, core::ActorConfig{}.state_save_interval);
    EXPECT_TRUE(config.has_state);
    ASSERT_EQ(config.actions.size(), 2u);
    EXPECT_EQ(config.actions[0].name, "a");
    EXPECT_EQ(config.actions[1].name, "b");
    EXPECT_TRUE(factory->manual_startup_ready());
}

TEST(TypedActor, create_state_reads_the_input) {
    ActorHarness h(examples::counter_actor().factory(), Json{{"start", 7}});
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto count = co_await h.call("getCount");
        EXPECT_EQ(count.ok() ? *count : Json(), Json(7));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

TEST(TypedActor, bad_input_fails_the_start) {
    ActorHarness h(examples::counter_actor().factory(), Json{{"start", "seven"}});
    h.runtime().block_on([&]() -> Task<void> {
        Status started = co_await h.start();
        CO_ASSERT(!started.ok());
        EXPECT_TRUE(started.error().is("actor", "invalid_request")) << started.error().to_string();
    }());
}

// upstream's c.request: the connecting request in the preflight hooks, the request in on_request,
// nothing in actions or for a connection that came without one.
TEST(TypedActor, hooks_see_the_request_behind_them) {
    using Seen = std::vector<std::string>;
    auto seen = std::make_shared<Seen>();
    auto describe = [](const Request* r) {
        if (r == nullptr)
            return std::string("none");
        return r->method + " " + r->path + " " + r->header("X-Probe").value_or("-");
    };
    auto actor = Actor<Json>()
                     .on_before_connect([seen, describe](ActorContext<Json>& c, Json) {
                         seen->push_back("before " + describe(c.request()));
                     })
                     .create_conn_state([seen, describe](ActorContext<Json>& c, Json) {
                         seen->push_back("state " + describe(c.request()));
                         return Json::object();
                     })
                     .on_connect([seen, describe](ActorContext<Json>& c, Conn&) {
                         seen->push_back("connect " + describe(c.request()));
                     })
                     .on_request([seen, describe](ActorContext<Json>& c, Request&) {
                         seen->push_back("request " + describe(c.request()));
                         return Response::text("ok");
                     })
                     .action("peek", [seen, describe](ActionContext<Json>& c) {
                         seen->push_back("action " + describe(c.request()));
                     });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        core::HttpRequest upgrade;
        upgrade.path = "/connect";
        upgrade.headers = {{"x-probe", "ws"}};
        CO_ASSERT((co_await h.connect_with_request(nullptr, upgrade, inbox, {})).ok());
        CO_ASSERT((co_await h.connect(nullptr, inbox)).ok());
        core::HttpRequest get;
        get.path = "/hello?x=1";
        get.headers = {{"x-probe", "http"}};
        CO_ASSERT((co_await h.request(get)).ok());
        CO_ASSERT((co_await h.call("peek")).ok());
        // A raw request is a connection of its own (as upstream's runtime): its preflight sees
        // the request too.
        EXPECT_EQ(*seen, (Seen{"before GET /connect ws", "state GET /connect ws", "connect none",
                               "before none", "state none", "connect none",
                               "before GET /hello?x=1 http", "state GET /hello?x=1 http",
                               "connect none", "request GET /hello?x=1 http", "action none"}));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// create_conn_state may wait (upstream's is async): the connection joins once it is done and is
// not in conns() meanwhile; Conn::disconnect closes it and on_disconnect runs.
TEST(TypedActor, create_conn_state_may_wait_and_a_conn_can_disconnect_itself) {
    auto left = std::make_shared<std::vector<std::string>>();
    auto actor = Actor<Json>()
                     .create_conn_state(
                         [](ActorContext<Json>& c, Json params) -> boost::asio::awaitable<Json> {
                             const std::size_t visible = c.conns().size();
                             co_await c.sleep_for(std::chrono::milliseconds(50));
                             co_return Json{{"label", params.value("label", std::string())},
                                            {"sawOthers", visible}};
                         })
                     .on_disconnect([left](ActorContext<Json>&, Conn& conn) {
                         left->push_back(conn.state_json().value("label", std::string()));
                     })
                     .action("count", [](ActionContext<Json>& c) { return c.conns().size(); })
                     .action("leave", [](ActionContext<Json>& c) -> boost::asio::awaitable<Json> {
                         Conn self = *c.conn();
                         Status st = co_await self.disconnect("bye");
                         co_return st.ok() ? Json(true) : Json(st.error().to_string());
                     });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto inbox = std::make_shared<std::vector<ReceivedEvent>>();
        const auto before = h.clock().now();
        const Json params_a{{"label", "a"}};
        const Json params_b{{"label", "b"}};
        auto a = co_await h.connect(params_a, inbox);
        CO_ASSERT(a.ok());
        EXPECT_GE(h.clock().now() - before, std::chrono::milliseconds(50));
        const Json state_a = from_cbor(a->state()).value();
        EXPECT_EQ(state_a["label"], "a");
        EXPECT_EQ(state_a["sawOthers"], 0);
        auto b = co_await h.connect(params_b, inbox);
        CO_ASSERT(b.ok());
        const Json state_b = from_cbor(b->state()).value();
        EXPECT_EQ(state_b["sawOthers"], 1);
        auto two = co_await h.call("count");
        CO_ASSERT(two.ok());
        EXPECT_EQ(*two, Json(2));
        const std::string a_id = a->id();
        auto gone = co_await h.call_from(a_id, "leave");
        CO_ASSERT(gone.ok());
        EXPECT_EQ(*gone, Json(true));
        CO_ASSERT(left->size() == 1);
        EXPECT_EQ(left->front(), "a");
        auto one = co_await h.call("count");
        CO_ASSERT(one.ok());
        EXPECT_EQ(*one, Json(1));
        EXPECT_TRUE((co_await h.stop(core::ShutdownKind::Destroy)).ok());
    }());
}

// Work that outlives the sleep grace period (a keep_awake the actor never lets go of in time) must
// not cost the state changes made meanwhile: on_sleep's change is in the final save. (The grace
// deadline used to abort the runtime before the final save, which it answers, so nothing since
// the last save was written.)
TEST(TypedActor, state_changed_during_sleep_grace_is_saved_when_work_outlives_the_grace) {
    ActorOptions options;
    options.sleep_grace_period = std::chrono::milliseconds(200);
    auto actor = Actor<Json>()
                     .state(Json{{"sleepCount", 0}})
                     .options(options)
                     .on_sleep([](ActorContext<Json>& c) {
                         c.state()["sleepCount"] = c.state()["sleepCount"].get<int>() + 1;
                     })
                     .action("holdOn", [](ActionContext<Json>& c) -> boost::asio::awaitable<Json> {
                         ActionContext<Json> self = c;
                         co_await self.keep_awake(
                             self.core_context().clock().sleep_for(std::chrono::seconds(5)));
                         co_return true;
                     });
    ActorHarness h(actor.factory());
    h.runtime().block_on([&]() -> Task<void> {
        CO_ASSERT((co_await h.start()).ok());
        auto held = rt::spawn(h.runtime().executor(), h.call("holdOn"));
        co_await h.clock().sleep_for(std::chrono::milliseconds(10));
        Status slept = co_await h.stop(core::ShutdownKind::Sleep);
        EXPECT_TRUE(slept.ok()) << slept.error().to_string();
        EXPECT_EQ(h.stored_state(), (Json{{"sleepCount", 1}}));
    }());
}

TEST(TypedValue, from_cbor_accepts_tags_and_gives_compat_forms) {
    // 0xd7 tag 23 around a string, then a byte string and undefined (read as null).
    const Bytes cbor{0x83, 0xd7, 0x61, 'a', 0x42, 0x01, 0x02, 0xf7};
    auto value = from_cbor(cbor);
    ASSERT_TRUE(value.ok()) << value.error().to_string();
    EXPECT_EQ(*value, (Json{"a", {"$Uint8Array", "AQI="}, nullptr}));
    auto plain = from_cbor(to_cbor(Json{{"k", {1, 2.5, "s", nullptr, true}}}));
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(*plain, (Json{{"k", {1, 2.5, "s", nullptr, true}}}));
    EXPECT_FALSE(from_cbor(Bytes{0x82, 0x01}).ok());
    EXPECT_EQ(from_cbor(Bytes{}).value(), Json(nullptr));
}

}  // namespace
}  // namespace rivetkit::api_test

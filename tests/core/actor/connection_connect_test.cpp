// The connect path (ActorContext::connect_conn) on virtual time: preflight and open round trips
// to the runtime, their timeouts, refusals, and the managed disconnect that follows.

#include <gtest/gtest.h>

#include <algorithm>

#include "task_test_support.hpp"

namespace rivetkit::core::test {
namespace {

struct Wired {
    ActorContext ctx;
    rt::Receiver<ActorEvent> events;
};

Wired wired(rt::TestRuntime& rt, std::string id) {
    auto ctx = new_with_kv(rt, id, "conn-" + id, std::make_shared<InMemoryKv>());
    auto [tx, rx] = rt::unbounded_channel<ActorEvent>();
    ctx.configure_actor_events(std::move(tx));
    return {ctx, std::move(rx)};
}

TEST(ActorConnect, preflight_then_open_adds_the_connection_and_disconnect_reports_it) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-ok");
    rt.block_on([&]() -> Task<void> {
        ConnectOptions options;
        options.params = Bytes{0xa1, 0x61, 0x75, 0x01};  // {"u": 1}
        auto connecting = rt::spawn(rt.executor(), w.ctx.connect_conn(std::move(options)));
        auto first = co_await w.events.recv();
        CO_ASSERT(first.has_value());
        auto* preflight = std::get_if<event::ConnectionPreflight>(&*first);
        CO_ASSERT(preflight != nullptr);
        EXPECT_EQ(preflight->params, (Bytes{0xa1, 0x61, 0x75, 0x01}));
        EXPECT_TRUE(w.ctx.conns().empty()) << "not added before preflight succeeded";
        preflight->reply.send(Status{});
        auto second = co_await w.events.recv();
        CO_ASSERT(second.has_value());
        auto* open = std::get_if<event::ConnectionOpen>(&*second);
        CO_ASSERT(open != nullptr);
        EXPECT_EQ(w.ctx.conns().size(), 1u) << "added before the open hook runs";
        open->reply.send(Status{});
        auto joined = co_await connecting.join();
        CO_ASSERT(joined.is_ok());
        Result<ConnHandle> conn = std::move(joined).value();
        CO_ASSERT(conn.ok());
        EXPECT_EQ(conn->id().size(), 36u);

        Status gone = co_await conn->disconnect(std::string("bye"));
        EXPECT_TRUE(gone.ok());
        EXPECT_TRUE(w.ctx.conns().empty());
        auto closed = co_await w.events.recv();
        CO_ASSERT(closed.has_value());
        EXPECT_TRUE(std::holds_alternative<event::ConnectionClosed>(*closed));
    }());
}

// As a runtime without connection hooks configures its actors.
void without_connection_events(const ActorContext& ctx) {
    ActorConfig config;
    config.connection_events = false;
    ctx.configure(config);
}

// A runtime without connection hooks (ActorConfig::connection_events = false): a connection
// joins and leaves without a round trip to it, so an HTTP action costs no preflight, open or close.
TEST(ActorConnect, without_connection_events_a_connection_joins_and_leaves_without_the_runtime) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-no-events");
    without_connection_events(w.ctx);
    rt.block_on([&]() -> Task<void> {
        const auto start = rt.clock().now();
        Result<ConnHandle> conn = co_await w.ctx.connect_conn(ConnectOptions{});
        CO_ASSERT(conn.ok());
        EXPECT_EQ(rt.clock().now(), start) << "no timer waited on";
        EXPECT_EQ(w.ctx.conns().size(), 1u);
        Status gone = co_await conn->disconnect(std::nullopt);
        EXPECT_TRUE(gone.ok());
        EXPECT_TRUE(w.ctx.conns().empty());
        EXPECT_TRUE(w.events.try_recv().is_empty())
            << "the runtime heard of neither the connection nor its close";
    }());
}

TEST(ActorConnect, without_connection_events_a_closed_inbox_still_refuses) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-no-events-closed");
    without_connection_events(w.ctx);
    w.events = rt::Receiver<ActorEvent>();  // the runtime is gone
    rt.block_on([&]() -> Task<void> {
        Result<ConnHandle> conn = co_await w.ctx.connect_conn(ConnectOptions{});
        CO_ASSERT(!conn.ok());
        EXPECT_EQ(conn.error().code(), "not_ready");
        EXPECT_TRUE(w.ctx.conns().empty());
    }());
}

TEST(ActorConnect, without_connection_events_and_without_an_inbox_it_is_not_configured) {
    rt::TestRuntime rt;
    auto ctx = new_with_kv(rt, "actor-connect-no-inbox", "conn-no-inbox",
                           std::make_shared<InMemoryKv>());
    without_connection_events(ctx);
    rt.block_on([&]() -> Task<void> {
        Result<ConnHandle> conn = co_await ctx.connect_conn(ConnectOptions{});
        CO_ASSERT(!conn.ok());
        EXPECT_EQ(conn.error().code(), "not_configured");
        EXPECT_TRUE(ctx.conns().empty());
    }());
}

TEST(ActorConnect, unanswered_preflight_times_out_after_both_budgets) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-timeout");
    rt.block_on([&]() -> Task<void> {
        const auto start = rt.clock().now();
        auto connecting = rt::spawn(rt.executor(), w.ctx.connect_conn(ConnectOptions{}));
        auto held = co_await w.events.recv();  // keep the reply alive, never answer
        CO_ASSERT(held.has_value());
        auto joined = co_await connecting.join();
        CO_ASSERT(joined.is_ok());
        Result<ConnHandle> conn = std::move(joined).value();
        CO_ASSERT(!conn.ok());
        EXPECT_EQ(conn.error().group(), "actor");
        EXPECT_EQ(conn.error().code(), "callback_timed_out");
        const auto budget = w.ctx.config().on_before_connect_timeout +
                            w.ctx.config().create_conn_state_timeout;
        EXPECT_EQ(rt.clock().now() - start, budget);
        EXPECT_TRUE(w.ctx.conns().empty());
    }());
}

TEST(ActorConnect, refused_open_removes_the_connection_again) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-refused");
    rt.block_on([&]() -> Task<void> {
        auto connecting = rt::spawn(rt.executor(), w.ctx.connect_conn(ConnectOptions{}));
        auto first = co_await w.events.recv();
        CO_ASSERT(first.has_value());
        std::get<event::ConnectionPreflight>(*first).reply.send(Status{});
        auto second = co_await w.events.recv();
        CO_ASSERT(second.has_value());
        std::get<event::ConnectionOpen>(*second).reply.send(
            errors::user("not_allowed", "go away"));
        auto joined = co_await connecting.join();
        CO_ASSERT(joined.is_ok());
        Result<ConnHandle> conn = std::move(joined).value();
        CO_ASSERT(!conn.ok());
        EXPECT_EQ(conn.error().code(), "not_allowed");
        EXPECT_TRUE(w.ctx.conns().empty());
    }());
}

TEST(ActorConnect, dropped_preflight_reply_is_an_error_not_a_hang) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-dropped");
    rt.block_on([&]() -> Task<void> {
        auto connecting = rt::spawn(rt.executor(), w.ctx.connect_conn(ConnectOptions{}));
        {
            auto first = co_await w.events.recv();  // dropped at the end of this scope
            CO_ASSERT(first.has_value());
        }
        auto joined = co_await connecting.join();
        CO_ASSERT(joined.is_ok());
        Result<ConnHandle> conn = std::move(joined).value();
        CO_ASSERT(!conn.ok());
        EXPECT_EQ(conn.error().code(), "dropped_reply");
    }());
}

// Answers the connect round trip and returns the new connection.
Task<ConnHandle> connected(Wired& w, ConnectOptions options) {
    auto connecting = rt::spawn(w.ctx.executor(), w.ctx.connect_conn(std::move(options)));
    for (int i = 0; i < 2; ++i) {
        auto ev = co_await w.events.recv();
        if (auto* p = std::get_if<event::ConnectionPreflight>(&*ev))
            p->reply.send(Status{});
        else if (auto* o = std::get_if<event::ConnectionOpen>(&*ev))
            o->reply.send(Status{});
    }
    auto joined = co_await connecting.join();
    Result<ConnHandle> conn = std::move(joined).value();
    co_return std::move(conn).value();
}

// A broadcast hands every subscribed connection the same EventFrames, so a frame one transport
// encoded is reused by the next one with the same key (one encoding per broadcast, not per
// connection); a send to one connection has no shared frames.
TEST(ActorConnect, broadcast_shares_encoded_frames_across_connections) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-broadcast");
    struct Seen {
        std::string conn;
        const ConnHandle::EventFrames* shared;
        bool reused;
    };
    auto seen = std::make_shared<std::vector<Seen>>();
    rt.block_on([&]() -> Task<void> {
        std::vector<ConnHandle> conns;
        for (std::string name : {"a", "b", "c"}) {
            ConnectOptions options;
            options.prepare = [seen, name](const ConnHandle& conn) {
                conn.configure_event_sender([seen, name](std::string_view, const Bytes& args,
                                                         ConnHandle::EventFrames* shared) {
                    bool reused = false;
                    if (shared != nullptr) {
                        const Bytes* frame = shared->find(7);
                        reused = frame != nullptr && *frame == args;
                        if (frame == nullptr)
                            shared->add(7, args);
                    }
                    seen->push_back({name, shared, reused});
                    return Status{};
                });
                return Status{};
            };
            auto conn = co_await connected(w, std::move(options));
            conns.push_back(conn);
        }
        conns[0].subscribe("tick");
        conns[2].subscribe("tick");

        w.ctx.broadcast("tick", Bytes{0x81, 0x01});
        CO_ASSERT(seen->size() == 2u);  // only the subscribed connections
        EXPECT_NE((*seen)[0].shared, nullptr);
        EXPECT_EQ((*seen)[0].shared, (*seen)[1].shared);
        EXPECT_EQ((*seen)[0].reused + (*seen)[1].reused, 1) << "encoded once, reused once";

        seen->clear();
        conns[1].send("direct", Bytes{0x80});
        CO_ASSERT(seen->size() == 1u);
        EXPECT_EQ((*seen)[0].conn, "b");
        EXPECT_EQ((*seen)[0].shared, nullptr);
    }());
}

// broadcast() skips the walk over every connection when nobody subscribes to the event
// (ActorContextInner::subscribers). Whatever path a subscription takes, a subscribed connection
// still gets the event and one that left stops getting it: subscribed before it joined (a
// restored connection), subscribed after, unsubscribed, cleared, removed and added again, and
// replaced by another connection with its id.
TEST(ActorConnect, broadcast_reaches_subscribers_whichever_way_they_subscribed) {
    rt::TestRuntime rt;
    auto w = wired(rt, "actor-connect-subscribers");
    auto got = std::make_shared<std::vector<std::string>>();
    auto listening = [got](std::string name) {
        return [got, name](std::string_view event, const Bytes&, ConnHandle::EventFrames*) {
            got->push_back(name + ":" + std::string(event));
            return Status{};
        };
    };
    auto heard = [&](std::string_view event) {
        got->clear();
        w.ctx.broadcast(event, Bytes{0x80});
        std::sort(got->begin(), got->end());
        return *got;
    };
    using Heard = std::vector<std::string>;
    rt.block_on([&]() -> Task<void> {
        ConnHandle early("early", {}, {}, false);
        early.configure_event_sender(listening("early"));
        early.subscribe("tick");  // before it joins, as a restored connection
        w.ctx.add_conn(early);
        ConnectOptions options;
        options.prepare = [&](const ConnHandle& conn) {
            conn.configure_event_sender(listening("late"));
            return Status{};
        };
        ConnHandle late = co_await connected(w, std::move(options));
        EXPECT_EQ(heard("tick"), (Heard{"early:tick"}));
        EXPECT_EQ(heard("tock"), Heard{});

        late.subscribe("tick");
        late.subscribe("tock");
        EXPECT_EQ(heard("tick"), (Heard{"early:tick", "late:tick"}));
        EXPECT_EQ(heard("tock"), (Heard{"late:tock"}));

        late.unsubscribe("tock");
        EXPECT_EQ(heard("tock"), Heard{});
        early.clear_subscriptions();
        EXPECT_EQ(heard("tick"), (Heard{"late:tick"}));

        early.subscribe("tick");
        auto removed = w.ctx.remove_conn("early");
        CO_ASSERT(removed.has_value());
        EXPECT_EQ(heard("tick"), (Heard{"late:tick"}));
        removed->clear_subscriptions();  // as the managed disconnect does, after the removal
        removed->subscribe("tick");
        w.ctx.add_conn(*removed);
        EXPECT_EQ(heard("tick"), (Heard{"early:tick", "late:tick"}));

        ConnHandle replacement("early", {}, {}, false);
        replacement.configure_event_sender(listening("replacement"));
        w.ctx.add_conn(replacement);  // same id: the old one and its subscription leave
        EXPECT_EQ(heard("tick"), (Heard{"late:tick"}));
        late.unsubscribe("tick");
        EXPECT_EQ(heard("tick"), Heard{});
        replacement.subscribe("tick");
        EXPECT_EQ(heard("tick"), (Heard{"replacement:tick"}));
    }());
}

}  // namespace
}  // namespace rivetkit::core::test

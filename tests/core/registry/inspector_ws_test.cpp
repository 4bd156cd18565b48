// The inspector WebSocket (/inspector/connect) through the real engine's gateway, against the
// counter test actor: refused without the actor's KV [3] token (closed 1008
// inspector.unauthorized), Init on open, requests in v1 and v4 frames answered in embedded v5 (a
// socket without ?protocol_version, as upstream), an undecodable frame answered with Error while
// the socket keeps serving, PatchState answered with StateUpdated and saved (pushed again once
// saved), and live pushes (StateUpdated from the actor's state overlay, ConnectionsUpdated when a
// connection comes and goes). A socket opened with ?protocol_version=6 (the 2.3.19 inspector)
// speaks bare v6 both ways: Init lists the actor's scheduled events, and the schedule requests are
// answered; an unsupported protocol_version is closed 1002 inspector.invalid_protocol_version.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bare/codec.hpp"
#include "counter_actor.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v4.hpp"
#include "proto/inspector_v5.hpp"
#include "proto/inspector_v6.hpp"
#include "test_websocket.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;
namespace v4 = proto::inspector_v4;
namespace v5 = proto::inspector_v5;
namespace v6 = proto::inspector_v6;

std::string target(const std::string& path, const std::string& key) {
    return gateway_target("counter", key, path);
}

Bytes cbor(const json& value) {
    return json::to_cbor(value);
}

json from_cbor(const Bytes& bytes) {
    return json::from_cbor(bytes, true, false);
}

template <typename T>
Bytes client_frame(T request) {
    v4::ToServer message;
    message.body.value = std::move(request);
    return bare::encode_versioned(4, message);
}

// A v6 client frame for a negotiated socket: no version prefix.
template <typename T>
Bytes bare_v6_frame(T request) {
    v6::ToServer message;
    message.body.value = std::move(request);
    return bare::encode_to_bytes(message);
}

// Legacy sockets get embedded v5 frames; negotiated v6 sockets bare v6 messages.
Result<v5::ToClientBody> decode_legacy_frame(const Bytes& frame) {
    auto view = bare::split_versioned(frame);
    if (!view.ok())
        return view.error();
    if (view->version != 5)
        return Error("test", "version", "server frame version " + std::to_string(view->version));
    auto message = bare::decode_from_bytes<v5::ToClient>(view->body);
    if (!message.ok())
        return message.error();
    return std::move(message->body);
}

Result<v6::ToClientBody> decode_negotiated_frame(const Bytes& frame) {
    auto message = bare::decode_from_bytes<v6::ToClient>(frame);
    if (!message.ok())
        return message.error();
    return std::move(message->body);
}

class InspectorWebSocket : public ::testing::Test {
  protected:
    void SetUp() override {
        core::ActorConfig config;
        config.has_state = true;
        config.actions = {{"increment"}, {"getCount"}};
        auto stack = LiveStack::start([config](core::registry::CoreRegistry& r) {
            r.register_actor("counter", counter_factory(config));
        });
        ASSERT_TRUE(stack.ok()) << stack.error().to_string();
        stack_ = std::move(stack).value();
        engine_ = stack_.engine.get();
        host_ = stack_.host.get();
    }
    void TearDown() override { stack_ = {}; }

    HttpResult increment(const std::string& key, int amount) {
        auto r = http_request(engine_->guard_port(), "POST", target("/action/increment", key),
                              "{\"args\":[" + std::to_string(amount) + "]}",
                              {{"x-rivet-encoding", "json"}});
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
        return r.ok() ? std::move(r).value() : HttpResult{};
    }

    std::string token_of(const std::string& actor_id) {
        auto token = engine_->inspector_token(actor_id);
        EXPECT_TRUE(token.ok()) << (token.ok() ? "" : token.error().to_string());
        return token.ok() ? std::move(token).value() : std::string{};
    }

    // Reads frames until one of type T arrives (pushes of other kinds are skipped): v5 types
    // from a legacy socket, v6 types from a negotiated one.
    template <typename T>
    std::optional<T> next(TestWebSocket& ws, int max_frames = 20) {
        constexpr bool negotiated = requires(const T* t) {
            v6::bare_type_name(t);
        };
        for (int i = 0; i < max_frames; ++i) {
            auto frame = ws.read_bytes();
            if (!frame.ok()) {
                ADD_FAILURE() << frame.error().to_string() << engine_->log_tail();
                return std::nullopt;
            }
            auto body = [&] {
                if constexpr (negotiated)
                    return decode_negotiated_frame(*frame);
                else
                    return decode_legacy_frame(*frame);
            }();
            if (!body.ok()) {
                ADD_FAILURE() << body.error().to_string();
                return std::nullopt;
            }
            if (auto* hit = body->template get_if<T>())
                return std::move(*hit);
        }
        ADD_FAILURE() << "no " << bare_type_name(static_cast<const T*>(nullptr)) << " within "
                      << max_frames << " frames";
        return std::nullopt;
    }

    LiveStack stack_;
    EngineHarness* engine_ = nullptr;
    LiveHost* host_ = nullptr;
};

TEST_F(InspectorWebSocket, RefusesWithoutTheActorsToken) {
    auto inc = increment("insp-auth", 1);
    const std::string actor_id = inc.header("x-rivet-actor").value_or("");
    ASSERT_FALSE(actor_id.empty());
    for (std::vector<std::string> protocols :
         {std::vector<std::string>{"rivet"},
          std::vector<std::string>{"rivet", "rivet_inspector_token.wrong"},
          std::vector<std::string>{"rivet", "rivet_inspector_token."}}) {
        auto ws = TestWebSocket::connect(engine_->guard_port(),
                                         target("/inspector/connect", "insp-auth"), protocols);
        ASSERT_TRUE(ws.ok()) << ws.error().to_string();
        auto frame = (*ws)->read_bytes();
        ASSERT_FALSE(frame.ok()) << "a refused inspector socket sent a frame";
        auto closed = (*ws)->close_frame();
        ASSERT_TRUE(closed.has_value()) << frame.error().to_string() << engine_->log_tail();
        EXPECT_EQ(closed->first, 1008);
        EXPECT_EQ(closed->second, "inspector.unauthorized");
    }
}

TEST_F(InspectorWebSocket, InitRequestsPatchAndPushes) {
    const std::string key = "insp-main";
    auto inc = increment(key, 5);
    ASSERT_EQ(inc.status, 200u) << inc.body;
    const std::string actor_id = inc.header("x-rivet-actor").value_or("");
    const std::string token = token_of(actor_id);
    ASSERT_FALSE(token.empty());

    auto ws = TestWebSocket::connect(engine_->guard_port(), target("/inspector/connect", key),
                                     {"rivet", "rivet_inspector_token." + token});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto& sock = **ws;

    auto init = next<v5::Init>(sock, 1);
    ASSERT_TRUE(init);
    ASSERT_TRUE(init->state.has_value());
    EXPECT_EQ(from_cbor(*init->state), json({{"count", 5}}));
    EXPECT_TRUE(init->is_state_enabled);
    EXPECT_EQ(init->rpcs, (std::vector<std::string>{"increment", "getCount"}));
    EXPECT_TRUE(init->is_database_enabled);  // the internal storage lives in SQLite
    EXPECT_EQ(init->queue_size, 0u);
    EXPECT_TRUE(init->connections.empty());

    // v4 StateRequest, then v1's RpcsListRequest (tag 6 there, 4 in v4): both answered in v5.
    ASSERT_TRUE(sock.send_binary(client_frame(v4::StateRequest{1})).ok());
    auto state = next<v5::StateResponse>(sock);
    ASSERT_TRUE(state);
    EXPECT_EQ(state->rid, 1u);
    ASSERT_TRUE(state->state.has_value());
    EXPECT_EQ(from_cbor(*state->state), json({{"count", 5}}));
    proto::inspector_v1::ToServer old;
    old.body.value = proto::inspector_v1::RpcsListRequest{2};
    ASSERT_TRUE(sock.send_binary(bare::encode_versioned(1, old)).ok());
    auto rpcs = next<v5::RpcsListResponse>(sock);
    ASSERT_TRUE(rpcs);
    EXPECT_EQ(rpcs->rid, 2u);
    EXPECT_EQ(rpcs->rpcs, (std::vector<std::string>{"increment", "getCount"}));

    // Undecodable input: an Error frame, and the socket keeps serving.
    ASSERT_TRUE(sock.send_binary(Bytes{0x04, 0x00, 0x7f}).ok());
    auto error = next<v5::Error>(sock);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->message.rfind("inspector.invalid_request: ", 0), 0u) << error->message;
    ASSERT_TRUE(sock.send_binary(client_frame(v4::QueueRequest{3, 10})).ok());
    auto queue = next<v5::QueueResponse>(sock);
    ASSERT_TRUE(queue);
    EXPECT_EQ(queue->rid, 3u);
    EXPECT_EQ(queue->status.size, 0u);
    EXPECT_FALSE(queue->status.truncated);

    // An action through the inspector.
    ASSERT_TRUE(
        sock.send_binary(client_frame(v4::ActionRequest{4, "getCount", cbor(json::array())})).ok());
    auto action = next<v5::ActionResponse>(sock);
    ASSERT_TRUE(action);
    EXPECT_EQ(action->rid, 4u);
    EXPECT_EQ(from_cbor(action->output), json(5));

    // PatchState: saved to [1] (as upstream's save_state), which pushes StateUpdated with the
    // saved state, and answered with StateUpdated. The running actor is not told (its own count
    // stays 5, see the action below). The task's debounced overlay of the increment's unsaved
    // state ({"count":5}) can still be in flight around the patch: skipped, not counted.
    ASSERT_TRUE(sock.send_binary(client_frame(v4::PatchStateRequest{cbor({{"count", 42}})})).ok());
    int patched_frames = 0;
    for (int i = 0; i < 6 && patched_frames < 2; ++i) {
        auto pushed = next<v5::StateUpdated>(sock);
        ASSERT_TRUE(pushed);
        const json value = from_cbor(pushed->state);
        if (value == json({{"count", 42}}))
            ++patched_frames;
        else
            EXPECT_EQ(value, json({{"count", 5}})) << "only the pre-patch overlay may interleave";
    }
    EXPECT_EQ(patched_frames, 2) << "the save's push and the reply";

    // The actor changes its own state (an HTTP action): the inspector is told the connection
    // came and went, and gets the new state pushed without asking.
    auto again = increment(key, 1);
    ASSERT_EQ(again.status, 200u) << again.body;
    auto conns = next<v5::ConnectionsUpdated>(sock);
    ASSERT_TRUE(conns);
    bool saw_new_state = false;
    for (int i = 0; i < 10 && !saw_new_state; ++i) {
        auto pushed = next<v5::StateUpdated>(sock);
        ASSERT_TRUE(pushed);
        saw_new_state = from_cbor(pushed->state) == json({{"count", 6}});
    }
    EXPECT_TRUE(saw_new_state);
    sock.close();
}

TEST_F(InspectorWebSocket, AcceptsTheTokenAsABearerHeader) {
    auto inc = increment("insp-bearer", 2);
    const std::string token = token_of(inc.header("x-rivet-actor").value_or(""));
    ASSERT_FALSE(token.empty());
    auto ws = TestWebSocket::connect(
        engine_->guard_port(), target("/inspector/connect", "insp-bearer"), {"rivet"},
        std::chrono::seconds(30), {{"authorization", "Bearer " + token}});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto init = next<v5::Init>(**ws, 1);
    ASSERT_TRUE(init && init->state);
    EXPECT_EQ(from_cbor(*init->state), json({{"count", 2}}));
}

// The 2.3.19 inspector: the version once on the URL, then bare v6 messages both ways.
TEST_F(InspectorWebSocket, NegotiatedV6SocketAnswersScheduleRequests) {
    const std::string key = "insp-v6";
    auto inc = increment(key, 4);
    ASSERT_EQ(inc.status, 200u) << inc.body;
    const std::string actor_id = inc.header("x-rivet-actor").value_or("");
    const std::string token = token_of(actor_id);
    ASSERT_FALSE(token.empty());
    // Far in the future, so it never fires during the test.
    constexpr std::int64_t kRunAt = 4102444800000;
    const Bytes args = cbor(json::array({1}));
    host_->call([&] {
        auto ctx = host_->registry().actor_context(actor_id);
        if (ctx)
            (void)ctx->at(kRunAt, "increment", args);
        return 0;
    });

    auto ws = TestWebSocket::connect(engine_->guard_port(),
                                     target("/inspector/connect", key) + "&protocol_version=6",
                                     {"rivet", "rivet_inspector_token." + token});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    auto& sock = **ws;

    auto init = next<v6::Init>(sock, 1);
    ASSERT_TRUE(init);
    ASSERT_TRUE(init->state.has_value());
    EXPECT_EQ(from_cbor(*init->state), json({{"count", 4}}));
    EXPECT_TRUE(init->tab_config.empty());
    ASSERT_EQ(init->schedules.size(), 1u);
    const v6::Schedule& scheduled = init->schedules[0];
    EXPECT_EQ(scheduled.kind, "at");
    EXPECT_EQ(scheduled.action, "increment");
    EXPECT_EQ(scheduled.args, args);
    EXPECT_EQ(scheduled.next_run_at, static_cast<std::uint64_t>(kRunAt));
    EXPECT_FALSE(scheduled.id.empty());

    ASSERT_TRUE(sock.send_binary(bare_v6_frame(v6::StateRequest{1})).ok());
    auto state = next<v6::StateResponse>(sock);
    ASSERT_TRUE(state && state->state);
    EXPECT_EQ(state->rid, 1u);
    EXPECT_EQ(from_cbor(*state->state), json({{"count", 4}}));

    ASSERT_TRUE(sock.send_binary(bare_v6_frame(v6::SchedulesRequest{2})).ok());
    auto listed = next<v6::SchedulesResponse>(sock);
    ASSERT_TRUE(listed);
    EXPECT_EQ(listed->rid, 2u);
    EXPECT_EQ(listed->schedules, init->schedules);

    ASSERT_TRUE(
        sock.send_binary(bare_v6_frame(v6::ScheduleHistoryRequest{3, scheduled.id, 10})).ok());
    auto history = next<v6::ScheduleHistoryResponse>(sock);
    ASSERT_TRUE(history);
    EXPECT_EQ(history->rid, 3u);
    EXPECT_EQ(history->schedule_id, scheduled.id);
    EXPECT_TRUE(history->history.empty());

    ASSERT_TRUE(
        sock.send_binary(bare_v6_frame(v6::ScheduleDeleteRequest{4, scheduled.id, "at"})).ok());
    auto deleted = next<v6::ScheduleDeleteResponse>(sock);
    ASSERT_TRUE(deleted);
    EXPECT_EQ(deleted->rid, 4u);
    EXPECT_TRUE(deleted->deleted);
    // The cancellation is pushed to v6 sockets.
    auto pushed = next<v6::SchedulesUpdated>(sock);
    ASSERT_TRUE(pushed);
    EXPECT_TRUE(pushed->schedules.empty());
    ASSERT_TRUE(
        sock.send_binary(bare_v6_frame(v6::ScheduleDeleteRequest{5, scheduled.id, "at"})).ok());
    auto again = next<v6::ScheduleDeleteResponse>(sock);
    ASSERT_TRUE(again);
    EXPECT_FALSE(again->deleted);
    ASSERT_TRUE(sock.send_binary(bare_v6_frame(v6::SchedulesRequest{6})).ok());
    auto empty = next<v6::SchedulesResponse>(sock);
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->schedules.empty());
    const bool still_scheduled = host_->call([&] {
        auto ctx = host_->registry().actor_context(actor_id);
        return ctx && ctx->next_event().has_value();
    });
    EXPECT_FALSE(still_scheduled);

    // A bad kind is an Error; a frame with a version prefix is not a v6 message.
    ASSERT_TRUE(
        sock.send_binary(bare_v6_frame(v6::ScheduleDeleteRequest{7, scheduled.id, "weekly"})).ok());
    auto bad_kind = next<v6::Error>(sock);
    ASSERT_TRUE(bad_kind);
    EXPECT_EQ(bad_kind->message.rfind("inspector.invalid_request: ", 0), 0u) << bad_kind->message;
    ASSERT_TRUE(sock.send_binary(client_frame(v4::StateRequest{8})).ok());
    auto prefixed = next<v6::Error>(sock);
    ASSERT_TRUE(prefixed);
    ASSERT_TRUE(sock.send_binary(bare_v6_frame(v6::RpcsListRequest{9})).ok());
    auto rpcs = next<v6::RpcsListResponse>(sock);
    ASSERT_TRUE(rpcs);
    EXPECT_EQ(rpcs->rid, 9u);
    sock.close();
}

TEST_F(InspectorWebSocket, UnsupportedProtocolVersionIsClosed) {
    auto inc = increment("insp-badver", 1);
    const std::string token = token_of(inc.header("x-rivet-actor").value_or(""));
    ASSERT_FALSE(token.empty());
    for (const std::string version : {"7", "0", "wat"}) {
        auto ws = TestWebSocket::connect(
            engine_->guard_port(),
            target("/inspector/connect", "insp-badver") + "&protocol_version=" + version,
            {"rivet", "rivet_inspector_token." + token});
        ASSERT_TRUE(ws.ok()) << ws.error().to_string();
        auto frame = (*ws)->read_bytes();
        ASSERT_FALSE(frame.ok()) << "socket with protocol_version=" << version << " sent a frame";
        auto closed = (*ws)->close_frame();
        ASSERT_TRUE(closed.has_value()) << frame.error().to_string() << engine_->log_tail();
        EXPECT_EQ(*closed, std::make_pair(std::uint16_t{1002},
                                          std::string("inspector.invalid_protocol_version")))
            << version;
    }
}

// An attached inspector does not keep the actor awake: it sleeps, the socket is closed, and the
// attachment is released with it.
TEST_F(InspectorWebSocket, ActorSleepsWithAnInspectorAttachedAndTheSocketCloses) {
    const std::string key = "insp-sleep";
    auto inc = increment(key, 3);
    const std::string actor_id = inc.header("x-rivet-actor").value_or("");
    const std::string token = token_of(actor_id);
    ASSERT_FALSE(token.empty());
    auto ws = TestWebSocket::connect(engine_->guard_port(), target("/inspector/connect", key),
                                     {"rivet", "rivet_inspector_token." + token});
    ASSERT_TRUE(ws.ok()) << ws.error().to_string();
    ASSERT_TRUE(next<v5::Init>(**ws, 1));
    auto attached = host_->call([&] {
        auto ctx = host_->registry().actor_context(actor_id);
        return ctx ? ctx->inspector_attach_count() : 0;
    });
    EXPECT_EQ(attached, 1u);

    auto r = http_request(engine_->guard_port(), "POST", target("/action/goToSleep", key),
                          R"({"args":[]})", {{"x-rivet-encoding", "json"}});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 200u) << r->body;
    ASSERT_TRUE(host_->wait_actor(actor_id, false)) << "actor never stopped";
    for (int i = 0; i < 20; ++i) {
        if (!(*ws)->read_bytes().ok())
            break;
    }
    auto closed = (*ws)->close_frame();
    ASSERT_TRUE(closed.has_value()) << "the inspector socket stayed open";
    // The envoy closes a stopping actor's non-hibernatable sockets (1011 actor.stopped); the
    // gateway has been seen to hand the client 1000 with the same reason when the actor's stop
    // reaches it first.
    EXPECT_EQ(closed->second, "actor.stopped");
    EXPECT_TRUE(closed->first == 1011 || closed->first == 1000) << closed->first;
}

}  // namespace
}  // namespace rivetkit::testing

// The inspector protocol codec against frames written by upstream's TypeScript codecs
// (tests/bare/vectors/generate_inspector.mjs → inspector.json): client frames of v1–v6 decode to
// the v6 request the script encoded, with the version embedded (legacy framing) or negotiated on
// the URL (the same bytes without the prefix); server messages encode byte for byte as the
// script's v4, v5 and v6 frames in both framings. Bad frames are structured
// inspector/invalid_request errors.

#include "core/inspector/protocol.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bare/codec.hpp"
#include "core/inspector/auth.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v3.hpp"

namespace rivetkit::core::inspector {
namespace {

Bytes from_hex(const std::string& hex) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    return out;
}

const nlohmann::json& vectors() {
    static const nlohmann::json file = [] {
        std::ifstream in(std::string(RIVETKIT_BARE_VECTORS_DIR) + "/inspector.json");
        return nlohmann::json::parse(in);
    }();
    return file["vectors"];
}

Bytes frame(const std::string& name) {
    for (const auto& v : vectors()) {
        if (v["name"] == name)
            return from_hex(v["hex"].get<std::string>());
    }
    ADD_FAILURE() << "no vector " << name;
    return {};
}

template <typename T>
wire::ToServerBody request(T value) {
    wire::ToServerBody body;
    body.value = std::move(value);
    return body;
}

template <typename T>
wire::ToClientBody response(T value) {
    wire::ToClientBody body;
    body.value = std::move(value);
    return body;
}

const Bytes kCountState{0xa1, 0x65, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x05};

// What the script encoded, as v6 requests, with the versions it wrote each in.
struct Expected {
    std::string tag;
    wire::ToServerBody body;
    std::vector<int> versions;
};

std::vector<Expected> expected_requests() {
    return {
        {"PatchStateRequest", request(wire::PatchStateRequest{kCountState}), {1, 2, 3, 4, 5, 6}},
        {"StateRequest", request(wire::StateRequest{7}), {1, 2, 3, 4, 5, 6}},
        {"ConnectionsRequest", request(wire::ConnectionsRequest{8}), {1, 2, 3, 4, 5, 6}},
        {"ActionRequest",
         request(wire::ActionRequest{9, "increment", {0x81, 0x03}}),
         {1, 2, 3, 4, 5, 6}},
        {"RpcsListRequest", request(wire::RpcsListRequest{10}), {1, 2, 3, 4, 5, 6}},
        {"TraceQueryRequest",
         request(wire::TraceQueryRequest{11, 1000, 2000, 50}),
         {2, 3, 4, 5, 6}},
        {"QueueRequest", request(wire::QueueRequest{12, 500}), {2, 3, 4, 5, 6}},
        {"WorkflowHistoryRequest", request(wire::WorkflowHistoryRequest{13}), {2, 3, 4, 5, 6}},
        {"WorkflowReplayRequest", request(wire::WorkflowReplayRequest{14, "e1"}), {4, 5, 6}},
        {"DatabaseSchemaRequest", request(wire::DatabaseSchemaRequest{15}), {3, 4, 5, 6}},
        {"DatabaseTableRowsRequest",
         request(wire::DatabaseTableRowsRequest{16, "t", 10, 20}),
         {3, 4, 5, 6}},
        {"SchedulesRequest", request(wire::SchedulesRequest{17}), {6}},
        {"ScheduleHistoryRequest", request(wire::ScheduleHistoryRequest{18, "s1", 5}), {6}},
        {"ScheduleDeleteRequest", request(wire::ScheduleDeleteRequest{19, "s1", "at"}), {6}},
    };
}

Bytes without_prefix(Bytes frame) {
    frame.erase(frame.begin(), frame.begin() + std::min<std::ptrdiff_t>(2, frame.size()));
    return frame;
}

TEST(InspectorProtocol, ClientFramesOfEveryVersionDecodeToTheV6Request) {
    std::size_t checked = 0;
    for (const auto& e : expected_requests()) {
        for (int v : e.versions) {
            const std::string name = "v" + std::to_string(v) + ".ToServer." + e.tag;
            auto decoded = decode_client_message(frame(name));
            ASSERT_TRUE(decoded.ok()) << name << ": " << decoded.error().to_string();
            EXPECT_EQ(decoded.value(), e.body) << name;
            EXPECT_EQ(message_kind(decoded.value()), e.tag);
            const WireMode negotiated{static_cast<std::uint16_t>(v), false};
            auto bare = decode_client_message(without_prefix(frame(name)), negotiated);
            ASSERT_TRUE(bare.ok()) << name << ": " << bare.error().to_string();
            EXPECT_EQ(bare.value(), e.body) << name;
            ++checked;
        }
    }
    EXPECT_EQ(checked, 59u);
}

TEST(InspectorProtocol, NegotiatedFramesAreReadAtTheSocketsVersionOnly) {
    // A v4 frame on a v6 socket: its prefix is read as the body and does not decode as v6's
    // StateRequest.
    auto prefixed = decode_client_message(frame("v6.ToServer.StateRequest"), WireMode{6, false});
    EXPECT_FALSE(prefixed.ok());
    // v3's DatabaseTableRowsRequest (tag 9) on a v6 socket reads as DatabaseSchemaRequest{16}
    // with bytes left over: refused, not misread.
    auto relabelled = decode_client_message(
        without_prefix(frame("v3.ToServer.DatabaseTableRowsRequest")), WireMode{6, false});
    EXPECT_FALSE(relabelled.ok());
}

TEST(InspectorProtocol, WireModeFollowsTheProtocolVersionQueryParameter) {
    EXPECT_EQ(wire_mode_from_path("/inspector/connect").value(), (WireMode{5, true}));
    EXPECT_EQ(wire_mode_from_path("/inspector/connect?x=1").value(), (WireMode{5, true}));
    EXPECT_EQ(wire_mode_from_path("/inspector/connect?protocol_version=6").value(),
              (WireMode{6, false}));
    EXPECT_EQ(wire_mode_from_path("/inspector/connect?a=b&protocol_version=1").value(),
              (WireMode{1, false}));
    for (const char* path :
         {"/inspector/connect?protocol_version=", "/inspector/connect?protocol_version",
          "/inspector/connect?protocol_version=wat", "/inspector/connect?protocol_version=0",
          "/inspector/connect?protocol_version=7", "/inspector/connect?protocol_version=6x",
          "/inspector/connect?protocol_version=70000"}) {
        auto mode = wire_mode_from_path(path);
        ASSERT_FALSE(mode.ok()) << path;
        EXPECT_EQ(mode.error().code(), "invalid_protocol_version") << path;
    }
}

TEST(InspectorProtocol, ServerMessagesEncodeAsTheTypeScriptV4V5V6Frames) {
    wire::Init init;
    init.connections = {wire::Connection{"c1", {0xa0}}};
    init.state = kCountState;
    init.is_state_enabled = true;
    init.rpcs = {"increment", "getCount"};
    init.is_database_enabled = false;
    init.queue_size = 3;
    init.is_workflow_enabled = true;
    wire::Schedule schedule;
    schedule.id = "s1";
    schedule.kind = "at";
    schedule.action = "tick";
    schedule.args = {0x81, 0x03};
    schedule.next_run_at = 1700000005000;
    init.schedules = {schedule};
    wire::QueueStatus status{2, 1000, {wire::QueueMessageSummary{1, "jobs", 1700000000000}}, true};

    const std::vector<std::pair<std::string, wire::ToClientBody>> cases{
        {"Init", response(init)},
        {"StateUpdated", response(wire::StateUpdated{kCountState})},
        {"StateResponse", response(wire::StateResponse{7, std::nullopt, false})},
        {"ConnectionsResponse",
         response(wire::ConnectionsResponse{8, {wire::Connection{"c1", {0xa0}}}})},
        {"ConnectionsUpdated", response(wire::ConnectionsUpdated{})},
        {"ActionResponse", response(wire::ActionResponse{9, {0x04}})},
        {"RpcsListResponse", response(wire::RpcsListResponse{10, {"increment"}})},
        {"TraceQueryResponse", response(wire::TraceQueryResponse{11, {}})},
        {"QueueResponse", response(wire::QueueResponse{12, status})},
        {"QueueUpdated", response(wire::QueueUpdated{2})},
        {"WorkflowHistoryResponse",
         response(wire::WorkflowHistoryResponse{13, std::nullopt, true})},
        {"WorkflowReplayResponse",
         response(wire::WorkflowReplayResponse{14, Bytes{0x01, 0x02}, true})},
        {"Error", response(wire::Error{"boom"})},
        {"SchedulesUpdated", response(wire::SchedulesUpdated{{schedule}})},
        {"SchedulesResponse", response(wire::SchedulesResponse{17, {}})},
        {"ScheduleHistoryResponse", response(wire::ScheduleHistoryResponse{18, "s1", {}})},
        {"ScheduleDeleteResponse", response(wire::ScheduleDeleteResponse{19, "s1", true})},
    };
    std::size_t checked = 0;
    for (const auto& [tag, body] : cases) {
        for (std::uint16_t v : {4, 5, 6}) {
            const std::string name = "v" + std::to_string(v) + ".ToClient." + tag;
            EXPECT_EQ(encode_server_message(body, WireMode{v, true}), frame(name)) << name;
            EXPECT_EQ(encode_server_message(body, WireMode{v, false}), without_prefix(frame(name)))
                << name;
            ++checked;
        }
        EXPECT_EQ(message_kind(body), tag);
    }
    EXPECT_EQ(checked, 51u);
}

// Older negotiated versions (no TypeScript vectors: the shipped handler cannot write them, see
// generate_inspector.mjs): what each version lacks becomes upstream's dropped Error, and Init
// loses its newer fields (v1: an empty events list after the connections).
template <typename ToClient>
ToClient decoded_as(const Bytes& bytes) {
    ToClient out{};
    auto err = bare::decode_into(bytes, out);
    EXPECT_FALSE(err.has_value()) << err->to_error().message();
    return out;
}

TEST(InspectorProtocol, OlderVersionsGetTheirOwnInitAndDroppedErrors) {
    namespace v1 = proto::inspector_v1;
    namespace v3 = proto::inspector_v3;
    wire::Init init;
    init.connections = {wire::Connection{"c1", {0xa0}}};
    init.state = kCountState;
    init.is_state_enabled = true;
    init.rpcs = {"increment"};
    init.queue_size = 3;
    init.schedules = {wire::Schedule{}};
    auto old = decoded_as<v1::ToClient>(encode_server_message(response(init), WireMode{1, false}));
    auto* old_init = old.body.get_if<v1::Init>();
    ASSERT_NE(old_init, nullptr);
    EXPECT_EQ(old_init->connections, (std::vector<v1::Connection>{{"c1", {0xa0}}}));
    EXPECT_TRUE(old_init->events.empty());
    EXPECT_EQ(old_init->state, kCountState);
    EXPECT_EQ(old_init->rpcs, std::vector<std::string>{"increment"});

    const std::vector<std::pair<wire::ToClientBody, std::string>> dropped_v1{
        {response(wire::QueueUpdated{1}), "inspector.queue_dropped"},
        {response(wire::TraceQueryResponse{1, {}}), "inspector.trace_dropped"},
        {response(wire::WorkflowHistoryUpdated{{}}), "inspector.workflow_history_dropped"},
        {response(wire::DatabaseSchemaResponse{1, {}}), "inspector.database_dropped"},
        {response(wire::SchedulesResponse{1, {}}), "inspector.schedules_dropped"},
    };
    for (const auto& [body, code] : dropped_v1) {
        auto got = decoded_as<v1::ToClient>(encode_server_message(body, WireMode{1, false}));
        auto* error = got.body.get_if<v1::Error>();
        ASSERT_NE(error, nullptr) << code;
        EXPECT_EQ(error->message, code);
    }
    auto replay = decoded_as<v3::ToClient>(encode_server_message(
        response(wire::WorkflowReplayResponse{1, std::nullopt, true}), WireMode{3, false}));
    auto* replay_error = replay.body.get_if<v3::Error>();
    ASSERT_NE(replay_error, nullptr);
    EXPECT_EQ(replay_error->message, "inspector.workflow_history_dropped");
    // Present in v3: same fields, v3's tag.
    auto rows = decoded_as<v3::ToClient>(encode_server_message(
        response(wire::DatabaseTableRowsResponse{5, {0x80}}), WireMode{3, false}));
    auto* rows_body = rows.body.get_if<v3::DatabaseTableRowsResponse>();
    ASSERT_NE(rows_body, nullptr);
    EXPECT_EQ(rows_body->rid, 5u);
}

void expect_invalid(const Bytes& payload, std::string_view needle) {
    auto decoded = decode_client_message(payload);
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().group(), "inspector");
    EXPECT_EQ(decoded.error().code(), "invalid_request");
    EXPECT_NE(decoded.error().message().find(needle), std::string::npos)
        << decoded.error().message();
}

TEST(InspectorProtocol, BadFramesAreStructuredErrors) {
    // v1's EventsRequest (tag 4) and ClearEventsRequest (tag 5) have no v6 meaning.
    expect_invalid(Bytes{0x01, 0x00, 0x04, 0x11}, "events");
    expect_invalid(Bytes{0x01, 0x00, 0x05, 0x11}, "events");
    expect_invalid(Bytes{0x09, 0x00, 0x01, 0x07},
                   "invalid inspector protocol version for ToServer: 9");
    expect_invalid(Bytes{0x07, 0x00, 0x01, 0x07}, "version for ToServer: 7");
    expect_invalid(Bytes{0x04}, "");
    expect_invalid(Bytes{}, "");
    // Union tag past the v4 / v6 request lists, truncated bodies, trailing bytes.
    expect_invalid(Bytes{0x04, 0x00, 0x0b, 0x01}, "");
    expect_invalid(Bytes{0x06, 0x00, 0x0e, 0x01}, "");
    expect_invalid(Bytes{0x04, 0x00, 0x03, 0x09, 0x09, 'i'}, "");
    Bytes trailing = frame("v4.ToServer.StateRequest");
    trailing.push_back(0x00);
    expect_invalid(trailing, "");
    // Tags are per version: v3's DatabaseTableRowsRequest (tag 9) labelled v4 reads as
    // DatabaseSchemaRequest{16} with bytes left over, which is refused, not misread.
    Bytes relabelled = frame("v3.ToServer.DatabaseTableRowsRequest");
    relabelled[0] = 0x04;
    expect_invalid(relabelled, "");
}

TEST(InspectorProtocol, QueueLimitIsClampedToUpstreamsMaximum) {
    EXPECT_EQ(clamp_queue_limit(0), 0u);
    EXPECT_EQ(clamp_queue_limit(50), 50u);
    EXPECT_EQ(clamp_queue_limit(200), 200u);
    EXPECT_EQ(clamp_queue_limit(500), 200u);
    EXPECT_EQ(clamp_queue_limit(~0ull), 200u);
}

TEST(InspectorAuth, ConstantTimeCompareIsExact) {
    const Bytes a{'a', 'b', 'c'};
    EXPECT_TRUE(constant_time_equal(a, Bytes{'a', 'b', 'c'}));
    EXPECT_FALSE(constant_time_equal(a, Bytes{'a', 'b', 'd'}));
    EXPECT_FALSE(constant_time_equal(a, Bytes{'a', 'b'}));
    EXPECT_FALSE(constant_time_equal(a, Bytes{}));
    EXPECT_TRUE(constant_time_equal(Bytes{}, Bytes{}));
}

}  // namespace
}  // namespace rivetkit::core::inspector

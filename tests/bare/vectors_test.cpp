// Known-answer vectors written by upstream's TypeScript codecs (vectors/generate.mjs): every vector
// must decode and re-encode to the same bytes, and selected ones must decode to exactly the values
// the script encoded.

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "proto/client_v1.hpp"
#include "proto/client_v2.hpp"
#include "proto/client_v3.hpp"
#include "proto/client_v4.hpp"
#include "proto/envoy_v8.hpp"
#include "proto/persist_v1.hpp"
#include "proto/persist_v2.hpp"
#include "proto/persist_v3.hpp"
#include "proto/persist_v4.hpp"

namespace rivetkit::bare {
namespace {

using Bytes = std::vector<std::uint8_t>;
namespace envoy = proto::envoy_v8;

Bytes from_hex(const std::string& hex) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

const nlohmann::json& vector_file(const std::string& name) {
    static std::map<std::string, nlohmann::json> cache;
    auto it = cache.find(name);
    if (it == cache.end()) {
        std::ifstream in(std::string(RIVETKIT_BARE_VECTORS_DIR) + "/" + name);
        it = cache.emplace(name, nlohmann::json::parse(in)).first;
    }
    return it->second;
}

Bytes vector_bytes(const std::string& file, const std::string& name) {
    for (const auto& v : vector_file(file)["vectors"]) {
        if (v["name"] == name)
            return from_hex(v["hex"].get<std::string>());
    }
    ADD_FAILURE() << "no vector " << name << " in " << file;
    return {};
}

// Decodes and re-encodes; returns the error text or the re-encoded bytes.
using RoundTrip = std::function<std::pair<std::string, Bytes>(const Bytes&)>;

template <typename T>
RoundTrip round_trip() {
    return [](const Bytes& b) -> std::pair<std::string, Bytes> {
        T value{};
        if (auto err = decode_into(b, value))
            return {err->to_string(), {}};
        return {"", encode_to_bytes(value)};
    };
}

void check_all(const std::string& file, const std::map<std::string, RoundTrip>& codecs) {
    const auto& vectors = vector_file(file)["vectors"];
    ASSERT_FALSE(vectors.empty());
    for (const auto& v : vectors) {
        std::string key = v["type"].get<std::string>();
        if (v.contains("version"))
            key = "v" + std::to_string(v["version"].get<int>()) + "." + key;
        auto codec = codecs.find(key);
        ASSERT_NE(codec, codecs.end()) << "no codec for " << key;
        const Bytes bytes = from_hex(v["hex"].get<std::string>());
        auto [error, reencoded] = codec->second(bytes);
        EXPECT_EQ(error, "") << v["name"];
        EXPECT_EQ(reencoded, bytes) << v["name"];
    }
}

template <typename T>
void expect_vector(const std::string& file, const std::string& name, const T& expected) {
    const Bytes bytes = vector_bytes(file, name);
    T decoded{};
    auto err = decode_into(bytes, decoded);
    ASSERT_FALSE(err.has_value()) << name << ": " << err->to_string();
    EXPECT_EQ(decoded, expected) << name;
    EXPECT_EQ(encode_to_bytes(expected), bytes) << name;
}

TEST(BareVectorsTest, EveryEnvoyVectorRoundTrips) {
    check_all("envoy_v8.json", {{"ToRivet", round_trip<envoy::ToRivet>()},
                                {"ToEnvoy", round_trip<envoy::ToEnvoy>()},
                                {"ToEnvoyConn", round_trip<envoy::ToEnvoyConn>()},
                                {"ToGateway", round_trip<envoy::ToGateway>()},
                                {"ToOutbound", round_trip<envoy::ToOutbound>()},
                                {"ActorCommandKeyData", round_trip<envoy::ActorCommandKeyData>()}});
}

TEST(BareVectorsTest, EnvoyVectorsCoverEveryTopLevelVariant) {
    std::set<std::uint64_t> to_rivet, to_envoy;
    for (const auto& v : vector_file("envoy_v8.json")["vectors"]) {
        const Bytes b = from_hex(v["hex"].get<std::string>());
        if (v["type"] == "ToRivet")
            to_rivet.insert(decode_from_bytes<envoy::ToRivet>(b)->tag());
        if (v["type"] == "ToEnvoy")
            to_envoy.insert(decode_from_bytes<envoy::ToEnvoy>(b)->tag());
    }
    EXPECT_EQ(to_rivet.size(), envoy::ToRivet::kTags.size());
    EXPECT_EQ(to_envoy.size(), envoy::ToEnvoy::kTags.size());
}

TEST(BareVectorsTest, EveryClientVectorRoundTrips) {
    namespace c1 = proto::client_v1;
    namespace c2 = proto::client_v2;
    namespace c3 = proto::client_v3;
    namespace c4 = proto::client_v4;
    check_all("client.json", {{"v1.ToClient", round_trip<c1::ToClient>()},
                              {"v1.ToServer", round_trip<c1::ToServer>()},
                              {"v2.ToClient", round_trip<c2::ToClient>()},
                              {"v3.ToClient", round_trip<c3::ToClient>()},
                              {"v3.HttpQueueSendRequest", round_trip<c3::HttpQueueSendRequest>()},
                              {"v4.ToClient", round_trip<c4::ToClient>()},
                              {"v4.ToServer", round_trip<c4::ToServer>()},
                              {"v4.HttpActionRequest", round_trip<c4::HttpActionRequest>()},
                              {"v4.HttpActionResponse", round_trip<c4::HttpActionResponse>()},
                              {"v4.HttpQueueSendRequest", round_trip<c4::HttpQueueSendRequest>()},
                              {"v4.HttpQueueSendResponse", round_trip<c4::HttpQueueSendResponse>()},
                              {"v4.HttpResponseError", round_trip<c4::HttpResponseError>()},
                              {"v4.HttpResolveResponse", round_trip<c4::HttpResolveResponse>()}});
}

TEST(BareVectorsTest, EveryPersistVectorRoundTrips) {
    namespace p1 = proto::persist_v1;
    namespace p2 = proto::persist_v2;
    namespace p3 = proto::persist_v3;
    namespace p4 = proto::persist_v4;
    check_all("persist.json", {{"v1.PersistedActor", round_trip<p1::PersistedActor>()},
                               {"v2.PersistedActor", round_trip<p2::PersistedActor>()},
                               {"v3.Actor", round_trip<p3::Actor>()},
                               {"v3.Conn", round_trip<p3::Conn>()},
                               {"v4.Actor", round_trip<p4::Actor>()},
                               {"v4.Conn", round_trip<p4::Conn>()},
                               {"v4.QueueMetadata", round_trip<p4::QueueMetadata>()},
                               {"v4.QueueMessage", round_trip<p4::QueueMessage>()}});
}

// MARK: Field-level expectations (the same values generate.mjs encodes).

const envoy::GatewayId kGw{0xde, 0xad, 0xbe, 0xef};
const envoy::RequestId kRq{0x01, 0x02, 0x03, 0x04};
const envoy::ActorCheckpoint kCheckpoint{"actor-abc", 3, 42};
const envoy::MessageId kMsgId{kGw, kRq, 513};
const std::vector<std::pair<std::string, std::string>> kHeaders{
    {"content-type", "application/json"}, {"x-rivet-encoding", "bare"}};

std::vector<envoy::SqliteBindParam> sqlite_row() {
    return {envoy::SqliteBindParam{envoy::SqliteValueNull{}},
            envoy::SqliteBindParam{envoy::SqliteValueInteger{-7}},
            envoy::SqliteBindParam{envoy::SqliteValueFloat{{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}}},
            envoy::SqliteBindParam{envoy::SqliteValueText{"héllo"}},
            envoy::SqliteBindParam{envoy::SqliteValueBlob{{0xff, 0x00}}}};
}

TEST(BareVectorsTest, EnvoyCommandStartActorFields) {
    const envoy::KvMetadata meta{{9, 9}, 1700000000123};
    envoy::CommandStartActor start{
        envoy::ActorConfig{"counter", "k1/k2", 1700000000000, Bytes{0xa1, 0x61, 0x78, 0x01}},
        {envoy::HibernatingRequest{kGw, kRq}},
        envoy::PreloadedKv{{envoy::PreloadedKvEntry{{1}, {4, 0, 1}, meta}}, {{1}, {6}}, {{2}}}};
    expect_vector("envoy_v8.json", "ToEnvoy.CommandsStart",
                  envoy::ToEnvoy{envoy::ToEnvoyCommands{
                      {envoy::CommandWrapper{kCheckpoint, envoy::Command{start}}}}});

    envoy::ToEnvoyCommands stops;
    for (auto reason : {envoy::StopActorReason::SleepIntent, envoy::StopActorReason::StopIntent,
                        envoy::StopActorReason::Destroy, envoy::StopActorReason::GoingAway,
                        envoy::StopActorReason::Lost}) {
        stops.value.push_back(
            envoy::CommandWrapper{kCheckpoint, envoy::Command{envoy::CommandStopActor{reason}}});
    }
    expect_vector("envoy_v8.json", "ToEnvoy.CommandsStop", envoy::ToEnvoy{stops});
}

TEST(BareVectorsTest, EnvoyTunnelRequestStartFields) {
    envoy::ToEnvoyRequestStart req{
        "actor-abc", 3u, "POST", "/action/increment", kHeaders, Bytes{4, 0, 1, 0x80}, false, true};
    expect_vector(
        "envoy_v8.json", "ToEnvoy.TunnelRequestStart",
        envoy::ToEnvoy{envoy::ToEnvoyTunnelMessage{kMsgId, envoy::ToEnvoyTunnelMessageKind{req}}});
    expect_vector(
        "envoy_v8.json", "ToEnvoy.TunnelRequestAbort",
        envoy::ToEnvoy{envoy::ToEnvoyTunnelMessage{
            kMsgId, envoy::ToEnvoyTunnelMessageKind{envoy::ToEnvoyRequestAbort{
                        "actor-abc", std::nullopt,
                        envoy::HttpStreamAbortReason{envoy::HttpStreamAbortReasonKind::Cancelled,
                                                     std::nullopt}}}}});
}

TEST(BareVectorsTest, EnvoyEventsFields) {
    auto wrap = [](envoy::Event e) { return envoy::EventWrapper{kCheckpoint, std::move(e)}; };
    envoy::ToRivetEvents events{{
        wrap(envoy::Event{envoy::EventActorIntent{envoy::ActorIntent{envoy::ActorIntentSleep{}}}}),
        wrap(envoy::Event{envoy::EventActorIntent{envoy::ActorIntent{envoy::ActorIntentStop{}}}}),
        wrap(envoy::Event{
            envoy::EventActorStateUpdate{envoy::ActorState{envoy::ActorStateRunning{}}}}),
        wrap(envoy::Event{envoy::EventActorStateUpdate{envoy::ActorState{
            envoy::ActorStateStopped{envoy::StopCode::Error, std::string("crashed")}}}}),
        wrap(envoy::Event{envoy::EventActorSetAlarm{1700000005000}}),
        wrap(envoy::Event{envoy::EventActorSetAlarm{std::nullopt}}),
    }};
    expect_vector("envoy_v8.json", "ToRivet.Events", envoy::ToRivet{events});
}

TEST(BareVectorsTest, EnvoySqliteFields) {
    expect_vector("envoy_v8.json", "ToRivet.SqliteCommitFinalize",
                  envoy::ToRivet{envoy::ToRivetSqliteCommitFinalizeRequest{
                      5, envoy::SqliteCommitFinalizeRequest{"a", 1u, 11, 9, -1, {1, 300, 70000}}}});
    expect_vector("envoy_v8.json", "ToRivet.SqliteExecute",
                  envoy::ToRivet{envoy::ToRivetSqliteExecuteRequest{
                      7, envoy::SqliteExecuteRequest{
                             "ns", "a", 3, "INSERT INTO t VALUES (?,?,?,?,?)", sqlite_row()}}});
    expect_vector(
        "envoy_v8.json", "ToRivet.KvListRange",
        envoy::ToRivet{envoy::ToRivetKvRequest{
            "actor-abc", 77,
            envoy::KvRequestData{envoy::KvListRequest{
                envoy::KvListQuery{envoy::KvListRangeQuery{{4}, {5}, true}}, true, 100u}}}});
}

TEST(BareVectorsTest, PersistV4ActorAndConnFields) {
    namespace p4 = proto::persist_v4;
    p4::Actor actor{
        Bytes{0xa1, 0x61, 0x78, 0x01},
        true,
        {0xa1, 0x65, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x05},
        {p4::ScheduleEvent{"ev-a", 1700000005000, "remind", Bytes{0x81, 0x63, 0x61, 0x62, 0x63}},
         p4::ScheduleEvent{"ev-b", 1700000009000, "tick", std::nullopt}}};
    expect_vector("persist.json", "v4.Actor.Scheduled", actor);

    p4::Conn conn{"conn-1",   {0xa1, 0x64, 0x75, 0x73, 0x65, 0x72, 0x62, 0x70, 0x31},
                  {0xf6},     {p4::Subscription{"newCount"}, p4::Subscription{"other"}},
                  kGw,        kRq,
                  12,         65535,
                  "/connect", kHeaders};
    expect_vector("persist.json", "v4.Conn.WithHeaders", conn);
    expect_vector(
        "persist.json", "v4.QueueMessage.Full",
        p4::QueueMessage{"jobs", {0x01}, 1700000000000, 2u, 1700000001000, true, 1700000000500});
}

TEST(BareVectorsTest, PersistV1ActorFields) {
    namespace p1 = proto::persist_v1;
    p1::PersistedActor actor{
        Bytes{0xa0},
        true,
        {0x01},
        {p1::PersistedConnection{
            "c1", "t", {0xf6}, {0xa0}, {p1::PersistedSubscription{"e"}}, 1700000000000}},
        {p1::PersistedScheduleEvent{"ev-1", 1700000001000,
                                    p1::PersistedScheduleEventKind{
                                        p1::GenericPersistedScheduleEvent{"tick", Bytes{0x80}}}}}};
    expect_vector("persist.json", "v1.PersistedActor.Full", actor);
}

TEST(BareVectorsTest, ClientProtocolFields) {
    namespace c4 = proto::client_v4;
    expect_vector("client.json", "v4.ToClient.Error",
                  c4::ToClient{c4::ToClientBody{
                      c4::Error{"actor", "action_not_found", "Action not found", Bytes{0xa0}, 5u,
                                c4::ActorSpecifier{"actor-abc", 2, std::string("k")}}}});
    expect_vector("client.json", "v4.ToServer.ActionRequest",
                  c4::ToServer{c4::ToServerBody{
                      c4::ActionRequest{0, "increment", {0x82, 0x01, 0x61, 0x78}}}});
    expect_vector("client.json", "v4.HttpResponseError.WithActor",
                  c4::HttpResponseError{"actor", "not_found", "Actor not found", std::nullopt,
                                        c4::ActorSpecifier{"actor-abc", 2, std::string("k")}});
    expect_vector("client.json", "v1.ToClient.Init",
                  proto::client_v1::ToClient{
                      proto::client_v1::ToClientBody{proto::client_v1::Init{"a1", "c1", "tok"}}});
}

}  // namespace
}  // namespace rivetkit::bare

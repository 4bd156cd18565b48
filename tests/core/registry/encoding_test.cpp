// Client-protocol encodings: known answers are the bytes captured between rivetkit 2.3.19's
// client and engine 2.3.19 (shared/reference/client-protocol.md §6), plus malformed input.

#include "core/registry/encoding.hpp"

#include <gtest/gtest.h>

#include <string>

#include "bare/codec.hpp"
#include "core/registry/registry.hpp"
#include "core/registry/routes.hpp"
#include "proto/client_v4.hpp"

namespace rivetkit::core::registry {
namespace {

Bytes b(std::initializer_list<int> v) {
    Bytes out;
    for (int x : v)
        out.push_back(static_cast<std::uint8_t>(x));
    return out;
}
Bytes text(std::string_view s) {
    return Bytes(s.begin(), s.end());
}
std::string str(const Bytes& v) {
    return std::string(v.begin(), v.end());
}
Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const auto& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

TEST(ClientEncoding, HttpEncodingHeaderDefaultsToJson) {
    EXPECT_EQ(http_encoding(std::nullopt), Encoding::Json);
    EXPECT_EQ(http_encoding("json"), Encoding::Json);
    EXPECT_EQ(http_encoding("cbor"), Encoding::Cbor);
    EXPECT_EQ(http_encoding("bare"), Encoding::Bare);
    EXPECT_EQ(http_encoding("yaml"), Encoding::Json);
    EXPECT_FALSE(websocket_encoding("yaml").has_value());
}

TEST(ClientEncoding, BareHttpActionMatchesCapturedBytes) {
    // §6.1: 04 00 | 02 81 01 = v4, HttpActionRequest{args: CBOR [1]}
    auto args = decode_http_action_args(Encoding::Bare, b({0x04, 0x00, 0x02, 0x81, 0x01}));
    ASSERT_TRUE(args.ok()) << args.error().to_string();
    EXPECT_EQ(*args, b({0x81, 0x01}));
    // ← 04 00 | 01 02 = HttpActionResponse{output: CBOR 2}
    auto out = encode_http_action_output(Encoding::Bare, b({0x02}));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, b({0x04, 0x00, 0x01, 0x02}));
    // §6.4: args [] is 04 00 01 80
    EXPECT_EQ(*decode_http_action_args(Encoding::Bare, b({0x04, 0x00, 0x01, 0x80})), b({0x80}));
}

TEST(ClientEncoding, JsonAndCborHttpActionMatchCapturedBytes) {
    auto json_args = decode_http_action_args(Encoding::Json, text(R"({"args":[2]})"));
    ASSERT_TRUE(json_args.ok());
    EXPECT_EQ(*json_args, b({0x81, 0x02}));
    EXPECT_EQ(str(*encode_http_action_output(Encoding::Json, b({0x05}))), R"({"output":5})");
    // cbor → b9 0001 64 "args" 81 03 ← a1 66 "output" 08
    auto cbor_args = decode_http_action_args(
        Encoding::Cbor, cat({b({0xb9, 0x00, 0x01, 0x64}), text("args"), b({0x81, 0x03})}));
    ASSERT_TRUE(cbor_args.ok());
    EXPECT_EQ(*cbor_args, b({0x81, 0x03}));
    EXPECT_EQ(*encode_http_action_output(Encoding::Cbor, b({0x08})),
              cat({b({0xa1, 0x66}), text("output"), b({0x08})}));
}

TEST(ClientEncoding, JsonArgsAreNormalisedToAnArray) {
    EXPECT_EQ(*decode_http_action_args(Encoding::Json, text(R"({"args":5})")), b({0x81, 0x05}));
    EXPECT_EQ(*decode_http_action_args(Encoding::Json, text(R"({"args":null})")), b({0x80}));
    EXPECT_EQ(*decode_http_action_args(Encoding::Json, text(R"({})")), b({0x80}));
}

TEST(ClientEncoding, JsonCompatTagsBridgeToCbor) {
    // ["$BigInt","9007199254740993"] ↔ a 64-bit CBOR integer
    auto big = json_text_to_cbor(R"(["$BigInt","9007199254740993"])");
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(*big, b({0x1b, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01}));
    EXPECT_EQ(*cbor_to_json_text(*big), R"(["$BigInt","9007199254740993"])");
    // ["$Uint8Array", base64] ↔ a CBOR byte string
    auto bytes = json_text_to_cbor(R"(["$Uint8Array","AQID"])");
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(*bytes, b({0x43, 0x01, 0x02, 0x03}));
    EXPECT_EQ(*cbor_to_json_text(*bytes), R"(["$Uint8Array","AQID"])");
    // a literal ["$x", 1] is escaped on the way out and unescaped on the way in
    auto literal = json_text_to_cbor(R"(["$$x",1])");
    ASSERT_TRUE(literal.ok());
    EXPECT_EQ(*cbor_to_json_text(*literal), R"(["$$x",1])");
    EXPECT_EQ(*literal, cat({b({0x82, 0x62}), text("$x"), b({0x01})}));
    // CBOR bignum (tag 2) of 2^64 → BigInt text
    auto tagged = cbor_to_json_text(b({0xc2, 0x49, 0x01, 0, 0, 0, 0, 0, 0, 0, 0}));
    ASSERT_TRUE(tagged.ok());
    EXPECT_EQ(*tagged, R"(["$BigInt","18446744073709551616"])");
}

TEST(ClientEncoding, BareErrorBodyMatchesCapturedBytes) {
    // §6.4 bare unknown action
    ActorSpecifier actor{"1oasnakdmqjf6wpno1wy7vci4sal00", 1, "k"};
    Bytes got = encode_http_error(
        Encoding::Bare,
        client_error(errors::actor_action_not_found("nope")), actor);
    Bytes want = cat({b({0x04, 0x00, 0x05}), text("actor"), b({0x10}), text("action_not_found"),
                      b({0x1c}), text("Action `nope` was not found."), b({0x00, 0x01, 0x1e}),
                      text("1oasnakdmqjf6wpno1wy7vci4sal00"), b({0x01, 0x01, 0x01}), text("k")});
    EXPECT_EQ(got, want);
}

TEST(ClientEncoding, JsonErrorBodyCarriesActorAndMasksInternalErrors) {
    ActorSpecifier actor{"a1", 2, "k"};
    EXPECT_EQ(str(encode_http_error(Encoding::Json,
                                    client_error(errors::user("deliberate_failure", "boom",
                                                              R"({"reason":"test"})")),
                                    actor)),
              R"({"actor":{"actorId":"a1","generation":2,"key":"k"},"code":"deliberate_failure","group":"user","message":"boom","metadata":{"reason":"test"}})");
    EXPECT_EQ(str(encode_http_error(Encoding::Json, client_error(errors::internal_error("secret")),
                                    std::nullopt)),
              R"({"code":"internal_error","group":"core","message":"An internal error occurred"})");
}

TEST(ClientEncoding, ActorConnectBareFramesMatchCapturedBytes) {
    // §6.5 Init
    Bytes init = encode_init(Encoding::Bare, "1oasnakdmqjf6wpno1wy7vci4sal00",
                             "f84ed9d4-4889-4fa0-bace-239180e4556a");
    EXPECT_EQ(init, cat({b({0x04, 0x00, 0x00, 0x1e}), text("1oasnakdmqjf6wpno1wy7vci4sal00"),
                         b({0x24}), text("f84ed9d4-4889-4fa0-bace-239180e4556a")}));
    // C→S SubscriptionRequest{newCount,true}
    auto sub = decode_to_server(Encoding::Bare,
                                cat({b({0x04, 0x00, 0x01, 0x08}), text("newCount"), b({0x01})}));
    ASSERT_TRUE(sub.ok());
    auto* s = std::get_if<SubscriptionRequestFrame>(&*sub);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->event_name, "newCount");
    EXPECT_TRUE(s->subscribe);
    // C→S ActionRequest{id 0, increment, [5]}
    auto act = decode_to_server(
        Encoding::Bare, cat({b({0x04, 0x00, 0x00, 0x00, 0x09}), text("increment"), b({0x02, 0x81, 0x05})}));
    ASSERT_TRUE(act.ok());
    auto* a = std::get_if<ActionRequestFrame>(&*act);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->id, 0u);
    EXPECT_EQ(a->name, "increment");
    EXPECT_EQ(a->args, b({0x81, 0x05}));
    // S→C Event{newCount, [14]} and ActionResponse{0, 14}
    EXPECT_EQ(encode_event(Encoding::Bare, "newCount", b({0x81, 0x0e})),
              cat({b({0x04, 0x00, 0x03, 0x08}), text("newCount"), b({0x02, 0x81, 0x0e})}));
    EXPECT_EQ(encode_action_response(Encoding::Bare, 0, b({0x0e})),
              b({0x04, 0x00, 0x02, 0x00, 0x01, 0x0e}));
    // A multi-byte id, no output (null), and a long output: the generic encoder's bytes.
    namespace c4 = proto::client_v4;
    for (const auto& [id, output] : std::vector<std::pair<std::uint64_t, Bytes>>{
             {300, {}}, {~0ull, Bytes(200, 0x61)}, {1, b({0x82, 0x01, 0x02})}}) {
        const Bytes generic = bare::encode_versioned(
            kClientProtocolVersion,
            c4::ToClient{c4::ToClientBody{c4::ActionResponse{id, output.empty() ? b({0xf6}) : output}}});
        EXPECT_EQ(encode_action_response(Encoding::Bare, id, output), generic) << id;
    }
}

TEST(ClientEncoding, ActorConnectJsonAndCborFramesMatchCapturedShapes) {
    auto json_req = decode_to_server(
        Encoding::Json,
        text(R"({"body":{"tag":"ActionRequest","val":{"id":["$BigInt","0"],"name":"increment","args":[5]}}})"));
    ASSERT_TRUE(json_req.ok());
    EXPECT_EQ(std::get<ActionRequestFrame>(*json_req).args, b({0x81, 0x05}));
    auto plain_id = decode_to_server(
        Encoding::Json, text(R"({"body":{"tag":"ActionRequest","val":{"id":7,"name":"x","args":[]}}})"));
    ASSERT_TRUE(plain_id.ok());
    EXPECT_EQ(std::get<ActionRequestFrame>(*plain_id).id, 7u);
    EXPECT_EQ(str(encode_action_response(Encoding::Json, 0, b({0x18, 0x1b}))),
              R"({"body":{"tag":"ActionResponse","val":{"id":["$BigInt","0"],"output":27}}})");
    EXPECT_EQ(str(encode_event(Encoding::Json, "newCount", b({0x81, 0x18, 0x1b}))),
              R"({"body":{"tag":"Event","val":{"args":[27],"name":"newCount"}}})");
    // cbor C→S b9 0001 64"body" b9 0002 63"tag" 6d"ActionRequest" 63"val" b9 0003 62"id" 1b 0… 64"name" 69"increment" 64"args" 81 05
    Bytes cbor_req = cat({b({0xb9, 0x00, 0x01, 0x64}), text("body"), b({0xb9, 0x00, 0x02, 0x63}),
                          text("tag"), b({0x6d}), text("ActionRequest"), b({0x63}), text("val"),
                          b({0xb9, 0x00, 0x03, 0x62}), text("id"),
                          b({0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0x64}), text("name"), b({0x69}),
                          text("increment"), b({0x64}), text("args"), b({0x81, 0x05})});
    auto cbor_decoded = decode_to_server(Encoding::Cbor, cbor_req);
    ASSERT_TRUE(cbor_decoded.ok()) << cbor_decoded.error().to_string();
    EXPECT_EQ(std::get<ActionRequestFrame>(*cbor_decoded).name, "increment");
    // cbor S→C a1 64"body" a2 63"tag" 6e"ActionResponse" 63"val" a2 62"id" 1b 0… 66"output" 18 28
    EXPECT_EQ(encode_action_response(Encoding::Cbor, 0, b({0x18, 0x28})),
              cat({b({0xa1, 0x64}), text("body"), b({0xa2, 0x63}), text("tag"), b({0x6e}),
                   text("ActionResponse"), b({0x63}), text("val"), b({0xa2, 0x62}), text("id"),
                   b({0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0x66}), text("output"), b({0x18, 0x28})}));
}

TEST(ClientEncoding, ConnectErrorFramesCarryActionIdInEveryEncoding) {
    ClientError e{"actor", "action_not_found", "Action `nope` was not found.", std::nullopt};
    EXPECT_EQ(
        str(encode_connect_error(Encoding::Json, e, 8, ActorSpecifier{"a", 2, "k"})),
        R"({"body":{"tag":"Error","val":{"actionId":["$BigInt","8"],"actor":{"actorId":"a","generation":2,"key":"k"},"code":"action_not_found","group":"actor","message":"Action `nope` was not found."}}})");
    Bytes bare = encode_connect_error(Encoding::Bare, e, 8, std::nullopt);
    // tag 1 (Error), ..., metadata none, actionId some(8), actor none
    EXPECT_EQ(bare[2], 0x01);
    EXPECT_EQ(bare[bare.size() - 4], 0x00);
    EXPECT_EQ(bare[bare.size() - 3], 0x01);
    EXPECT_EQ(bare[bare.size() - 2], 0x08);
    EXPECT_EQ(bare[bare.size() - 1], 0x00);
}

TEST(ClientEncoding, MalformedInputIsAStructuredErrorNeverACrash) {
    EXPECT_FALSE(decode_http_action_args(Encoding::Json, text("{")).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Json, text("")).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Json, text("[1]")).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Cbor, b({0xa1})).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Bare, b({0x04})).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Bare, b({0x09, 0x00, 0x00})).ok());
    EXPECT_FALSE(decode_http_action_args(Encoding::Bare, b({0x04, 0x00, 0x05, 0x81})).ok());
    EXPECT_FALSE(decode_to_server(Encoding::Json, text(R"({"body":{"tag":"Nope","val":{}}})")).ok());
    EXPECT_FALSE(decode_to_server(Encoding::Json, text(R"({"body":{"tag":"ActionRequest","val":{"id":-1,"name":"x"}}})")).ok());
    EXPECT_FALSE(decode_to_server(Encoding::Bare, b({0x04, 0x00, 0x07})).ok());
    EXPECT_FALSE(json_text_to_cbor(R"(["$BigInt","12x"])").ok());
    EXPECT_FALSE(json_text_to_cbor(R"(["$Uint8Array","@@@"])").ok());
    // nesting beyond the limit is refused, not walked
    std::string deep(5000, '[');
    deep += std::string(5000, ']');
    EXPECT_FALSE(json_text_to_cbor(deep).ok());
}

// Found by fuzz_client_encoding: a CBOR map whose key is a non-UTF-8 text string nested in
// one-byte tags once threw from nlohmann's dump.
TEST(ClientEncoding, FuzzRegressionInvalidUtf8MapKey) {
    const Bytes input{0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0xd4, 0x94, 0xd4, 0x22, 0x3a, 0x32, 0x2c, 0x22, 0x64, 0x61, 0x72, 0x67, 0x73, 0x61, 0x22, 0x3a, 0x5b, 0x22, 0x24, 0x42, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0xa5, 0x0a, 0x00, 0xd4, 0xf4, 0xd4, 0xd4, 0xd4, 0xd4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x67, 0x49, 0x4a, 0xfd, 0x39, 0x34, 0x30, 0x39, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0xdb, 0x33, 0x39, 0x22, 0x5d, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x00};
    auto decoded = decode_http_action_args(Encoding::Cbor, input);
    if (decoded.ok()) {
        EXPECT_TRUE(encode_http_action_output(Encoding::Json, *decoded).ok());
    }
}

// Found by fuzz_client_encoding (a 10 s timeout): maps whose keys are maps, nested. Rendering
// such keys as JSON text doubled the escaping per level; container keys are refused now.
TEST(ClientEncoding, FuzzRegressionNestedContainerKeysAreRefusedQuickly) {
    const Bytes input{0x93, 0x01, 0x00, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0x11, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1, 0x25, 0x25, 0x09, 0x31, 0x25, 0x25, 0x25, 0x25, 0x25, 0x25, 0xa1, 0xa1, 0xa1, 0xa1, 0x80, 0x60, 0x00, 0x00, 0x08, 0x00, 0x00, 0x76, 0xa9, 0x9f, 0x6c, 0x00, 0x00, 0x00, 0x5b, 0x5b, 0x22, 0x24, 0x55, 0x69, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x29, 0x00, 0x00, 0x29, 0x29, 0x29, 0x29, 0x29, 0x21, 0x29};
    EXPECT_FALSE(cbor_to_json_text(input).ok());
    Bytes nested(100, 0xa1);  // {{{...: x}: x}: x}
    nested.push_back(0x01);
    for (int i = 0; i < 100; ++i)
        nested.push_back(0x01);
    EXPECT_FALSE(cbor_to_json_text(nested).ok());
    EXPECT_EQ(*cbor_to_json_text(Bytes{0xa1, 0x01, 0x02}), R"({"1":2})");
}

TEST(ClientRoutes, PathsClassifyAsUpstream) {
    EXPECT_EQ(classify_http_path("/action/increment").kind, Route::Kind::Action);
    EXPECT_EQ(classify_http_path("/action/increment").segment, "increment");
    EXPECT_EQ(classify_http_path("/action/a%20b").segment, "a b");
    EXPECT_FALSE(classify_http_path("/action/%zz").segment_ok);
    EXPECT_EQ(classify_http_path("/action/a/b").kind, Route::Kind::NotFound);
    EXPECT_EQ(classify_http_path("/request/foo/bar?x=1").kind, Route::Kind::Raw);
    EXPECT_EQ(classify_http_path("/request/foo/bar?x=1").request_path, "/foo/bar?x=1");
    EXPECT_EQ(classify_http_path("/request").request_path, "/");
    EXPECT_EQ(classify_http_path("/request?x=1").request_path, "/?x=1");
    EXPECT_EQ(classify_http_path("/requests").kind, Route::Kind::NotFound);
    EXPECT_EQ(classify_http_path("/health?x=1").kind, Route::Kind::Health);
    EXPECT_EQ(classify_http_path("/").kind, Route::Kind::Root);
    EXPECT_EQ(classify_websocket_path("/connect?x=1"), WebSocketRoute::ActorConnect);
    EXPECT_EQ(classify_websocket_path("/websocket/sock"), WebSocketRoute::Raw);
    EXPECT_EQ(bearer_token("Bearer abc").value_or(""), "abc");
    EXPECT_EQ(bearer_token("bearer   abc").value_or(""), "abc");
    EXPECT_FALSE(bearer_token("Basic abc").has_value());
}

TEST(ClientRoutes, ActorKeysRoundTripTheEngineForm) {
    EXPECT_EQ(parse_actor_key("/"), std::vector<std::string>{});
    EXPECT_EQ(parse_actor_key("k"), std::vector<std::string>{"k"});
    EXPECT_EQ(parse_actor_key("a/b"), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(parse_actor_key(R"(a\/b/\0)"), (std::vector<std::string>{"a/b", ""}));
    EXPECT_EQ(format_actor_key({"a/b", ""}), R"(a\/b/\0)");
    EXPECT_EQ(format_actor_key({}), "/");
}

}  // namespace
}  // namespace rivetkit::core::registry

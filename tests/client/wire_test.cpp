// The client's codecs (src/client/wire) against the host's (core/registry/encoding) in json,
// cbor and bare: what one side writes the other reads back unchanged. Then malformed server
// input, and a connection against a gateway that sends a malformed frame.

#include "client/wire.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>

#include "core/registry/encoding.hpp"
#include "fake_gateway.hpp"
#include "rivetkit/client.hpp"

namespace rivetkit::client {
namespace {

namespace reg = core::registry;
using nlohmann::json;

reg::Encoding host_encoding(wire::Encoding e) {
    switch (e) {
        case wire::Encoding::json:
            return reg::Encoding::Json;
        case wire::Encoding::cbor:
            return reg::Encoding::Cbor;
        case wire::Encoding::bare:
            return reg::Encoding::Bare;
    }
    return reg::Encoding::Bare;
}

Bytes host_cbor(const json& v) {
    auto out = reg::json_text_to_cbor(v.dump());
    EXPECT_TRUE(out.ok());
    return out.ok() ? *out : Bytes{};
}

json host_value(BytesView cbor) {
    auto text = reg::cbor_to_json_text(cbor);
    EXPECT_TRUE(text.ok());
    return text.ok() ? json::parse(*text) : json();
}

const json kArgs = json::array({1, "two", json{{"big", json::array({"$BigInt", "12345678901234567890"})}},
                                json::array({"$Uint8Array", "AQID"}), nullptr, 2.5});

class Wire : public ::testing::TestWithParam<wire::Encoding> {
  protected:
    wire::Encoding enc() const { return GetParam(); }
    reg::Encoding host() const { return host_encoding(GetParam()); }
};

TEST_P(Wire, HttpActionRequestReachesTheHostUnchanged) {
    auto body = wire::encode_http_action_request(enc(), kArgs);
    ASSERT_TRUE(body.ok()) << body.error().to_string();
    auto args = reg::decode_http_action_args(host(), *body);
    ASSERT_TRUE(args.ok()) << args.error().to_string();
    EXPECT_EQ(host_value(*args), kArgs);
    // A lone value is one argument.
    auto single = wire::encode_http_action_request(enc(), 5);
    ASSERT_TRUE(single.ok());
    auto single_args = reg::decode_http_action_args(host(), *single);
    ASSERT_TRUE(single_args.ok());
    EXPECT_EQ(host_value(*single_args), json::array({5}));
}

TEST_P(Wire, HttpActionResponseFromTheHostDecodes) {
    const json output = json{{"n", 3}, {"list", kArgs}};
    auto body = reg::encode_http_action_output(host(), host_cbor(output));
    ASSERT_TRUE(body.ok());
    auto out = wire::decode_http_action_response(enc(), *body);
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_EQ(*out, output);
}

TEST_P(Wire, HttpErrorFromTheHostKeepsGroupCodeMessageMetadataAndActor) {
    reg::ClientError e{"user", "deliberate_failure", "counter failed on purpose",
                       std::string(R"({"reason":"test"})")};
    ActorSpecifier actor{"actor123", 2, "k"};
    auto body = reg::encode_http_error(host(), e, actor);
    Error err = wire::decode_http_error(enc(), 500, body);
    EXPECT_EQ(err.group(), "user");
    EXPECT_EQ(err.code(), "deliberate_failure");
    EXPECT_EQ(err.message(), "counter failed on purpose");
    ASSERT_TRUE(err.metadata().has_value());
    EXPECT_EQ(json::parse(*err.metadata()), json({{"reason", "test"}}));
    ASSERT_TRUE(err.actor().has_value());
    EXPECT_EQ(err.actor()->actor_id, "actor123");
    EXPECT_EQ(err.actor()->generation, 2u);
    EXPECT_EQ(err.actor()->key, "k");
}

TEST_P(Wire, HostFramesDecode) {
    auto init = wire::decode_to_client(enc(), reg::encode_init(host(), "actor1", "conn1"));
    ASSERT_TRUE(init.ok()) << init.error().to_string();
    ASSERT_TRUE(std::holds_alternative<wire::InitFrame>(*init));
    EXPECT_EQ(std::get<wire::InitFrame>(*init).actor_id, "actor1");
    EXPECT_EQ(std::get<wire::InitFrame>(*init).connection_id, "conn1");

    const std::uint64_t big_id = (std::uint64_t{1} << 60) + 7;
    auto resp = wire::decode_to_client(
        enc(), reg::encode_action_response(host(), big_id, host_cbor(kArgs)));
    ASSERT_TRUE(resp.ok()) << resp.error().to_string();
    ASSERT_TRUE(std::holds_alternative<wire::ActionResponseFrame>(*resp));
    EXPECT_EQ(std::get<wire::ActionResponseFrame>(*resp).id, big_id);
    EXPECT_EQ(std::get<wire::ActionResponseFrame>(*resp).output, kArgs);

    auto event = wire::decode_to_client(
        enc(), reg::encode_event(host(), "newCount", host_cbor(json::array({14}))));
    ASSERT_TRUE(event.ok()) << event.error().to_string();
    ASSERT_TRUE(std::holds_alternative<wire::EventFrame>(*event));
    EXPECT_EQ(std::get<wire::EventFrame>(*event).name, "newCount");
    EXPECT_EQ(std::get<wire::EventFrame>(*event).args, json::array({14}));

    reg::ClientError e{"actor", "action_not_found", "Action `nope` was not found.", std::nullopt};
    auto error = wire::decode_to_client(
        enc(), reg::encode_connect_error(host(), e, 8, ActorSpecifier{"a", 1, "k"}));
    ASSERT_TRUE(error.ok()) << error.error().to_string();
    ASSERT_TRUE(std::holds_alternative<wire::ErrorFrame>(*error));
    const auto& ef = std::get<wire::ErrorFrame>(*error);
    EXPECT_EQ(ef.action_id, std::optional<std::uint64_t>(8));
    EXPECT_TRUE(ef.error.is("actor", "action_not_found"));
    EXPECT_EQ(ef.error.message(), "Action `nope` was not found.");

    auto conn_error = wire::decode_to_client(
        enc(), reg::encode_connect_error(host(), e, std::nullopt, std::nullopt));
    ASSERT_TRUE(conn_error.ok());
    EXPECT_FALSE(std::get<wire::ErrorFrame>(*conn_error).action_id.has_value());
}

TEST_P(Wire, ClientFramesReachTheHost) {
    auto frame = wire::encode_action_request(enc(), 42, "increment", kArgs);
    ASSERT_TRUE(frame.ok());
    auto decoded = reg::decode_to_server(host(), *frame);
    ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
    const auto& action = std::get<reg::ActionRequestFrame>(*decoded);
    EXPECT_EQ(action.id, 42u);
    EXPECT_EQ(action.name, "increment");
    EXPECT_EQ(host_value(action.args), kArgs);

    for (bool subscribe : {true, false}) {
        auto sub = reg::decode_to_server(
            host(), wire::encode_subscription_request(enc(), "newCount", subscribe));
        ASSERT_TRUE(sub.ok()) << sub.error().to_string();
        const auto& s = std::get<reg::SubscriptionRequestFrame>(*sub);
        EXPECT_EQ(s.event_name, "newCount");
        EXPECT_EQ(s.subscribe, subscribe);
    }
}

TEST_P(Wire, MalformedServerFramesAreStructuredErrors) {
    const Bytes valid = reg::encode_event(host(), "e", host_cbor(json::array({1})));
    std::vector<Bytes> inputs{{}, {0x00}, {0xff, 0xff, 0xff}, {0x04, 0x00, 0x09},
                              Bytes(valid.begin(), valid.end() - 1)};
    const std::string text = R"({"body":{"tag":"Nope","val":{}}})";
    inputs.emplace_back(text.begin(), text.end());
    for (const auto& in : inputs) {
        auto r = wire::decode_to_client(enc(), in);
        ASSERT_FALSE(r.ok()) << "accepted " << in.size() << " bytes";
        EXPECT_EQ(r.error().group(), "client");
        EXPECT_EQ(r.error().code(), "malformed_frame");
    }
    // Every truncation of valid frames fails cleanly (or, for json/cbor, parses to something
    // well-formed); none crashes.
    const Bytes resp = reg::encode_action_response(host(), 3, host_cbor(kArgs));
    for (std::size_t n = 0; n < resp.size(); ++n)
        (void)wire::decode_to_client(enc(), BytesView(resp.data(), n));
    EXPECT_FALSE(wire::decode_http_action_response(enc(), Bytes{0x01}).ok());
}

INSTANTIATE_TEST_SUITE_P(Encodings, Wire,
                         ::testing::Values(wire::Encoding::bare, wire::Encoding::json,
                                           wire::Encoding::cbor),
                         [](const auto& p) {
                             return std::string(wire::encoding_name(p.param));
                         });

TEST(WireKeys, SerializeLikeUpstream) {
    EXPECT_EQ(wire::serialize_key({}), "/");
    EXPECT_EQ(wire::serialize_key({"test"}), "test");
    EXPECT_EQ(wire::serialize_key({"a", "b", "c"}), "a/b/c");
    EXPECT_EQ(wire::serialize_key({"a/b"}), "a\\/b");
    EXPECT_EQ(wire::serialize_key({"a\\b"}), "a\\\\b");
    EXPECT_EQ(wire::serialize_key({""}), "\\0");
}

TEST(WireErrors, NonProtocolErrorBodiesBecomeHttpErrors) {
    const std::string body = "upstream proxy error";
    Error e = wire::decode_http_error(wire::Encoding::bare, 502,
                                      Bytes(body.begin(), body.end()));
    EXPECT_TRUE(e.is("client", "http_error")) << e.to_string();
    EXPECT_NE(e.message().find("502"), std::string::npos);
    // Guard answers in JSON whatever the request encoding.
    const std::string guard = R"({"group":"actor","code":"not_found","message":"gone"})";
    EXPECT_TRUE(wire::decode_http_error(wire::Encoding::bare, 404,
                                        Bytes(guard.begin(), guard.end()))
                    .is("actor", "not_found"));
}

// A gateway whose first socket sends garbage after a valid Init: the client reports
// client/malformed_frame, drops that socket and reconnects; the second socket works.
TEST(ClientConnection, MalformedFrameClosesTheSocketAndReconnects) {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> seen;  // what the client observed, in order
    std::vector<std::string> targets;
    int opens = 0;
    bool replied = false;

    testing::FakeGateway gateway([&](testing::FakeSocket& socket, int index) {
        {
            std::lock_guard lock(mu);
            targets.push_back(socket.target() + " | " + socket.protocols());
        }
        socket.send(reg::encode_init(reg::Encoding::Bare, "actor1", "conn" + std::to_string(index)),
                    true);
        if (index == 0) {
            socket.send(Bytes{0x04, 0x00, 0x07, 0x01, 0x02}, true);  // unknown union tag
            while (socket.recv()) {
            }
            return;
        }
        // Second socket: answer the subscription and one action.
        while (auto frame = socket.recv()) {
            auto decoded = reg::decode_to_server(reg::Encoding::Bare, *frame);
            if (!decoded.ok())
                continue;
            if (auto* a = std::get_if<reg::ActionRequestFrame>(&*decoded)) {
                socket.send(reg::encode_event(reg::Encoding::Bare, "ping",
                                              host_cbor(json::array({"after-reconnect"}))),
                            true);
                socket.send(reg::encode_action_response(reg::Encoding::Bare, a->id,
                                                        host_cbor(json(7))),
                            true);
            }
        }
    });

    ClientConfig config;
    config.endpoint = gateway.endpoint();
    config.reconnect_initial = std::chrono::milliseconds(1);
    config.reconnect_max = std::chrono::milliseconds(5);
    Client client(config);
    auto conn = client.get_for_id("counter", "actor1").connect();
    conn->on("ping", [&](const json& args) {
        std::lock_guard lock(mu);
        seen.push_back("event:" + args.dump());
        cv.notify_all();
    });
    conn->on_error([&](const Error& e) {
        std::lock_guard lock(mu);
        seen.push_back("error:" + e.group() + "." + e.code());
        cv.notify_all();
    });
    conn->on_open([&](const std::string&, const std::string& connection_id) {
        std::lock_guard lock(mu);
        ++opens;
        seen.push_back("open:" + connection_id);
        cv.notify_all();
    });
    {
        std::unique_lock lock(mu);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return opens >= 2; }));
    }
    auto out = conn->action("increment", json::array({1}));
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_EQ(*out, 7);
    {
        std::lock_guard lock(mu);
        replied = true;
        ASSERT_GE(seen.size(), 4u);
        EXPECT_EQ(seen[0], "open:conn0");
        EXPECT_EQ(seen[1], "error:client.malformed_frame");
        EXPECT_EQ(seen[2], "open:conn1");
        EXPECT_EQ(seen[3], "event:[\"after-reconnect\"]");
        EXPECT_EQ(targets.size(), 2u);
        EXPECT_EQ(targets[0], "/gateway/actor1/connect | rivet, rivet_encoding.bare");
    }
    EXPECT_TRUE(replied);
    conn->dispose();
}

// What a connection's handlers capture may go once dispose() returns: none of them runs after it,
// though events keep arriving and the socket's close completes later (it used to be reported to
// on_close after dispose(), on the client's thread, into whatever the handler captured).
TEST(ClientConnection, NoHandlerRunsAfterDisposeReturns) {
    testing::FakeGateway gateway([](testing::FakeSocket& socket, int) {
        socket.send(reg::encode_init(reg::Encoding::Bare, "actor1", "conn0"), true);
        if (!socket.recv())  // the subscription
            return;
        for (int i = 0; i < 200; ++i)
            socket.send(reg::encode_event(reg::Encoding::Bare, "tick", host_cbor(json::array({i}))),
                        true);
        while (socket.recv()) {
        }
    });
    std::mutex mu;
    std::condition_variable cv;
    int ticks = 0;
    bool disposed = false;
    int after_dispose = 0;  // handler calls that began once dispose() had returned
    auto seen = [&] {
        std::lock_guard lock(mu);
        after_dispose += disposed ? 1 : 0;
        cv.notify_all();
    };
    {
        ClientConfig config;
        config.endpoint = gateway.endpoint();
        Client client(config);
        auto conn = client.get_for_id("counter", "actor1").connect();
        conn->on("tick", [&](const json&) {
            {
                std::lock_guard lock(mu);
                ++ticks;
            }
            seen();
        });
        conn->on_close([&](const Error&) { seen(); });
        conn->on_error([&](const Error&) { seen(); });
        {
            std::unique_lock lock(mu);
            ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return ticks > 0; }));
        }
        conn->dispose();
        {
            std::lock_guard lock(mu);
            disposed = true;
        }
    }  // the client's thread has ended: whatever the connection had left to do is done
    EXPECT_EQ(after_dispose, 0);
}

TEST(ClientConnection, BlockingCallOnTheExecutorThreadIsRefused) {
    boost::asio::io_context io;
    ClientConfig config;
    config.endpoint = "http://127.0.0.1:1";
    Client client(config, io.get_executor());
    std::optional<Result<Json>> out;
    boost::asio::post(io, [&] { out.emplace(client.get_for_id("x", "y").action("a")); });
    io.run();
    ASSERT_TRUE(out.has_value());
    ASSERT_FALSE(out->ok());
    EXPECT_TRUE(out->error().is("client", "blocking_on_executor"));
}

}  // namespace
}  // namespace rivetkit::client

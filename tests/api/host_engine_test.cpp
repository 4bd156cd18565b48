// src/host/engine.*: creating the pool on an engine that is still coming up. A fresh engine
// answers /health before it has created the `default` namespace; the host retries that answer
// only when the engine was started a moment ago, and otherwise names the missing namespace.

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <thread>

#include "host/engine.hpp"

namespace rivetkit::host {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr const char* kNamespaceNotFound =
    R"({"group":"namespace","code":"not_found","message":"The namespace does not exist."})";

// Answers runner-config PUTs on loopback: the first `not_found_answers` with the engine's
// namespace.not_found, then 200. One request per connection, as http_call sends them.
class FakeEngine {
  public:
    explicit FakeEngine(int not_found_answers)
        : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}),
          not_found_left_(not_found_answers) {
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeEngine() {
        stopping_ = true;
        beast::error_code ec;
        // Wake the blocking accept with one last connection.
        asio::io_context io;
        asio::ip::tcp::socket s(io);
        s.connect(acceptor_.local_endpoint(), ec);
        thread_.join();
    }
    Endpoint endpoint() const {
        return *parse_endpoint("http://127.0.0.1:" +
                               std::to_string(acceptor_.local_endpoint().port()));
    }
    int requests() const { return requests_; }

  private:
    void serve() {
        while (!stopping_) {
            asio::ip::tcp::socket socket(io_);
            beast::error_code ec;
            acceptor_.accept(socket, ec);
            if (ec || stopping_)
                return;
            beast::flat_buffer buffer;
            http::request<http::string_body> req;
            http::read(socket, buffer, req, ec);
            if (ec)
                continue;
            ++requests_;
            http::response<http::string_body> res;
            res.version(11);
            if (not_found_left_ > 0) {
                --not_found_left_;
                res.result(http::status::bad_request);
                res.body() = kNamespaceNotFound;
            } else {
                res.result(http::status::ok);
                res.body() = "{}";
            }
            res.prepare_payload();
            http::write(socket, res, ec);
        }
    }

    asio::io_context io_;
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
    std::atomic<bool> stopping_{false};
    std::atomic<int> requests_{0};
    int not_found_left_;
};

TEST(HostEngine, APoolOnAnEngineStillCreatingItsNamespaceIsCreatedOnceItExists) {
    FakeEngine engine(2);
    Status s = ensure_pool(engine.endpoint(), "default", "default", std::nullopt,
                           /*engine_starting=*/true);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    EXPECT_EQ(engine.requests(), 3);
}

TEST(HostEngine, AMissingNamespaceOnARunningEngineIsNamedAtOnce) {
    FakeEngine engine(1000);
    Status s = ensure_pool(engine.endpoint(), "staging", "default", std::nullopt,
                           /*engine_starting=*/false);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code(), "namespace_not_found");
    EXPECT_NE(s.error().message().find("'staging'"), std::string::npos) << s.error().message();
    EXPECT_EQ(engine.requests(), 1);
}

TEST(HostEngine, OnlyTheEnginesNamespaceNotFoundAnswerCountsAsAMissingNamespace) {
    EXPECT_TRUE(is_namespace_not_found(HttpReply{400, kNamespaceNotFound}));
    EXPECT_FALSE(is_namespace_not_found(HttpReply{404, kNamespaceNotFound}));
    EXPECT_FALSE(is_namespace_not_found(
        HttpReply{400, R"({"group":"actor","code":"not_found","message":"x"})"}));
    EXPECT_FALSE(is_namespace_not_found(HttpReply{400, "not json \"namespace\" not_found"}));
    EXPECT_FALSE(is_namespace_not_found(HttpReply{400, R"(["namespace","not_found"])"}));
}

}  // namespace
}  // namespace rivetkit::host

#include "fake_gateway.hpp"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <thread>

namespace rivetkit::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;

namespace {

class BeastSocket final : public FakeSocket {
  public:
    BeastSocket(tcp::socket socket) : ws_(std::move(socket)) {}

    bool accept() {
        beast::error_code ec;
        beast::flat_buffer buffer;
        beast::http::request<beast::http::string_body> req;
        beast::http::read(ws_.next_layer(), buffer, req, ec);
        if (ec)
            return false;
        target_ = std::string(req.target());
        protocols_ = std::string(req[beast::http::field::sec_websocket_protocol]);
        ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
            res.set(beast::http::field::sec_websocket_protocol, "rivet");
        }));
        ws_.accept(req, ec);
        return !ec;
    }
    std::string target() const override { return target_; }
    std::string protocols() const override { return protocols_; }
    bool send(const Bytes& data, bool binary) override {
        beast::error_code ec;
        ws_.binary(binary);
        ws_.write(asio::buffer(data.data(), data.size()), ec);
        return !ec;
    }
    std::optional<Bytes> recv() override {
        beast::error_code ec;
        beast::flat_buffer buffer;
        ws_.read(buffer, ec);
        if (ec)
            return std::nullopt;
        auto d = buffer.cdata();
        const auto* p = static_cast<const std::uint8_t*>(d.data());
        return Bytes(p, p + d.size());
    }
    void shutdown() {
        beast::error_code ec;
        ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
        ws_.next_layer().close(ec);
    }

  private:
    websocket::stream<tcp::socket> ws_;
    std::string target_;
    std::string protocols_;
};

}  // namespace

struct FakeGateway::Impl {
    asio::io_context io;
    tcp::acceptor acceptor{io};
    std::thread thread;
    std::atomic<bool> stopping{false};
};

FakeGateway::FakeGateway(std::function<void(FakeSocket&, int)> serve)
    : impl_(std::make_unique<Impl>()) {
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    impl_->thread = std::thread([impl = impl_.get(), serve = std::move(serve)] {
        for (int index = 0;; ++index) {
            beast::error_code ec;
            tcp::socket socket(impl->io);
            impl->acceptor.accept(socket, ec);
            if (ec || impl->stopping)
                return;
            BeastSocket ws(std::move(socket));
            if (ws.accept())
                serve(ws, index);
            ws.shutdown();
        }
    });
}

FakeGateway::~FakeGateway() {
    impl_->stopping = true;
    beast::error_code ec;
    // Wake the blocking accept with one connection of our own.
    {
        tcp::socket poke(impl_->io);
        poke.connect(impl_->acceptor.local_endpoint(), ec);
    }
    impl_->acceptor.close(ec);
    if (impl_->thread.joinable())
        impl_->thread.join();
}

std::uint16_t FakeGateway::port() const { return impl_->acceptor.local_endpoint().port(); }

std::string FakeGateway::endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port());
}

}  // namespace rivetkit::testing

#pragma once
// An in-memory engine for envoy unit tests on virtual time: each connect the envoy makes becomes a
// FakeConnection the test drives frame by frame (push ToEnvoy, read what the envoy sent).

#include <boost/asio/awaitable.hpp>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "bare/codec.hpp"
#include "envoy/transport.hpp"
#include "proto/envoy_v8.hpp"
#include "runtime/channel.hpp"
#include "runtime/clock.hpp"

namespace rivetkit::envoy::testing {

namespace proto = rivetkit::proto::envoy_v8;

struct FakeConnection {
    ConnectTarget target;
    std::pair<rt::Sender<TransportRead>, rt::Receiver<TransportRead>> inbox =
        rt::unbounded_channel<TransportRead>();
    std::pair<rt::Sender<Bytes>, rt::Receiver<Bytes>> sent = rt::unbounded_channel<Bytes>();
    bool aborted = false;
    std::optional<std::pair<std::uint16_t, std::string>> closed_by_envoy;

    void push(const proto::ToEnvoy& message);
    void push_raw(Bytes frame);
    void close_from_engine(std::uint16_t code, std::string reason);
    void drop();
    // The next frame the envoy sent, decoded; nullopt after `wait` of virtual time.
    boost::asio::awaitable<std::optional<proto::ToRivet>> next(rt::Clock& clock,
                                                               std::chrono::milliseconds wait);
    // Skips frames until one holding T (pongs, acks, ... in between are dropped).
    template <typename T>
    boost::asio::awaitable<std::optional<T>> next_of(rt::Clock& clock,
                                                     std::chrono::milliseconds wait);
};

class FakeEngine final : public TransportFactory {
  public:
    std::unique_ptr<Transport> create(boost::asio::any_io_executor executor) override;

    // Connections in the order the envoy made them.
    boost::asio::awaitable<std::shared_ptr<FakeConnection>> accept(rt::Clock& clock,
                                                                   std::chrono::milliseconds wait);
    std::size_t connection_count() const noexcept { return count_; }
    // The next `n` connects fail.
    void refuse_next(int n) { refuse_ = n; }

  private:
    std::pair<rt::Sender<std::shared_ptr<FakeConnection>>,
              rt::Receiver<std::shared_ptr<FakeConnection>>>
        accepted_ = rt::unbounded_channel<std::shared_ptr<FakeConnection>>();
    std::size_t count_ = 0;
    int refuse_ = 0;
};

template <typename T>
boost::asio::awaitable<std::optional<T>> FakeConnection::next_of(rt::Clock& clock,
                                                                 std::chrono::milliseconds wait) {
    auto deadline = clock.now() + wait;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.now());
        if (left.count() <= 0)
            co_return std::nullopt;
        auto op = next(clock, left);
        std::optional<proto::ToRivet> m = co_await std::move(op);
        if (!m)
            co_return std::nullopt;
        if (auto* hit = m->get_if<T>())
            co_return std::optional<T>(std::move(*hit));
    }
}

proto::ToEnvoy init_message(std::int64_t lost_threshold_ms = 15'000);

// An engine model's KV for one actor: applies a KV request (get, list, put, delete, delete
// range) to `store` and answers as the engine does.
proto::KvResponseData apply_kv(std::map<Bytes, Bytes>& store, const proto::KvRequestData& request);
proto::ToEnvoy start_command(const std::string& actor_id, std::uint32_t generation,
                             std::int64_t index, const std::string& name = "counter");
proto::ToEnvoy stop_command(const std::string& actor_id, std::uint32_t generation,
                            std::int64_t index, proto::StopActorReason reason);

}  // namespace rivetkit::envoy::testing

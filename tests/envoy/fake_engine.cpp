#include "fake_engine.hpp"

#include <algorithm>

#include "runtime/timeout.hpp"

namespace rivetkit::envoy::testing {

namespace asio = boost::asio;

namespace {

class FakeTransport final : public Transport {
  public:
    FakeTransport(std::shared_ptr<FakeConnection> conn, bool refuse,
                  rt::Sender<std::shared_ptr<FakeConnection>> accepted)
        : conn_(std::move(conn)), refuse_(refuse), accepted_(std::move(accepted)) {}

    asio::awaitable<Status> connect(ConnectTarget target) override {
        if (refuse_)
            co_return Error("envoy", "connect_failed", "refused by the fake engine");
        conn_->target = std::move(target);
        accepted_.send(conn_);
        co_return Status{};
    }
    // Holds the run queue like the WebSocket transport: from each message to the next read.
    asio::awaitable<TransportRead> read(rt::RunQueueHold* hold) override {
        if (hold != nullptr)
            hold->run();
        std::optional<TransportRead> r = co_await conn_->inbox.second.recv();
        if (hold != nullptr && r &&
            (r->kind == TransportRead::Kind::binary || r->kind == TransportRead::Kind::text))
            hold->hold();
        if (!r) {
            TransportRead failed;
            failed.reason = "inbox gone";
            co_return failed;
        }
        co_return std::move(*r);
    }
    // Like the WebSocket transport, a write may wait in a buffer until flush(): here every one
    // does, so an envoy that forgets to flush before it waits leaves its frames unsent and the
    // test that expects them fails.
    asio::awaitable<Status> write(BytesView frame) override {
        if (conn_->aborted)
            co_return Error("envoy", "write_failed", "aborted");
        unflushed_.emplace_back(frame.begin(), frame.end());
        co_return Status{};
    }
    asio::awaitable<Status> flush() override {
        if (conn_->aborted)
            co_return Error("envoy", "write_failed", "aborted");
        for (auto& frame : unflushed_)
            conn_->sent.first.send(std::move(frame));
        unflushed_.clear();
        co_return Status{};
    }
    asio::awaitable<void> close(std::uint16_t code, std::string reason) override {
        conn_->closed_by_envoy.emplace(code, reason);
        TransportRead closed;
        closed.kind = TransportRead::Kind::closed;
        closed.close_code = code;
        closed.reason = std::move(reason);
        conn_->inbox.first.send(std::move(closed));
        co_return;
    }
    void abort() noexcept override { conn_->drop(); }

  private:
    std::shared_ptr<FakeConnection> conn_;
    std::vector<Bytes> unflushed_;
    bool refuse_;
    rt::Sender<std::shared_ptr<FakeConnection>> accepted_;
};

}  // namespace

void FakeConnection::push(const proto::ToEnvoy& message) {
    push_raw(bare::encode_to_bytes(message));
}

void FakeConnection::push_raw(Bytes frame) {
    TransportRead r;
    r.kind = TransportRead::Kind::binary;
    r.data = std::move(frame);
    inbox.first.send(std::move(r));
}

void FakeConnection::close_from_engine(std::uint16_t code, std::string reason) {
    TransportRead r;
    r.kind = TransportRead::Kind::closed;
    r.close_code = code;
    r.reason = std::move(reason);
    inbox.first.send(std::move(r));
}

void FakeConnection::drop() {
    if (aborted)
        return;
    aborted = true;
    TransportRead r;
    r.kind = TransportRead::Kind::failed;
    r.reason = "aborted";
    inbox.first.send(std::move(r));
}

asio::awaitable<std::optional<proto::ToRivet>> FakeConnection::next(
    rt::Clock& clock, std::chrono::milliseconds wait) {
    auto op = sent.second.recv();
    std::optional<std::optional<Bytes>> got = co_await rt::timeout(clock, wait, std::move(op));
    if (!got || !*got)
        co_return std::nullopt;
    auto decoded = bare::decode_from_bytes<proto::ToRivet>(**got);
    if (!decoded.ok())
        co_return std::nullopt;
    co_return std::optional<proto::ToRivet>(std::move(decoded).value());
}

std::unique_ptr<Transport> FakeEngine::create(asio::any_io_executor /*executor*/) {
    bool refuse = refuse_ > 0;
    if (refuse)
        --refuse_;
    if (!refuse)
        ++count_;
    return std::make_unique<FakeTransport>(std::make_shared<FakeConnection>(), refuse,
                                           accepted_.first);
}

asio::awaitable<std::shared_ptr<FakeConnection>> FakeEngine::accept(
    rt::Clock& clock, std::chrono::milliseconds wait) {
    auto op = accepted_.second.recv();
    auto got = co_await rt::timeout(clock, wait, std::move(op));
    if (!got || !*got)
        co_return nullptr;
    co_return std::move(**got);
}

proto::KvResponseData apply_kv(std::map<Bytes, Bytes>& store, const proto::KvRequestData& request) {
    proto::KvResponseData response;
    if (const auto* put = request.get_if<proto::KvPutRequest>()) {
        for (std::size_t i = 0; i < put->keys.size() && i < put->values.size(); ++i)
            store[put->keys[i]] = put->values[i];
        response.value = proto::KvPutResponse{};
    } else if (const auto* get = request.get_if<proto::KvGetRequest>()) {
        proto::KvGetResponse out;
        for (const auto& k : get->keys) {
            if (auto found = store.find(k); found != store.end()) {
                out.keys.push_back(k);
                out.values.push_back(found->second);
                out.metadata.push_back(proto::KvMetadata{{}, 0});
            }
        }
        response.value = std::move(out);
    } else if (const auto* list = request.get_if<proto::KvListRequest>()) {
        std::vector<std::pair<Bytes, Bytes>> hits;
        for (const auto& [k, v] : store) {
            bool in = true;
            if (const auto* range = list->query.get_if<proto::KvListRangeQuery>())
                in = k >= range->start && (range->exclusive ? k < range->end : k <= range->end);
            else if (const auto* prefix = list->query.get_if<proto::KvListPrefixQuery>())
                in = k.size() >= prefix->key.size() &&
                     std::equal(prefix->key.begin(), prefix->key.end(), k.begin());
            if (in)
                hits.emplace_back(k, v);
        }
        if (list->reverse.value_or(false))
            std::reverse(hits.begin(), hits.end());
        if (list->limit && hits.size() > *list->limit)
            hits.resize(*list->limit);
        proto::KvListResponse out;
        for (auto& [k, v] : hits) {
            out.keys.push_back(k);
            out.values.push_back(v);
            out.metadata.push_back(proto::KvMetadata{{}, 0});
        }
        response.value = std::move(out);
    } else if (const auto* del = request.get_if<proto::KvDeleteRequest>()) {
        for (const auto& k : del->keys)
            store.erase(k);
        response.value = proto::KvDeleteResponse{};
    } else if (const auto* range = request.get_if<proto::KvDeleteRangeRequest>()) {
        store.erase(store.lower_bound(range->start), store.lower_bound(range->end));
        response.value = proto::KvDeleteResponse{};
    } else {
        response.value = proto::KvErrorResponse{"unsupported by the engine model"};
    }
    return response;
}

proto::ToEnvoy init_message(std::int64_t lost_threshold_ms) {
    return proto::ToEnvoy{proto::ToEnvoyInit{
        proto::ProtocolMetadata{lost_threshold_ms, 1'800'000, 20 * 1024 * 1024}}};
}

proto::ToEnvoy start_command(const std::string& actor_id, std::uint32_t generation,
                             std::int64_t index, const std::string& name) {
    proto::CommandStartActor start;
    start.config.name = name;
    start.config.key = "k1";
    start.config.create_ts = 1'700'000'000'000;
    start.config.input = to_bytes("input");
    proto::ToEnvoyCommands commands;
    commands.value.push_back(proto::CommandWrapper{
        proto::ActorCheckpoint{actor_id, generation, index}, proto::Command{std::move(start)}});
    return proto::ToEnvoy{std::move(commands)};
}

proto::ToEnvoy stop_command(const std::string& actor_id, std::uint32_t generation,
                            std::int64_t index, proto::StopActorReason reason) {
    proto::ToEnvoyCommands commands;
    commands.value.push_back(
        proto::CommandWrapper{proto::ActorCheckpoint{actor_id, generation, index},
                              proto::Command{proto::CommandStopActor{reason}}});
    return proto::ToEnvoy{std::move(commands)};
}

}  // namespace rivetkit::envoy::testing

#pragma once
// Drives a typed actor through core exactly as the registry does: a real ActorTask running on
// rt::TestRuntime (virtual time, auto-advance) with an in-memory KV, actions sent as
// DispatchCommand::Action, connections opened through ActorContext::connect_conn.

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/actor/context.hpp"
#include "core/actor/factory.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"
#include "core/actor/task.hpp"
#include "rivetkit/rivetkit.hpp"
#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

// ASSERT_* returns, which a coroutine cannot; this records the failure and co_returns.
#define CO_ASSERT(cond)                                     \
    do {                                                    \
        const bool co_assert_ok_ = static_cast<bool>(cond); \
        EXPECT_TRUE(co_assert_ok_) << #cond;                \
        if (!co_assert_ok_)                                 \
            co_return;                                      \
    } while (false)

namespace rivetkit::api_test {

template <typename T = void>
using Task = boost::asio::awaitable<T>;
using namespace std::chrono_literals;

struct ReceivedEvent {
    std::string name;
    Json args;
    friend bool operator==(const ReceivedEvent&, const ReceivedEvent&) = default;
};

// One actor generation (or several, after stop/start) on a shared in-memory KV.
class ActorHarness {
  public:
    explicit ActorHarness(std::shared_ptr<core::ActorFactory> factory,
                          std::optional<Json> input = std::nullopt,
                          std::string actor_id = "actor-api")
        : factory_(std::move(factory)), actor_id_(std::move(actor_id)) {
        if (input)
            input_ = to_cbor(*input);
    }

    rt::TestRuntime& runtime() noexcept { return rt_; }
    rt::VirtualClock& clock() noexcept { return rt_.clock(); }
    core::InMemoryKv& kv() noexcept { return *kv_; }
    const core::ActorContext& ctx() const { return *ctx_; }

    // A fresh context and task over the same KV, started.
    Task<Status> start() {
        ctx_.emplace(rt_.executor(), rt_.clock(), actor_id_, "typed", std::vector<std::string>{},
                     "local", core::Kv(kv_, actor_id_));
        auto [ltx, lrx] = rt::unbounded_channel<core::LifecycleCommand>();
        auto [dtx, drx] = rt::unbounded_channel<core::DispatchCommand>();
        auto [etx, erx] = rt::unbounded_channel<core::LifecycleEvent>();
        ctx_->configure_lifecycle_events(std::move(etx));
        auto task = std::make_unique<core::ActorTask>(actor_id_, 0, std::move(lrx), std::move(drx),
                                                      std::move(erx), factory_, *ctx_, input_,
                                                      std::nullopt);
        lifecycle_tx_.emplace(std::move(ltx));
        dispatch_tx_.emplace(std::move(dtx));
        run_.emplace(core::ActorTask::spawn(rt_.executor(), std::move(task)));
        co_return co_await lifecycle(core::LifecycleCommand::Kind::Start);
    }

    Task<Status> stop(core::ShutdownKind reason) {
        Status stopped = co_await lifecycle(core::LifecycleCommand::Kind::Stop, reason);
        if (run_) {
            auto joined = co_await run_->join();
            run_.reset();
            EXPECT_TRUE(joined.is_ok());
        }
        co_return stopped;
    }

    // The engine's alarm: runs every scheduled event that is due.
    Task<Status> fire_alarm() {
        co_return co_await lifecycle(core::LifecycleCommand::Kind::FireAlarm);
    }

    // Calls `name` with `args` from connection "conn-test"; the decoded result. Arguments are
    // plain values (`call("add", 1, "x")`): a braced JSON initializer inside a co_await
    // expression does not compile on GCC 12 ("array used as initializer").
    template <typename... Args>
    Task<Result<Json>> call(std::string name, Args... args) {
        return call_from("conn-test", std::move(name), std::move(args)...);
    }
    template <typename... Args>
    Task<Result<Json>> call_from(std::string conn_id, std::string name, Args... args) {
        Bytes encoded = cbor_args(args...);
        auto raw = co_await call_raw(std::move(name), std::move(encoded), std::move(conn_id));
        if (!raw.ok())
            co_return std::move(raw).error();
        co_return from_cbor(*raw);
    }

    Task<Result<Bytes>> call_raw(std::string name, Bytes args, std::string conn_id = "conn-test") {
        auto [reply_tx, reply_rx] = rt::oneshot<Result<Bytes>>();
        // The connection's own handle when it joined the actor (as the registry passes it),
        // else a bare one standing for an HTTP caller.
        core::ConnHandle caller =
            ctx_->conn(conn_id).value_or(core::ConnHandle(conn_id, {}, {}, false));
        core::DispatchCommand command = core::dispatch::Action{
            std::move(name), std::move(args), std::move(caller), std::move(reply_tx)};
        EXPECT_TRUE(dispatch_tx_->send(std::move(command)));
        auto reply = co_await reply_rx.recv();
        if (!reply)
            co_return errors::actor_dropped_reply();
        co_return std::move(*reply);
    }

    // A raw HTTP request (`/request/...`, path already stripped), as the registry dispatches it.
    Task<Result<core::HttpResponse>> request(core::HttpRequest request) {
        auto [reply_tx, reply_rx] = rt::oneshot<Result<core::HttpResponse>>();
        EXPECT_TRUE(dispatch_tx_->send(
            core::DispatchCommand(core::dispatch::Http{std::move(request), std::move(reply_tx)})));
        auto reply = co_await reply_rx.recv();
        if (!reply)
            co_return errors::actor_dropped_reply();
        co_return std::move(*reply);
    }

    // Opens a raw WebSocket (`/websocket/...`) over `socket`; the accept/refuse answer.
    // (Not a coroutine with default arguments: GCC 12 mishandles those.)
    Task<Status> open_websocket(std::shared_ptr<core::RawWebSocket> socket) {
        core::HttpRequest upgrade;
        upgrade.path = "/";
        return open_websocket(std::move(socket), std::move(upgrade));
    }
    Task<Status> open_websocket(std::shared_ptr<core::RawWebSocket> socket,
                                core::HttpRequest upgrade) {
        auto [reply_tx, reply_rx] = rt::oneshot<Status>();
        const std::string conn_id = "ws-test";
        EXPECT_TRUE(dispatch_tx_->send(core::DispatchCommand(core::dispatch::OpenWebSocket{
            core::ConnHandle(conn_id, {}, {}, false), std::move(upgrade), std::move(reply_tx),
            std::move(socket)})));
        auto reply = co_await reply_rx.recv();
        co_return reply ? std::move(*reply) : Status(errors::actor_dropped_reply());
    }

    // POST /queue/{name} as the registry dispatches it (body: the message's CBOR).
    Task<Result<core::QueueSendResult>> queue_send(std::string name, Json body, bool wait,
                                                   std::optional<std::uint64_t> timeout_ms) {
        auto [reply_tx, reply_rx] = rt::oneshot<Result<core::QueueSendResult>>();
        core::DispatchCommand command = core::dispatch::QueueSend{
            std::move(name), to_cbor(body), core::ConnHandle("queue-test", {}, {}, false),
            core::HttpRequest{}, wait, timeout_ms, std::move(reply_tx)};
        EXPECT_TRUE(dispatch_tx_->send(std::move(command)));
        auto reply = co_await reply_rx.recv();
        if (!reply)
            co_return errors::actor_dropped_reply();
        co_return std::move(*reply);
    }

    // Opens a connection with `params` that records the events it receives, subscribed to
    // `event` unless empty.
    Task<Result<core::ConnHandle>> connect(Json params,
                                           std::shared_ptr<std::vector<ReceivedEvent>> inbox,
                                           std::string event = {}) {
        return connect_with_request(std::move(params), std::nullopt, std::move(inbox),
                                    std::move(event));
    }
    // connect, with the request the connection came with (a WebSocket upgrade, an HTTP action).
    Task<Result<core::ConnHandle>> connect_with_request(
        Json params, std::optional<core::HttpRequest> request,
        std::shared_ptr<std::vector<ReceivedEvent>> inbox, std::string event) {
        core::ConnectOptions options;
        options.request = std::move(request);
        options.params = params.is_null() ? Bytes{} : to_cbor(params);
        options.prepare = [inbox](const core::ConnHandle& conn) {
            conn.configure_event_sender(
                [inbox](std::string_view name, const Bytes& args,
                        core::ConnHandle::EventFrames*) -> Status {
                    auto decoded = from_cbor(args);
                    inbox->push_back({std::string(name), decoded.ok() ? *decoded : Json()});
                    return Status{};
                });
            return Status{};
        };
        auto conn = co_await ctx_->connect_conn(std::move(options));
        if (conn.ok() && !event.empty())
            conn->subscribe(std::move(event));
        co_return conn;
    }

    // The actor state as last written to KV, decoded from its CBOR.
    std::optional<Json> stored_state() const {
        auto bytes = kv_->peek(core::keys::kPersistData);
        if (!bytes)
            return std::nullopt;
        auto actor = core::decode_persisted_actor(*bytes);
        if (!actor.ok())
            return std::nullopt;
        auto value = from_cbor(actor->state);
        if (!value.ok())
            return std::nullopt;
        return *value;
    }
    std::optional<Bytes> stored_state_bytes() const {
        auto bytes = kv_->peek(core::keys::kPersistData);
        if (!bytes)
            return std::nullopt;
        auto actor = core::decode_persisted_actor(*bytes);
        if (!actor.ok())
            return std::nullopt;
        return actor->state;
    }

  private:
    Task<Status> lifecycle(core::LifecycleCommand::Kind kind,
                           core::ShutdownKind reason = core::ShutdownKind::Sleep) {
        auto [reply_tx, reply_rx] = rt::oneshot<Status>();
        core::LifecycleCommand command =
            kind == core::LifecycleCommand::Kind::Stop
                ? core::LifecycleCommand::stop(reason, std::move(reply_tx))
            : kind == core::LifecycleCommand::Kind::FireAlarm
                ? core::LifecycleCommand::fire_alarm(std::move(reply_tx))
                : core::LifecycleCommand::start(std::move(reply_tx));
        EXPECT_TRUE(lifecycle_tx_->send(std::move(command)));
        auto reply = co_await reply_rx.recv();
        co_return reply ? std::move(*reply) : Status(errors::actor_dropped_reply());
    }

    rt::TestRuntime rt_;
    std::shared_ptr<core::InMemoryKv> kv_ = std::make_shared<core::InMemoryKv>();
    std::shared_ptr<core::ActorFactory> factory_;
    std::string actor_id_;
    std::optional<Bytes> input_;
    std::optional<core::ActorContext> ctx_;
    std::optional<rt::Sender<core::LifecycleCommand>> lifecycle_tx_;
    std::optional<rt::Sender<core::DispatchCommand>> dispatch_tx_;
    std::optional<rt::JoinHandle<Status>> run_;
};

}  // namespace rivetkit::api_test

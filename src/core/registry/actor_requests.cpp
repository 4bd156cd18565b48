#include "core/registry/actor_requests.hpp"

#include "base/log.hpp"
#include "core/actor/metrics.hpp"
#include "runtime/channel.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::core::registry {

boost::asio::awaitable<Result<WorkflowAnswer>> ask_workflow(
    std::shared_ptr<CoreRegistry::Instance> instance, bool replay,
    std::optional<std::string> entry_id) {
    WorkRegion awake = instance->ctx.internal_keep_awake_region();
    auto [tx, rx] = rt::oneshot<Result<std::optional<Bytes>>>();
    const bool sent =
        replay
            ? instance->dispatch.send(dispatch::WorkflowReplay{std::move(entry_id), std::move(tx)})
            : instance->dispatch.send(dispatch::WorkflowHistory{std::move(tx)});
    if (!sent)
        co_return errors::actor_not_ready();
    auto got = co_await rx.recv();
    if (!got || (!got->ok() && got->error().is("actor", "dropped_reply")))
        co_return WorkflowAnswer{false, std::nullopt};
    if (!got->ok())
        co_return std::move(*got).error();
    co_return WorkflowAnswer{true, std::move(got->value())};
}

boost::asio::awaitable<Result<Bytes>> run_transient_action(
    std::shared_ptr<CoreRegistry::Instance> instance, rt::Clock& clock, ConnectOptions options,
    std::string name, Bytes args) {
    const ActorContext& ctx = instance->ctx;
    auto connected = co_await ctx.connect_conn(std::move(options));
    if (!connected.ok())
        co_return std::move(connected).error();
    ConnHandle conn = std::move(connected).value();
    std::optional<UserTaskTimer> timer(std::in_place, metrics_ptr(ctx), UserTaskKind::Action);
    auto [tx, rx] = rt::oneshot<Result<Bytes>>();
    Result<Bytes> output = Bytes{};  // an error is built only when there is one
    if (instance->dispatch.send(
            dispatch::Action{std::move(name), std::move(args), conn, std::move(tx)})) {
        auto timed =
            co_await rt::recv_timeout(clock, instance->factory->config().action_timeout, rx);
        if (!timed)
            output = errors::actor_action_timed_out();
        else if (!*timed)
            output = errors::actor_dropped_reply();
        else
            output = std::move(**timed);
    } else {
        output = errors::actor_not_ready();
    }
    timer.reset();
    Status disconnected = co_await conn.disconnect(std::nullopt);
    if (!disconnected.ok()) {
        log::warn("failed to disconnect transient action connection",
                  {{"actor_id", instance->actor_id},
                   {"conn_id", conn.id()},
                   {"error", disconnected.error().to_string()}});
    }
    co_return output;
}

}  // namespace rivetkit::core::registry

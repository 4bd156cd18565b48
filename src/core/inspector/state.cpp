#include "core/inspector/state.hpp"

namespace rivetkit::core::inspector {

boost::asio::awaitable<Bytes> current_state(ActorContext ctx) {
    Bytes state = ctx.state();
    auto [reply, rx] = Reply<std::vector<StateDelta>>::make();
    Status sent = ctx.try_send_actor_event(
        event::SerializeState{SerializeStateReason::Inspector, std::move(reply)},
        "inspector_state");
    if (!sent.ok())
        co_return state;
    auto got = co_await rx.recv();
    if (got && got->ok()) {
        for (auto& delta : got->value()) {
            if (delta.kind == StateDelta::Kind::ActorState)
                state = std::move(delta.bytes);
        }
    }
    co_return state;
}

}  // namespace rivetkit::core::inspector

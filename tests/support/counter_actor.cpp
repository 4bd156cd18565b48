#include "counter_actor.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <nlohmann/json.hpp>

#include <variant>

namespace rivetkit::testing {

namespace {

using json = nlohmann::json;
using core::ActorEvent;
namespace event = core::event;

Bytes cbor(const json& v) {
    Bytes out;
    json::to_cbor(v, out);
    return out;
}

std::optional<json> parse(const Bytes& b) {
    if (b.empty())
        return std::nullopt;
    try {
        return json::from_cbor(b);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

struct Counter {
    core::ActorContext ctx;
    std::int64_t count = 0;
    std::optional<Bytes> input;
    bool dirty = false;
    std::string last_probe = "none";  // the x-probe header the last connection's preflight saw

    Bytes state() const { return cbor(json{{"count", count}}); }

    Result<Bytes> action(const std::string& name, const Bytes& args_cbor) {
        json args = parse(args_cbor).value_or(json::array());
        if (!args.is_array())
            args = json::array();
        if (name == "increment") {
            if (args.empty() || !args[0].is_number_integer())
                return errors::actor_invalid_request("increment(amount) needs an integer");
            count += args[0].get<std::int64_t>();
            dirty = true;
            ctx.request_save({});
            ctx.broadcast("newCount", cbor(json::array({count})));
            return cbor(json(count));
        }
        if (name == "getCount")
            return cbor(json(count));
        if (name == "lastProbe")
            return cbor(json(last_probe));
        if (name == "getInput")
            return input ? *input : cbor(json(nullptr));
        if (name == "fail")
            return errors::user("deliberate_failure", "counter failed on purpose",
                                R"({"reason":"test"})");
        if (name == "goToSleep") {
            Status st = ctx.sleep();
            if (!st.ok())
                return st.error();
            return cbor(json(nullptr));
        }
        if (name == "broadcastMany") {
            const std::int64_t n = !args.empty() && args[0].is_number_integer()
                                       ? args[0].get<std::int64_t>()
                                       : 0;
            for (std::int64_t i = 0; i < n; ++i)
                ctx.broadcast("tick", cbor(json::array({i})));
            return cbor(json(n));
        }
        return errors::actor_action_not_found(name);
    }
};

// A named coroutine, not an immediately invoked lambda: GCC 12 mishandles the parameters of
// those (the socket was destroyed under the running coroutine).
boost::asio::awaitable<void> echo_raw(std::shared_ptr<core::RawWebSocket> ws) {
    while (auto m = co_await ws->recv()) {
        std::string text = "echo:" + std::string(m->data.begin(), m->data.end());
        ws->send(Bytes(text.begin(), text.end()), m->binary);
    }
}

boost::asio::awaitable<Status> run_counter(core::ActorStart start) {
    Counter counter{start.ctx, 0, std::nullopt, false};
    counter.input = start.input;
    if (start.snapshot) {
        if (auto s = parse(*start.snapshot); s && s->contains("count"))
            counter.count = (*s)["count"].get<std::int64_t>();
    } else {
        if (start.input) {
            if (auto in = parse(*start.input); in && in->is_object() && in->contains("start") &&
                                               (*in)["start"].is_number_integer())
                counter.count = (*in)["start"].get<std::int64_t>();
        }
        counter.ctx.set_state_initial(counter.state());
    }
    if (start.startup_ready)
        start.startup_ready->send(Status{});

    while (auto ev = co_await start.events.recv()) {
        std::visit(
            [&](auto& e) {
                using E = std::decay_t<decltype(e)>;
                if constexpr (std::is_same_v<E, event::Action>) {
                    e.reply.send(counter.action(e.name, e.args));
                } else if constexpr (std::is_same_v<E, event::SerializeState>) {
                    std::vector<core::StateDelta> deltas;
                    // An inspector read leaves the dirty flag for the next save.
                    if (counter.dirty || e.reason == core::SerializeStateReason::Inspector)
                        deltas.push_back(core::StateDelta::actor_state(counter.state()));
                    if (e.reason == core::SerializeStateReason::Save)
                        counter.dirty = false;
                    e.reply.send(std::move(deltas));
                } else if constexpr (std::is_same_v<E, event::HttpRequestEv>) {
                    core::HttpResponse r;
                    r.status = 200;
                    r.headers["content-type"] = "text/plain";
                    std::string text = e.request.method + " " + e.request.path;
                    r.body.assign(text.begin(), text.end());
                    e.reply.send(std::move(r));
                } else if constexpr (std::is_same_v<E, event::QueueSend>) {
                    e.reply.send(core::QueueSendResult{});
                } else if constexpr (std::is_same_v<E, event::WorkflowHistoryRequested> ||
                                     std::is_same_v<E, event::WorkflowReplayRequested>) {
                    e.reply.send(std::optional<Bytes>{});
                } else if constexpr (std::is_same_v<E, event::WebSocketOpen>) {
                    // Raw /websocket: echo every frame as "echo:<text>" until the peer closes.
                    if (e.socket) {
                        boost::asio::co_spawn(counter.ctx.executor(), echo_raw(e.socket),
                                              boost::asio::detached);
                    }
                    e.reply.send(Status{});
                } else if constexpr (std::is_same_v<E, event::ConnectionPreflight>) {
                    counter.last_probe = "-";
                    if (e.request) {
                        auto it = e.request->headers.find("x-probe");
                        if (it != e.request->headers.end())
                            counter.last_probe = it->second;
                    }
                    e.reply.send(Status{});
                } else if constexpr (std::is_same_v<E, event::ConnectionClosed>) {
                    // nothing to clean up
                } else {
                    e.reply.send(Status{});
                }
            },
            *ev);
    }
    co_return Status{};
}

}  // namespace

std::shared_ptr<core::ActorFactory> counter_factory(core::ActorConfig config) {
    return std::make_shared<core::ActorFactory>(std::move(config), run_counter);
}

}  // namespace rivetkit::testing

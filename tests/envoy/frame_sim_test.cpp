// Deterministic simulation of the envoy client's protocol on virtual time (issue 18): seeded runs
// against an in-process engine model that drops the connection (everything in flight is lost),
// delays, reorders and duplicates its answers, replays commands (unacknowledged ones after every
// reconnect, acknowledged ones now and then), fails KV requests and goes silent past the liveness
// timeout. A workload of KV writes and reads per actor runs through the envoy's handle meanwhile,
// and tunnelled HTTP requests go to the actors. Each run is held to the protocol's promises:
//
//  - a start or stop command is handled once per (actor, generation), however often it arrives;
//  - the events of a generation reach the engine without a gap (index 0, 1, 2, ... after the
//    engine's dedup), a replayed index carries the same event, Running follows each start and
//    Stopped each stop;
//  - a KV write answered ok is in the engine's store, a read returns the store's value, every KV
//    call ends (answer, error or timeout);
//  - a tunnelled request gets at most one response, and a 200 carries its own body back.
//
// The engine applies KV requests in the order they arrive on a connection, as the real one does;
// only its answers are delayed, reordered, duplicated or lost with the connection.
//
// RIVETKIT_ENVOY_SIM_SEEDS=N runs N seeds (default 1,000: about 12 s),
// RIVETKIT_ENVOY_SIM_FIRST_SEED the first; a failure prints its seed, what broke and a trace, and
// replays alone (the envoy's randomness is seeded too: EnvoyConfig::rng_seed).
// RIVETKIT_ENVOY_SIM_LOGS=1 keeps the envoy's log lines.

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "envoy/envoy.hpp"
#include "fake_engine.hpp"
#include "recording_callbacks.hpp"
#include "runtime/spawn.hpp"
#include "runtime/test_runtime.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;
using rivetkit::Bytes;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

namespace {

constexpr int kActors = 3;

std::string actor_id(int i) {
    return "simactor" + std::to_string(i) + "000000000000000000000";
}

using Key = std::pair<std::string, std::uint32_t>;  // actor, generation

struct PendingAnswer {
    rt::Clock::time_point due;
    proto::ToEnvoy message;
    std::uint64_t connection = 0;  // answers die with their connection
};

class Sim {
  public:
    Sim(std::uint64_t seed, rt::TestRuntime& runtime)
        : seed_(seed), rng_(seed), rt_(runtime) {
        config_.endpoint = "http://127.0.0.1:7420";
        config_.pool_name = "sim-pool";
        config_.envoy_key = "sim-envoy";
        config_.prepopulate_actor_names = {{"counter", "{}"}};
        config_.kv_request_timeout = 5s;
        config_.rng_seed = seed;
    }

    asio::awaitable<void> run();
    const std::vector<std::string>& violations() const { return violations_; }
    const std::vector<std::string>& trace() const { return trace_; }

  private:
    // MARK: randomness
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
    int between(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    rt::Clock& clock() { return rt_.clock(); }
    void violation(std::string what) {
        violations_.push_back(std::move(what));
    }
    void note(std::string what) {  // the last 400 lines
        if (trace_.size() == 400)
            trace_.erase(trace_.begin());
        trace_.push_back(std::move(what));
    }

    // MARK: engine side
    asio::awaitable<void> connect_if_needed(std::chrono::milliseconds wait);
    void send(proto::ToEnvoy message, std::chrono::milliseconds delay = 0ms);
    void drop_connection(const char* how);
    void on_frame(proto::ToRivet message);
    void handle_kv(proto::ToRivetKvRequest request);
    void flush_due_answers();
    void command(int actor, proto::Command cmd);
    asio::awaitable<void> drain(std::chrono::milliseconds quiet);

    // MARK: workload
    asio::awaitable<void> kv_worker(EnvoyHandle handle, int actor);

    std::uint64_t seed_;
    std::mt19937_64 rng_;
    rt::TestRuntime& rt_;
    EnvoyConfig config_;
    std::shared_ptr<FakeEngine> engine_ = std::make_shared<FakeEngine>();
    std::shared_ptr<RecordingCallbacks> cb_ = std::make_shared<RecordingCallbacks>();
    std::shared_ptr<FakeConnection> conn_;
    std::uint64_t connection_ = 0;
    bool silent_ = false;  // the engine stopped sending (the envoy's liveness timeout drops it)
    std::vector<PendingAnswer> answers_;
    std::vector<std::string> violations_;
    std::vector<std::string> trace_;

    struct ActorModel {
        std::uint32_t generation = 0;
        bool running = false;  // a start was sent and no stop after it
        std::int64_t next_index = 0;
        std::vector<proto::CommandWrapper> unacked;
        std::vector<proto::CommandWrapper> sent;  // every command, for duplicates
    };
    std::map<std::string, ActorModel> actors_;
    std::map<Key, std::map<std::int64_t, proto::Event>> events_;
    std::map<Key, int> starts_sent_;
    std::map<Key, int> stops_sent_;
    std::map<std::string, std::map<Bytes, Bytes>> kv_;
    std::map<std::string, int> outstanding_;  // tunnelled request → responses seen
    std::map<std::string, std::string> request_actor_;
    bool workload_done_ = false;
    int workers_running_ = 0;
    std::uint64_t kv_ok_ = 0;
};

asio::awaitable<void> Sim::connect_if_needed(std::chrono::milliseconds wait) {
    if (conn_ && (conn_->aborted || conn_->closed_by_envoy)) {
        note("the envoy left connection #" + std::to_string(connection_));
        conn_.reset();
    }
    if (conn_)
        co_return;
    auto accepting = engine_->accept(clock(), wait);
    std::shared_ptr<FakeConnection> conn = co_await std::move(accepting);
    if (!conn)
        co_return;
    conn_ = std::move(conn);
    ++connection_;
    silent_ = false;
    note("connected #" + std::to_string(connection_));
    conn_->push(init_message(3'600'000));
    // The engine sends every command the envoy has not acknowledged again.
    for (auto& [id, model] : actors_) {
        if (model.unacked.empty())
            continue;
        proto::ToEnvoyCommands batch;
        batch.value = model.unacked;
        conn_->push(proto::ToEnvoy{std::move(batch)});
    }
}

void Sim::send(proto::ToEnvoy message, std::chrono::milliseconds delay) {
    if (!conn_)
        return;
    if (delay == 0ms && answers_.empty()) {
        conn_->push(message);
        return;
    }
    answers_.push_back({clock().now() + delay, std::move(message), connection_});
}

void Sim::flush_due_answers() {
    if (!conn_ || silent_)
        return;
    // Due answers go out in a random order (the engine answers requests concurrently).
    std::vector<PendingAnswer> due;
    std::vector<PendingAnswer> later;
    for (auto& a : answers_) {
        if (a.connection != connection_)
            continue;  // lost with its connection
        (a.due <= clock().now() ? due : later).push_back(std::move(a));
    }
    answers_ = std::move(later);
    std::shuffle(due.begin(), due.end(), rng_);
    for (auto& a : due) {
        conn_->push(a.message);
        if (chance(0.05))
            conn_->push(a.message);  // a duplicate answer
    }
}

void Sim::drop_connection(const char* how) {
    if (!conn_)
        return;
    note(std::string("drop: ") + how);
    if (std::string_view(how) == "close")
        conn_->close_from_engine(1011, "ws.going_away#sim");
    else
        conn_->drop();
    conn_.reset();
}

void Sim::command(int actor, proto::Command cmd) {
    const std::string id = actor_id(actor);
    ActorModel& model = actors_[id];
    proto::CommandWrapper wrapper{proto::ActorCheckpoint{id, model.generation, model.next_index++},
                                  std::move(cmd)};
    model.unacked.push_back(wrapper);
    model.sent.push_back(wrapper);
    proto::ToEnvoyCommands batch;
    batch.value.push_back(std::move(wrapper));
    if (conn_ && !silent_)
        conn_->push(proto::ToEnvoy{std::move(batch)});
}

void Sim::handle_kv(proto::ToRivetKvRequest request) {
    // Applied now, in arrival order; the answer may be delayed, reordered or lost.
    auto& store = kv_[request.actor_id];
    proto::KvResponseData response;
    if (chance(0.04)) {
        response.value = proto::KvErrorResponse{"injected by the simulation"};
    } else {
        response = apply_kv(store, request.data);
    }
    send(proto::ToEnvoy{proto::ToEnvoyKvResponse{request.request_id, std::move(response)}},
         std::chrono::milliseconds(chance(0.3) ? between(1, 400) : 0));
}

void Sim::on_frame(proto::ToRivet message) {
    if (auto* events = message.get_if<proto::ToRivetEvents>()) {
        proto::ToEnvoyAckEvents ack;
        for (auto& e : events->value) {
            Key key{e.checkpoint.actor_id, e.checkpoint.generation};
            auto& seen = events_[key];
            auto [it, fresh] = seen.emplace(e.checkpoint.index, e.inner);
            if (!fresh && !(it->second == e.inner)) {
                violation("event " + key.first + "#" + std::to_string(key.second) + " index " +
                          std::to_string(e.checkpoint.index) + " replayed with other content");
            }
            ack.last_event_checkpoints.push_back(e.checkpoint);
        }
        if (!chance(0.2))  // now and then the ack is late: the envoy replays after a reconnect
            send(proto::ToEnvoy{std::move(ack)}, std::chrono::milliseconds(between(0, 50)));
    } else if (auto* ack = message.get_if<proto::ToRivetAckCommands>()) {
        for (const auto& cp : ack->last_command_checkpoints) {
            auto& model = actors_[cp.actor_id];
            std::erase_if(model.unacked, [&](const proto::CommandWrapper& w) {
                return w.checkpoint.generation < cp.generation ||
                       (w.checkpoint.generation == cp.generation &&
                        w.checkpoint.index <= cp.index);
            });
        }
    } else if (auto* kv = message.get_if<proto::ToRivetKvRequest>()) {
        handle_kv(std::move(*kv));
    } else if (auto* tunnel = message.get_if<proto::ToRivetTunnelMessage>()) {
        if (auto* start = tunnel->message_kind.get_if<proto::ToRivetResponseStart>()) {
            std::string rid(tunnel->message_id.request_id.begin(),
                            tunnel->message_id.request_id.end());
            auto it = outstanding_.find(rid);
            if (it == outstanding_.end()) {
                violation("a response for a request never sent");
                return;
            }
            if (++it->second > 1)
                violation("request " + rid + " answered twice");
            if (start->status == 200) {
                const Bytes body = start->body.value_or(Bytes{});
                if (std::string(body.begin(), body.end()) != "body-" + rid)
                    violation("request " + rid + " answered with another body");
            }
        }
    }
}

asio::awaitable<void> Sim::kv_worker(EnvoyHandle handle, int actor) {
    const std::string id = actor_id(actor);
    ++workers_running_;
    std::uint64_t version = 0;
    while (!workload_done_) {
        const Bytes key{static_cast<std::uint8_t>('a' + between(0, 3))};
        Bytes value = rivetkit::to_bytes("v" + std::to_string(++version));
        std::vector<KvEntry> entries{KvEntry{key, value}};
        auto putting = handle.kv_put(id, std::move(entries));
        rivetkit::Status put = co_await std::move(putting);
        if (put.ok()) {
            ++kv_ok_;
            auto& store = kv_[id];
            auto it = store.find(key);
            if (it == store.end() || it->second != value)
                violation("kv put on " + id + " answered ok but not in the store");
        }
        std::vector<Bytes> keys{key};
        auto getting = handle.kv_get(id, std::move(keys));
        auto got = co_await std::move(getting);
        if (got.ok()) {
            auto& store = kv_[id];
            auto it = store.find(key);
            const std::optional<Bytes> want =
                it == store.end() ? std::nullopt : std::optional<Bytes>(it->second);
            if (got->size() != 1 || (*got)[0] != want)
                violation("kv get on " + id + " returned something else than the store holds");
        }
        auto pausing = clock().sleep_for(std::chrono::milliseconds(between(1, 200)));
        co_await std::move(pausing);
    }
    --workers_running_;
}

asio::awaitable<void> Sim::drain(std::chrono::milliseconds quiet) {
    auto until = clock().now() + quiet;
    while (clock().now() < until) {
        auto connecting = connect_if_needed(1000ms);
        co_await std::move(connecting);
        flush_due_answers();
        if (conn_) {
            auto reading = conn_->next(clock(), 50ms);
            std::optional<proto::ToRivet> m = co_await std::move(reading);
            if (m) {
                on_frame(std::move(*m));
                until = std::max(until, clock().now() + 2s);
            }
        }
    }
}

asio::awaitable<void> Sim::run() {
    auto ex = co_await asio::this_coro::executor;
    EnvoyHandle handle = start_envoy(ex, clock(), config_, cb_, engine_);
    for (int a = 0; a < kActors; ++a)
        rt::spawn(ex, kv_worker(handle, a));

    std::uint64_t requests = 0;
    const int steps = between(150, 400);
    for (int step = 0; step < steps; ++step) {
        auto connecting = connect_if_needed(std::chrono::milliseconds(between(10, 300)));
        co_await std::move(connecting);
        flush_due_answers();
        // Read what the envoy sent for a while.
        if (conn_) {
            const int reads = between(1, 8);
            for (int r = 0; r < reads && conn_; ++r) {
                auto reading = conn_->next(clock(), std::chrono::milliseconds(between(1, 40)));
                std::optional<proto::ToRivet> m = co_await std::move(reading);
                if (!m)
                    break;
                on_frame(std::move(*m));
            }
        }
        const int draw = between(0, 99);
        const int a = between(0, kActors - 1);
        const std::string id = actor_id(a);
        ActorModel& model = actors_[id];
        if (draw < 14) {
            if (!model.running) {
                model.generation += 1;
                model.next_index = 0;
                model.running = true;
                ++starts_sent_[{id, model.generation}];
                proto::CommandStartActor start;
                start.config.name = "counter";
                start.config.key = "k" + std::to_string(a);
                start.config.create_ts = 1'700'000'000'000;
                command(a, proto::Command{std::move(start)});
                note("start " + id + "#" + std::to_string(model.generation));
            } else {
                model.running = false;
                ++stops_sent_[{id, model.generation}];
                const auto reason = chance(0.5) ? proto::StopActorReason::SleepIntent
                                                : proto::StopActorReason::Destroy;
                command(a, proto::Command{proto::CommandStopActor{reason}});
                note("stop " + id + "#" + std::to_string(model.generation));
            }
        } else if (draw < 34) {
            if (conn_ && !silent_) {
                const std::string rid = "r" + std::to_string(100 + requests++ % 900);
                if (outstanding_.contains(rid))
                    continue;
                outstanding_[rid] = 0;
                request_actor_[rid] = id;
                proto::ToEnvoyRequestStart start;
                start.actor_id = id;
                start.method = "POST";
                start.path = "/echo";
                start.body = rivetkit::to_bytes("body-" + rid);
                proto::RequestId request_id{};
                std::copy_n(rid.begin(), std::min<std::size_t>(4, rid.size()), request_id.begin());
                conn_->push(proto::ToEnvoy{proto::ToEnvoyTunnelMessage{
                    proto::MessageId{{9, 9, 9, 9}, request_id, 0},
                    proto::ToEnvoyTunnelMessageKind{std::move(start)}}});
            }
        } else if (draw < 38) {
            // A command delivered again, acknowledged or not.
            if (!model.sent.empty() && conn_ && !silent_) {
                proto::ToEnvoyCommands batch;
                batch.value.push_back(model.sent[between(0, int(model.sent.size()) - 1)]);
                conn_->push(proto::ToEnvoy{std::move(batch)});
            }
        } else if (draw < 42) {
            drop_connection(chance(0.5) ? "abort" : "close");
        } else if (draw < 43) {
            // Silence past the liveness timeout: the envoy gives the socket up and reconnects.
            if (conn_ && !silent_) {
                note("silent");
                silent_ = true;
                auto waiting = clock().sleep_for(config_.liveness_timeout + 2s);
                co_await std::move(waiting);
                conn_.reset();
            }
        } else if (draw < 60) {
            if (conn_ && !silent_)
                conn_->push(proto::ToEnvoy{proto::ToEnvoyPing{0}});
        }
        auto pausing = clock().sleep_for(std::chrono::milliseconds(between(0, 60)));
        co_await std::move(pausing);
    }

    // Heal: no more faults, a live connection, everything answered and acknowledged.
    workload_done_ = true;
    for (int i = 0; i < 200 && workers_running_ > 0; ++i) {
        auto draining = drain(100ms);
        co_await std::move(draining);
    }
    if (workers_running_ > 0)
        violation("a KV call never ended (" + std::to_string(workers_running_) + " workers)");
    // The envoy may be in a long backoff (up to 30 s and jitter while it holds no actor).
    for (int i = 0; i < 3 && !conn_; ++i) {
        auto connecting = connect_if_needed(60s);
        co_await std::move(connecting);
    }
    if (!conn_)
        violation("the envoy did not reconnect within three minutes of the faults ending");
    auto settling = drain(5s);
    co_await std::move(settling);

    // MARK: checks
    // Each command sent is handled once per (actor, generation).
    auto handled_once = [this](const char* what, const std::map<Key, int>& sent,
                               const auto& handled_list) {
        for (const auto& [key, n] : sent) {
            std::size_t handled = 0;
            for (const auto& h : handled_list)
                handled += h.actor_id == key.first && h.generation == key.second;
            if (handled != 1)
                violation(std::string(what) + " of " + key.first + "#" +
                          std::to_string(key.second) + " handled " + std::to_string(handled) +
                          " times");
        }
    };
    handled_once("start", starts_sent_, cb_->starts);
    handled_once("stop", stops_sent_, cb_->stops);
    for (const auto& [key, n] : starts_sent_) {
        const auto& seen = events_[key];
        std::int64_t expect = 0;
        for (const auto& [index, event] : seen) {
            if (index != expect) {
                violation("events of " + key.first + "#" + std::to_string(key.second) +
                          " skip from " + std::to_string(expect) + " to " + std::to_string(index));
                break;
            }
            ++expect;
        }
        bool running = false;
        bool stopped = false;
        for (const auto& [index, event] : seen) {
            if (auto* u = event.get_if<proto::EventActorStateUpdate>()) {
                running = running || u->state.is<proto::ActorStateRunning>();
                stopped = stopped || u->state.is<proto::ActorStateStopped>();
            }
        }
        if (!running)
            violation("no Running event for " + key.first + "#" + std::to_string(key.second));
        if (stops_sent_.contains(key) && !stopped)
            violation("no Stopped event for " + key.first + "#" + std::to_string(key.second));
    }
    handle.shutdown(true);
    auto stopping = handle.wait_stopped();
    co_await std::move(stopping);
    note("kv writes answered ok: " + std::to_string(kv_ok_));
    (void)seed_;
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(EnvoySimulation, SeededFrameFaultsKeepTheProtocolsPromises) {
    const std::uint64_t seeds = env_or("RIVETKIT_ENVOY_SIM_SEEDS", 1000);
    const std::uint64_t first = env_or("RIVETKIT_ENVOY_SIM_FIRST_SEED", 1);
    if (std::getenv("RIVETKIT_ENVOY_SIM_LOGS") == nullptr)
        rivetkit::log::set_level(rivetkit::log::Level::off);
    std::uint64_t failed = 0;
    for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
        rt::TestRuntime runtime;
        Sim sim(seed, runtime);
        runtime.block_on(sim.run());
        if (!sim.violations().empty()) {
            ++failed;
            std::ostringstream out;
            for (const auto& v : sim.violations())
                out << "  " << v << "\n";
            out << "trace:\n";
            for (const auto& t : sim.trace())
                out << "  " << t << "\n";
            ADD_FAILURE() << "seed " << seed << " (replay: RIVETKIT_ENVOY_SIM_SEEDS=1 "
                          << "RIVETKIT_ENVOY_SIM_FIRST_SEED=" << seed << ")\n"
                          << out.str();
            if (failed >= 3)
                break;
        }
    }
    rivetkit::log::set_level(rivetkit::log::Level::info);
    std::printf("envoy simulation: %llu seeds from %llu, %llu with a violation\n",
                static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(failed));
}

}  // namespace

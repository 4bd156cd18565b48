// rivetkit-chaos-host: the actors the chaos runner (run.mjs here, README.md) drives while it kills,
// pauses and restarts hosts and the engine. Each actor keeps, per client, what it received as a
// sequence tracker (the last sequence number applied, the gaps it saw, the repeats), so that the
// checker can compare what the clients were told with what the actors kept:
//
//   chaosCounter   add(client, seq)            reply after durable; retried with the same seq
//                  addFast(client, seq)        reply at once, saved within the save interval
//   chaosChat      say(client, seq, attempt)   over a hibernatable connection, reply after durable;
//                                              a first attempt that arrives already applied is a
//                                              duplicate delivery
//   chaosQueue     queue "jobs" {client, seq}  received by `run` (completable), saved, completed
//   chaosSchedule  plan(client, seq, ms)       reply after durable; schedules fire(client, seq)
//
// Every reply carries the actor's generation (bumped and saved durably at each wake, before any
// action is served) and a random nonce of the running instance: two instances answering with one
// generation, or an older generation answering after a newer one did, is an actor running twice.
// Every actor answers read() with its whole state.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rivetkit/rivetkit.hpp"
#include "rivetkit/registry.hpp"

using namespace rivetkit;

namespace {

constexpr std::size_t kMaxRecorded = 200;

struct Track {
    std::int64_t last = 0;
    std::vector<std::array<std::int64_t, 2>> gaps;  // [from, to] never received before `last`
    std::vector<std::int64_t> dups;                 // first attempts received already applied
    std::int64_t repeats = 0;                       // any sequence number received again
    std::vector<std::int64_t> above;                // unordered streams: received past `last`
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Track, last, gaps, dups, repeats, above)

struct ChaosState {
    std::int64_t gen = 0;
    std::map<std::string, Track> tracks;  // "<stream>:<client>"
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ChaosState, gen, tracks)

struct ChaosVars {
    std::uint64_t nonce = 0;
};

using Ctx = ActorContext<ChaosState, ChaosVars>;
using Act = ActionContext<ChaosState, ChaosVars>;

// Notes `seq` on a tracker; true when it was new (applied).
bool note(Track& t, std::int64_t seq, bool repeat_is_duplicate) {
    if (seq <= t.last) {
        t.repeats += 1;
        if (repeat_is_duplicate && t.dups.size() < kMaxRecorded)
            t.dups.push_back(seq);
        return false;
    }
    if (seq > t.last + 1 && t.gaps.size() < kMaxRecorded)
        t.gaps.push_back({t.last + 1, seq - 1});
    t.last = seq;
    return true;
}

// For a stream without an order (scheduled fires: an event whose action had no outcome before a
// crash fires again in the next generation, after later ones may have): `last` is the highest
// seq below which everything arrived, `above` what arrived past it. Every repeat is a duplicate.
void note_unordered(Track& t, std::int64_t seq) {
    if (seq <= t.last || std::binary_search(t.above.begin(), t.above.end(), seq)) {
        t.repeats += 1;
        if (t.dups.size() < kMaxRecorded)
            t.dups.push_back(seq);
        return;
    }
    t.above.insert(std::upper_bound(t.above.begin(), t.above.end(), seq), seq);
    while (!t.above.empty() && t.above.front() == t.last + 1) {
        t.last += 1;
        t.above.erase(t.above.begin());
    }
}

Json reply(const Act& c, bool applied, std::int64_t last) {
    return Json{{"gen", std::as_const(c).state().gen},
                {"nonce", std::to_string(c.vars().nonce)},
                {"applied", applied},
                {"last", last}};
}

// CHAOS_TRACE=1: one stderr line per plan and fire, to follow an event across generations.
void trace(const char* what, const Act& c, const std::string& client, std::int64_t seq,
           bool repeat) {
    static const bool on = std::getenv("CHAOS_TRACE") != nullptr;
    if (!on)
        return;
    std::fprintf(stderr, "chaos %s actor=%s client=%s seq=%lld gen=%lld nonce=%llu repeat=%d\n",
                 what, c.actor_id().c_str(), client.c_str(), static_cast<long long>(seq),
                 static_cast<long long>(std::as_const(c).state().gen),
                 static_cast<unsigned long long>(c.vars().nonce), repeat ? 1 : 0);
}

// The parts every chaos actor shares: generation and nonce, read().
Actor<ChaosState, ChaosVars> chaos_base() {
    ActorOptions options;
    options.sleep_timeout = std::chrono::seconds(5);
    return Actor<ChaosState, ChaosVars>()
        .create_vars([]() {
            std::random_device rd;
            return ChaosVars{(std::uint64_t{rd()} << 32) | rd()};
        })
        .on_wake([](Ctx& c) -> boost::asio::awaitable<void> {
            c.state().gen += 1;
            co_await c.save_state();
        })
        .action("read",
                [](Act& c) {
                    Json out = std::as_const(c).state();
                    out["nonce"] = std::to_string(c.vars().nonce);
                    return out;
                })
        .action("nap", [](Act& c) { c.sleep(); })
        .options(options);
}

ActionOptions durable() {
    ActionOptions o;
    o.reply_after_durable = true;
    return o;
}

Actor<ChaosState, ChaosVars> counter() {
    return chaos_base()
        .action(
            "add",
            [](Act& c, std::string client, std::int64_t seq) {
                Track& t = c.state().tracks["add:" + client];
                const bool applied = note(t, seq, false);
                return reply(c, applied, t.last);
            },
            durable())
        .action("addFast", [](Act& c, std::string client, std::int64_t seq) {
            Track& t = c.state().tracks["fast:" + client];
            const bool applied = note(t, seq, false);
            return reply(c, applied, t.last);
        });
}

Actor<ChaosState, ChaosVars> chat() {
    return chaos_base().action(
        "say",
        [](Act& c, std::string client, std::int64_t seq, std::int64_t attempt) {
            Track& t = c.state().tracks["say:" + client];
            const bool applied = note(t, seq, attempt == 1);
            c.broadcast("said", client, seq);
            return reply(c, applied, t.last);
        },
        durable());
}

Actor<ChaosState, ChaosVars> queue() {
    return chaos_base().queue("jobs").run([](Ctx& c) -> boost::asio::awaitable<void> {
        Queue q = c.queue();
        for (;;) {
            QueueReceiveOptions opts;
            opts.names = {"jobs"};
            opts.completable = true;
            std::optional<QueueMessage> m = co_await q.next(std::move(opts));
            if (!m)
                break;
            const Json body = m->body;
            if (body.is_object() && body.contains("client") && body.contains("seq") &&
                body["client"].is_string() && body["seq"].is_number_integer()) {
                Track& t = c.state().tracks["queue:" + body["client"].get<std::string>()];
                note(t, body["seq"].get<std::int64_t>(), false);
            }
            // Saved before completed: a crash between the two redelivers, never drops.
            co_await c.save_state();
            Json response = std::as_const(c).state().gen;
            co_await m->complete(std::move(response));
        }
    });
}

Actor<ChaosState, ChaosVars> schedule() {
    return chaos_base()
        .action(
            "plan",
            [](Act& c, std::string client, std::int64_t seq, std::int64_t ms) {
                Track& t = c.state().tracks["plan:" + client];
                const bool applied = note(t, seq, false);
                if (applied)
                    c.schedule_after(std::chrono::milliseconds(ms), "fire", client, seq);
                trace("plan", c, client, seq, !applied);
                return reply(c, applied, t.last);
            },
            durable())
        .action(
            "fire",
            [](Act& c, std::string client, std::int64_t seq) {
                Track& t = c.state().tracks["fire:" + client];
                const std::int64_t repeats = t.repeats;
                note_unordered(t, seq);
                trace("fire", c, client, seq, t.repeats != repeats);
            },
            durable());
}

}  // namespace

int main(int argc, char** argv) {
    Registry registry;
    registry.use("chaosCounter", counter());
    registry.use("chaosChat", chat());
    registry.use("chaosQueue", queue());
    registry.use("chaosSchedule", schedule());
    registry.describe("The chaos runner's actors (tests/chaos/README.md).");
    registry.on_ready([](const HostInfo&) {
        std::printf("chaos host ready\n");
        std::fflush(stdout);
    });
    return registry.run(argc, argv);
}

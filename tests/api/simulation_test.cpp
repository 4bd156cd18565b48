// Deterministic simulation of the actor runtime on virtual time (issue 18): seeded runs of a
// workload against the test kit's engine stand-in (rivetkit/testing.hpp: in-memory KV, virtual
// clock, the same core as on the real engine), with faults drawn from the seed — crashes (kill -9
// between two saves), graceful sleeps, failed KV writes, lost replies, time jumps — and a checker
// that holds every run to the runtime's promises:
//
//  - an increment answered with reply_after_durable is never lost;
//  - without it, a crash loses at most the increments of the last save interval, a sleep none;
//  - a scheduled event whose schedule was saved fires exactly once in the saved state: its
//    removal is saved with its action's effect, so a crash takes both and the event fires again
//    in the next generation (rivetkit-cpp's; upstream claims the due row before the action runs,
//    and a crash can take the effect of an event that fired);
//  - a queue message whose send was answered is received (once, or again after a crash), never
//    dropped.
//
// RIVETKIT_SIM_SEEDS=N runs N seeds (default 1,000: about 5 s), RIVETKIT_SIM_FIRST_SEED the first
// one; a failure prints its seed and the operations of that run, and RIVETKIT_SIM_SEEDS=1
// RIVETKIT_SIM_FIRST_SEED=<seed> replays it (RIVETKIT_SIM_TRACE=1 adds an actor's alarm to the
// trace, RIVETKIT_SIM_LOGS=1 keeps the runtime's log lines, muted otherwise: every injected
// fault logs an error).

#include <gtest/gtest.h>

#include <rivetkit/rivetkit.hpp>
#include <rivetkit/testing.hpp>

#include "base/log.hpp"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace std::chrono_literals;
using rivetkit::Json;
using rivetkit::testing::TestActor;
using rivetkit::testing::TestEngine;

struct Ledger {
    std::int64_t count = 0;
    std::vector<std::int64_t> ticks;
    std::vector<std::int64_t> jobs;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Ledger, count, ticks, jobs)

using LedgerCtx = rivetkit::ActorContext<Ledger>;
using LedgerAct = rivetkit::ActionContext<Ledger>;

constexpr std::chrono::milliseconds kSaveInterval = 1000ms;
constexpr std::int64_t kMaxTickDelayMs = 5000;

// Takes "jobs" messages as a careful user would: record, make the record durable (retrying a
// failed write), then complete — so a crash in between redelivers the message instead of losing it.
boost::asio::awaitable<void> take_jobs(LedgerCtx& c) {
    rivetkit::Queue queue = c.queue();
    for (;;) {
        rivetkit::QueueReceiveOptions opts;
        opts.names = {"jobs"};
        opts.completable = true;
        std::optional<rivetkit::QueueMessage> m = co_await queue.next(std::move(opts));
        if (!m)
            co_return;
        c.state().jobs.push_back(m->body_as<std::int64_t>());
        for (;;) {
            bool saved = true;
            try {
                rivetkit::SaveStateOptions now;
                now.immediate = true;
                co_await c.save_state(now);
            } catch (const rivetkit::ErrorException&) {
                saved = false;
            }
            if (saved)
                break;
            if (!co_await c.sleep_for(100ms))
                co_return;
        }
        co_await m->complete();
    }
}

rivetkit::Actor<Ledger> ledger() {
    rivetkit::ActorOptions options;
    options.state_save_interval = kSaveInterval;
    rivetkit::ActionOptions durable;
    durable.reply_after_durable = true;
    return rivetkit::Actor<Ledger>()
        .options(options)
        .queue("jobs")
        .action("add",
                [](LedgerAct& c, std::int64_t n) {
                    c.state().count += n;
                    return c.state().count;
                })
        .action(
            "addDurable",
            [](LedgerAct& c, std::int64_t n) {
                c.state().count += n;
                return c.state().count;
            },
            durable)
        .action("get", [](LedgerAct& c) { return Json(std::as_const(c).state()); })
        .action("scheduleTick",
                [](LedgerAct& c, std::int64_t id, std::int64_t delay_ms) {
                    c.schedule_after(std::chrono::milliseconds(delay_ms), "tick", id);
                })
        .action("tick", [](LedgerAct& c, std::int64_t id) { c.state().ticks.push_back(id); })
        .run(take_jobs);
}

// What the checker knows about one actor since its last verification point (a read of its
// state after a crash or a sleep, which settles everything before it).
struct Model {
    struct Add {
        std::int64_t at_ms;
        std::int64_t n;
        bool durable;
    };
    std::int64_t settled = 0;
    std::vector<Add> acked;
    std::int64_t unsure = 0;  // increments whose call failed or lost its reply: may have applied
    bool kv_failed = false;   // a KV write failed since the point
    // Scheduled ticks: must fire exactly once / may have been lost by a crash (at most once).
    struct Tick {
        std::int64_t acked_at;
        std::int64_t due_at;
    };
    std::map<std::int64_t, Tick> ticks_pending;
    std::map<std::int64_t, std::int64_t> ticks_required;  // id → due time
    std::set<std::int64_t> ticks_optional;
    // Jobs whose send was answered must arrive; a failed send's may.
    std::set<std::int64_t> jobs_required;
    std::set<std::int64_t> jobs_optional;
};

class SimulatedRun {
  public:
    explicit SimulatedRun(std::uint64_t seed) : rng_(seed) {
        engine_.use("ledger", ledger());
        for (int i = 0; i < 3; ++i) {
            actors_.push_back(engine_.get_or_create("ledger", {"a" + std::to_string(i)}));
            models_.emplace_back();
        }
    }

    // Returns the violations found ("" when none).
    std::string go(int steps) {
        for (int i = 0; i < steps && failure_.empty(); ++i)
            step();
        if (failure_.empty())
            finish();
        return failure_.empty() ? "" : failure_ + "\noperations:\n" + trace_.str();
    }

  private:
    std::int64_t pick(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
    }
    void fail(const std::string& what) {
        if (failure_.empty())
            failure_ = what;
    }

    void step() {
        if (std::getenv("RIVETKIT_SIM_TRACE") != nullptr)
            trace_ << "    [a0 awake " << actors_[0].awake() << " alarm "
                   << actors_[0].alarm_at_ms().value_or(-1) << "]\n";
        const auto a = static_cast<std::size_t>(pick(0, 2));
        TestActor& actor = actors_[a];
        Model& m = models_[a];
        const std::int64_t op = pick(0, 99);
        const std::int64_t now = engine_.now_ms();
        if (op < 25) {
            const std::int64_t n = pick(1, 9);
            auto r = actor.call<std::int64_t>("add", n);
            trace_ << now << " a" << a << " add " << n << (r.ok() ? "" : " failed") << "\n";
            if (r.ok())
                m.acked.push_back({engine_.now_ms(), n, false});
            else
                m.unsure += n;
        } else if (op < 40) {
            const std::int64_t n = pick(1, 9);
            auto r = actor.call<std::int64_t>("addDurable", n);
            trace_ << now << " a" << a << " addDurable " << n << (r.ok() ? "" : " failed") << "\n";
            if (r.ok())
                m.acked.push_back({engine_.now_ms(), n, true});
            else
                m.unsure += n;
        } else if (op < 47) {
            actor.lose_next_reply();
            const std::int64_t n = pick(1, 9);
            (void)actor.call<std::int64_t>(pick(0, 1) ? "add" : "addDurable", n);
            trace_ << now << " a" << a << " add " << n << " (reply lost)\n";
            m.unsure += n;
        } else if (op < 57) {
            const std::int64_t id = next_id_++;
            const std::int64_t delay = pick(0, kMaxTickDelayMs);
            auto r = actor.action("scheduleTick", Json::array({id, delay}));
            trace_ << now << " a" << a << " scheduleTick " << id << " +" << delay
                   << (r.ok() ? "" : " failed") << "\n";
            if (r.ok())
                m.ticks_pending[id] = {engine_.now_ms(), engine_.now_ms() + delay};
            else
                m.ticks_optional.insert(id);
        } else if (op < 67) {
            const std::int64_t id = next_id_++;
            auto r = actor.send("jobs", Json(id));
            trace_ << now << " a" << a << " send job " << id << (r.ok() ? "" : " failed") << "\n";
            (r.ok() ? m.jobs_required : m.jobs_optional).insert(id);
        } else if (op < 80) {
            const std::int64_t ms = pick(0, 2500);
            trace_ << now << " advance " << ms << "ms\n";
            engine_.advance(std::chrono::milliseconds(ms));
        } else if (op < 88) {
            trace_ << now << " a" << a << " crash\n";
            actor.crash();
            verify(a, /*graceful=*/false, now);
        } else if (op < 95) {
            auto slept = actor.sleep();
            trace_ << now << " a" << a << " sleep" << (slept.ok() ? "" : " failed") << "\n";
            verify(a, /*graceful=*/slept.ok(), now);
        } else {
            const auto count = static_cast<std::size_t>(pick(1, 2));
            trace_ << now << " fail the next " << count << " KV writes\n";
            engine_.fail_kv_writes(count);
            for (Model& each : models_)
                each.kv_failed = true;
        }
    }

    // Reads the actor's state after a crash (graceful = false) or a sleep and checks its count
    // against the model; then settles the model on what was read.
    void verify(std::size_t a, bool graceful, std::int64_t stopped_at) {
        Model& m = models_[a];
        auto state = actors_[a].call<Ledger>("get");
        // A failed KV write can fail the wake (each injected failure at most one start); the
        // next call starts it again.
        for (int retry = 0; retry < 4 && !state.ok(); ++retry)
            state = actors_[a].call<Ledger>("get");
        if (!state.ok()) {
            fail("a" + std::to_string(a) + " unreadable after restart: " +
                 state.error().to_string());
            return;
        }
        std::int64_t lower = m.settled;
        std::int64_t upper = m.settled + m.unsure;
        const std::int64_t horizon = stopped_at - kSaveInterval.count() - 1;
        for (const auto& add : m.acked) {
            upper += add.n;
            const bool must_survive =
                add.durable || (!m.kv_failed && (graceful || add.at_ms < horizon));
            if (must_survive)
                lower += add.n;
        }
        if (state->count < lower || state->count > upper) {
            fail("a" + std::to_string(a) + " count " + std::to_string(state->count) +
                 " outside [" + std::to_string(lower) + ", " + std::to_string(upper) + "] after " +
                 (graceful ? "a sleep" : "a crash"));
        }
        // Ticks scheduled before the horizon (or before a sleep) must fire; later ones may have
        // been lost with the crash. A tick already required stays required through a crash: its
        // removal is saved with its action's effect, so a crash takes both and the next
        // generation fires it again (before that change a crash could take the effect of a tick
        // that had just fired, and this checker allowed it).
        for (const auto& [id, tick] : m.ticks_pending) {
            if (graceful || (!m.kv_failed && tick.acked_at < horizon))
                m.ticks_required[id] = tick.due_at;
            else
                m.ticks_optional.insert(id);
        }
        m.ticks_pending.clear();
        m.settled = state->count;
        m.acked.clear();
        m.unsure = 0;
        m.kv_failed = false;
    }

    void finish() {
        trace_ << engine_.now_ms() << " finish\n";
        // Every tick falls due, every actor wakes and drains its queue, then sleeps.
        for (std::size_t a = 0; a < actors_.size(); ++a) {
            for (const auto& [id, tick] : models_[a].ticks_pending)
                models_[a].ticks_required[id] = tick.due_at;
            models_[a].ticks_pending.clear();
        }
        engine_.advance(std::chrono::milliseconds(kMaxTickDelayMs + 2000));
        for (std::size_t a = 0; a < actors_.size(); ++a) {
            (void)actors_[a].call<Ledger>("get");
            engine_.advance(2000ms);
            auto slept = actors_[a].sleep();
            if (!slept.ok())
                fail("a" + std::to_string(a) + " final sleep: " + slept.error().to_string());
            verify(a, true, engine_.now_ms());
            check_final(a);
        }
    }

    void check_final(std::size_t a) {
        const Model& m = models_[a];
        auto state = actors_[a].call<Ledger>("get");
        if (!state.ok()) {
            fail("a" + std::to_string(a) + " unreadable at the end");
            return;
        }
        const std::string who = "a" + std::to_string(a);
        std::map<std::int64_t, int> fired;
        for (auto id : state->ticks)
            ++fired[id];
        for (const auto& [id, n] : fired) {
            if (n > 1)
                fail(who + " tick " + std::to_string(id) + " fired " + std::to_string(n) +
                     " times");
            if (!m.ticks_required.contains(id) && !m.ticks_optional.contains(id))
                fail(who + " tick " + std::to_string(id) + " fired but was never scheduled here");
        }
        for (const auto& [id, due] : m.ticks_required) {
            if (!fired.contains(id))
                fail(who + " tick " + std::to_string(id) + " (due " + std::to_string(due) +
                     ") was scheduled durably but never fired; state " + Json(*state).dump() +
                     ", alarm " + std::to_string(actors_[a].alarm_at_ms().value_or(-1)));
        }
        std::set<std::int64_t> received(state->jobs.begin(), state->jobs.end());
        for (auto id : received) {
            if (!m.jobs_required.contains(id) && !m.jobs_optional.contains(id))
                fail(who + " job " + std::to_string(id) + " received but never sent here");
        }
        for (auto id : m.jobs_required) {
            if (!received.contains(id))
                fail(who + " job " + std::to_string(id) + " was sent but never received");
        }
    }

    TestEngine engine_;
    std::mt19937_64 rng_;
    std::vector<TestActor> actors_;
    std::vector<Model> models_;
    std::int64_t next_id_ = 1;
    std::ostringstream trace_;
    std::string failure_;
};

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(Simulation, SeededFaultRunsKeepEveryPromise) {
    const std::uint64_t seeds = env_or("RIVETKIT_SIM_SEEDS", 1000);
    const std::uint64_t first = env_or("RIVETKIT_SIM_FIRST_SEED", 1);
    const rivetkit::log::Level level = rivetkit::log::level();
    if (std::getenv("RIVETKIT_SIM_LOGS") == nullptr)
        rivetkit::log::set_level(rivetkit::log::Level::off);
    std::uint64_t failed = 0;
    for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
        SimulatedRun run(seed);
        std::string violation = run.go(60);
        if (!violation.empty()) {
            ++failed;
            ADD_FAILURE() << "seed " << seed << " (replay: RIVETKIT_SIM_SEEDS=1 "
                          << "RIVETKIT_SIM_FIRST_SEED=" << seed << "): " << violation;
            if (failed >= 3)
                break;
        }
    }
    rivetkit::log::set_level(level);
    RecordProperty("seeds", static_cast<int>(seeds));
    std::printf("simulation: %llu seeds from %llu, %llu with a violation\n",
                static_cast<unsigned long long>(seeds), static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(failed));
}

}  // namespace

namespace {

// Found by the simulation (seed 10 of the first version): a schedule whose own write failed was
// kept in memory and marked unsaved, but a save only wrote the persisted actor when the state
// changed, and a sleep with an unchanged state wrote nothing — the event was gone after the wake.
TEST(SimulationFindings, AScheduleWhoseWriteFailedIsSavedBySleep) {
    TestEngine engine;
    engine.use("ledger", ledger());
    auto a = engine.get_or_create("ledger", {"x"});
    ASSERT_TRUE(a.call<std::int64_t>("add", 1).ok());
    engine.advance(2000ms);  // the add is saved
    engine.fail_kv_writes(1);
    ASSERT_TRUE(a.action("scheduleTick", Json::array({6, 4000})).ok());
    ASSERT_TRUE(a.sleep().ok());
    ASSERT_TRUE(a.call<std::int64_t>("add", 1).ok());
    engine.advance(5000ms);
    auto state = a.call<Ledger>("get");
    ASSERT_TRUE(state.ok()) << state.error().to_string();
    EXPECT_EQ(state->ticks, (std::vector<std::int64_t>{6}));
}

// Found by the simulation (seed 8810, in a run of 100,000): a schedule whose own write failed was
// marked unsaved but nothing asked for a save, so with an unchanged state it stayed in memory
// only, and a crash seconds later (well past a save interval) lost the event. The failed write
// now asks for a save: the save tick writes it within a save interval.
TEST(SimulationFindings, AScheduleWhoseWriteFailedIsWrittenWithinASaveInterval) {
    TestEngine engine;
    engine.use("ledger", ledger());
    auto a = engine.get_or_create("ledger", {"y"});
    ASSERT_TRUE(a.call<std::int64_t>("add", 1).ok());
    engine.advance(2000ms);  // the add is saved
    engine.fail_kv_writes(1);
    ASSERT_TRUE(a.action("scheduleTick", Json::array({7, 4000})).ok());
    engine.advance(2000ms);  // more than a save interval, less than the tick's delay
    a.crash();
    engine.advance(3000ms);
    auto state = a.call<Ledger>("get");
    ASSERT_TRUE(state.ok()) << state.error().to_string();
    EXPECT_EQ(state->ticks, (std::vector<std::int64_t>{7}));
}

// Found by the chaos runner (tests/chaos): a fired event's removal was written at once, before its
// action ran, while the action's effect waited for the next save, so a crash between the two lost
// the event's effect for good (an acknowledged schedule that never fired). The removal now rides
// the save that carries the effect: here the crash takes both, and the next generation fires the
// event again — once in the saved state.
TEST(SimulationFindings, AFiredEventsRemovalIsSavedWithItsEffect) {
    TestEngine engine;
    engine.use("ledger", ledger());
    auto a = engine.get_or_create("ledger", {"z"});
    ASSERT_TRUE(a.call<std::int64_t>("add", 1).ok());
    engine.advance(2000ms);
    ASSERT_TRUE(a.action("scheduleTick", Json::array({8, 1500})).ok());
    engine.advance(1200ms);
    ASSERT_TRUE(a.call<std::int64_t>("add", 1).ok());  // saved now: the next save waits 1 s
    engine.advance(400ms);                             // the tick fired 100 ms ago
    auto fired = a.call<Ledger>("get");
    ASSERT_TRUE(fired.ok()) << fired.error().to_string();
    ASSERT_EQ(fired->ticks, (std::vector<std::int64_t>{8}));
    a.crash();
    engine.advance(3000ms);
    ASSERT_TRUE(a.call<Ledger>("get").ok());  // wakes the actor, which drains the overdue event
    engine.advance(100ms);
    auto state = a.call<Ledger>("get");
    ASSERT_TRUE(state.ok()) << state.error().to_string();
    EXPECT_EQ(state->ticks, (std::vector<std::int64_t>{8}));
    EXPECT_EQ(state->count, 2) << "both adds were saved before the crash";
}
}  // namespace

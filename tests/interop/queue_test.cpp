// The official TypeScript client's queue API (tests/interop/js/queue.mjs) against a typed C++
// actor on the real engine: POST /queue/{name} with and without wait, the completion response
// from the actor's run handler, a wait timing out as status "timedOut", an oversized message
// refused with queue/message_too_large, and queued messages surviving the actor's sleep (read
// back in FIFO order by the next generation). One engine and host for the whole suite.

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "engine_harness.hpp"
#include "live_host.hpp"
#include "live_stack.hpp"
#include "rivetkit/rivetkit.hpp"
#include "node_scenario.hpp"
#include "subprocess.hpp"

namespace rivetkit::testing {
namespace {

using nlohmann::json;
template <typename T>
using Task = boost::asio::awaitable<T>;

struct WorkerState {
    std::vector<std::int64_t> processed;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(WorkerState, processed)

using Worker = rivetkit::ActorContext<WorkerState>;
using WorkerAction = rivetkit::ActionContext<WorkerState>;

std::shared_ptr<core::ActorFactory> queue_worker() {
    ActorOptions options;
    options.max_queue_message_size = 1024;
    return Actor<WorkerState>()
        .options(options)
        .queue("jobs")
        .queue("parked")
        .run([](Worker& c) -> Task<void> {
            Queue queue = c.queue();
            for (;;) {
                QueueReceiveOptions opts;
                opts.names = {"jobs"};
                opts.completable = true;
                std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                if (!m)
                    break;
                const auto n = m->body_as<std::int64_t>();
                c.state().processed.push_back(n);
                Json reply = n * 2;
                co_await m->complete(std::move(reply));
            }
        })
        .action("processed", [](WorkerAction& c) { return std::as_const(c).state().processed; })
        .action("takeParked",
                [](WorkerAction& c) -> Task<std::vector<Json>> {
                    Queue queue = c.queue();
                    std::vector<Json> out;
                    for (;;) {
                        QueueReceiveOptions opts;
                        opts.names = {"parked"};
                        std::optional<QueueMessage> m = co_await queue.try_next(std::move(opts));
                        if (!m)
                            break;
                        out.push_back(m->body);
                    }
                    co_return out;
                })
        .action("goToSleep", [](WorkerAction& c) { c.sleep(); })
        .factory();
}

class QueueInterop : public ::testing::TestWithParam<std::string> {
  protected:
    static void SetUpTestSuite() {
        auto stack = LiveStack::start([](core::registry::CoreRegistry& r) {
            r.register_actor("queueWorker", queue_worker());
        });
        if (!stack.ok()) {
            start_error_ = stack.error().to_string();
            return;
        }
        stack_ = new LiveStack(std::move(stack).value());
    }
    static void TearDownTestSuite() {
        delete stack_;
        stack_ = nullptr;
    }
    void SetUp() override { ASSERT_NE(stack_, nullptr) << start_error_; }

    json scenario(const std::string& name) {
        auto run = run_node_scenario(std::string(RIVETKIT_INTEROP_JS_DIR) + "/queue.mjs",
                                     {name, "--encoding", GetParam()}, stack_->engine->endpoint(),
                                     std::chrono::minutes(2));
        EXPECT_EQ(run.failure, "");
        return run.result;
    }

    static inline LiveStack* stack_ = nullptr;
    static inline std::string start_error_;
};

TEST_P(QueueInterop, SendWithAndWithoutWait) {
    auto r = scenario("queue-send");
    EXPECT_EQ(r["plain"], nullptr);
    EXPECT_EQ(r["waited"], json({{"status", "completed"}, {"response", 10}})) << r.dump(2);
    EXPECT_EQ(r["timedOut"]["status"], "timedOut") << r.dump(2);
    EXPECT_FALSE(r["timedOut"].contains("response") && !r["timedOut"]["response"].is_null());
    EXPECT_GE(r.value("timedOutAfterMs", 0), 300 - 50);
    EXPECT_EQ(r["tooLarge"]["threw"], true) << r.dump(2);
    EXPECT_EQ(r["tooLarge"]["error"]["group"], "queue");
    EXPECT_EQ(r["tooLarge"]["error"]["code"], "message_too_large");
    EXPECT_EQ(r["processed"], json::array({1, 5}));
    // The timed-out message stays queued until received.
    EXPECT_EQ(r["parked"], json::array({"nobody"}));

    // GET /inspector/queue (upstream's shape) with the actor's inspector token; 401 without.
    const json& iq = r["inspectorQueue"];
    EXPECT_EQ(iq["deniedStatus"], 401) << iq.dump(2);
    EXPECT_EQ(iq["status"], 200) << iq.dump(2);
    EXPECT_EQ(iq["body"]["size"], 1) << iq.dump(2);
    EXPECT_EQ(iq["body"]["maxSize"], 1000);
    EXPECT_EQ(iq["body"]["truncated"], false);
    ASSERT_TRUE(iq["body"]["messages"].is_array() && iq["body"]["messages"].size() == 1)
        << iq.dump(2);
    EXPECT_EQ(iq["body"]["messages"][0]["name"], "parked");
    EXPECT_EQ(iq["body"]["messages"][0]["id"], 3);  // jobs 1 and 2 were completed
    EXPECT_TRUE(iq["body"]["messages"][0]["createdAtMs"].is_number_integer());

    // GET /metrics through the gateway: upstream's names, this host's counts (process-wide, so
    // at least this scenario's).
    const json& m = r["metrics"];
    EXPECT_EQ(m["status"], 200) << m.dump(2);
    EXPECT_EQ(m["contentType"], "text/plain; version=0.0.4");
    const json& s = m["samples"];
    const std::string n = "{actor_name=\"queueWorker\"";
    EXPECT_GE(s.value("rivetkit_actor_queue_messages_sent_total" + n + "}", 0), 3) << s.dump(2);
    EXPECT_GE(s.value("rivetkit_actor_queue_messages_received_total" + n + "}", 0), 3);
    EXPECT_GE(s.value("rivetkit_actor_started_total" + n + "}", 0), 1);
    EXPECT_GE(s.value("rivetkit_actor_active_count" + n + "}", 0), 1);
    EXPECT_GE(s.value("rivetkit_actor_connections_total" + n + "}", 0), 1);
    EXPECT_GE(s.value("rivetkit_actor_user_task_duration_seconds_count" + n + ",kind=\"action\"}",
                      0),
              2);
    EXPECT_GE(s.value("rivetkit_actor_user_task_duration_seconds_count" + n +
                          ",kind=\"queue_wait\"}",
                      0),
              1);
}

TEST_P(QueueInterop, QueuedMessagesSurviveSleep) {
    auto r = scenario("queue-sleep");
    EXPECT_EQ(r["sleepObserved"], true) << r.dump(2);
    EXPECT_EQ(r["generationBefore"], 1);
    EXPECT_EQ(r["generationAfter"], 2);
    EXPECT_EQ(r["parked"], json::array({"a", json({{"b", 2}}), json::array({"c"})})) << r.dump(2);
    EXPECT_EQ(r["again"], json::array());
}

INSTANTIATE_TEST_SUITE_P(Encodings, QueueInterop, ::testing::Values("json", "cbor", "bare"),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace rivetkit::testing

#pragma once
// Actor metrics with upstream rivetkit-core's Prometheus names (actor/metrics.rs), rendered by the
// /metrics route in the Prometheus text exposition format.
//
// As upstream, the metrics are process-wide and labelled by actor name. Each actor generation
// records into its own ActorMetrics (relaxed atomics, no lock: an actor lives on one thread, the
// renderer reads from another); a name's samples are the sum over its live actors plus what its
// finished actors folded into the family when they went away.
//
// Recorded here: actor_active_count, actor_started_total, actor_stopped_total, queue_depth,
// queue_messages_sent_total, queue_messages_received_total, connections_active,
// connections_total, user_tasks_active{kind}, user_task_duration_seconds{kind} (kind="action"
// counts and times actions), shutdown_wait_seconds{reason}, shutdown_timeout_total{reason},
// state_mutation_total{reason}. rivetkit-cpp additions (no upstream counterpart):
// rivetkit_actor_state_saves_total, rivetkit_actor_kv_operations_total{operation}.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/actor/task_types.hpp"

namespace rivetkit::core {

class ActorContext;

enum class UserTaskKind : std::uint8_t {
    Action,
    Http,
    WebSocketLifetime,
    WebSocketCallback,
    QueueWait,
    ScheduledAction,
    DisconnectCallback,
    WaitUntil,
    RegisteredTask,
    SleepFinalize,
    DestroyRequest,
};
inline constexpr std::size_t kUserTaskKindCount = 11;
std::string_view user_task_label(UserTaskKind kind) noexcept;

enum class StateMutationReason : std::uint8_t {
    InternalReplace,
    ScheduledEventsUpdate,
    InputSet,
    HasInitialized,
};
inline constexpr std::size_t kStateMutationReasonCount = 4;
std::string_view state_mutation_label(StateMutationReason reason) noexcept;

enum class KvOperation : std::uint8_t { Get, Put, Delete, List };  // declared in kv.hpp too
inline constexpr std::size_t kKvOperationCount = 4;

// Prometheus' default histogram buckets (seconds), as upstream's HistogramOpts default.
inline constexpr std::array<double, 11> kDefaultBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                        0.5,   1.0,  2.5,   5.0,  10.0};

class Histogram {
  public:
    void observe(std::chrono::nanoseconds d) noexcept;
    void add(const Histogram& other) noexcept;
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
    std::uint64_t sum_ns() const noexcept { return sum_ns_.load(std::memory_order_relaxed); }
    std::uint64_t bucket(std::size_t i) const noexcept {
        return buckets_[i].load(std::memory_order_relaxed);
    }

  private:
    std::array<std::atomic<std::uint64_t>, kDefaultBuckets.size()> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
};

// The metrics of an actor name recorded on one thread (a shard): counters only grow, gauges are
// the sum of that thread's live actors' current values. Written by one thread, read by the
// renderer (relaxed atomics); the name's samples are the sum of its shards.
struct MetricValues {
    std::atomic<std::int64_t> active{0};
    std::atomic<std::uint64_t> started{0};
    std::atomic<std::uint64_t> stopped{0};
    std::atomic<std::int64_t> queue_depth{0};
    std::atomic<std::uint64_t> queue_sent{0};
    std::atomic<std::uint64_t> queue_received{0};
    std::atomic<std::int64_t> connections_active{0};
    std::atomic<std::uint64_t> connections_total{0};
    std::array<std::atomic<std::int64_t>, kUserTaskKindCount> user_tasks_active{};
    std::array<Histogram, kUserTaskKindCount> user_task_duration{};
    std::array<Histogram, 2> shutdown_wait{};
    std::array<std::atomic<std::uint64_t>, 2> shutdown_timeouts{};
    std::array<std::atomic<std::uint64_t>, kStateMutationReasonCount> state_mutations{};
    std::atomic<std::uint64_t> state_saves{0};
    std::array<std::atomic<std::uint64_t>, kKvOperationCount> kv_ops{};

    // Adds every value of `other` into this.
    void add(const MetricValues& other) noexcept;
};

// One actor generation's handle on its name's metrics. An actor records into the shard of its
// name on the thread that created its metrics (an actor lives on one thread), so an actor costs a
// few bytes instead of its own histograms, and recording is relaxed atomics on a thread-owned
// shard (no lock, no cache line shared with another thread). The registry mutex is taken once per
// thread and name, when its shard is made. The actor's own gauge contributions are kept so that
// they leave the shard with it.
class ActorMetrics {
  public:
    explicit ActorMetrics(std::string_view actor_name);
    ~ActorMetrics();
    ActorMetrics(const ActorMetrics&) = delete;
    ActorMetrics& operator=(const ActorMetrics&) = delete;

    void actor_started() noexcept {
        inc(v_.started);
        if (!active_) {
            active_ = true;
            v_.active.fetch_add(1, std::memory_order_relaxed);
        }
    }
    void actor_stopped() noexcept {
        inc(v_.stopped);
        if (active_) {
            active_ = false;
            v_.active.fetch_sub(1, std::memory_order_relaxed);
        }
    }
    void set_queue_depth(std::uint32_t depth) noexcept {
        v_.queue_depth.fetch_add(static_cast<std::int64_t>(depth) - queue_depth_,
                                 std::memory_order_relaxed);
        queue_depth_ = depth;
    }
    void queue_messages_sent(std::uint64_t n) noexcept {
        v_.queue_sent.fetch_add(n, std::memory_order_relaxed);
    }
    void queue_messages_received(std::uint64_t n) noexcept {
        v_.queue_received.fetch_add(n, std::memory_order_relaxed);
    }
    void connection_established() noexcept { inc(v_.connections_total); }
    void set_connections_active(std::size_t n) noexcept {
        v_.connections_active.fetch_add(static_cast<std::int64_t>(n) - connections_active_,
                                        std::memory_order_relaxed);
        connections_active_ = static_cast<std::int64_t>(n);
    }
    void begin_user_task(UserTaskKind kind) noexcept {
        v_.user_tasks_active[idx(kind)].fetch_add(1, std::memory_order_relaxed);
    }
    void end_user_task(UserTaskKind kind, std::chrono::nanoseconds took) noexcept {
        v_.user_tasks_active[idx(kind)].fetch_sub(1, std::memory_order_relaxed);
        v_.user_task_duration[idx(kind)].observe(took);
    }
    void shutdown_wait(ShutdownKind reason, std::chrono::nanoseconds took) noexcept {
        v_.shutdown_wait[idx(reason)].observe(took);
    }
    void shutdown_timeout(ShutdownKind reason) noexcept { inc(v_.shutdown_timeouts[idx(reason)]); }
    void state_mutation(StateMutationReason reason) noexcept {
        inc(v_.state_mutations[idx(reason)]);
    }
    void state_saved() noexcept {
        inc(v_.state_saves);
        ++state_saves_;
    }
    void kv_operation(KvOperation op) noexcept { inc(v_.kv_ops[idx(op)]); }

    // This actor generation's state saves (the name's total is in the rendered metrics).
    std::uint64_t state_saves() const noexcept { return state_saves_; }

  private:
    template <typename E>
    static constexpr std::size_t idx(E e) noexcept {
        return static_cast<std::size_t>(e);
    }
    static void inc(std::atomic<std::uint64_t>& c) noexcept {
        c.fetch_add(1, std::memory_order_relaxed);
    }

    MetricValues& v_;  // the shard of this actor's name and thread; never freed
    std::int64_t connections_active_ = 0;
    std::uint64_t state_saves_ = 0;
    std::uint32_t queue_depth_ = 0;
    bool active_ = false;
};

// This actor's metrics, made (and registered under its name) on first use; they live as long as
// the context (or the longest holder of metrics_ptr).
ActorMetrics& metrics_of(const ActorContext& ctx);
std::shared_ptr<ActorMetrics> metrics_ptr(const ActorContext& ctx);

// Measures one user task of `kind` from construction to destruction.
class UserTaskTimer {
  public:
    UserTaskTimer(std::shared_ptr<ActorMetrics> metrics, UserTaskKind kind) noexcept
        : metrics_(std::move(metrics)), kind_(kind), started_(std::chrono::steady_clock::now()) {
        metrics_->begin_user_task(kind_);
    }
    UserTaskTimer(const UserTaskTimer&) = delete;
    UserTaskTimer& operator=(const UserTaskTimer&) = delete;
    ~UserTaskTimer() {
        metrics_->end_user_task(kind_, std::chrono::steady_clock::now() - started_);
    }

  private:
    std::shared_ptr<ActorMetrics> metrics_;
    UserTaskKind kind_;
    std::chrono::steady_clock::time_point started_;
};

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4";
// Every actor name's metrics (live actors plus the folded totals of finished ones), in the
// Prometheus text exposition format.
std::string render_prometheus_metrics();

}  // namespace rivetkit::core

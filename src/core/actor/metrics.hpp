#pragma once
// Actor metrics with upstream rivetkit-core's Prometheus names (actor/metrics.rs), rendered by the
// /metrics route in the Prometheus text exposition format.
//
// As upstream, the metrics are process-wide and labelled by actor name: every actor of one name
// shares one ActorMetrics. Recording is lock-free (relaxed atomics: an actor name's actors may run
// on several envoy threads); the registry's mutex is taken only to find or create an actor
// name's family (once per actor generation) and to render.
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

enum class KvOperation : std::uint8_t { Get, Put, Delete, List };
inline constexpr std::size_t kKvOperationCount = 4;

// Prometheus' default histogram buckets (seconds), as upstream's HistogramOpts default.
inline constexpr std::array<double, 11> kDefaultBuckets{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                        0.5,   1.0,  2.5,   5.0,  10.0};

class Histogram {
  public:
    void observe(std::chrono::nanoseconds d) noexcept;
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }
    double sum_seconds() const noexcept;
    std::uint64_t bucket(std::size_t i) const noexcept {
        return buckets_[i].load(std::memory_order_relaxed);
    }

  private:
    std::array<std::atomic<std::uint64_t>, kDefaultBuckets.size()> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
};

class ActorMetrics {
  public:
    explicit ActorMetrics(std::string actor_name) : actor_name_(std::move(actor_name)) {}
    const std::string& actor_name() const noexcept { return actor_name_; }

    void actor_started() noexcept {
        inc(started_);
        active_.fetch_add(1, std::memory_order_relaxed);
    }
    void actor_stopped() noexcept {
        inc(stopped_);
        active_.fetch_sub(1, std::memory_order_relaxed);
    }
    void add_queue_depth(std::int64_t delta) noexcept {
        queue_depth_.fetch_add(delta, std::memory_order_relaxed);
    }
    void queue_messages_sent(std::uint64_t n) noexcept {
        queue_sent_.fetch_add(n, std::memory_order_relaxed);
    }
    void queue_messages_received(std::uint64_t n) noexcept {
        queue_received_.fetch_add(n, std::memory_order_relaxed);
    }
    void connection_opened() noexcept {
        inc(connections_total_);
        connections_active_.fetch_add(1, std::memory_order_relaxed);
    }
    void connection_closed() noexcept {
        connections_active_.fetch_sub(1, std::memory_order_relaxed);
    }
    void begin_user_task(UserTaskKind kind) noexcept {
        user_tasks_active_[idx(kind)].fetch_add(1, std::memory_order_relaxed);
    }
    void end_user_task(UserTaskKind kind, std::chrono::nanoseconds took) noexcept {
        user_tasks_active_[idx(kind)].fetch_sub(1, std::memory_order_relaxed);
        user_task_duration_[idx(kind)].observe(took);
    }
    void shutdown_wait(ShutdownKind reason, std::chrono::nanoseconds took) noexcept {
        shutdown_wait_[idx(reason)].observe(took);
    }
    void shutdown_timeout(ShutdownKind reason) noexcept { inc(shutdown_timeouts_[idx(reason)]); }
    void state_mutation(StateMutationReason reason) noexcept {
        inc(state_mutations_[idx(reason)]);
    }
    void state_saved() noexcept { inc(state_saves_); }
    void kv_operation(KvOperation op) noexcept { inc(kv_ops_[idx(op)]); }

    // Appends this family's samples (one line per metric) to the per-metric bodies.
    friend std::string render_prometheus_metrics();
    friend struct MetricsSnapshotAccess;

  private:
    template <typename E>
    static constexpr std::size_t idx(E e) noexcept {
        return static_cast<std::size_t>(e);
    }
    static void inc(std::atomic<std::uint64_t>& c) noexcept {
        c.fetch_add(1, std::memory_order_relaxed);
    }

    std::string actor_name_;
    std::atomic<std::int64_t> active_{0};
    std::atomic<std::uint64_t> started_{0};
    std::atomic<std::uint64_t> stopped_{0};
    std::atomic<std::int64_t> queue_depth_{0};
    std::atomic<std::uint64_t> queue_sent_{0};
    std::atomic<std::uint64_t> queue_received_{0};
    std::atomic<std::int64_t> connections_active_{0};
    std::atomic<std::uint64_t> connections_total_{0};
    std::array<std::atomic<std::int64_t>, kUserTaskKindCount> user_tasks_active_{};
    std::array<Histogram, kUserTaskKindCount> user_task_duration_{};
    std::array<Histogram, 2> shutdown_wait_{};
    std::array<std::atomic<std::uint64_t>, 2> shutdown_timeouts_{};
    std::array<std::atomic<std::uint64_t>, kStateMutationReasonCount> state_mutations_{};
    std::atomic<std::uint64_t> state_saves_{0};
    std::array<std::atomic<std::uint64_t>, kKvOperationCount> kv_ops_{};
};

// The family of `actor_name`, created on first use and kept for the life of the process.
std::shared_ptr<ActorMetrics> actor_metrics(std::string_view actor_name);
// The family of the context's actor name, cached on the context after the first call.
ActorMetrics& metrics_of(const ActorContext& ctx);

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4";
// Every family, in the Prometheus text exposition format.
std::string render_prometheus_metrics();

}  // namespace rivetkit::core

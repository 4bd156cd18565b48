// Actor metrics: the per-name families and the Prometheus text rendering.

#include "core/actor/metrics.hpp"

#include <fmt/format.h>

#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "core/actor/context.hpp"

namespace rivetkit::core {

std::string_view user_task_label(UserTaskKind kind) noexcept {
    switch (kind) {
        case UserTaskKind::Action: return "action";
        case UserTaskKind::Http: return "http";
        case UserTaskKind::WebSocketLifetime: return "websocket_lifetime";
        case UserTaskKind::WebSocketCallback: return "websocket_callback";
        case UserTaskKind::QueueWait: return "queue_wait";
        case UserTaskKind::ScheduledAction: return "scheduled_action";
        case UserTaskKind::DisconnectCallback: return "disconnect_callback";
        case UserTaskKind::WaitUntil: return "wait_until";
        case UserTaskKind::RegisteredTask: return "registered_task";
        case UserTaskKind::SleepFinalize: return "sleep_finalize";
        case UserTaskKind::DestroyRequest: return "destroy_request";
    }
    return "unknown";
}

std::string_view state_mutation_label(StateMutationReason reason) noexcept {
    switch (reason) {
        case StateMutationReason::InternalReplace: return "internal_replace";
        case StateMutationReason::ScheduledEventsUpdate: return "scheduled_events_update";
        case StateMutationReason::InputSet: return "input_set";
        case StateMutationReason::HasInitialized: return "has_initialized";
    }
    return "unknown";
}

namespace {

std::string_view kv_label(std::size_t i) {
    static constexpr std::array<std::string_view, kKvOperationCount> labels{"get", "put", "delete",
                                                                           "list"};
    return labels[i];
}

// An actor name's shards, one per thread that recorded for it. Shards are never freed (the
// renderer and live actors hold plain references), so a name costs one shard per io thread.
struct MetricsFamily {
    std::deque<MetricValues> shards;  // guarded by the registry mutex (appends only)
};

struct Registry {
    std::mutex mutex;
    std::map<std::string, MetricsFamily, std::less<>> families;
};

Registry& registry() {
    static Registry* r = new Registry();  // never destroyed: actors may outlive static teardown
    return *r;
}

// A label value escaped for the text format.
std::string label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string number(double v) {
    return fmt::format("{}", v);
}

// One metric: HELP/TYPE header once, then the samples of every family.
struct Metric {
    Metric(std::string n, std::string h, std::string t)
        : name(std::move(n)), help(std::move(h)), type(std::move(t)) {}
    std::string name;
    std::string help;
    std::string type;
    std::string samples;
};

void append_histogram(Metric& m, std::string_view labels, const Histogram& h) {
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kDefaultBuckets.size(); ++i) {
        cumulative += h.bucket(i);
        m.samples += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", m.name, labels,
                                 number(kDefaultBuckets[i]), cumulative);
    }
    m.samples += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {}\n", m.name, labels, h.count());
    m.samples += fmt::format("{}_sum{{{}}} {}\n", m.name, labels,
                             number(static_cast<double>(h.sum_ns()) / 1e9));
    m.samples += fmt::format("{}_count{{{}}} {}\n", m.name, labels, h.count());
}

}  // namespace

void Histogram::observe(std::chrono::nanoseconds d) noexcept {
    const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.count()));
    const double seconds = static_cast<double>(ns) / 1e9;
    for (std::size_t i = 0; i < kDefaultBuckets.size(); ++i) {
        if (seconds <= kDefaultBuckets[i]) {
            buckets_[i].fetch_add(1, std::memory_order_relaxed);
            break;
        }
    }
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
}

void Histogram::add(const Histogram& other) noexcept {
    for (std::size_t i = 0; i < kDefaultBuckets.size(); ++i)
        buckets_[i].fetch_add(other.bucket(i), std::memory_order_relaxed);
    count_.fetch_add(other.count(), std::memory_order_relaxed);
    sum_ns_.fetch_add(other.sum_ns(), std::memory_order_relaxed);
}

void MetricValues::add(const MetricValues& o) noexcept {
    auto sum = [](auto& into, const auto& from) {
        into.fetch_add(from.load(std::memory_order_relaxed), std::memory_order_relaxed);
    };
    sum(started, o.started);
    sum(stopped, o.stopped);
    sum(queue_sent, o.queue_sent);
    sum(queue_received, o.queue_received);
    sum(connections_total, o.connections_total);
    for (std::size_t k = 0; k < kUserTaskKindCount; ++k)
        user_task_duration[k].add(o.user_task_duration[k]);
    for (std::size_t k = 0; k < 2; ++k) {
        shutdown_wait[k].add(o.shutdown_wait[k]);
        sum(shutdown_timeouts[k], o.shutdown_timeouts[k]);
    }
    for (std::size_t k = 0; k < kStateMutationReasonCount; ++k)
        sum(state_mutations[k], o.state_mutations[k]);
    sum(state_saves, o.state_saves);
    for (std::size_t k = 0; k < kKvOperationCount; ++k)
        sum(kv_ops[k], o.kv_ops[k]);
    sum(active, o.active);
    sum(queue_depth, o.queue_depth);
    sum(connections_active, o.connections_active);
    for (std::size_t k = 0; k < kUserTaskKindCount; ++k)
        sum(user_tasks_active[k], o.user_tasks_active[k]);
}

namespace {

// This thread's shard of `actor_name`: looked up in a per-thread cache first, made under the
// registry mutex the first time a thread records for the name.
MetricValues& shard_for(std::string_view actor_name) {
    thread_local std::map<std::string, MetricValues*, std::less<>> cache;
    if (auto found = cache.find(actor_name); found != cache.end())
        return *found->second;
    Registry& r = registry();
    MetricValues* shard = nullptr;
    {
        std::lock_guard lock(r.mutex);
        auto family = r.families.find(actor_name);
        if (family == r.families.end())
            family = r.families.try_emplace(std::string(actor_name)).first;
        shard = &family->second.shards.emplace_back();
    }
    cache.emplace(std::string(actor_name), shard);
    return *shard;
}

}  // namespace

ActorMetrics::ActorMetrics(std::string_view actor_name) : v_(shard_for(actor_name)) {}

ActorMetrics::~ActorMetrics() {
    // This actor's gauge contributions leave with it (the counters stay in the shard).
    if (active_)
        v_.active.fetch_sub(1, std::memory_order_relaxed);
    v_.queue_depth.fetch_sub(queue_depth_, std::memory_order_relaxed);
    v_.connections_active.fetch_sub(connections_active_, std::memory_order_relaxed);
}

ActorMetrics& metrics_of(const ActorContext& ctx) {
    auto& slot = ctx.inner()->metrics;
    if (!slot) {
        slot = std::make_shared<ActorMetrics>(ctx.name());
        ctx.inner()->kv.set_metrics(slot);
        if (const auto& user_kv = ctx.inner()->user_kv)
            user_kv->set_metrics(slot);
    }
    return *slot;
}

std::shared_ptr<ActorMetrics> metrics_ptr(const ActorContext& ctx) {
    (void)metrics_of(ctx);
    return ctx.inner()->metrics;
}

std::string render_prometheus_metrics() {
    // Sum each name's shards under the lock (shards are appended under it), render afterwards.
    std::vector<std::pair<std::string, std::unique_ptr<MetricValues>>> totals;
    {
        Registry& r = registry();
        std::lock_guard lock(r.mutex);
        for (const auto& [name, family] : r.families) {
            auto sum = std::make_unique<MetricValues>();
            for (const MetricValues& shard : family.shards)
                sum->add(shard);
            totals.emplace_back(name, std::move(sum));
        }
    }
    auto relaxed = [](const auto& a) { return a.load(std::memory_order_relaxed); };
    Metric active{"rivetkit_actor_active_count", "current active actors in this process", "gauge"};
    Metric started{"rivetkit_actor_started_total", "total actors started in this process",
                   "counter"};
    Metric stopped{"rivetkit_actor_stopped_total", "total actors stopped in this process",
                   "counter"};
    Metric depth{"rivetkit_actor_queue_depth", "current actor queue depth", "gauge"};
    Metric sent{"rivetkit_actor_queue_messages_sent_total", "total queue messages sent",
                "counter"};
    Metric received{"rivetkit_actor_queue_messages_received_total",
                    "total queue messages received", "counter"};
    Metric conns_active{"rivetkit_actor_connections_active", "current active actor connections",
                        "gauge"};
    Metric conns_total{"rivetkit_actor_connections_total",
                       "total successfully established actor connections", "counter"};
    Metric tasks_active{"rivetkit_actor_user_tasks_active", "current active actor user tasks",
                        "gauge"};
    Metric task_duration{"rivetkit_actor_user_task_duration_seconds",
                         "actor user task execution time in seconds", "histogram"};
    Metric shutdown_wait{"rivetkit_actor_shutdown_wait_seconds",
                         "actor shutdown wait time in seconds", "histogram"};
    Metric shutdown_timeout{"rivetkit_actor_shutdown_timeout_total",
                            "total actor shutdown timeout events", "counter"};
    Metric mutations{"rivetkit_actor_state_mutation_total", "total actor state mutations",
                     "counter"};
    Metric saves{"rivetkit_actor_state_saves_total", "total actor state saves written to KV",
                 "counter"};
    Metric kv_ops{"rivetkit_actor_kv_operations_total", "total actor KV operations", "counter"};

    for (const auto& [actor_name, f] : totals) {
        const std::string name = "actor_name=\"" + label_value(actor_name) + "\"";
        auto line = [&](Metric& m, std::string_view labels, auto value) {
            m.samples += fmt::format("{}{{{}}} {}\n", m.name, labels, value);
        };
        line(active, name, relaxed(f->active));
        line(started, name, relaxed(f->started));
        line(stopped, name, relaxed(f->stopped));
        line(depth, name, relaxed(f->queue_depth));
        line(sent, name, relaxed(f->queue_sent));
        line(received, name, relaxed(f->queue_received));
        line(conns_active, name, relaxed(f->connections_active));
        line(conns_total, name, relaxed(f->connections_total));
        for (std::size_t k = 0; k < kUserTaskKindCount; ++k) {
            const std::string labels = fmt::format(
                "{},kind=\"{}\"", name, user_task_label(static_cast<UserTaskKind>(k)));
            line(tasks_active, labels, relaxed(f->user_tasks_active[k]));
            append_histogram(task_duration, labels, f->user_task_duration[k]);
        }
        for (std::size_t k = 0; k < 2; ++k) {
            const std::string labels = fmt::format(
                "{},reason=\"{}\"", name, shutdown_kind_label(static_cast<ShutdownKind>(k)));
            append_histogram(shutdown_wait, labels, f->shutdown_wait[k]);
            line(shutdown_timeout, labels, relaxed(f->shutdown_timeouts[k]));
        }
        for (std::size_t k = 0; k < kStateMutationReasonCount; ++k) {
            line(mutations,
                 fmt::format("{},reason=\"{}\"", name,
                             state_mutation_label(static_cast<StateMutationReason>(k))),
                 relaxed(f->state_mutations[k]));
        }
        line(saves, name, relaxed(f->state_saves));
        for (std::size_t k = 0; k < kKvOperationCount; ++k)
            line(kv_ops, fmt::format("{},operation=\"{}\"", name, kv_label(k)),
                 relaxed(f->kv_ops[k]));
    }

    std::string out;
    for (Metric* m : {&active, &started, &stopped, &depth, &sent, &received, &conns_active,
                      &conns_total, &tasks_active, &task_duration, &shutdown_wait,
                      &shutdown_timeout, &mutations, &saves, &kv_ops}) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m->name, m->help, m->name, m->type);
        out += m->samples;
    }
    return out;
}

}  // namespace rivetkit::core

// The durable per-actor queue; see queue.hpp for the semantics.

#include "core/actor/queue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "base/log.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/metrics.hpp"
#include "core/actor/persist.hpp"
#include "runtime/notify.hpp"
#include "runtime/oneshot.hpp"
#include "runtime/select.hpp"

namespace rivetkit::core {

namespace {
std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out += fmt::format("\\u{:04x}", u);
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}
}  // namespace

namespace errors_queue {
Error full(std::uint32_t limit) {
    return {"queue", "full", fmt::format("Queue is full. Limit is {} messages.", limit),
            fmt::format(R"({{"limit":{}}})", limit)};
}
Error message_too_large(std::size_t size, std::uint32_t limit) {
    return {"queue", "message_too_large",
            fmt::format("Queue message too large ({} bytes). Limit is {} bytes.", size, limit),
            fmt::format(R"({{"size":{},"limit":{}}})", size, limit)};
}
Error already_completed() {
    return {"queue", "already_completed", "Queue message was already completed"};
}
Error complete_not_configured(std::string_view name) {
    std::string quoted = json_string(name);
    return {"queue", "complete_not_configured",
            fmt::format("Queue '{}' does not support completion responses.", name),
            fmt::format(R"({{"name":{}}})", quoted)};
}
Error timed_out(std::uint64_t timeout_ms) {
    return {"queue", "timed_out", fmt::format("Queue wait timed out after {} ms.", timeout_ms),
            fmt::format(R"({{"timeout_ms":{}}})", timeout_ms)};
}
Error completion_waiter_conflict(std::uint64_t message_id) {
    return {"queue", "completion_waiter_conflict",
            fmt::format("Queue completion waiter is already registered for message {}.",
                        message_id),
            fmt::format(R"({{"message_id":{}}})", message_id)};
}
Error completion_waiter_dropped() {
    return {"queue", "completion_waiter_dropped",
            "Queue completion waiter dropped before response"};
}
}  // namespace errors_queue

// One actor's queue, hung off the context (ActorContextInner::queue).
struct QueueState {
    struct Stored {
        std::string name;
        Bytes body;
        std::int64_t created_at = 0;
    };

    bool loaded = false;
    bool loading = false;
    rt::Notify load_done;
    PersistedQueueMetadata meta{1, 0};
    std::map<std::uint64_t, Stored> messages;  // FIFO by id; mirrors [5,1,2]
    bool writing = false;
    rt::Notify write_free;
    std::map<std::uint64_t, rt::OneshotSender<std::optional<Bytes>>> waiters;
    rt::Notify published;
    std::size_t active_waits = 0;
};

struct QueueAccess {
    static void attach(QueueMessage& m, std::shared_ptr<QueueCompletion> c) {
        m.completion_ = std::move(c);
    }
};

struct QueueCompletion {
    WeakActorContext ctx;
    std::uint64_t message_id = 0;
    std::string name;
    bool completed = false;
};

namespace {

std::shared_ptr<QueueState> state_of(const ActorContext& ctx) {
    auto& slot = ctx.inner()->queue;
    if (!slot)
        slot = std::make_shared<QueueState>();
    return slot;
}

// Serialises KV writes so the metadata written last is the newest.
class WriteGuard {
  public:
    explicit WriteGuard(std::shared_ptr<QueueState> q) : q_(std::move(q)) {}
    WriteGuard(const WriteGuard&) = delete;
    WriteGuard& operator=(const WriteGuard&) = delete;
    ~WriteGuard() {
        q_->writing = false;
        q_->write_free.notify_waiters();
    }

  private:
    std::shared_ptr<QueueState> q_;
};

Task<void> acquire_writes(std::shared_ptr<QueueState> q) {
    while (q->writing)
        co_await q->write_free.notified();
    q->writing = true;
}

Bytes metadata_bytes(const QueueState& q) {
    PersistedQueueMetadata meta{q.meta.next_id,
                                static_cast<std::uint32_t>(q.messages.size())};
    return encode_queue_metadata(meta);
}

void record_depth(const ActorContext& ctx, QueueState& q) {
    metrics_of(ctx).set_queue_depth(static_cast<std::uint32_t>(q.messages.size()));
    ctx.record_inspector_signal(InspectorSignal::QueueUpdated);
}

Task<Status> ensure_loaded(ActorContext ctx) {
    auto q = state_of(ctx);
    while (q->loading)
        co_await q->load_done.notified();
    if (q->loaded)
        co_return Status{};
    q->loading = true;
    struct Done {
        QueueState* q;
        ~Done() {
            q->loading = false;
            q->load_done.notify_waiters();
        }
    } done{q.get()};

    Bytes meta_key = keys::to_bytes(keys::kQueueMetadata);
    Result<std::optional<Bytes>> meta_raw = co_await ctx.kv().get(std::move(meta_key));
    if (!meta_raw.ok())
        co_return std::move(meta_raw).error();
    Bytes prefix = keys::to_bytes(keys::kQueueMessagesPrefix);
    Result<std::vector<KvEntry>> listed = co_await ctx.kv().list_prefix(std::move(prefix));
    if (!listed.ok())
        co_return std::move(listed).error();

    std::map<std::uint64_t, QueueState::Stored> messages;
    std::uint64_t after_last = 1;  // past every stored id, decodable or not
    for (auto& [key, value] : *listed) {
        auto id = keys::decode_queue_message_key(key);
        if (!id) {
            log::warn("failed to decode queue message key", {{"actor_id", ctx.actor_id()}});
            continue;
        }
        after_last = std::max(after_last, *id + 1);
        auto decoded = decode_queue_message(value);
        if (!decoded.ok()) {
            log::warn("failed to decode queue message",
                      {{"actor_id", ctx.actor_id()},
                       {"queue_message_id", std::to_string(*id)},
                       {"error", decoded.error().to_string()}});
            continue;
        }
        messages.emplace(*id, QueueState::Stored{std::move(decoded->name),
                                                 std::move(decoded->body), decoded->created_at});
    }

    PersistedQueueMetadata meta{1, 0};
    bool write_meta = false;
    if (meta_raw->has_value()) {
        auto decoded = decode_queue_metadata(**meta_raw);
        if (decoded.ok()) {
            meta = *decoded;
        } else {
            log::warn("failed to decode queue metadata, rebuilding",
                      {{"actor_id", ctx.actor_id()}, {"error", decoded.error().to_string()}});
            write_meta = true;
        }
    } else {
        write_meta = true;  // upstream writes the default metadata on first use
    }
    // Never reuse an id that is still stored, whatever the metadata says.
    meta.next_id = std::max({meta.next_id, after_last, std::uint64_t{1}});
    meta.size = static_cast<std::uint32_t>(messages.size());
    q->messages = std::move(messages);
    q->meta = meta;
    if (write_meta) {
        Bytes key = keys::to_bytes(keys::kQueueMetadata);
        Bytes value = encode_queue_metadata(meta);
        Status put = co_await ctx.kv().put(std::move(key), std::move(value));
        if (!put.ok())
            co_return put;
    }
    q->loaded = true;
    record_depth(ctx, *q);
    co_return Status{};
}

std::vector<std::uint64_t> select_ids(const QueueState& q, const std::set<std::string>& names,
                                      std::uint32_t count) {
    std::vector<std::uint64_t> ids;
    const std::size_t want = std::max<std::uint32_t>(count, 1);
    for (const auto& [id, stored] : q.messages) {
        if (!names.empty() && !names.contains(stored.name))
            continue;
        ids.push_back(id);
        if (ids.size() >= want)
            break;
    }
    return ids;
}

QueueMessage to_message(std::uint64_t id, const QueueState::Stored& stored) {
    QueueMessage m;
    m.id = id;
    m.name = stored.name;
    m.body = stored.body;
    m.created_at = stored.created_at;
    return m;
}

// Deletes `ids` (already gone from memory) from KV with the new metadata.
Task<Status> persist_removal(ActorContext ctx, std::shared_ptr<QueueState> q,
                             std::vector<std::uint64_t> ids) {
    co_await acquire_writes(q);
    WriteGuard guard(q);
    std::vector<Bytes> deletes;
    deletes.reserve(ids.size());
    for (auto id : ids)
        deletes.push_back(keys::queue_message_key(id));
    std::vector<KvEntry> puts;
    puts.emplace_back(keys::to_bytes(keys::kQueueMetadata), metadata_bytes(*q));
    Status applied = co_await ctx.kv().apply_batch(std::move(puts), std::move(deletes));
    co_return applied;
}

// Takes up to `count` matching messages now (no wait). Plain receives remove them.
Task<Result<std::vector<QueueMessage>>> take(ActorContext ctx, std::set<std::string> names,
                                             std::uint32_t count, bool completable) {
    auto q = state_of(ctx);
    std::vector<std::uint64_t> ids = select_ids(*q, names, count);
    std::vector<QueueMessage> out;
    if (ids.empty())
        co_return out;
    out.reserve(ids.size());
    if (completable) {
        for (auto id : ids) {
            QueueMessage m = to_message(id, q->messages.at(id));
            auto completion = std::make_shared<QueueCompletion>();
            completion->ctx = ctx.downgrade();
            completion->message_id = id;
            completion->name = m.name;
            QueueAccess::attach(m, std::move(completion));
            out.push_back(std::move(m));
        }
        metrics_of(ctx).queue_messages_received(out.size());
        co_return out;
    }
    std::vector<std::pair<std::uint64_t, QueueState::Stored>> removed;
    for (auto id : ids) {
        auto node = q->messages.extract(id);
        out.push_back(to_message(id, node.mapped()));
        removed.emplace_back(id, std::move(node.mapped()));
    }
    Status persisted = co_await persist_removal(ctx, q, std::move(ids));
    if (!persisted.ok()) {
        for (auto& [id, stored] : removed)
            q->messages.emplace(id, std::move(stored));
        q->published.notify_waiters();
        log::warn("failed to delete received queue messages",
                  {{"actor_id", ctx.actor_id()}, {"error", persisted.error().to_string()}});
        co_return std::move(persisted).error();
    }
    metrics_of(ctx).queue_messages_received(out.size());
    record_depth(ctx, *q);
    co_return out;
}

class ActiveWait {
  public:
    ActiveWait(ActorContext ctx, std::shared_ptr<QueueState> q)
        : ctx_(std::move(ctx)), q_(std::move(q)), timer_(metrics_ptr(ctx_), UserTaskKind::QueueWait) {
        ++q_->active_waits;
        ctx_.inner()->queue_wait_active = true;
        ctx_.signal_activity();
    }
    ActiveWait(const ActiveWait&) = delete;
    ActiveWait& operator=(const ActiveWait&) = delete;
    ~ActiveWait() {
        if (q_->active_waits > 0)
            --q_->active_waits;
        ctx_.inner()->queue_wait_active = q_->active_waits > 0;
        ctx_.signal_activity();
    }

  private:
    ActorContext ctx_;
    std::shared_ptr<QueueState> q_;
    UserTaskTimer timer_;
};

enum class WaitOutcome : std::uint8_t { Notified, TimedOut, Aborted };

Task<WaitOutcome> wait_for_message(ActorContext ctx, std::optional<Instant> deadline,
                                   std::optional<rt::CancellationToken> signal) {
    auto q = state_of(ctx);
    rt::CancellationToken actor_abort = ctx.actor_abort_signal();
    if (actor_abort.is_cancelled() || (signal && signal->is_cancelled()))
        co_return WaitOutcome::Aborted;
    ActiveWait active(ctx, q);
    const std::size_t won = co_await rt::select(q->published, actor_abort, signal,
                                                rt::deadline(ctx.clock(), deadline));
    switch (won) {
        case 0:
            co_return WaitOutcome::Notified;
        case 3:
            co_return WaitOutcome::TimedOut;
        default:
            co_return WaitOutcome::Aborted;
    }
}

std::set<std::string> name_set(std::vector<std::string> names) {
    return std::set<std::string>(std::make_move_iterator(names.begin()),
                                 std::make_move_iterator(names.end()));
}

Task<Result<QueueMessage>> enqueue(ActorContext ctx, std::string name, Bytes body,
                                   std::optional<rt::OneshotSender<std::optional<Bytes>>> waiter) {
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return std::move(loaded).error();
    auto q = state_of(ctx);
    const ActorConfig& config = ctx.config();
    const std::int64_t created_at = ctx.clock().wall_now_ms();
    PersistedQueueMessage record;
    record.name = name;
    record.body = body;
    record.created_at = created_at;
    Bytes encoded = encode_queue_message(record);
    if (encoded.size() > config.max_queue_message_size)
        co_return errors_queue::message_too_large(encoded.size(), config.max_queue_message_size);

    co_await acquire_writes(q);
    WriteGuard guard(q);
    if (q->messages.size() >= config.max_queue_size)
        co_return errors_queue::full(config.max_queue_size);
    const std::uint64_t id = q->meta.next_id == 0 ? 1 : q->meta.next_id;
    if (waiter) {
        if (q->waiters.contains(id))
            co_return errors_queue::completion_waiter_conflict(id);
        q->waiters.emplace(id, std::move(*waiter));
    }
    PersistedQueueMetadata meta{id + 1, static_cast<std::uint32_t>(q->messages.size() + 1)};
    std::vector<KvEntry> entries;
    entries.emplace_back(keys::queue_message_key(id), std::move(encoded));
    entries.emplace_back(keys::to_bytes(keys::kQueueMetadata), encode_queue_metadata(meta));
    Status put = co_await ctx.kv().batch_put(std::move(entries));
    if (!put.ok()) {
        q->waiters.erase(id);
        log::warn("failed to persist queue message",
                  {{"actor_id", ctx.actor_id()}, {"queue", name}, {"error", put.error().to_string()}});
        co_return std::move(put).error();
    }
    q->meta = meta;
    q->messages.emplace(id, QueueState::Stored{name, body, created_at});
    metrics_of(ctx).queue_messages_sent(1);
    record_depth(ctx, *q);
    q->published.notify_waiters();
    QueueMessage out;
    out.id = id;
    out.name = std::move(name);
    out.body = std::move(body);
    out.created_at = created_at;
    co_return out;
}

Task<Status> complete_by_id(ActorContext ctx, std::uint64_t id, std::optional<Bytes> response) {
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return loaded;
    auto q = state_of(ctx);
    auto node = q->messages.extract(id);
    std::vector<std::uint64_t> ids{id};
    Status persisted = co_await persist_removal(ctx, q, std::move(ids));
    if (!persisted.ok()) {
        if (!node.empty())
            q->messages.insert(std::move(node));
        co_return persisted;
    }
    record_depth(ctx, *q);
    auto waiter = q->waiters.find(id);
    if (waiter != q->waiters.end()) {
        auto tx = std::move(waiter->second);
        q->waiters.erase(waiter);
        tx.send(std::move(response));
    }
    co_return Status{};
}

Task<Result<std::vector<QueueMessage>>> next_batch_impl(ActorContext ctx, QueueReceiveOpts opts) {
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return std::move(loaded).error();
    const std::set<std::string> names = name_set(std::move(opts.names));
    std::optional<Instant> deadline;
    if (opts.timeout)
        deadline = ctx.clock().now() + *opts.timeout;
    for (;;) {
        Result<std::vector<QueueMessage>> got = co_await take(ctx, names, opts.count, opts.completable);
        if (!got.ok() || !got->empty())
            co_return got;
        if (deadline && ctx.clock().now() >= *deadline)
            co_return std::vector<QueueMessage>{};
        const WaitOutcome outcome = co_await wait_for_message(ctx, deadline, opts.signal);
        if (outcome == WaitOutcome::TimedOut)
            co_return std::vector<QueueMessage>{};
        if (outcome == WaitOutcome::Aborted)
            co_return errors::actor_aborted();
    }
}

Task<Result<std::optional<Bytes>>> enqueue_and_wait_impl(ActorContext ctx, std::string name,
                                                         Bytes body, EnqueueAndWaitOpts opts) {
    if (opts.signal && opts.signal->is_cancelled())
        co_return errors::actor_aborted();
    auto [tx, rx] = rt::oneshot<std::optional<Bytes>>();
    Result<QueueMessage> sent = co_await enqueue(ctx, std::move(name), std::move(body),
                                                 std::optional(std::move(tx)));
    if (!sent.ok())
        co_return std::move(sent).error();
    const std::uint64_t id = sent->id;
    std::optional<Instant> deadline;
    if (opts.timeout)
        deadline = ctx.clock().now() + *opts.timeout;
    const std::size_t won =
        co_await rt::select(rx, opts.signal, rt::deadline(ctx.clock(), deadline));
    state_of(ctx)->waiters.erase(id);
    if (won == 1)
        co_return errors::actor_aborted();
    if (won == 2)
        co_return errors_queue::timed_out(
            static_cast<std::uint64_t>(opts.timeout.value_or(std::chrono::milliseconds(0)).count()));
    auto got = rx.try_recv();
    if (!got.has_value())
        co_return errors_queue::completion_waiter_dropped();
    co_return std::move(*got);
}

}  // namespace

Task<Status> QueueMessage::complete(std::optional<Bytes> response) const {
    auto completion = completion_;
    if (!completion)
        co_return errors_queue::complete_not_configured(name);
    if (completion->completed)
        co_return errors_queue::already_completed();
    auto ctx = completion->ctx.upgrade();
    if (!ctx)
        co_return errors::actor_not_ready();
    completion->completed = true;
    Status done = co_await complete_by_id(*ctx, completion->message_id, std::move(response));
    if (!done.ok())
        completion->completed = false;
    co_return done;
}

Task<Result<QueueMessage>> ActorQueue::send(std::string name, Bytes body) const {
    return enqueue(ctx_, std::move(name), std::move(body), std::nullopt);
}

Task<Result<std::optional<Bytes>>> ActorQueue::enqueue_and_wait(std::string name, Bytes body,
                                                                EnqueueAndWaitOpts opts) const {
    return enqueue_and_wait_impl(ctx_, std::move(name), std::move(body), std::move(opts));
}

Task<Result<std::vector<QueueMessage>>> ActorQueue::next_batch(QueueReceiveOpts opts) const {
    return next_batch_impl(ctx_, std::move(opts));
}

namespace {
Task<Result<std::optional<QueueMessage>>> first_of(Task<Result<std::vector<QueueMessage>>> batch) {
    Result<std::vector<QueueMessage>> got = co_await std::move(batch);
    if (!got.ok())
        co_return std::move(got).error();
    if (got->empty())
        co_return std::optional<QueueMessage>{};
    co_return std::optional<QueueMessage>(std::move(got->front()));
}

Task<Result<std::vector<QueueMessage>>> try_batch_impl(ActorContext ctx, QueueReceiveOpts opts) {
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return std::move(loaded).error();
    co_return co_await take(ctx, name_set(std::move(opts.names)), opts.count, opts.completable);
}

Task<Result<std::vector<QueueMessage>>> inspect_impl(ActorContext ctx) {
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return std::move(loaded).error();
    auto q = state_of(ctx);
    std::vector<QueueMessage> out;
    out.reserve(q->messages.size());
    for (const auto& [id, stored] : q->messages)
        out.push_back(to_message(id, stored));
    co_return out;
}
}  // namespace

Task<Result<std::optional<QueueMessage>>> ActorQueue::next(QueueReceiveOpts opts) const {
    opts.count = 1;
    return first_of(next_batch_impl(ctx_, std::move(opts)));
}

Task<Result<std::optional<QueueMessage>>> ActorQueue::try_next(QueueReceiveOpts opts) const {
    opts.count = 1;
    return first_of(try_batch_impl(ctx_, std::move(opts)));
}

Task<Result<std::vector<QueueMessage>>> ActorQueue::try_next_batch(QueueReceiveOpts opts) const {
    return try_batch_impl(ctx_, std::move(opts));
}

Task<Status> ActorQueue::reset() const {
    ActorContext ctx = ctx_;
    Status loaded = co_await ensure_loaded(ctx);
    if (!loaded.ok())
        co_return loaded;
    auto q = state_of(ctx);
    auto kept = std::exchange(q->messages, {});
    std::vector<std::uint64_t> ids;
    ids.reserve(kept.size());
    for (const auto& [id, stored] : kept)
        ids.push_back(id);
    Status persisted = co_await persist_removal(ctx, q, std::move(ids));
    if (!persisted.ok()) {
        q->messages.merge(kept);
        log::warn("failed to reset the queue",
                  {{"actor_id", ctx.actor_id()}, {"error", persisted.error().to_string()}});
        co_return persisted;
    }
    // Dropping a waiter's sender answers its sender with completion_waiter_dropped.
    q->waiters.clear();
    record_depth(ctx, *q);
    co_return Status{};
}

Task<Result<std::vector<QueueMessage>>> ActorQueue::inspect_messages() const {
    return inspect_impl(ctx_);
}

std::uint32_t ActorQueue::size() const noexcept {
    const auto& q = ctx_.inner()->queue;
    return q ? static_cast<std::uint32_t>(q->messages.size()) : 0;
}

std::size_t ActorQueue::active_waits() const noexcept {
    const auto& q = ctx_.inner()->queue;
    return q ? q->active_waits : 0;
}

}  // namespace rivetkit::core

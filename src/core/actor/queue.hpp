#pragma once
// The durable per-actor message queue (upstream rivetkit-core actor/queue.rs).
//
// Messages live in actor KV under [5,1,2] + u64 big-endian id (so KV order is FIFO order), the
// metadata (next id, size) under [5,1,1]; both are actor-persist v4 records, so a queue written by
// one host is read by another. The queue is loaded lazily on first use (the whole message list
// once, kept in memory afterwards: this actor is the only writer of its KV), so it survives sleep
// and a host restart.
//
// Semantics follow upstream:
//  - send: message too large (encoded record > max_queue_message_size) → queue/message_too_large;
//    size >= max_queue_size → queue/full. The message and the metadata are written in one put.
//  - enqueue_and_wait: the completion waiter is registered before the message is published; the
//    wait ends with the response given to complete(), queue/timed_out, or actor/aborted (only the
//    caller's signal aborts it, not the actor's abort: the surrounding request owns that).
//  - next / next_batch: FIFO among messages whose name is in `names` (empty = any); wait for one
//    until the timeout (then an empty result) or abort (caller's signal or the actor's abort
//    signal → actor/aborted). A plain receive deletes the messages; a completable one leaves them
//    in the queue until complete() (as upstream, a completable message not yet completed is seen
//    again by the next receive).
//  - try_next / try_next_batch: the same without waiting.
//  - While a receive waits, the actor's run handler does not block sleep (queue_wait_active).
//
// Writes (send, delete) are serialised so the metadata written last is the newest. Threading: the
// actor's io_context thread only.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "core/actor/context.hpp"
#include "runtime/cancellation.hpp"

namespace rivetkit::core {

namespace errors_queue {
Error full(std::uint32_t limit);
Error message_too_large(std::size_t size, std::uint32_t limit);
Error already_completed();
Error complete_not_configured(std::string_view name);
Error timed_out(std::uint64_t timeout_ms);
Error completion_waiter_conflict(std::uint64_t message_id);
Error completion_waiter_dropped();
}  // namespace errors_queue

struct QueueCompletion;
struct QueueAccess;

class QueueMessage {
  public:
    std::uint64_t id = 0;
    std::string name;
    Bytes body;  // CBOR as sent
    std::int64_t created_at = 0;

    bool is_completable() const noexcept { return completion_ != nullptr; }
    // Removes the message and hands `response` to an enqueue_and_wait caller, if any.
    // queue/complete_not_configured for a message not received as completable,
    // queue/already_completed the second time.
    boost::asio::awaitable<Status> complete(std::optional<Bytes> response = std::nullopt) const;

  private:
    friend struct QueueAccess;
    std::shared_ptr<QueueCompletion> completion_;
};

struct QueueReceiveOpts {
    std::vector<std::string> names;  // empty: any name
    std::uint32_t count = 1;         // next_batch / try_next_batch only
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<rt::CancellationToken> signal;
    bool completable = false;
};

struct EnqueueAndWaitOpts {
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<rt::CancellationToken> signal;
};

// A cheap handle; all state lives on the actor context.
class ActorQueue {
  public:
    template <typename T>
    using Task = boost::asio::awaitable<T>;

    explicit ActorQueue(ActorContext ctx) : ctx_(std::move(ctx)) {}

    Task<Result<QueueMessage>> send(std::string name, Bytes body) const;
    Task<Result<std::optional<Bytes>>> enqueue_and_wait(std::string name, Bytes body,
                                                        EnqueueAndWaitOpts opts) const;
    Task<Result<std::optional<QueueMessage>>> next(QueueReceiveOpts opts) const;
    Task<Result<std::vector<QueueMessage>>> next_batch(QueueReceiveOpts opts) const;
    Task<Result<std::optional<QueueMessage>>> try_next(QueueReceiveOpts opts) const;
    Task<Result<std::vector<QueueMessage>>> try_next_batch(QueueReceiveOpts opts) const;
    // Every message in FIFO order, nothing removed.
    Task<Result<std::vector<QueueMessage>>> inspect_messages() const;
    // Removes every message (the inspector's DELETE /inspector/queue); senders still waiting for
    // a completion are answered with queue/completion_waiter_dropped. On a storage failure
    // nothing is removed.
    Task<Status> reset() const;

    std::uint32_t max_size() const noexcept { return ctx_.config().max_queue_size; }
    // Messages in the queue (0 before the queue was first used in this generation).
    std::uint32_t size() const noexcept;
    // Receives currently waiting for a message.
    std::size_t active_waits() const noexcept;

    const ActorContext& context() const noexcept { return ctx_; }

  private:
    ActorContext ctx_;
};

inline ActorQueue queue_of(const ActorContext& ctx) {
    return ActorQueue(ctx);
}

}  // namespace rivetkit::core

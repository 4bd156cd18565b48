#pragma once
// The actor's durable queue in the typed API (upstream's `c.queue`): messages sent by clients
// (`handle.send(name, body)` in the official client, POST /queue/{name}) or by the actor itself,
// persisted in actor KV so they survive sleep and host restarts, received in FIFO order.
//
//   .run([](rivetkit::ActorContext<State>& c) -> boost::asio::awaitable<void> {
//       rivetkit::Queue queue = c.queue();  // named: no destructible temporaries in co_await
//       for (;;) {
//           rivetkit::QueueReceiveOptions opts;
//           opts.names = {"jobs"};
//           opts.completable = true;
//           std::optional<rivetkit::QueueMessage> m = co_await queue.next(std::move(opts));
//           if (!m) break;
//           c.state().done += m->body_as<int>();
//           Json reply = "ok";
//           co_await m->complete(std::move(reply));
//       }
//   })
//
// Failures throw ErrorException with upstream's codes (queue/full, queue/message_too_large,
// queue/timed_out, queue/already_completed, queue/complete_not_configured,
// queue/previous_message_not_completed, actor/aborted). A
// receive waits until a message arrives, the timeout passes (then nullopt / empty) or the actor
// starts shutting down (actor/aborted; a run handler ending that way is a normal exit). While a
// run handler waits in a receive, the actor may go to sleep.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cancellation.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

namespace core {
class ActorContext;
class QueueMessage;
}  // namespace core

namespace detail {
// The completable messages one handler call received and has not completed yet (shared by the
// Queue views of that call and their messages).
struct PendingCompletions {
    std::vector<std::uint64_t> ids;
};
}  // namespace detail

struct QueueReceiveOptions {
    std::vector<std::string> names;  // empty: any name
    std::optional<std::chrono::milliseconds> timeout;
    std::optional<rt::CancellationToken> signal;
    // Keep the message queued until complete() (its response goes to a waiting sender).
    bool completable = false;
    std::uint32_t count = 1;  // next_batch / try_next_batch
};

class QueueMessage {
  public:
    std::uint64_t id = 0;
    std::string name;
    Json body;
    std::int64_t created_at = 0;

    template <typename T>
    T body_as() const {
        return body.template get<T>();
    }
    bool completable() const noexcept;
    // Removes the message and answers a sender waiting with wait=true.
    boost::asio::awaitable<void> complete(Json response = nullptr) const;

    explicit QueueMessage(std::shared_ptr<const core::QueueMessage> core,
                          std::shared_ptr<detail::PendingCompletions> pending = nullptr);

  private:
    std::shared_ptr<const core::QueueMessage> core_;
    std::shared_ptr<detail::PendingCompletions> pending_;
};

class Queue {
  public:
    // `pending`: the call's received-but-not-completed messages (ActorContext::queue() shares
    // one set between the views of a handler call). While one is pending, a receive throws
    // queue/previous_message_not_completed, as upstream's runtime does.
    explicit Queue(const core::ActorContext& ctx,
                   std::shared_ptr<detail::PendingCompletions> pending = nullptr);

    // Enqueues a message; returns its id.
    boost::asio::awaitable<std::uint64_t> send(std::string name, Json body) const;
    // Enqueues and waits for a receiver to complete() it; its response (null when none).
    boost::asio::awaitable<Json> enqueue_and_wait(
        std::string name, Json body,
        std::optional<std::chrono::milliseconds> timeout = std::nullopt) const;
    boost::asio::awaitable<std::optional<QueueMessage>> next(QueueReceiveOptions opts = {}) const;
    boost::asio::awaitable<std::vector<QueueMessage>> next_batch(QueueReceiveOptions opts) const;
    boost::asio::awaitable<std::optional<QueueMessage>> try_next(
        QueueReceiveOptions opts = {}) const;
    boost::asio::awaitable<std::vector<QueueMessage>> try_next_batch(
        QueueReceiveOptions opts) const;

    std::uint32_t size() const;
    std::uint32_t max_size() const;

  private:
    std::shared_ptr<core::ActorContext> ctx_;
    std::shared_ptr<detail::PendingCompletions> pending_;
};

}  // namespace rivetkit

// The typed queue: CBOR bodies as Json over core's ActorQueue, errors thrown.

#include "rivetkit/queue.hpp"

#include <algorithm>
#include <utility>

#include "base/error.hpp"
#include "core/actor/context.hpp"
#include "core/actor/queue.hpp"

namespace rivetkit {
namespace {

Json decode_body(const Bytes& cbor) {
    if (cbor.empty())
        return nullptr;
    auto value = from_cbor(cbor);
    if (!value.ok())
        throw ErrorException(errors::protocol_invalid_persisted_data("queue message body: " +
                                                                     value.error().message()));
    return std::move(value).value();
}

core::QueueReceiveOpts to_core(QueueReceiveOptions opts) {
    core::QueueReceiveOpts out;
    out.names = std::move(opts.names);
    out.count = opts.count;
    out.timeout = opts.timeout;
    out.signal = std::move(opts.signal);
    out.completable = opts.completable;
    return out;
}

Error previous_message_not_completed() {
    return Error("queue", "previous_message_not_completed",
                 "Previous completable queue message is not completed. Call "
                 "`message.complete(...)` before receiving the next message.")
        .make_public(400);
}

std::vector<QueueMessage> wrap(std::vector<core::QueueMessage> messages, bool completable,
                               const std::shared_ptr<detail::PendingCompletions>& pending) {
    std::vector<QueueMessage> out;
    out.reserve(messages.size());
    for (auto& m : messages) {
        if (completable && pending)
            pending->ids.push_back(m.id);
        out.emplace_back(std::make_shared<const core::QueueMessage>(std::move(m)),
                         completable ? pending : nullptr);
    }
    return out;
}

boost::asio::awaitable<std::vector<QueueMessage>> receive(
    core::ActorQueue queue, core::QueueReceiveOpts opts, bool wait,
    std::shared_ptr<detail::PendingCompletions> pending) {
    if (pending && !pending->ids.empty())
        throw ErrorException(previous_message_not_completed());
    const bool completable = opts.completable;
    Result<std::vector<core::QueueMessage>> got = std::vector<core::QueueMessage>{};
    if (wait)
        got = co_await queue.next_batch(std::move(opts));
    else
        got = co_await queue.try_next_batch(std::move(opts));
    if (!got.ok())
        throw ErrorException(std::move(got).error());
    co_return wrap(std::move(got).value(), completable, pending);
}

boost::asio::awaitable<std::optional<QueueMessage>> receive_one(
    core::ActorQueue queue, core::QueueReceiveOpts opts, bool wait,
    std::shared_ptr<detail::PendingCompletions> pending) {
    opts.count = 1;
    std::vector<QueueMessage> got =
        co_await receive(std::move(queue), std::move(opts), wait, std::move(pending));
    if (got.empty())
        co_return std::nullopt;
    co_return std::optional<QueueMessage>(std::move(got.front()));
}

boost::asio::awaitable<std::uint64_t> send_impl(core::ActorQueue queue, std::string name,
                                                Bytes body) {
    Result<core::QueueMessage> sent = co_await queue.send(std::move(name), std::move(body));
    if (!sent.ok())
        throw ErrorException(std::move(sent).error());
    co_return sent->id;
}

boost::asio::awaitable<Json> enqueue_and_wait_impl(core::ActorQueue queue, std::string name,
                                                   Bytes body, core::EnqueueAndWaitOpts opts) {
    Result<std::optional<Bytes>> got =
        co_await queue.enqueue_and_wait(std::move(name), std::move(body), std::move(opts));
    if (!got.ok())
        throw ErrorException(std::move(got).error());
    if (!got->has_value())
        co_return Json(nullptr);
    co_return decode_body(**got);
}

boost::asio::awaitable<void> complete_impl(std::shared_ptr<const core::QueueMessage> message,
                                           std::optional<Bytes> response,
                                           std::shared_ptr<detail::PendingCompletions> pending) {
    Status done = co_await message->complete(std::move(response));
    if (!done.ok())
        throw ErrorException(std::move(done).error());
    if (pending)
        std::erase(pending->ids, message->id);
}

}  // namespace

QueueMessage::QueueMessage(std::shared_ptr<const core::QueueMessage> core,
                           std::shared_ptr<detail::PendingCompletions> pending)
    : id(core->id),
      name(core->name),
      body(decode_body(core->body)),
      created_at(core->created_at),
      core_(std::move(core)),
      pending_(std::move(pending)) {}

bool QueueMessage::completable() const noexcept {
    return core_->is_completable();
}

boost::asio::awaitable<void> QueueMessage::complete(Json response) const {
    std::optional<Bytes> encoded;
    if (!response.is_null())
        encoded = to_cbor(response);
    return complete_impl(core_, std::move(encoded), pending_);
}

Queue::Queue(const core::ActorContext& ctx, std::shared_ptr<detail::PendingCompletions> pending)
    : ctx_(std::make_shared<core::ActorContext>(ctx)), pending_(std::move(pending)) {}

boost::asio::awaitable<std::uint64_t> Queue::send(std::string name, Json body) const {
    return send_impl(core::ActorQueue(*ctx_), std::move(name), to_cbor(body));
}

boost::asio::awaitable<Json> Queue::enqueue_and_wait(
    std::string name, Json body, std::optional<std::chrono::milliseconds> timeout) const {
    core::EnqueueAndWaitOpts opts;
    opts.timeout = timeout;
    return enqueue_and_wait_impl(core::ActorQueue(*ctx_), std::move(name), to_cbor(body),
                                 std::move(opts));
}

boost::asio::awaitable<std::optional<QueueMessage>> Queue::next(QueueReceiveOptions opts) const {
    return receive_one(core::ActorQueue(*ctx_), to_core(std::move(opts)), true, pending_);
}

boost::asio::awaitable<std::vector<QueueMessage>> Queue::next_batch(
    QueueReceiveOptions opts) const {
    return receive(core::ActorQueue(*ctx_), to_core(std::move(opts)), true, pending_);
}

boost::asio::awaitable<std::optional<QueueMessage>> Queue::try_next(
    QueueReceiveOptions opts) const {
    return receive_one(core::ActorQueue(*ctx_), to_core(std::move(opts)), false, pending_);
}

boost::asio::awaitable<std::vector<QueueMessage>> Queue::try_next_batch(
    QueueReceiveOptions opts) const {
    return receive(core::ActorQueue(*ctx_), to_core(std::move(opts)), false, pending_);
}

std::uint32_t Queue::size() const {
    return core::ActorQueue(*ctx_).size();
}

std::uint32_t Queue::max_size() const {
    return core::ActorQueue(*ctx_).max_size();
}

}  // namespace rivetkit

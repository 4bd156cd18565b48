#include "runtime/suspension.hpp"

#include "runtime/defer.hpp"
#include "runtime/ring_buffer.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace asio = boost::asio;

namespace rivetkit::rt::detail {

// Per execution context: remembers pending Suspensions so shutdown can abandon them, and runs the
// resumptions of woken ones.
//
// Resumptions go through one run queue instead of one asio::post each. asio polls its reactor
// (an epoll_wait syscall) once per pass over its handler queue, and a request crosses several
// coroutines in a row (tunnel reader, actor loop, action, reply writer), each hop a wake. Posted
// one by one, every hop was a pass and a syscall. Here the queue is drained by a single posted
// handler that also runs the wakes made while it drains, in FIFO order, up to kDrainBatch
// resumptions; then it posts itself again, so sockets and timers are still polled between
// batches and a pair of coroutines waking each other forever cannot starve them.
//
// Order: resumptions run in the order of their wakes. Against plain asio handlers the order is
// per pass: a wake made during a drain runs in that drain, before a handler posted earlier in it.
class PendingWaits final : public asio::execution_context::service {
public:
    static asio::execution_context::id id;
    static constexpr std::size_t kDrainBatch = 64;

    explicit PendingWaits(asio::execution_context& context)
        : asio::execution_context::service(context) {}

    // Every wait looks its context's service up. asio's lookup takes the registry's mutex and
    // walks its list, so each thread remembers the last one. A context destroyed and another
    // made at the same address would hand out a dead service: each destroyed service moves
    // `generation_` on, which turns every thread's entry stale.
    static PendingWaits& of(const asio::any_io_executor& executor) {
        auto& context = asio::query(executor, asio::execution::context_as<asio::execution_context&>);
        struct Last {
            asio::execution_context* context = nullptr;
            PendingWaits* service = nullptr;
            std::uint64_t generation = 0;
        };
        thread_local Last last;
        const std::uint64_t generation = generation_.load(std::memory_order_acquire);
        if (last.context != &context || last.generation != generation) {
            last = Last{&context, &asio::use_service<PendingWaits>(context), generation};
        }
        return *last.service;
    }

    ~PendingWaits() override { generation_.fetch_add(1, std::memory_order_acq_rel); }

    // While any wait is pending the context has outstanding work (one guard for all of them),
    // as it would for asio's own pending operations: run() does not return under a waiter.
    void add(Suspension& s, const asio::any_io_executor& executor) {
        if (!executor_) executor_.emplace(executor);
        if (pending_++ == 0)
            work_ = asio::prefer(*executor_, asio::execution::outstanding_work.tracked);
        s.registry_ = this;
        s.prev_ = nullptr;
        s.next_ = head_;
        if (head_ != nullptr) head_->prev_ = &s;
        head_ = &s;
    }

    void remove(Suspension& s) noexcept {
        if (s.registry_ != this) return;
        if (s.prev_ != nullptr) {
            s.prev_->next_ = s.next_;
        } else {
            head_ = s.next_;
        }
        if (s.next_ != nullptr) s.next_->prev_ = s.prev_;
        s.registry_ = nullptr;
        s.prev_ = s.next_ = nullptr;
        if (--pending_ == 0) work_ = asio::any_io_executor();
    }

    // Queues the resumption; it runs from a posted handler, never inside this call. Only after
    // add(), which gave this service its executor.
    void schedule(Suspension::Handler handler, boost::system::error_code ec,
                  asio::cancellation_state cancellation) {
        if (shut_down_) return;  // the handler dies here, as asio's own ops do after shutdown
        ready_.push_back(
            Ready{std::move(handler), ec, std::move(cancellation), {}, nullptr, nullptr});
        post_drain();
    }

    // rt::defer's entry: a callback in the same queue, in the same order; `owned` keeps its
    // target alive until then (defer_owned), else `target` is only looked at then.
    void schedule(const asio::any_io_executor& executor, std::weak_ptr<void> target,
                  std::shared_ptr<void> owned, DeferredFn fn) {
        if (shut_down_) return;
        if (!executor_) executor_.emplace(executor);
        ready_.push_back(Ready{{}, {}, {}, std::move(target), std::move(owned), fn});
        post_drain();
    }

    // RunQueueHold (defer.hpp): while any hold is on, queued work waits for the last release
    // instead of a posted drain.
    void hold() noexcept { ++holds_; }
    void release(bool run_here) {
        if (holds_ == 0 || --holds_ > 0 || !held_work_) return;
        held_work_ = false;
        if (draining_ || drain_posted_ || ready_.empty() || shut_down_) return;
        if (run_here)
            drain(*executor_);
        else
            post_drain();
    }

private:
    // A woken wait's resumption (handler), or a deferred callback (fn).
    struct Ready {
        Suspension::Handler handler;
        boost::system::error_code ec;
        asio::cancellation_state cancellation;  // the waiting coroutine's
        std::weak_ptr<void> target;
        std::shared_ptr<void> owned;
        DeferredFn fn;
    };

    // The posted drain keeps the context's work outstanding while anything is queued.
    void post_drain() {
        if (draining_ || drain_posted_) return;
        if (holds_ > 0) {
            held_work_ = true;
            return;
        }
        drain_posted_ = true;
        asio::post(*executor_, [this, executor = *executor_] { drain(executor); });
    }

    void drain(const asio::any_io_executor& executor) {
        drain_posted_ = false;
        draining_ = true;
        // io_context's executor catches what an inline resumption throws and rethrows it from
        // run() after this handler; for an executor that lets it through, this still gives what
        // is queued another pass.
        struct Finish {
            PendingWaits& self;
            const asio::any_io_executor& executor;
            ~Finish() {
                self.draining_ = false;
                if (self.ready_.empty() || self.shut_down_ || self.drain_posted_) return;
                self.drain_posted_ = true;
                asio::post(executor, [s = &self, executor = executor] { s->drain(executor); });
            }
        } finish{*this, executor};
        for (std::size_t n = 0; n < kDrainBatch && !ready_.empty(); ++n) {
            Ready next = ready_.pop_front();
            if (next.fn != nullptr) {
                if (next.owned)
                    next.fn(next.owned);
                else if (std::shared_ptr<void> target = next.target.lock())
                    next.fn(target);
                continue;
            }
            // Cancelled after its wake, before it runs: the wait fails (Suspension's header).
            if (!next.ec && next.cancellation.cancelled() != asio::cancellation_type::none)
                next.ec = asio::error::operation_aborted;
            // To the handler's own executor: inline here when that is this context's thread.
            asio::dispatch(asio::append(std::move(next.handler), next.ec));
        }
    }

    void shutdown() override {
        shut_down_ = true;
        // Abandoning destroys coroutine frames, which may complete or abandon other entries.
        while (head_ != nullptr || !ready_.empty()) {
            if (head_ != nullptr) {
                Suspension* s = head_;
                remove(*s);
                s->abandon();
            } else {
                Ready doomed = ready_.pop_front();
            }
        }
    }

    Suspension* head_ = nullptr;
    std::size_t pending_ = 0;
    std::optional<asio::any_io_executor> executor_;  // the first waiter's: posts the drains
    asio::any_io_executor work_;
    RingBuffer<Ready> ready_;
    bool draining_ = false;
    bool drain_posted_ = false;
    bool shut_down_ = false;
    std::size_t holds_ = 0;
    bool held_work_ = false;  // something was queued while held
    static inline std::atomic<std::uint64_t> generation_{0};
};

asio::execution_context::id PendingWaits::id;

}  // namespace rivetkit::rt::detail

namespace rivetkit::rt {

void defer(const asio::any_io_executor& executor, std::weak_ptr<void> target, DeferredFn fn) {
    detail::PendingWaits::of(executor).schedule(executor, std::move(target), nullptr, fn);
}

void defer_owned(const asio::any_io_executor& executor, std::shared_ptr<void> target,
                 DeferredFn fn) {
    detail::PendingWaits::of(executor).schedule(executor, {}, std::move(target), fn);
}

RunQueueHold::RunQueueHold(const asio::any_io_executor& executor)
    : waits_(&detail::PendingWaits::of(executor)) {}

RunQueueHold::~RunQueueHold() {
    if (std::exchange(held_, false)) waits_->release(false);
}

void RunQueueHold::hold() {
    if (std::exchange(held_, true)) return;
    waits_->hold();
}

void RunQueueHold::run() {
    if (std::exchange(held_, false)) waits_->release(true);
}

}  // namespace rivetkit::rt

namespace rivetkit::rt::detail {

Suspension::~Suspension() {
    if (registry_ != nullptr) registry_->remove(*this);
}

void Suspension::wake() noexcept {
    woken_ = true;
    if (!handler_) return;
    // Not inside the slot's handler here, so the slot can be cleared; a cancellation arriving
    // after this point is seen by wait() through the coroutine's cancellation state instead.
    auto slot = asio::get_associated_cancellation_slot(*handler_);
    if (slot.is_connected()) slot.clear();
    complete({});
}

void Suspension::start(Handler handler, const asio::any_io_executor& executor,
                       asio::cancellation_state state) {
    handler_.emplace(std::move(handler));
    cancellation_ = std::move(state);
    PendingWaits::of(executor).add(*this, executor);
    if (woken_) {  // woken before it waited: resumes from the run queue at once
        complete({});
        return;
    }
    auto slot = asio::get_associated_cancellation_slot(*handler_);
    if (slot.is_connected()) {
        slot.assign([this](asio::cancellation_type) { complete(asio::error::operation_aborted); });
    }
}

// A pending wait is always registered (start() did it; shutdown's abandon() drops the handler
// before it unregisters), so the resumption always goes through the service's run queue.
void Suspension::complete(boost::system::error_code ec) noexcept {
    if (!handler_ || registry_ == nullptr) return;
    PendingWaits* service = registry_;
    service->remove(*this);
    Handler handler(std::move(*handler_));
    handler_.reset();
    service->schedule(std::move(handler), ec, std::exchange(cancellation_, {}));
}

void Suspension::abandon() noexcept {
    if (!handler_) return;
    Handler doomed(std::move(*handler_));
    handler_.reset();
}

template <typename AwaitableHandler>
void Suspension::begin(AwaitableHandler handler) {
    // use_awaitable's handler is its coroutine's thread: it knows the coroutine's cancellation
    // state (an asio detail member; a Boost without it fails to compile here, not at run time).
    static_assert(requires { handler.get_cancellation_state(); },
                  "rt::Suspension reads the waiting coroutine's cancellation state");
    asio::cancellation_state state = handler.get_cancellation_state();
    // The coroutine's own executor (its handler's), before the handler is type-erased.
    const asio::any_io_executor executor = asio::get_associated_executor(handler);
    start(Handler(std::move(handler)), executor, std::move(state));
}

asio::awaitable<void> Suspension::wait() {
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(boost::system::error_code)>(
        [this](auto handler) { begin(std::move(handler)); }, asio::use_awaitable);
}

// wait_on's operation. asio keeps the initiation in its operation's frame until the waiter has
// resumed, so the node and the suspension live there; it is moved only before it starts.
struct ListWait {
    WaitList* list;
    Suspension suspension;
    WaitNode node{suspension};

    explicit ListWait(WaitList& l) noexcept : list(&l) {}
    ListWait(ListWait&& other) noexcept : list(other.list) {}
    ListWait& operator=(ListWait&&) = delete;

    template <typename AwaitableHandler>
    void operator()(AwaitableHandler handler) {
        list->push(node);
        suspension.begin(std::move(handler));
    }
};

asio::awaitable<void> wait_on(WaitList& list) {
    return asio::async_initiate<const asio::use_awaitable_t<>&, void(boost::system::error_code)>(
        ListWait(list), asio::use_awaitable);
}

}  // namespace rivetkit::rt::detail

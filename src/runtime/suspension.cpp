#include "runtime/suspension.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

namespace asio = boost::asio;

namespace rivetkit::rt::detail {

// Owns nothing; remembers pending Suspensions so shutdown can abandon them.
class PendingWaits final : public asio::execution_context::service {
public:
    static asio::execution_context::id id;

    explicit PendingWaits(asio::execution_context& context)
        : asio::execution_context::service(context) {}

    // No caching: a context destroyed and another created at the same address would hand out
    // a dead service.
    static PendingWaits& of(const asio::any_io_executor& executor) {
        auto& context = asio::query(executor, asio::execution::context_as<asio::execution_context&>);
        return asio::use_service<PendingWaits>(context);
    }

    void add(Suspension& s) noexcept {
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
    }

private:
    void shutdown() override {
        // Abandoning destroys coroutine frames, which may complete or abandon other entries.
        while (head_ != nullptr) {
            Suspension* s = head_;
            remove(*s);
            s->abandon();
        }
    }

    Suspension* head_ = nullptr;
};

asio::execution_context::id PendingWaits::id;

Suspension::Suspension(asio::any_io_executor executor) : executor_(std::move(executor)) {}

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

void Suspension::start(Handler handler) {
    handler_.emplace(std::move(handler));
    work_ = asio::prefer(executor_, asio::execution::outstanding_work.tracked);
    PendingWaits::of(executor_).add(*this);
    auto slot = asio::get_associated_cancellation_slot(*handler_);
    if (slot.is_connected()) {
        slot.assign([this](asio::cancellation_type) { complete(asio::error::operation_aborted); });
    }
}

void Suspension::complete(boost::system::error_code ec) noexcept {
    if (!handler_) return;
    if (registry_ != nullptr) registry_->remove(*this);
    Handler handler(std::move(*handler_));
    handler_.reset();
    // post() still hands the handler to its own associated executor.
    asio::post(executor_, asio::append(std::move(handler), ec));
    work_ = asio::any_io_executor();
}

void Suspension::abandon() noexcept {
    if (!handler_) return;
    work_ = asio::any_io_executor();
    Handler doomed(std::move(*handler_));
    handler_.reset();
}

asio::awaitable<void> Suspension::wait() {
    if (!woken_) {
        auto initiate = [this](auto handler) { start(Handler(std::move(handler))); };
        co_await asio::async_initiate<const asio::use_awaitable_t<>&,
                                      void(boost::system::error_code)>(initiate,
                                                                       asio::use_awaitable);
    }
    asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) {
        throw boost::system::system_error(asio::error::operation_aborted, "rt wait");
    }
}

asio::awaitable<void> wait_on(WaitList& list) {
    asio::any_io_executor executor = co_await asio::this_coro::executor;
    Suspension suspension(executor);
    WaitNode node(suspension);
    list.push(node);
    co_await suspension.wait();
}

}  // namespace rivetkit::rt::detail

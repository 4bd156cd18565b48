#include "runtime/notify.hpp"

#include "runtime/suspension.hpp"

namespace rivetkit::rt {

namespace {

boost::asio::awaitable<void> notified_since(Notify& notify, std::uint64_t epoch) {
    for (;;) {
        if (notify.try_acquire()) co_return;
        if (notify.epoch() != epoch) co_return;
        co_await detail::wait_on(notify.waiters());
    }
}

}  // namespace

void Notify::notify_one() noexcept {
    permit_ = true;
    waiters_.wake_all();
}

void Notify::notify_waiters() noexcept {
    ++epoch_;
    waiters_.wake_all();
}

bool Notify::try_acquire() noexcept {
    if (!permit_) return false;
    permit_ = false;
    return true;
}

boost::asio::awaitable<void> Notify::notified() { return notified_since(*this, epoch_); }

}  // namespace rivetkit::rt

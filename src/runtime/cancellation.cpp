#include "runtime/cancellation.hpp"

#include <vector>

#include "runtime/suspension.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

namespace detail {

struct TokenState {
    bool cancelled = false;
    WaitList waiters;
    // Weak: a child nobody holds any more needs no cancelling.
    std::vector<std::weak_ptr<TokenState>> children;

    void cancel() {
        if (cancelled) return;
        cancelled = true;
        waiters.wake_all();
        auto kids = std::move(children);
        children.clear();
        for (auto& weak : kids) {
            if (auto child = weak.lock()) child->cancel();
        }
    }
};

}  // namespace detail

namespace {

boost::asio::awaitable<void> wait_cancelled(std::shared_ptr<detail::TokenState> st) {
    while (!st->cancelled) co_await detail::wait_on(st->waiters);
}

}  // namespace

CancellationToken::CancellationToken() : st_(std::make_shared<detail::TokenState>()) {}

void CancellationToken::cancel() const { st_->cancel(); }

bool CancellationToken::is_cancelled() const noexcept { return st_->cancelled; }

boost::asio::awaitable<void> CancellationToken::cancelled() const { return wait_cancelled(st_); }

CancellationToken CancellationToken::child_token() const {
    auto child = std::make_shared<detail::TokenState>();
    if (st_->cancelled) {
        child->cancelled = true;
    } else {
        std::erase_if(st_->children, [](const auto& weak) { return weak.expired(); });
        st_->children.push_back(child);
    }
    return CancellationToken(std::move(child));
}

detail::WaitList& CancellationToken::waiters() const noexcept { return st_->waiters; }

}  // namespace rivetkit::rt

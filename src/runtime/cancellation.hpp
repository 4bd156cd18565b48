#pragma once
// CancellationToken (tokio_util::sync::CancellationToken): a shared, sticky "stop" flag.
//
// Copies share one state. Cancelling a token cancels every child made from it (transitively);
// cancelling a child leaves the parent alone. A child made from an already-cancelled token starts
// cancelled. Single-threaded (see wait_list.hpp).

#include <memory>

#include <boost/asio/awaitable.hpp>

namespace rivetkit::rt {

namespace detail {
struct TokenState;
class WaitList;
}  // namespace detail

class CancellationToken {
public:
    CancellationToken();

    void cancel() const;
    bool is_cancelled() const noexcept;
    // Completes once the token is cancelled.
    boost::asio::awaitable<void> cancelled() const;
    CancellationToken child_token() const;

    detail::WaitList& waiters() const noexcept;

private:
    explicit CancellationToken(std::shared_ptr<detail::TokenState> st) : st_(std::move(st)) {}
    std::shared_ptr<detail::TokenState> st_;
};

}  // namespace rivetkit::rt

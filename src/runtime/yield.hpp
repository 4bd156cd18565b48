#pragma once
// yield_now (tokio::task::yield_now): lets every handler already queued run before resuming.

#include <boost/asio/awaitable.hpp>

namespace rivetkit::rt {

boost::asio::awaitable<void> yield_now();

}  // namespace rivetkit::rt

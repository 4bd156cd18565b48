#include "runtime/yield.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace rivetkit::rt {

boost::asio::awaitable<void> yield_now() {
    boost::asio::any_io_executor executor = co_await boost::asio::this_coro::executor;
    co_await boost::asio::post(executor, boost::asio::use_awaitable);
}

}  // namespace rivetkit::rt

#pragma once
// The client's shared state (behind Client, every ActorHandle and Connection) and the helpers
// the handle and the connection share: gateway URLs, headers, blocking on the executor.

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/use_future.hpp>

#include "client/transport.hpp"
#include "client/wire.hpp"
#include "rivetkit/client.hpp"

namespace rivetkit::client::detail {

wire::Encoding to_wire(Encoding encoding) noexcept;

struct ClientState {
    ClientConfig config;
    Result<Endpoint> endpoint = Error("client", "invalid_endpoint", "unset");
    boost::asio::any_io_executor executor;
    std::unique_ptr<boost::asio::io_context> own_io;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
    std::thread thread;
    std::atomic<bool> closed{false};

    std::mutex mutex;
    std::vector<std::weak_ptr<ConnectionState>> connections;
    std::vector<std::weak_ptr<RawSocketState>> raw_sockets;

    // Headers for gateway requests (token, user headers).
    Headers gateway_headers() const;
    // Headers for engine API requests.
    Headers api_headers() const;
    // "/gateway/..." target for `path` ("/action/x", "/connect", "/request/...").
    Result<std::string> gateway_target(ActorHandle::Method method, const std::string& name,
                                       const Key& key, const std::string& actor_id,
                                       const std::optional<Json>& input,
                                       const std::optional<std::string>& region,
                                       const std::string& path) const;
    boost::asio::awaitable<Result<Json>> api(std::string method, std::string path_and_query,
                                             std::optional<Json> body);

    bool on_executor_thread() const;
};

// use_future needs a default-constructible result.
template <typename T>
boost::asio::awaitable<std::optional<Result<T>>> optional_result(
    boost::asio::awaitable<Result<T>> work) {
    auto out = co_await std::move(work);
    co_return std::optional<Result<T>>(std::move(out));
}

template <typename T>
Result<T> block_on(ClientState& state, boost::asio::awaitable<Result<T>> work) {
    if (state.closed.load())
        return Error("client", "closed", "the client was destroyed");
    if (state.on_executor_thread())
        return Error("client", "blocking_on_executor",
                     "a blocking client call was made on the client's executor thread; use the "
                     "_async form");
    try {
        auto future = boost::asio::co_spawn(state.executor, optional_result(std::move(work)),
                                            boost::asio::use_future);
        auto out = future.get();
        if (!out)
            return Error("client", "internal_error", "the client call ended without a result");
        return std::move(*out);
    } catch (...) {
        return error_from_exception(std::current_exception());
    }
}

}  // namespace rivetkit::client::detail

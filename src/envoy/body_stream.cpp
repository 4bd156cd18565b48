#include "envoy/body_stream.hpp"

#include "envoy/state.hpp"

namespace rivetkit::envoy {

HttpBodyStream::HttpBodyStream(std::weak_ptr<detail::EnvoyState> state, TunnelId id)
    : state_(std::move(state)), id_(id) {}

boost::asio::awaitable<Result<std::optional<Bytes>>> HttpBodyStream::next() {
    for (;;) {
        if (!chunks_.empty()) {
            Bytes chunk = std::move(chunks_.front());
            chunks_.pop_front();
            read_ += chunk.size();
            // Credit only matters while more body is to come.
            if (!complete()) {
                if (auto st = state_.lock())
                    detail::credit_request_body(*st, id_, read_);
            }
            co_return std::optional<Bytes>(std::move(chunk));
        }
        if (error_)
            co_return *error_;
        if (finished_)
            co_return std::optional<Bytes>();
        co_await ready_.notified();
    }
}

boost::asio::awaitable<Result<Bytes>> HttpBodyStream::read_all() {
    Bytes out;
    for (;;) {
        auto piece = co_await next();
        if (!piece.ok())
            co_return std::move(piece).error();
        if (!*piece)
            co_return out;
        out.insert(out.end(), (*piece)->begin(), (*piece)->end());
    }
}

void HttpBodyStream::push(Bytes chunk) {
    if (complete())
        return;
    if (!chunk.empty())
        chunks_.push_back(std::move(chunk));
    ready_.notify_one();
}

void HttpBodyStream::finish() {
    if (complete())
        return;
    finished_ = true;
    ready_.notify_one();
}

void HttpBodyStream::fail(Error error) {
    if (complete())
        return;
    error_ = std::move(error);
    ready_.notify_one();
}

}  // namespace rivetkit::envoy

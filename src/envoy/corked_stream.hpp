#pragma once
// CorkedStream<Next>: a stream layer that lets several messages leave in one socket write (the
// WebSocket transport writes its frames into it; tests/envoy/corked_stream_test.cpp).

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace rivetkit::envoy {

// The layer under the envoy's WebSocket framing that lets the writer put several frames in one
// socket write: one syscall (and, with TCP_NODELAY, one TCP segment) per frame would have the
// engine read and wake once per frame under load. The envoy's transport frames its messages
// itself (envoy/ws_client_frames.hpp) and puts them in the buffer with append(), which completes
// nothing; the buffer goes out on flush() — which the envoy's writer calls before it waits for
// anything, so nothing stays buffered while the writer is idle — with the next write (the
// upgrade request, through async_write_some), or when the transport sees it pass kCorkLimit.
//
// Writers that contend (the envoy's writer and the reader flushing a pong or a close reply) take
// turns: one socket write is in flight at a time; a writer that comes while it is waits behind it
// and its bytes go in the next write. The buffers live in a block the socket write holds, so an
// abort that destroys the stream mid-write leaves nothing dangling.
template <class Next>
class CorkedStream {
  public:
    using executor_type = typename Next::executor_type;
    using next_layer_type = Next;
    // What the buffer may hold before its owner flushes it.
    static constexpr std::size_t kCorkLimit = 64 * 1024;
    // What a buffer keeps of its capacity once its write is done: a burst (an actor start's page
    // commit, a large payload) does not pin what it grew the buffer to, so an idle envoy holds at
    // most 2 x 16 KiB here; a write past it pays one allocation.
    static constexpr std::size_t kKeptCapacity = 16 * 1024;

    template <class... Args>
    explicit CorkedStream(Args&&... args)
        : next_(std::forward<Args>(args)...),
          shared_(std::make_shared<Shared>(next_.get_executor())) {
        shared_->stream = this;
    }
    ~CorkedStream() { shared_->stream = nullptr; }
    CorkedStream(const CorkedStream&) = delete;
    CorkedStream& operator=(const CorkedStream&) = delete;

    executor_type get_executor() noexcept { return next_.get_executor(); }
    Next& next_layer() noexcept { return next_; }
    const Next& next_layer() const noexcept { return next_; }

    bool buffered() const noexcept { return !shared_->pending.empty(); }
    std::size_t buffered_size() const noexcept { return shared_->pending.size(); }
    // The first socket write error; every later write fails with it.
    boost::system::error_code failure() const noexcept { return shared_->failed; }

    // Adds `n` bytes to the buffer and returns where to put them, for a writer that frames its
    // own messages: no operation, no completion. They leave with the next flush() or write.
    // Null once a socket write failed.
    char* append(std::size_t n) {
        Shared& sh = *shared_;
        if (sh.failed)
            return nullptr;
        const std::size_t at = sh.pending.size();
        sh.pending.resize(at + n);
        return sh.pending.data() + at;
    }
    // The bytes the two buffers hold allocated (a diagnostic).
    std::size_t capacity() const noexcept {
        return shared_->pending.capacity() + shared_->writing.capacity();
    }

    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return next_.async_read_some(buffers, std::forward<Token>(token));
    }

    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler, const ConstBuffers& data) {
                std::vector<char>& pending = shared_->pending;
                const std::size_t n = boost::asio::buffer_size(data);
                const std::size_t at = pending.size();
                pending.resize(at + n);
                boost::asio::buffer_copy(boost::asio::buffer(pending.data() + at, n), data);
                submit(Waiter{std::move(handler), n});
            },
            token, buffers);
    }

    // Writes what is buffered now, when the socket takes it without waiting, and says whether
    // anything is left: then (or with a socket that cannot write without waiting, such as a TLS
    // stream) the caller awaits async_flush for the rest. A write that takes it all completes
    // nothing: no operation, no handler, and so no pass of the io loop for its completion.
    // A write error is kept as failure(), as an asynchronous write's would be.
    bool flush_now() {
        Shared& sh = *shared_;
        if constexpr (requires(Next& n, boost::system::error_code& ec) {
                          n.non_blocking(true, ec);
                          n.write_some(boost::asio::const_buffer(), ec);
                      }) {
            if (sh.failed || sh.in_flight || sh.pending.empty())
                return !sh.failed && !sh.in_flight && sh.pending.empty();
            boost::system::error_code ec;
            if (!next_.non_blocking())
                next_.non_blocking(true, ec);
            std::size_t n = 0;
            if (!ec)
                n = next_.write_some(boost::asio::buffer(sh.pending), ec);
            if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again)
                ec.clear();
            if (ec) {
                sh.failed = ec;
                sh.pending.clear();
                return false;
            }
            if (n < sh.pending.size()) {
                sh.pending.erase(sh.pending.begin(),
                                 sh.pending.begin() + static_cast<std::ptrdiff_t>(n));
                return false;
            }
            sh.pending.clear();
            if (sh.pending.capacity() > kKeptCapacity)
                std::vector<char>().swap(sh.pending);
            return true;
        } else {
            return sh.pending.empty() && !sh.in_flight;
        }
    }

    // Sends whatever is buffered; completes once it is written (at once when nothing is).
    template <class Token>
    auto async_flush(Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler) { submit(Waiter{std::move(handler), 0}); }, token);
    }

  private:
    using Handler = boost::asio::any_completion_handler<void(boost::system::error_code, std::size_t)>;
    struct Waiter {
        Handler handler;
        std::size_t n = 0;
    };
    struct Shared {
        explicit Shared(executor_type ex) : executor(std::move(ex)) {}
        CorkedStream* stream = nullptr;  // null once the stream is destroyed
        executor_type executor;
        std::vector<char> pending;  // bytes not yet handed to the socket
        std::vector<char> writing;  // the bytes of the socket write in flight
        bool in_flight = false;
        boost::system::error_code failed;  // the first write error: later writes fail with it
        std::vector<Waiter> owners;   // complete when the write in flight does
        std::vector<Waiter> waiting;  // behind the write in flight; their bytes go in the next
    };

    // From an initiating function: posted, never inline (the handler may start the next write).
    static void complete(Shared& sh, Waiter w, boost::system::error_code ec) {
        boost::asio::post(sh.executor, boost::asio::append(std::move(w.handler), ec, w.n));
    }
    void complete(Waiter w, boost::system::error_code ec) { complete(*shared_, std::move(w), ec); }

    void submit(Waiter w) {
        Shared& sh = *shared_;
        if (sh.failed) {
            sh.pending.clear();
            return complete(std::move(w), sh.failed);
        }
        if (sh.in_flight) {
            sh.waiting.push_back(std::move(w));
            return;
        }
        if (sh.pending.empty())
            return complete(std::move(w), {});
        sh.waiting.push_back(std::move(w));
        start();
    }

    // Writes what is pending; the waiters complete when it is written.
    void start() {
        Shared& sh = *shared_;
        sh.writing.swap(sh.pending);
        sh.pending.clear();
        sh.in_flight = true;
        sh.owners.swap(sh.waiting);
        boost::asio::async_write(
            next_, boost::asio::buffer(sh.writing),
            [keep = shared_](boost::system::error_code ec, std::size_t) {
                Shared& s = *keep;
                s.in_flight = false;
                if (!ec && s.stream == nullptr)
                    ec = boost::asio::error::operation_aborted;
                if (ec && !s.failed)
                    s.failed = ec;
                s.writing.clear();
                if (s.writing.capacity() > kKeptCapacity)
                    std::vector<char>().swap(s.writing);
                // This runs as a handler of its own (the write's completion), so the waiters
                // resume here rather than one io-loop pass later; first the state is settled
                // (the next write started), since a waiter may write again at once.
                std::vector<Waiter> done;
                done.swap(s.owners);
                if (!s.waiting.empty()) {
                    if (s.failed || s.pending.empty()) {  // the stream may be gone: no new write
                        for (auto& w : s.waiting)
                            done.push_back(std::move(w));
                        s.waiting.clear();
                    } else {
                        s.stream->start();
                    }
                }
                const boost::system::error_code result = s.failed;
                for (auto& w : done)  // inline when the waiter's executor is this thread's
                    boost::asio::dispatch(boost::asio::append(std::move(w.handler), result, w.n));
            });
    }

    Next next_;
    std::shared_ptr<Shared> shared_;
};

}  // namespace rivetkit::envoy

#pragma once
// rt::defer: runs a callback soon on a context, from the run queue that resumes woken coroutines.

#include <memory>

#include <boost/asio/any_io_executor.hpp>

namespace rivetkit::rt {

namespace detail {
class PendingWaits;
}

using DeferredFn = void (*)(const std::shared_ptr<void>& target);

// Queues fn(target) on the run queue of `executor`'s context (src/runtime/suspension.cpp): it runs
// from that queue's drain, never inside this call, after the wakes queued before it; if `target`
// is gone by then, nothing runs. For handing work to code that must not run inline (user code, a
// serve loop) as asio::post would, without one pass of asio's handler queue, and so one poll of
// its reactor, per hop: a wake made while the queue drains runs in the same drain.
//
// Like the waits it queues behind, only from a thread running that context.
void defer(const boost::asio::any_io_executor& executor, std::weak_ptr<void> target,
           DeferredFn fn);

// As defer, with the queue keeping `target` alive until fn has run (for work nothing else holds,
// such as a detached task's start).
void defer_owned(const boost::asio::any_io_executor& executor, std::shared_ptr<void> target,
                 DeferredFn fn);

// Holds back the run queue's posted drain for a reader that handles what it read without
// suspending: what is queued while held runs from run(), inline, in the handler that read it.
//
// Why: the queue's drain is an asio handler posted behind the one that queued it, and asio polls
// its reactor (a non-blocking epoll_wait) before it runs a handler queued behind its reactor's
// turn. A message read from a socket and handled at once (a tunneled request, its actor's
// answer, the reply written) took two polls; held, it takes the one that waits for the next.
//
// The rule that makes it safe: run() before anything that may suspend. Wakes queued while held
// wait for it; a holder that suspended instead could wait on one of them forever. So the holder
// is the code that knows it does not suspend between a read and the next one (the envoy's read
// loop, through Transport::read). The destructor posts what is still held: a hold left behind
// by an exception delays work, never strands it. Holds on one thread nest; inside a drain, the
// drain runs what is queued, as always. Only from a thread running `executor`'s context.
class RunQueueHold {
  public:
    explicit RunQueueHold(const boost::asio::any_io_executor& executor);
    ~RunQueueHold();
    RunQueueHold(const RunQueueHold&) = delete;
    RunQueueHold& operator=(const RunQueueHold&) = delete;

    // From now on, until run(), queued wakes wait. Holding twice is holding once.
    void hold();
    // Ends the hold and runs here what waited for it (one batch of the drain; the rest from a
    // posted drain, as usual). Without a hold, nothing.
    void run();
    bool held() const noexcept { return held_; }

  private:
    detail::PendingWaits* waits_;
    bool held_ = false;
};

}  // namespace rivetkit::rt

#pragma once
// rt::defer: runs a callback soon on a context, from the run queue that resumes woken coroutines.

#include <memory>

#include <boost/asio/any_io_executor.hpp>

namespace rivetkit::rt {

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

}  // namespace rivetkit::rt

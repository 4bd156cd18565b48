#pragma once
// spawn / JoinHandle (tokio::spawn, JoinHandle, JoinError).
//
//   auto handle = rt::spawn(executor, run_actor(...));
//   rt::Joined<int> r = co_await handle.join();
//
// abort() emits terminal cancellation into the task: its current wait (ours or asio's) completes
// with operation_aborted, the exception unwinds the frame (RAII guards run) and every later
// co_await in it throws too. A task aborted before it first runs never executes its body.
// Dropping a JoinHandle detaches: the task keeps running. Single-threaded (see wait_list.hpp):
// abort() and join() are called on the task's executor thread, and a task does not abort its
// own handle before its body first suspends (co_spawn would throw that cancellation out of the
// io loop's run()).
//
// spawn_handing_off: a task whose body may return before its work is done. The body hands its
// completion to work it leaves behind (Handoff::hand_off), work that goes on without a coroutine,
// driven by wakes; the handle completes when that work calls Handoff::finish. Such work is owned
// by the task's state: abort() ends it at once, and dropping the JoinHandle destroys it (where a
// plain task would run on detached). The work may run a coroutine body again (Handoff::resume)
// for what needs awaiting, which hands off again when it is done with it.

#include <exception>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "runtime/defer.hpp"
#include "runtime/suspension.hpp"
#include "runtime/wait_list.hpp"

namespace rivetkit::rt {

// Thrown by Joined::value() for an aborted task.
class JoinAborted : public std::runtime_error {
public:
    JoinAborted() : std::runtime_error("task was aborted") {}
};

// How a task ended (tokio's Result<T, JoinError>): its value, aborted, or failed with an exception.
template <typename T>
class Joined {
public:
    using value_type = std::conditional_t<std::is_void_v<T>, std::monostate, T>;
    struct Aborted {};

    static Joined ok(value_type v) { return Joined(std::in_place_index<0>, std::move(v)); }
    static Joined aborted() { return Joined(std::in_place_index<1>, Aborted{}); }
    static Joined failed(std::exception_ptr e) { return Joined(std::in_place_index<2>, e); }

    bool is_ok() const noexcept { return v_.index() == 0; }
    bool is_aborted() const noexcept { return v_.index() == 1; }
    bool is_failed() const noexcept { return v_.index() == 2; }

    // The value; rethrows the task's exception, or throws JoinAborted.
    value_type& value() & {
        check();
        return std::get<0>(v_);
    }
    value_type&& value() && {
        check();
        return std::get<0>(std::move(v_));
    }
    // The task's exception when is_failed(), else null.
    std::exception_ptr exception() const noexcept {
        return is_failed() ? std::get<2>(v_) : nullptr;
    }

private:
    template <std::size_t I, typename A>
    Joined(std::in_place_index_t<I> index, A&& a) : v_(index, std::forward<A>(a)) {}
    void check() const {
        if (is_failed()) std::rethrow_exception(std::get<2>(v_));
        if (is_aborted()) throw JoinAborted();
    }
    std::variant<value_type, Aborted, std::exception_ptr> v_;
};

namespace detail {

template <typename T>
struct TaskState {
    std::optional<Joined<T>> result;
    bool abort_requested = false;
    WaitList joiners;
    boost::asio::cancellation_signal abort_signal;
    boost::asio::any_io_executor executor;
    // Set by Handoff::hand_off: the body's return does not complete the task, `work` does.
    bool handed_off = false;
    // From co_spawn until the completion handler: an abort of a handed-off task still cancels a
    // body that has not returned yet.
    bool body_running = false;
    std::shared_ptr<void> work;
    // A body waiting to start: spawn_queued's first, or Handoff::resume's while the last body's
    // co_spawn is still completing, started from that completion (two bodies at once would
    // share the abort slot).
    boost::asio::awaitable<T> next_body;

    void finish(Joined<T>&& joined) {
        result.emplace(std::move(joined));
        joiners.wake_all();
    }
    // Completes the task and destroys the work handed off, which may be the caller (then it
    // touches none of its members after this returns).
    void finish_work(Joined<T>&& joined) {
        std::shared_ptr<void> doomed = std::move(work);
        finish(std::move(joined));
    }
};

// co_spawn hands its handler a default-made value when the body threw: a body whose value has
// no default goes through this frame, which gives it one.
template <typename T>
boost::asio::awaitable<std::optional<T>> with_default(boost::asio::awaitable<T> body) {
    co_return co_await std::move(body);
}

template <typename T>
void start_body(const std::shared_ptr<TaskState<T>>& st, boost::asio::awaitable<T> body);
template <typename T>
void start_unless_aborted(const std::shared_ptr<TaskState<T>>& st, boost::asio::awaitable<T> body);

// co_spawn's completion handler: how the body ended completes the task, unless it handed its
// completion off (then its work finishes it) or was aborted after that. A handler, not a wrapper
// coroutine around the body: an awake actor's task would keep that frame for its whole life.
template <typename T>
struct TaskDone {
    std::shared_ptr<TaskState<T>> st;

    void operator()(std::exception_ptr failure) const
        requires std::is_void_v<T>
    {
        done(failure, [] { return Joined<T>::ok(std::monostate{}); });
    }
    template <typename V>
    void operator()(std::exception_ptr failure, V&& value) const
        requires(!std::is_void_v<T>)
    {
        done(failure, [&value] {
            if constexpr (std::is_default_constructible_v<T>)
                return Joined<T>::ok(std::forward<V>(value));
            else
                return Joined<T>::ok(std::move(*value));
        });
    }

private:
    template <typename Ok>
    void done(std::exception_ptr failure, Ok ok) const {
        st->body_running = false;
        boost::asio::awaitable<T> next = std::move(st->next_body);  // destroyed unless started
        if (st->result)
            return;  // a handed-off task aborted meanwhile
        if (failure) {
            st->finish_work(st->abort_requested ? Joined<T>::aborted()
                                                : Joined<T>::failed(failure));
        } else if (next.valid()) {
            start_unless_aborted(st, std::move(next));
        } else if (!st->handed_off) {
            st->finish_work(ok());
        } else {
            // co_spawn leaves its cancellation handler (~150 bytes with the state it holds) in
            // the abort slot; a handed-off task has no body for it to cancel. It goes once
            // co_spawn's thread is done with it, unless a body was resumed meanwhile.
            boost::asio::post(st->executor, [st = st] {
                if (!st->body_running)
                    st->abort_signal.slot().clear();
            });
        }
    }
};

// co_spawns a task's body with the task's abort signal and completion.
template <typename T>
void start_body(const std::shared_ptr<TaskState<T>>& st, boost::asio::awaitable<T> body) {
    auto done = boost::asio::bind_cancellation_slot(st->abort_signal.slot(), TaskDone<T>{st});
    if constexpr (std::is_void_v<T> || std::is_default_constructible_v<T>)
        boost::asio::co_spawn(st->executor, std::move(body), std::move(done));
    else
        boost::asio::co_spawn(st->executor, with_default<T>(std::move(body)), std::move(done));
}

// A body about to run (a spawned task's first, or a resumed one from its predecessor's
// completion): not if an abort came first, which ends the task instead.
template <typename T>
void start_unless_aborted(const std::shared_ptr<TaskState<T>>& st, boost::asio::awaitable<T> body) {
    if (st->abort_requested) {
        if (!st->result)
            st->finish_work(Joined<T>::aborted());
        return;
    }
    st->body_running = true;
    start_body(st, std::move(body));
}

template <typename T>
boost::asio::awaitable<Joined<T>> join_task(std::shared_ptr<TaskState<T>> st) {
    while (!st->result) co_await wait_on(st->joiners);
    co_return std::move(*st->result);
}

}  // namespace detail

template <typename T>
class JoinHandle {
public:
    JoinHandle() = default;
    JoinHandle(JoinHandle&&) noexcept = default;
    JoinHandle& operator=(JoinHandle&&) noexcept = default;
    JoinHandle(const JoinHandle&) = delete;
    JoinHandle& operator=(const JoinHandle&) = delete;

    bool valid() const noexcept { return st_ != nullptr; }
    bool is_finished() const noexcept { return st_->result.has_value(); }

    // No-op once the task has finished. Work handed off ends at once, destroyed.
    void abort() {
        if (st_->result || st_->abort_requested) return;
        st_->abort_requested = true;
        if (!st_->handed_off || st_->body_running) {
            st_->abort_signal.emit(boost::asio::cancellation_type::terminal);
            // co_spawn's cancellation handler may defer the emit through a post that reads the
            // signal; the task may end on its own before that runs, and this post, queued
            // behind it, keeps the signal alive until then.
            boost::asio::post(st_->executor, [st = st_] {});
        }
        if (st_->handed_off)
            st_->finish_work(Joined<T>::aborted());
    }

    // How the task ended. Join once: the result is moved out.
    boost::asio::awaitable<Joined<T>> join() { return detail::join_task(st_); }

    // Readiness for rt::select: the task has finished.
    bool ready() const noexcept { return is_finished(); }
    detail::WaitList& waiters() noexcept { return st_->joiners; }

private:
    template <typename U, typename MakeBody>
    friend JoinHandle<U> spawn_handing_off(boost::asio::any_io_executor, MakeBody);
    template <typename U>
    friend JoinHandle<U> spawn_queued(boost::asio::any_io_executor, boost::asio::awaitable<U>);
    explicit JoinHandle(std::shared_ptr<detail::TaskState<T>> st) : st_(std::move(st)) {}

    std::shared_ptr<detail::TaskState<T>> st_;
};

// A task body's way to leave its completion to work that outlives it (spawn_handing_off).
template <typename T>
class Handoff {
public:
    // Before the body returns: its return then leaves the task pending, and `work` is kept by
    // the task's state until finish() or abort(). False (and the work not kept) when the task
    // is over or an abort came first: then the task ends aborted, as the next wait of a body
    // that kept the work itself would have.
    [[nodiscard]] bool hand_off(std::shared_ptr<void> work) const {
        auto st = st_.lock();
        if (!st || st->result)
            return false;
        if (st->abort_requested) {
            st->finish_work(Joined<T>::aborted());
            return false;
        }
        st->handed_off = true;
        st->work = std::move(work);
        return true;
    }
    // After hand_off: runs `body` as the task's body again, started here (co_spawn runs it
    // inline up to its first suspension), or, when the last body has returned but its co_spawn
    // has not completed yet, from that completion. The state lets go of the work, which `body`
    // must own (and may hand off again); abort() cancels `body` as it would the first. False
    // when the task is over or was not handed off.
    bool resume(boost::asio::awaitable<T> body) const {
        auto st = st_.lock();
        if (!st || st->result || !st->handed_off)
            return false;
        std::shared_ptr<void> work = std::move(st->work);
        st->handed_off = false;
        if (st->body_running) {  // the last body returned; its co_spawn completes later
            st->next_body = std::move(body);
            return true;
        }
        st->body_running = true;
        detail::start_body(st, std::move(body));
        return true;
    }
    // Completes the task as the body's return would have, and destroys the work (which may be
    // the caller: it touches none of its members after this returns). No-op once finished.
    void finish(Joined<T> joined) const {
        if (auto st = st_.lock(); st && !st->result)
            st->finish_work(std::move(joined));
    }

private:
    template <typename U, typename MakeBody>
    friend JoinHandle<U> spawn_handing_off(boost::asio::any_io_executor, MakeBody);
    explicit Handoff(std::weak_ptr<detail::TaskState<T>> st) : st_(std::move(st)) {}
    // Weak: the state owns the work, which holds this.
    std::weak_ptr<detail::TaskState<T>> st_;
};

// As spawn, with the body made by `make(Handoff<T>)` (called here, synchronously).
template <typename T, typename MakeBody>
JoinHandle<T> spawn_handing_off(boost::asio::any_io_executor executor, MakeBody make) {
    auto st = std::make_shared<detail::TaskState<T>>();
    st->executor = executor;
    boost::asio::awaitable<T> body = make(Handoff<T>(st));
    // co_spawn from the io thread runs the new coroutine inline up to its first suspension;
    // starting it from a posted handler keeps spawn() from ever running the body inline, and
    // lets an abort() issued right after spawn() stop the body before it starts.
    boost::asio::post(executor, [st, body = std::move(body)]() mutable {
        detail::start_unless_aborted(st, std::move(body));
    });
    return JoinHandle<T>(std::move(st));
}

// Starts `body` on `executor` (it first runs from a posted handler, never inline).
template <typename T>
JoinHandle<T> spawn(boost::asio::any_io_executor executor, boost::asio::awaitable<T> body) {
    return spawn_handing_off<T>(std::move(executor),
                                [&body](const Handoff<T>&) { return std::move(body); });
}

namespace detail {
template <typename T>
void start_queued(const std::shared_ptr<void>& target) {
    auto st = std::static_pointer_cast<TaskState<T>>(target);
    start_unless_aborted(st, std::move(st->next_body));
}
}  // namespace detail

// As spawn, but the body first runs from the runtime's run queue (rt::defer) instead of a posted
// handler: for a task started on the way of a request whose every other hop runs there, so its
// start costs no pass of the io loop. Still never inline, and an abort() right after it stops the
// body before it starts. Only from a thread running `executor`'s context.
template <typename T>
JoinHandle<T> spawn_queued(boost::asio::any_io_executor executor, boost::asio::awaitable<T> body) {
    auto st = std::make_shared<detail::TaskState<T>>();
    st->executor = executor;
    st->next_body = std::move(body);  // the body waiting to start
    defer_owned(executor, st, &detail::start_queued<T>);
    return JoinHandle<T>(std::move(st));
}

}  // namespace rivetkit::rt

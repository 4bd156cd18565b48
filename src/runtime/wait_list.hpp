#pragma once
// Intrusive wait lists: how a readiness source (channel, notify, token, task) remembers who waits.
//
// Threading invariant for all of src/runtime: every primitive is single-threaded. A source, its
// lists and its waiters are touched only from the one thread running their io_context; handing
// work to another thread goes through asio::post. That is why nothing here is atomic.
//
// Waking never runs user code inline: a waiter's wake() only queues the resumption of whoever waits
// on the context's run queue (suspension.cpp), which a posted handler drains. So a source may wake while it is in the middle of changing its own state.

namespace rivetkit::rt::detail {

class WaitList;

class Waiter {
public:
    Waiter() = default;
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    bool linked() const noexcept { return list_ != nullptr; }
    void unlink() noexcept;

protected:
    virtual ~Waiter() { unlink(); }

private:
    friend class WaitList;
    virtual void wake() noexcept = 0;

    WaitList* list_ = nullptr;
    Waiter* prev_ = nullptr;
    Waiter* next_ = nullptr;
};

class WaitList {
public:
    WaitList() = default;
    WaitList(const WaitList&) = delete;
    WaitList& operator=(const WaitList&) = delete;
    // Waiters still linked are detached, not woken: the source they would re-check is gone.
    ~WaitList();

    void push(Waiter& waiter) noexcept;
    void remove(Waiter& waiter) noexcept;
    bool empty() const noexcept { return head_ == nullptr; }

    // Unlinks every waiter, then wakes it. Readiness-based: a woken waiter re-checks its source
    // and waits again if the readiness was taken by someone who ran first.
    void wake_all() noexcept;

private:
    Waiter* head_ = nullptr;
    Waiter* tail_ = nullptr;
};

}  // namespace rivetkit::rt::detail

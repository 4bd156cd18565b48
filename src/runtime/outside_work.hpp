#pragma once
// OutsideWork: marks a coroutine's wait on work done off the io thread (SQLite's worker pool),
// whose completion is posted back to the io_context. A TestRuntime driving this thread waits for
// that completion instead of moving virtual time or reporting a deadlock, so such work takes no
// virtual time. Outside a TestRuntime it does nothing (one thread-local read).
//
//   rt::OutsideWork outside;                 // before the co_await
//   auto out = co_await std::move(op);

#include <cstddef>

namespace rivetkit::rt {

class OutsideWork {
  public:
    OutsideWork() noexcept;
    ~OutsideWork();
    OutsideWork(const OutsideWork&) = delete;
    OutsideWork& operator=(const OutsideWork&) = delete;

  private:
    std::size_t* counter_;
};

namespace detail {
// The counter of the TestRuntime driving this thread (nullptr when none); set by TestRuntime.
std::size_t*& outside_work_counter() noexcept;
}  // namespace detail

}  // namespace rivetkit::rt

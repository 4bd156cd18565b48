#include "runtime/outside_work.hpp"

namespace rivetkit::rt {

namespace detail {
std::size_t*& outside_work_counter() noexcept {
    thread_local std::size_t* counter = nullptr;
    return counter;
}
}  // namespace detail

OutsideWork::OutsideWork() noexcept : counter_(detail::outside_work_counter()) {
    if (counter_ != nullptr)
        ++*counter_;
}

OutsideWork::~OutsideWork() {
    if (counter_ != nullptr)
        --*counter_;
}

}  // namespace rivetkit::rt

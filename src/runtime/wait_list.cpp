#include "runtime/wait_list.hpp"

namespace rivetkit::rt::detail {

void Waiter::unlink() noexcept {
    if (list_ != nullptr) list_->remove(*this);
}

WaitList::~WaitList() {
    while (head_ != nullptr) remove(*head_);
}

void WaitList::push(Waiter& waiter) noexcept {
    waiter.unlink();
    waiter.list_ = this;
    waiter.prev_ = tail_;
    waiter.next_ = nullptr;
    if (tail_ != nullptr) {
        tail_->next_ = &waiter;
    } else {
        head_ = &waiter;
    }
    tail_ = &waiter;
}

void WaitList::remove(Waiter& waiter) noexcept {
    if (waiter.list_ != this) return;
    if (waiter.prev_ != nullptr) {
        waiter.prev_->next_ = waiter.next_;
    } else {
        head_ = waiter.next_;
    }
    if (waiter.next_ != nullptr) {
        waiter.next_->prev_ = waiter.prev_;
    } else {
        tail_ = waiter.prev_;
    }
    waiter.list_ = nullptr;
    waiter.prev_ = nullptr;
    waiter.next_ = nullptr;
}

void WaitList::wake_all() noexcept {
    while (head_ != nullptr) {
        Waiter* waiter = head_;
        remove(*waiter);
        waiter->wake();
    }
}

}  // namespace rivetkit::rt::detail

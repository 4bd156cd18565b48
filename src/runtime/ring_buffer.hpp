#pragma once
// A growable FIFO ring. Capacity doubles when full and shrinks only when asked to
// (release_if_empty, which an actor's loop does once its inboxes are quiet), so a queue in steady
// state (pushes balanced by pops) stops allocating once it has reached its high-water mark. The
// first allocation holds about 64 bytes (at least one slot): every actor has a few channels of
// large variants, mostly idle with one message at a time (512-byte first blocks cost ~0.5 KB per
// awake actor for the lifecycle channel alone). A busy queue reaches its size after a few
// doublings, once.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <memory>
#include <utility>

namespace rivetkit::rt::detail {

template <typename T>
class RingBuffer {
public:
    RingBuffer() = default;
    RingBuffer(const RingBuffer&) = delete;
    RingBuffer& operator=(const RingBuffer&) = delete;
    ~RingBuffer() {
        clear();
        if (slots_ != nullptr) std::allocator<T>().deallocate(slots_, capacity_);
    }

    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }
    // Slots allocated (0 before the first push and after release_if_empty).
    std::size_t capacity() const noexcept { return capacity_; }

    void push_back(T value) {
        if (size_ == capacity_) grow();
        std::construct_at(slots_ + index(size_), std::move(value));
        ++size_;
    }

    // Precondition: !empty().
    T pop_front() {
        T* slot = slots_ + head_;
        T value = std::move(*slot);
        std::destroy_at(slot);
        head_ = index(1);
        --size_;
        return value;
    }

    // Gives the slots of an empty ring back (the next push allocates again): for a queue that has
    // gone quiet, whose one large slot would otherwise stay as long as the ring does.
    void release_if_empty() noexcept {
        if (size_ != 0 || slots_ == nullptr) return;
        std::allocator<T>().deallocate(slots_, capacity_);
        slots_ = nullptr;
        capacity_ = 0;
        head_ = 0;
    }

    void clear() noexcept {
        while (size_ > 0) {
            std::destroy_at(slots_ + head_);
            head_ = index(1);
            --size_;
        }
    }

private:
    static constexpr std::size_t kFirstCapacity =
        std::bit_floor(std::max<std::size_t>(1, 64 / sizeof(T)));

    // Capacity is a power of two, so wrapping is a mask.
    std::size_t index(std::size_t offset) const noexcept { return (head_ + offset) & (capacity_ - 1); }

    void grow() {
        std::size_t capacity = capacity_ == 0 ? kFirstCapacity : capacity_ * 2;
        T* slots = std::allocator<T>().allocate(capacity);
        for (std::size_t i = 0; i < size_; ++i) {
            T* from = slots_ + index(i);
            std::construct_at(slots + i, std::move(*from));
            std::destroy_at(from);
        }
        if (slots_ != nullptr) std::allocator<T>().deallocate(slots_, capacity_);
        slots_ = slots;
        capacity_ = capacity;
        head_ = 0;
    }

    T* slots_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
};

}  // namespace rivetkit::rt::detail

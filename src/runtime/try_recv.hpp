#pragma once
// The result of a non-blocking receive, shared by channel and oneshot (tokio's TryRecvError).

#include <cassert>
#include <cstdint>
#include <utility>
#include <variant>

namespace rivetkit::rt {

enum class TryRecvError : std::uint8_t {
    empty,         // nothing queued, but a sender may still send
    disconnected,  // nothing queued and nothing ever will be
};

template <typename T>
class TryRecvResult {
public:
    TryRecvResult(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    TryRecvResult(TryRecvError error) : v_(std::in_place_index<1>, error) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }
    bool is_empty() const noexcept { return !has_value() && error() == TryRecvError::empty; }
    bool is_disconnected() const noexcept {
        return !has_value() && error() == TryRecvError::disconnected;
    }

    // Preconditions: has_value() for value(), !has_value() for error().
    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    TryRecvError error() const noexcept {
        assert(!has_value());
        return std::get<1>(v_);
    }

private:
    std::variant<T, TryRecvError> v_;
};

}  // namespace rivetkit::rt

#pragma once
// Result<T>: a value or a structured Error. The reply type of every lifecycle and dispatch command.

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/error.hpp"

namespace rivetkit {

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool ok() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return ok(); }

    T& value() & { return checked_value(); }
    const T& value() const& { return const_cast<Result*>(this)->checked_value(); }
    T&& value() && { return std::move(checked_value()); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    const Error& error() const& {
        assert(!ok());
        return std::get<1>(v_);
    }
    Error&& error() && {
        assert(!ok());
        return std::get<1>(std::move(v_));
    }

  private:
    T& checked_value() {
        if (!ok())
            throw ErrorException(std::get<1>(v_));
        return std::get<0>(v_);
    }
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::in_place, std::move(error)) {}

    bool ok() const noexcept { return !error_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    // Throws ErrorException when this holds an error.
    void value() const {
        if (error_)
            throw ErrorException(*error_);
    }
    const Error& error() const& {
        assert(error_);
        return *error_;
    }
    Error&& error() && {
        assert(error_);
        return std::move(*error_);
    }

  private:
    std::optional<Error> error_;
};

using Status = Result<void>;

}  // namespace rivetkit

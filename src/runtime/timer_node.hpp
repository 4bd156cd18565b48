#pragma once
// A timer subscription that wakes one Suspension.

#include "runtime/clock.hpp"
#include "runtime/suspension.hpp"

namespace rivetkit::rt::detail {

class TimerNode final : public TimerEntry {
public:
    explicit TimerNode(Suspension& suspension) noexcept : suspension_(suspension) {}
    ~TimerNode() override = default;

private:
    void fire() noexcept override { suspension_.wake(); }
    Suspension& suspension_;
};

}  // namespace rivetkit::rt::detail

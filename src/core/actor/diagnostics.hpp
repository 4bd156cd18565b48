#pragma once
// Rate-limited warnings (upstream's ActorDiagnostics): a warning kind is logged at most three
// times per 30-second window, both per actor and process-wide; the first line of the next window
// reports how many were suppressed. Not a hot path: only misrouted work reaches it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "runtime/clock.hpp"

namespace rivetkit::core {

enum class WarningKind : std::uint8_t {
    WorkSentToStoppingInstance,
    SelfCallRisk,
};
inline constexpr std::size_t kWarningKinds = 2;

struct WarningWindow {
    std::optional<rt::Clock::time_point> started_at;
    std::size_t emitted = 0;
    std::uint64_t suppressed = 0;
};

struct WarningDecision {
    bool emit = false;
    std::uint64_t suppressed = 0;  // reported by the first line of a new window
};

inline constexpr auto kWarningWindow = std::chrono::seconds(30);
inline constexpr std::size_t kWarningLimit = 3;

WarningDecision record_warning(WarningWindow& window, rt::Clock::time_point now);

// Records one occurrence in the process-wide window of `kind` (guarded by a mutex).
WarningDecision record_global_warning(WarningKind kind, rt::Clock::time_point now);

// Tests only: forget the process-wide windows.
void reset_global_warnings_for_tests();

using ActorWarningWindows = std::array<WarningWindow, kWarningKinds>;

}  // namespace rivetkit::core

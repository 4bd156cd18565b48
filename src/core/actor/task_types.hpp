#pragma once
// Small vocabulary types shared by the task, the context and the runtime-facing messages.

#include <cstdint>
#include <optional>
#include <string_view>

namespace rivetkit::core {

enum class LifecycleState : std::uint8_t {
    Loading,
    Started,
    SleepGrace,
    SleepFinalize,
    DestroyGrace,
    Destroying,
    Terminated,
};

std::string_view lifecycle_state_name(LifecycleState state) noexcept;

enum class ShutdownKind : std::uint8_t { Sleep, Destroy };

// "sleep" / "destroy": the label used in logs, hooks and metrics.
constexpr std::string_view shutdown_kind_label(ShutdownKind kind) noexcept {
    return kind == ShutdownKind::Sleep ? "sleep" : "destroy";
}
// "Sleep" / "Destroy": the name used in error texts (upstream's Debug form).
constexpr std::string_view shutdown_kind_name(ShutdownKind kind) noexcept {
    return kind == ShutdownKind::Sleep ? "Sleep" : "Destroy";
}

// Events that core subsystems push to the task through the context.
struct LifecycleEvent {
    enum class Kind : std::uint8_t {
        SaveRequested,
        InspectorSerializeRequested,
        InspectorAttachmentsChanged,
        SleepTick,
    };
    Kind kind = Kind::SaveRequested;
    bool immediate = false;  // SaveRequested only

    static LifecycleEvent save_requested(bool immediate) {
        return {Kind::SaveRequested, immediate};
    }
    static LifecycleEvent inspector_serialize_requested() {
        return {Kind::InspectorSerializeRequested, false};
    }
    static LifecycleEvent inspector_attachments_changed() {
        return {Kind::InspectorAttachmentsChanged, false};
    }
    static LifecycleEvent sleep_tick() { return {Kind::SleepTick, false}; }
};

std::string_view lifecycle_event_label(const LifecycleEvent& event) noexcept;

struct RequestSaveOpts {
    bool immediate = false;
    std::optional<std::uint32_t> max_wait_ms;
};

// Why the actor cannot sleep right now; the first failing check wins (see sleep.cpp).
enum class CanSleep : std::uint8_t {
    Yes,
    NotReady,
    NoSleep,
    ActiveHttpRequests,
    ActiveKeepAwake,
    ActiveInternalKeepAwake,
    ActiveRunHandler,
    ActiveDisconnectCallbacks,
    ActiveConnections,
    ActiveWebSocketCallbacks,
};

std::string_view can_sleep_name(CanSleep value) noexcept;

}  // namespace rivetkit::core

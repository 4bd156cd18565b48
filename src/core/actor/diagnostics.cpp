#include "core/actor/diagnostics.hpp"

#include <mutex>

#include "base/log.hpp"
#include "core/actor/context.hpp"

namespace rivetkit::core {

WarningDecision record_warning(WarningWindow& window, rt::Clock::time_point now) {
    if (!window.started_at || now - *window.started_at >= kWarningWindow) {
        const std::uint64_t suppressed = window.suppressed;
        window.started_at = now;
        window.emitted = 1;
        window.suppressed = 0;
        return {true, suppressed};
    }
    if (window.emitted < kWarningLimit) {
        ++window.emitted;
        return {true, 0};
    }
    ++window.suppressed;
    return {false, 0};
}

namespace {
std::mutex g_global_mutex;
ActorWarningWindows g_global_windows;
}  // namespace

WarningDecision record_global_warning(WarningKind kind, rt::Clock::time_point now) {
    std::lock_guard lock(g_global_mutex);
    return record_warning(g_global_windows[static_cast<std::size_t>(kind)], now);
}

void reset_global_warnings_for_tests() {
    std::lock_guard lock(g_global_mutex);
    g_global_windows = {};
}

namespace {

void warn_limited(ActorContextInner& s, WarningKind kind, std::string_view message,
                  std::string_view operation) {
    const auto now = s.clock->now();
    const WarningDecision per_actor =
        record_warning(s.warning_windows.edit()[static_cast<std::size_t>(kind)], now);
    const WarningDecision global = record_global_warning(kind, now);
    if (!per_actor.emit || !global.emit)
        return;
    log::warn(message, {{"actor_id", s.actor_id},
                        {"operation", operation},
                        {"per_actor_suppressed", per_actor.suppressed},
                        {"global_suppressed", global.suppressed}});
}

}  // namespace

void ActorContext::warn_work_sent_to_stopping_instance(std::string_view operation) const {
    warn_limited(*p_, WarningKind::WorkSentToStoppingInstance,
                 "work sent to stopping actor instance", operation);
}

void ActorContext::warn_self_call_risk(std::string_view operation) const {
    warn_limited(*p_, WarningKind::SelfCallRisk,
                 "actor dispatch may be parked behind the current instance", operation);
}

}  // namespace rivetkit::core

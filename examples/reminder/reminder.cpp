#include "reminder/reminder.hpp"

#include <chrono>
#include <cstdint>
#include <utility>

namespace rivetkit::examples {

Actor<ReminderState> reminder_actor() {
    using Action = ActionContext<ReminderState>;
    return Actor<ReminderState>()
        .action(
            "remindIn",
            [](Action& c, std::int64_t ms, std::string text) {
                if (ms < 0)
                    throw UserError("invalid_delay", "delay must not be negative", {{"ms", ms}});
                c.schedule_after(std::chrono::milliseconds(ms), "fire", text);
            })
        .action("fire",
                [](Action& c, std::string text) {
                    c.state().fired.push_back(text);
                    c.broadcast("reminder", text);
                })
        .action("getFired", [](Action& c) { return std::as_const(c).state().fired; })
        .action("goToSleep", [](Action& c) { c.sleep(); });
}

}  // namespace rivetkit::examples

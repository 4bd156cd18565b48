#pragma once
// reminder: scheduled actions that survive sleep.
//
//   state {fired: [text]}
//   remindIn(ms, text) → null; schedules fire(text) in `ms` milliseconds
//   fire(text) → null; appends text to fired and broadcasts "reminder" [text]
//   getFired() → fired
//   goToSleep() → null; puts the actor to sleep (the engine's alarm wakes it for the next reminder)

#include <string>
#include <vector>

#include "rivetkit/actor.hpp"

namespace rivetkit::examples {

struct ReminderState {
    std::vector<std::string> fired;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ReminderState, fired)

Actor<ReminderState> reminder_actor();

}  // namespace rivetkit::examples

#include "examples.hpp"

#include "chat_room/chat_room.hpp"
#include "counter/counter.hpp"
#include "ledger/ledger.hpp"
#include "rate_limiter/rate_limiter.hpp"
#include "reminder/reminder.hpp"

namespace rivetkit::examples {

void register_examples(core::registry::CoreRegistry& registry) {
    registry.register_actor("counter", counter_actor().factory());
    registry.register_actor("chatRoom", chat_room_actor().factory());
    registry.register_actor("reminder", reminder_actor().factory());
    registry.register_actor("rateLimiter", rate_limiter_actor().factory());
    registry.register_actor("ledger", ledger_actor().factory());
}

}  // namespace rivetkit::examples

#include "examples.hpp"

#include "chat_room/chat_room.hpp"
#include "counter/counter.hpp"
#include "ledger/ledger.hpp"
#include "rate_limiter/rate_limiter.hpp"
#include "reminder/reminder.hpp"

namespace rivetkit::examples {

std::vector<std::pair<std::string, std::shared_ptr<core::ActorFactory>>> example_actors() {
    return {{"counter", counter_actor().factory()},
            {"chatRoom", chat_room_actor().factory()},
            {"reminder", reminder_actor().factory()},
            {"rateLimiter", rate_limiter_actor().factory()},
            {"ledger", ledger_actor().factory()}};
}

void use_examples(Registry& registry) {
    for (auto& [name, factory] : example_actors())
        registry.use_factory(name, factory);
}

void register_examples(core::registry::CoreRegistry& registry) {
    for (auto& [name, factory] : example_actors())
        registry.register_actor(name, factory);
}

}  // namespace rivetkit::examples

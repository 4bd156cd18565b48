#pragma once
// The example actors of issue 6, registered under the names the official clients use:
// "counter", "chatRoom", "reminder", "rateLimiter", "ledger".

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/registry/registry.hpp"
#include "rivetkit/registry.hpp"

namespace rivetkit::examples {

// Name → factory, in registration order.
std::vector<std::pair<std::string, std::shared_ptr<core::ActorFactory>>> example_actors();

// On a program's registry (rivetkit-host) or on a core registry (tests).
void use_examples(Registry& registry);
void register_examples(core::registry::CoreRegistry& registry);

}  // namespace rivetkit::examples

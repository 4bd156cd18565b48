#pragma once
// The example actors of issue 6, registered under the names the official clients use:
// "counter", "chatRoom", "reminder", "rateLimiter", "ledger".

#include "core/registry/registry.hpp"

namespace rivetkit::examples {

void register_examples(core::registry::CoreRegistry& registry);

}  // namespace rivetkit::examples

#pragma once
// counter: the hello-world actor.
//
//   state {count}
//   increment(amount) → the new count; broadcasts "newCount" [count]
//   getCount() → count
//   fail() → always the user error deliberate_failure "counter failed on purpose"
//            {"reason":"test"}
// A creation input {"start": n} sets the first count.

#include <cstdint>

#include "rivetkit/actor.hpp"

namespace rivetkit::examples {

struct CounterState {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CounterState, count)

Actor<CounterState> counter_actor();

}  // namespace rivetkit::examples

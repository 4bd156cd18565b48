#pragma once
// The test actor every registry and interop test talks to, written straight against the
// ActorEvent stream (no typed API): the contract of tests/interop/js.
//
//   state {count}; increment(amount) → count, broadcasts "newCount" [count]; getCount();
//   getInput() → input or null; fail() → user error deliberate_failure "counter failed on
//   purpose" {"reason":"test"}; goToSleep() → sleep(); broadcastMany(n) → "tick" 0..n-1, n.
//
// State is CBOR {"count": n}, saved through SerializeState as upstream runtimes do.

#include <memory>

#include "core/actor/factory.hpp"

namespace rivetkit::testing {

std::shared_ptr<core::ActorFactory> counter_factory(core::ActorConfig config = {});

}  // namespace rivetkit::testing

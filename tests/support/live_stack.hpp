#pragma once
// What every real-engine registry test starts with: the pinned engine (fresh data directory,
// engine-side CPU shedding off), the pool "default", and a LiveHost serving the actors `setup`
// registers — connected, and registered at the engine so actors can be placed at once.

#include <functional>
#include <memory>

#include "base/result.hpp"
#include "engine_harness.hpp"
#include "live_host.hpp"

namespace rivetkit::testing {

struct LiveStack {
    std::unique_ptr<EngineHarness> engine;
    std::unique_ptr<LiveHost> host;  // destroyed before the engine

    static Result<LiveStack> start(std::function<void(core::registry::CoreRegistry&)> setup,
                                   EngineOptions options = {});
};

}  // namespace rivetkit::testing

#include "live_stack.hpp"

namespace rivetkit::testing {

Result<LiveStack> LiveStack::start(std::function<void(core::registry::CoreRegistry&)> setup,
                                   EngineOptions options) {
    // Engine defaults unless `options` says otherwise, including its in-process pub/sub fast path
    // that drops tunnel messages past 1024 queued per gateway: the envoy paces bursts
    // (EnvoyConfig::write_frames_per_second), which keeps a 100 x 1000 broadcast whole unless the
    // engine is starved of CPU.
    auto engine = EngineHarness::start(std::move(options));
    if (!engine.ok())
        return std::move(engine).error();
    LiveStack stack;
    stack.engine = std::move(engine).value();
    if (Status pool = stack.engine->create_pool("default"); !pool.ok())
        return Error(pool.error().group(), pool.error().code(),
                     pool.error().message() + "\n" + stack.engine->log_tail());
    stack.host = std::make_unique<LiveHost>(stack.engine->endpoint(), "default", std::move(setup));
    if (!stack.host->wait_connected())
        return Error("test", "envoy_not_connected", "envoy never connected\n" +
                                                        stack.engine->log_tail());
    // The engine answers the envoy's init before its registration is committed; an actor
    // created in that gap waits ~30 s for placement.
    if (Status registered = stack.engine->wait_envoy_registered(stack.host->handle().envoy_key());
        !registered.ok())
        return registered.error();
    return stack;
}

}  // namespace rivetkit::testing

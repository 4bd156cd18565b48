// rivetkit-host: serves the example actors (counter, chatRoom, reminder, rateLimiter, ledger) on a
// Rivet Engine, through rivetkit::Registry (include/rivetkit/registry.hpp).
//
// With no endpoint it uses the embedded default: a local engine on http://127.0.0.1:6420 — the
// one already running there, or the pinned binary started with its data under the user's data
// directory. With RIVET_ENDPOINT / RIVET_TOKEN / RIVET_NAMESPACE / RIVET_POOL / RIVET_THREADS (or
// the same as flags) it joins that engine instead. SIGINT/SIGTERM drain: the engine stops every
// actor (sleep, state saved), then the process exits 0; a second signal stops at once.

#include <cstdio>
#include <string>

#include "base/version.hpp"
#include "examples.hpp"
#include "rivetkit/registry.hpp"

using namespace rivetkit;

namespace {

std::string try_command(const HostInfo& info) {
    return "curl -X POST '" + info.endpoint +
           "/gateway/counter/action/increment?rvt-namespace=" + info.ns +
           "&rvt-method=getOrCreate&rvt-runner=" + info.pool +
           "&rvt-key=demo&rvt-crash-policy=sleep' -H 'content-type: application/json' "
           "-d '{\"args\":[1]}'";
}

}  // namespace

int main(int argc, char** argv) {
    Registry registry;
    examples::use_examples(registry);
    registry.describe(
        "Serves the example actors of rivetkit-cpp (examples/) on a Rivet Engine.");
    registry.on_ready([](const HostInfo& info) {
        std::printf("rivetkit-host %s serving counter, chatRoom, reminder, rateLimiter, ledger\n"
                    "  endpoint:  %s  (namespace %s, pool %s, %u threads)\n"
                    "  try:       %s\n",
                    kVersion, info.endpoint.c_str(), info.ns.c_str(), info.pool.c_str(),
                    info.threads, try_command(info).c_str());
        std::fflush(stdout);
    });
    return registry.run(argc, argv);
}

// The memory-budget benchmark's host (run.sh here): rivetkit-host's registry serving `resident`,
// an actor that never sleeps (so every actor the driver creates stays awake while it measures),
// keeps a small state and broadcasts to its connections.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>

#include "rivetkit/registry.hpp"
#include "rivetkit/rivetkit.hpp"

using namespace rivetkit;

namespace {

struct Resident {
    std::int64_t touches = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Resident, touches)

}  // namespace

int main(int argc, char** argv) {
    // MEMORY_HOST_SLEEP_TIMEOUT_MS=N: a sleep timeout of N ms instead of never sleeping (to tell
    // what no_sleep itself costs).
    ActorOptions options;
    if (const char* ms = std::getenv("MEMORY_HOST_SLEEP_TIMEOUT_MS"))
        options.sleep_timeout = std::chrono::milliseconds(std::strtoll(ms, nullptr, 10));
    else
        options.no_sleep = true;
    Registry registry;
    registry.use("resident", Actor<Resident>()
                                 .action("touch",
                                         [](ActionContext<Resident>& c, std::int64_t by) {
                                             c.state().touches += by;
                                             c.broadcast("touched", c.state().touches);
                                             return c.state().touches;
                                         })
                                 .options(options));
    registry.describe("The memory-budget benchmark's never-sleeping actor (bench/memory).");
    registry.on_ready([](const HostInfo&) {
        std::printf("memory host ready\n");
        std::fflush(stdout);
    });
    return registry.run(argc, argv);
}

// The memory-budget benchmark's host (run.sh here): rivetkit-host's registry serving `resident`,
// an actor that never sleeps (so every actor the driver creates stays awake while it measures),
// keeps a small state and broadcasts to its connections.

#include <cstdint>
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
    ActorOptions options;
    options.no_sleep = true;
    Registry registry;
    registry.use("resident", Actor<Resident>()
                                 .action("touch",
                                         [](ActionContext<Resident>& c) {
                                             c.state().touches += 1;
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

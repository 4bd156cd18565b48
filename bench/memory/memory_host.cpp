// The memory-budget benchmark's host (run.sh here): rivetkit-host's registry serving `resident`,
// an actor that never sleeps (so every actor the driver creates stays awake while it measures),
// keeps a small state and broadcasts to its connections; and rivetkit-host's example actors, so
// the peer benchmark (bench/peer) runs every scenario against this one process.

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "examples.hpp"
#include "rivetkit/registry.hpp"
#include "rivetkit/rivetkit.hpp"

using namespace rivetkit;

namespace {

struct Resident {
    std::int64_t touches = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Resident, touches)

// MEMORY_HOST_HEAP_FILE=path: each SIGUSR1 writes the heap's bytes in use (glibc's count of
// allocated chunks) to `path` as "<pid> <sequence> <bytes>", so a driver can read the live heap,
// which unlike the RSS does not include free blocks the allocator keeps. The pid is whom to
// signal (the host may run under a wrapper such as heaptrack).
// MEMORY_HOST_EXIT_ON_TERM=1 (with the probe): SIGTERM ends the process at once, without the
// graceful stop, so a heap profiler (heaptrack) reports every block the awake actors held as
// still allocated, not what the stop's final saves allocate.
void serve_heap_probe() {
    const char* path = std::getenv("MEMORY_HOST_HEAP_FILE");
    if (path == nullptr)
        return;
    const bool exit_on_term = std::getenv("MEMORY_HOST_EXIT_ON_TERM") != nullptr;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    if (exit_on_term)
        sigaddset(&usr1, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &usr1, nullptr);  // before any other thread exists: all inherit it
    // Sequence 0 is written at once: the file's presence tells the driver the probe is there (a
    // host without it would die of SIGUSR1).
    std::thread([usr1, out = std::string(path)] {
        for (unsigned long sequence = 0;; ++sequence) {
            const struct mallinfo2 info = mallinfo2();
            std::ofstream(out + ".tmp")
                << ::getpid() << ' ' << sequence << ' ' << info.uordblks << '\n';
            std::rename((out + ".tmp").c_str(), out.c_str());
            int signal = 0;
            if (sigwait(&usr1, &signal) != 0)
                return;
            if (signal == SIGTERM)
                std::_Exit(0);
        }
    }).detach();
}

}  // namespace

int main(int argc, char** argv) {
    serve_heap_probe();
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
    examples::use_examples(registry);
    registry.describe(
        "The memory and peer benchmarks' host: a never-sleeping actor and the example actors.");
    registry.on_ready([](const HostInfo& info) {
        std::printf("memory host ready\n  endpoint:  %s  (namespace %s, pool %s, %u threads)\n",
                    info.endpoint.c_str(), info.ns.c_str(), info.pool.c_str(), info.threads);
        std::fflush(stdout);
    });
    return registry.run(argc, argv);
}

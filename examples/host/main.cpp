// rivetkit-host: serves the example actors (counter, chatRoom, reminder, rateLimiter, ledger) on a
// Rivet Engine, through rivetkit::Registry (include/rivetkit/registry.hpp).
//
// With no endpoint it uses the embedded default: a local engine on http://127.0.0.1:6420 — the
// one already running there, or the pinned binary started with its data under the user's data
// directory. With RIVET_ENDPOINT / RIVET_TOKEN / RIVET_NAMESPACE / RIVET_POOL / RIVET_THREADS (or
// the same as flags) it joins that engine instead. SIGINT/SIGTERM drain: the engine stops every
// actor (sleep, state saved), then the process exits 0; a second signal stops at once.

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "base/log.hpp"
#include "base/version.hpp"
#include "examples.hpp"
#include "rivetkit/registry.hpp"

using namespace rivetkit;

namespace {

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: rivetkit-host [--endpoint URL] [--token T] [--namespace NS] [--pool P]\n"
                 "                     [--threads N] [--version] [--help]\n"
                 "\n"
                 "Serves the example actors counter, chatRoom, reminder, rateLimiter and ledger.\n"
                 "Without an endpoint it starts (or reuses) a local Rivet Engine on\n"
                 "http://127.0.0.1:6420 with its data in $XDG_DATA_HOME/rivetkit-cpp/engine.\n"
                 "--threads: io threads, each with its own engine connection (default: one per\n"
                 "core).\n"
                 "Environment: RIVET_ENDPOINT, RIVET_TOKEN, RIVET_NAMESPACE, RIVET_POOL,\n"
                 "RIVET_THREADS, RIVET_ENGINE_BIN (engine binary), RIVET_LOG_LEVEL,\n"
                 "RIVET_LOG_FORMAT.\n");
}

std::string try_command(const HostInfo& info) {
    return "curl -X POST '" + info.endpoint +
           "/gateway/counter/action/increment?rvt-namespace=" + info.ns +
           "&rvt-method=getOrCreate&rvt-runner=" + info.pool +
           "&rvt-key=demo&rvt-crash-policy=sleep' -H 'content-type: application/json' "
           "-d '{\"args\":[1]}'";
}

}  // namespace

int main(int argc, char** argv) {
    log::init_from_env();
    HostConfig config = HostConfig::from_env();
    for (int i = 1; i < argc; ++i) {
        std::string_view arg(argv[i]);
        if (arg == "--help" || arg == "-h") {
            usage(stdout);
            return 0;
        }
        if (arg == "--version") {
            std::printf("rivetkit-host %s (engine %s, envoy protocol v%u)\n", kVersion,
                        kEngineVersion, kEnvoyProtocolVersion);
            return 0;
        }
        const bool known = arg == "--endpoint" || arg == "--token" || arg == "--namespace" ||
                           arg == "--pool" || arg == "--threads";
        if (!known) {
            std::fprintf(stderr, "rivetkit-host: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "rivetkit-host: %s needs a value\n", argv[i]);
            return 2;
        }
        std::string value = argv[++i];
        if (arg == "--endpoint") {
            config.endpoint = value;
        } else if (arg == "--token") {
            config.token = value;
        } else if (arg == "--namespace") {
            config.ns = value;
        } else if (arg == "--pool") {
            config.pool = value;
        } else {
            char* end = nullptr;
            const unsigned long n = std::strtoul(value.c_str(), &end, 10);
            if (end == value.c_str() || *end != '\0' || n > 1024) {
                std::fprintf(stderr, "rivetkit-host: --threads needs a number from 0 to 1024\n");
                return 2;
            }
            config.threads = static_cast<unsigned>(n);
        }
    }

    Registry registry;
    examples::use_examples(registry);
    registry.on_ready([](const HostInfo& info) {
        std::printf("rivetkit-host %s serving counter, chatRoom, reminder, rateLimiter, ledger\n"
                    "  endpoint:  %s  (namespace %s, pool %s, %u threads)\n"
                    "  try:       %s\n",
                    kVersion, info.endpoint.c_str(), info.ns.c_str(), info.pool.c_str(),
                    info.threads, try_command(info).c_str());
        std::fflush(stdout);
    });
    return registry.run(config);
}

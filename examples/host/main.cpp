// rivetkit-host: hosts C++ actors on a Rivet Engine.
//
// This build knows only --version and --help; serving actors arrives with the envoy client.

#include <cstdio>
#include <string_view>

#include "base/log.hpp"
#include "base/version.hpp"

int main(int argc, char** argv) {
    rivetkit::log::init_from_env();
    for (int i = 1; i < argc; ++i) {
        std::string_view arg(argv[i]);
        if (arg == "--help" || arg == "-h") {
            std::printf("usage: rivetkit-host [--version]\n");
            return 0;
        }
        if (arg != "--version") {
            std::fprintf(stderr, "rivetkit-host: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    std::printf("rivetkit-host %s (engine %s, envoy protocol v%u)\n", rivetkit::kVersion,
                rivetkit::kEngineVersion, rivetkit::kEnvoyProtocolVersion);
    rivetkit::log::info("rivetkit host exiting", {{"reason", "nothing to serve yet"}});
    return 0;
}

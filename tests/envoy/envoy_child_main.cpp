// A separate envoy process for tests that kill an envoy for real (SIGKILL): joins the engine at
// argv[1] in pool argv[2] with the LiveCallbacks test handlers, and reports on stdout
//
//   connected <envoy_key>
//   started <actor_id> <generation>
//
// It runs until it is killed.

#include <cstdio>
#include <string>

#include "base/log.hpp"
#include "live_envoy.hpp"

using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s <endpoint> <pool>\n", argv[0]);
        return 2;
    }
    rivetkit::log::init_from_env();
    EnvoyConfig config;
    config.endpoint = argv[1];
    config.pool_name = argv[2];
    config.prepopulate_actor_names = {{"counter", R"({"kind":"test"})"}};
    config.metadata_json = R"({"impl":"rivetkit-cpp","role":"child"})";
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(config, cb);
    int connects = 0;
    std::size_t starts = 0;
    for (;;) {
        // Blocks until something to report happened (no timeout: the test kills this process).
        while (!cb->wait([&](const LiveCallbacks::State& s) {
            return s.connects > connects || s.starts.size() > starts;
        })) {
        }
        cb->read([&](const LiveCallbacks::State& s) {
            for (; connects < s.connects; ++connects)
                std::printf("connected %s\n", envoy.handle().envoy_key().c_str());
            for (; starts < s.starts.size(); ++starts)
                std::printf("started %s %u\n", s.starts[starts].actor_id.c_str(),
                            s.starts[starts].generation);
            return 0;
        });
        std::fflush(stdout);
    }
}

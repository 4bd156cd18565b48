// A counter actor hosted by a program built outside rivetkit-cpp against the installed package
// (find_package(rivetkit)). Configured by RIVET_ENDPOINT, RIVET_POOL, … (a local engine without
// an endpoint); runs until SIGINT/SIGTERM.

#include <rivetkit/registry.hpp>
#include <rivetkit/rivetkit.hpp>

struct Counter {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Counter, count)

int main() {
    rivetkit::Registry registry;
    registry.use("counter", rivetkit::Actor<Counter>().action(
                                "increment", [](rivetkit::ActionContext<Counter>& c, std::int64_t n) {
                                    c.broadcast("newCount", c.state().count += n);
                                    return c.state().count;
                                }));
    return registry.run();
}

// A counter hosted by a program built outside rivetkit-cpp, against the installed package.
// Without RIVET_ENDPOINT it starts the engine installed with the package; --help lists the rest.
#include <rivetkit/registry.hpp>
#include <rivetkit/rivetkit.hpp>

struct Counter {
    std::int64_t count = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Counter, count)

int main(int argc, char** argv) {
    auto counter = rivetkit::Actor<Counter>().action(
        "increment", [](rivetkit::ActionContext<Counter>& c, std::int64_t n) {
            c.broadcast("newCount", c.state().count += n);
            return c.state().count;
        });
    return rivetkit::Registry().use("counter", counter).run(argc, argv);
}

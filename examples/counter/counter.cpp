#include "counter/counter.hpp"

#include <utility>

namespace rivetkit::examples {

namespace {
struct CounterInput {
    std::int64_t start = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CounterInput, start)
}  // namespace

Actor<CounterState> counter_actor() {
    using Action = ActionContext<CounterState>;
    return Actor<CounterState>()
        .create_state([](std::optional<CounterInput> input) {
            return CounterState{input ? input->start : 0};
        })
        .action("increment",
                [](Action& c, std::int64_t amount) {
                    c.state().count += amount;
                    c.broadcast("newCount", c.state().count);
                    return c.state().count;
                })
        .action("getCount", [](Action& c) { return std::as_const(c).state().count; })
        .action("fail", [](Action&) -> std::int64_t {
            throw UserError("deliberate_failure", "counter failed on purpose",
                            {{"reason", "test"}});
        })
        .action("goToSleep", [](Action& c) { c.sleep(); });
}

}  // namespace rivetkit::examples

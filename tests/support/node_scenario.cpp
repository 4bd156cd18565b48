#include "node_scenario.hpp"

#include <cstdlib>

#include "subprocess.hpp"

namespace rivetkit::testing {

std::string node_binary() {
    const char* bin = std::getenv("RIVET_NODE_BIN");
    return bin != nullptr && *bin != '\0' ? bin : "node";
}

std::string tail(const std::string& s, std::size_t n) {
    return s.substr(s.size() > n ? s.size() - n : 0);
}

ScenarioRun run_node_scenario(const std::string& script, std::vector<std::string> args,
                              const std::string& endpoint, std::chrono::milliseconds timeout) {
    std::vector<std::string> argv{node_binary(), script};
    argv.insert(argv.end(), args.begin(), args.end());
    ScenarioRun out;
    auto run = run_process(std::move(argv), {{"RIVET_ENDPOINT", endpoint}}, timeout);
    if (!run.ok()) {
        out.failure = script + ": " + run.error().to_string();
        return out;
    }
    out.err = run->err;
    const std::string& stdout_text = run->out;
    auto last = stdout_text.find_last_of('\n', stdout_text.size() >= 2 ? stdout_text.size() - 2 : 0);
    out.line = stdout_text.substr(last == std::string::npos ? 0 : last + 1);
    auto parsed = nlohmann::json::parse(out.line, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
        out.failure = script + ": no result line\nstdout: " + stdout_text + "\nstderr tail: " +
                      tail(run->err);
        return out;
    }
    out.result = std::move(parsed);
    if (out.result.value("ok", false) != true)
        out.failure = script + ": " + out.result.dump(2) + "\nstderr tail: " + tail(run->err);
    return out;
}

}  // namespace rivetkit::testing

#pragma once
// The interop tests' node scenarios (tests/interop/js/*.mjs, README.md there): the node binary
// ($RIVET_NODE_BIN, else "node") and one scenario run, whose result is the last line of stdout —
// one JSON object with "ok". A run that did not finish, an unparsable line or ok != true is
// described in `failure` (with stdout and the tail of stderr) for the caller to report.

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rivetkit::testing {

std::string node_binary();
// The last `n` characters of `s` (logs in failure messages).
std::string tail(const std::string& s, std::size_t n = 3000);

struct ScenarioRun {
    nlohmann::json result = nlohmann::json::object();  // the result line; {} when there is none
    std::string line;                                  // the result line as printed
    std::string failure;                               // empty when the scenario reported ok
    std::string err;                                   // the scenario's stderr
};

// Runs `node <script> <args...>` with RIVET_ENDPOINT=`endpoint`.
ScenarioRun run_node_scenario(const std::string& script, std::vector<std::string> args,
                              const std::string& endpoint, std::chrono::milliseconds timeout);

}  // namespace rivetkit::testing

#pragma once
// Running a helper program (node scripts of the interop suite) from a test: argv, extra
// environment, stdout captured, bounded by a timeout (the child is killed when it passes), and
// the child dies with the test process (PR_SET_PDEATHSIG).

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace rivetkit::testing {

struct ProcessResult {
    int exit_code = -1;  // -1 when killed by a signal or the timeout
    bool timed_out = false;
    std::string out;
    std::string err;
};

Result<ProcessResult> run_process(std::vector<std::string> argv,
                                  std::vector<std::pair<std::string, std::string>> extra_env,
                                  std::chrono::milliseconds timeout);

}  // namespace rivetkit::testing

#pragma once
// Running a helper program (node scripts of the interop suite) from a test: argv, extra
// environment, stdout captured, bounded by a timeout (the child is killed when it passes), and
// the child dies with the test process (PR_SET_PDEATHSIG).

#include <chrono>
#include <memory>
#include <optional>
#include <string_view>
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

// A long-running child (a host executable under test): stdout and stderr collected, waited on
// for a line, signalled, reaped. Killed (SIGKILL) when destroyed if still running.
class ChildProcess {
  public:
    static Result<std::unique_ptr<ChildProcess>> spawn(
        std::vector<std::string> argv, std::vector<std::pair<std::string, std::string>> extra_env);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    // Reads until `needle` appears in stdout (true) or the timeout passes / the child exits.
    bool wait_for_stdout(std::string_view needle, std::chrono::milliseconds timeout);
    void signal(int signo);
    // The exit code once the child exited within `timeout` (-1: killed by a signal).
    std::optional<int> wait(std::chrono::milliseconds timeout);
    const std::string& out() const noexcept { return out_; }
    const std::string& err() const noexcept { return err_; }

  private:
    ChildProcess() = default;
    void pump(int timeout_ms);
    int pid_ = -1;
    int out_fd_ = -1;
    int err_fd_ = -1;
    std::string out_;
    std::string err_;
    std::optional<int> exit_code_;
};

}  // namespace rivetkit::testing

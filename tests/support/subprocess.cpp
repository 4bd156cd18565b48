#include "subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace rivetkit::testing {

namespace {

Error process_error(const std::string& what) {
    return Error("test", "subprocess", what + ": " + std::strerror(errno));
}

}  // namespace

Result<ProcessResult> run_process(std::vector<std::string> argv,
                                  std::vector<std::pair<std::string, std::string>> extra_env,
                                  std::chrono::milliseconds timeout) {
    auto child = ChildProcess::spawn(std::move(argv), std::move(extra_env));
    if (!child.ok())
        return std::move(child).error();
    auto& process = *child.value();
    ProcessResult result;
    auto code = process.wait(timeout);
    if (!code) {
        result.timed_out = true;
        process.signal(SIGKILL);
        (void)process.wait(std::chrono::seconds(10));
        code = -1;
    }
    result.exit_code = *code;
    result.out = process.out();
    result.err = process.err();
    return result;
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(
    std::vector<std::string> argv, std::vector<std::pair<std::string, std::string>> extra_env) {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
        std::string entry(*e);
        bool overridden = false;
        for (const auto& [k, v] : extra_env)
            overridden |= entry.rfind(k + "=", 0) == 0;
        if (!overridden)
            env_storage.push_back(std::move(entry));
    }
    for (const auto& [k, v] : extra_env)
        env_storage.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_storage)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> args;
    for (auto& a : argv)
        args.push_back(a.data());
    args.push_back(nullptr);
    int out_pipe[2];
    int err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)
        return process_error("pipe");
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0)
        return process_error("fork");
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127);
        ::dup2(out_pipe[1], 1);
        ::dup2(err_pipe[1], 2);
        ::execvpe(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    std::unique_ptr<ChildProcess> child(new ChildProcess());
    child->pid_ = pid;
    child->out_fd_ = out_pipe[0];
    child->err_fd_ = err_pipe[0];
    return child;
}

void ChildProcess::pump(int timeout_ms) {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) <= 0)
        return;
    char buf[8192];
    for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0)
            continue;
        ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
        if (got > 0) {
            (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(got));
        } else {
            ::close(fds[i].fd);
            (i == 0 ? out_fd_ : err_fd_) = -1;
        }
    }
}

bool ChildProcess::wait_for_stdout(std::string_view needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out_.find(needle) == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0 || (out_fd_ < 0 && err_fd_ < 0))
            return false;
        pump(static_cast<int>(std::min<long long>(left.count(), 1000)));
    }
    return true;
}

void ChildProcess::signal(int signo) {
    if (pid_ > 0 && !exit_code_)
        ::kill(pid_, signo);
}

std::optional<int> ChildProcess::wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exit_code_) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        // Reading the pipes both collects output and paces this loop (poll timeout).
        if (out_fd_ >= 0 || err_fd_ >= 0)
            pump(static_cast<int>(std::min<long long>(left.count(), 50)));
        else
            ::poll(nullptr, 0, 50);
    }
    while (out_fd_ >= 0 || err_fd_ >= 0)
        pump(100);
    return exit_code_;
}

ChildProcess::~ChildProcess() {
    if (pid_ > 0 && !exit_code_) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0)
        ::close(out_fd_);
    if (err_fd_ >= 0)
        ::close(err_fd_);
}

}  // namespace rivetkit::testing

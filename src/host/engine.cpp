#include "host/engine.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <nlohmann/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace rivetkit::host {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

Error host_error(std::string code, std::string message) {
    return Error("host", std::move(code), std::move(message));
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
    auto parsed = boost::urls::parse_uri(url);
    if (!parsed)
        return host_error("invalid_endpoint", "not a URL: " + std::string(url));
    if (parsed->scheme() != "http")
        return host_error("invalid_endpoint",
                          "only http:// endpoints are supported (wss/https: not yet): " +
                              std::string(url));
    Endpoint e;
    e.host = std::string(parsed->host());
    if (parsed->has_port())
        e.port = parsed->port_number();
    else
        e.port = 80;
    e.text = std::string(url);
    while (!e.text.empty() && e.text.back() == '/')
        e.text.pop_back();
    return e;
}

Result<HttpReply> http_call(const Endpoint& endpoint, const std::string& method,
                            const std::string& target, const std::string& body,
                            const std::optional<std::string>& token,
                            std::chrono::milliseconds timeout) {
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    beast::error_code ec;
    asio::ip::tcp::resolver resolver(io);
    auto results = resolver.resolve(endpoint.host, std::to_string(endpoint.port), ec);
    if (ec)
        return host_error("http_failed", "resolve " + endpoint.host + ": " + ec.message());
    stream.connect(results, ec);
    if (ec)
        return host_error("http_failed", "connect " + endpoint.text + ": " + ec.message());
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, endpoint.host);
    req.set(http::field::user_agent, "rivetkit-host");
    req.set(http::field::connection, "close");
    if (token)
        req.set(http::field::authorization, "Bearer " + *token);
    if (!body.empty()) {
        req.set(http::field::content_type, "application/json");
        req.body() = body;
    }
    req.prepare_payload();
    http::write(stream, req, ec);
    if (ec)
        return host_error("http_failed", method + " " + target + ": " + ec.message());
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res, ec);
    if (ec)
        return host_error("http_failed", method + " " + target + ": " + ec.message());
    return HttpReply{res.result_int(), res.body()};
}

bool engine_healthy(const Endpoint& endpoint) {
    auto r = http_call(endpoint, "GET", "/health", {}, std::nullopt, std::chrono::seconds(2));
    return r.ok() && r->status == 200;
}

bool is_namespace_not_found(const HttpReply& reply) {
    if (reply.status != 400)
        return false;
    auto body = nlohmann::json::parse(reply.body, nullptr, false);
    return body.is_object() && body.value("group", "") == "namespace" &&
           body.value("code", "") == "not_found";
}

Status ensure_pool(const Endpoint& endpoint, const std::string& ns, const std::string& pool,
                   const std::optional<std::string>& token, bool engine_starting) {
    // The engine answers /health before its internal replica is configured; writes fail with a
    // 5xx (or a reset connection) for a moment after that.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        auto r = http_call(endpoint, "PUT", "/runner-configs/" + pool + "?namespace=" + ns,
                           R"({"datacenters":{"default":{"normal":{}}}})", token);
        if (r.ok() && r->status == 200)
            return {};
        const bool retry = !r.ok() || r->status >= 500 ||
                           (engine_starting && is_namespace_not_found(*r));
        if (!retry || std::chrono::steady_clock::now() >= deadline) {
            if (r.ok() && is_namespace_not_found(*r))
                return host_error("namespace_not_found",
                                  "the engine has no namespace '" + ns +
                                      "' (create it in the dashboard or with the engine's API, "
                                      "or set RIVET_NAMESPACE to one that exists)");
            return host_error("pool_failed",
                              r.ok() ? "status " + std::to_string(r->status) + ": " + r->body
                                     : r.error().to_string());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

namespace {
std::mutex& package_engine_mutex() {
    static std::mutex m;
    return m;
}
std::optional<std::string>& package_engine_path() {
    static std::optional<std::string> path;
    return path;
}
bool executable(const std::filesystem::path& p) {
    return ::access(p.c_str(), X_OK) == 0;
}
}  // namespace

void set_package_engine_binary(std::string path) {
    std::lock_guard lock(package_engine_mutex());
    if (path.empty())
        package_engine_path().reset();
    else
        package_engine_path() = std::move(path);
}

Result<std::filesystem::path> find_engine_binary(
    const std::optional<std::string>& explicit_binary) {
    if (explicit_binary) {
        if (executable(*explicit_binary))
            return std::filesystem::path(*explicit_binary);
        return host_error("engine_missing",
                          "RIVET_ENGINE_BIN (or HostConfig::engine_binary) is not an executable: " +
                              *explicit_binary);
    }
    std::vector<std::filesystem::path> tried;
    {
        std::lock_guard lock(package_engine_mutex());
        if (package_engine_path())
            tried.emplace_back(*package_engine_path());
    }
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec)
        tried.push_back(self.parent_path().parent_path() / "libexec" / "rivetkit" /
                        "rivet-engine");
#ifdef RIVETKIT_DEFAULT_ENGINE_BIN
    tried.emplace_back(RIVETKIT_DEFAULT_ENGINE_BIN);
#endif
    std::string places;
    for (const auto& candidate : tried) {
        if (executable(candidate))
            return candidate;
        places += "\n  " + candidate.string();
    }
    return host_error(
        "engine_missing",
        "no Rivet Engine binary found; looked in:" + places +
            "\nInstall rivetkit-cpp with `cmake --install` (it installs the pinned engine beside "
            "the library), set RIVET_ENGINE_BIN to a rivet-engine 2.3.19 binary (npm package "
            "@rivetkit/engine-cli), or set RIVET_ENDPOINT to an engine that is already running");
}

std::filesystem::path default_engine_data_dir() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0')
        return std::filesystem::path(xdg) / "rivetkit-cpp" / "engine";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home != nullptr ? home : "/tmp") / ".local" / "share" /
           "rivetkit-cpp" / "engine";
}

Result<LocalEngine> LocalEngine::start(const std::filesystem::path& binary,
                                       const std::filesystem::path& data_dir,
                                       const Endpoint& endpoint) {
    if (::access(binary.c_str(), X_OK) != 0)
        return host_error("engine_missing", "engine binary not executable: " + binary.string() +
                                                " (run scripts/deps.sh or set RIVET_ENGINE_BIN)");
    std::error_code ec;
    std::filesystem::create_directories(data_dir, ec);
    if (ec)
        return host_error("engine_data", "cannot create " + data_dir.string() + ": " + ec.message());

    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
        env.emplace_back(*e);
    env.emplace_back("RUST_BACKTRACE=0");  // with backtraces the engine spends its CPU on them
    env.emplace_back("RUST_LOG_ANSI_COLOR=0");
    env.emplace_back("RIVET__GUARD__HOST=" + endpoint.host);
    env.emplace_back("RIVET__GUARD__PORT=" + std::to_string(endpoint.port));
    env.emplace_back("RIVET__FILE_SYSTEM__PATH=" + (data_dir / "db").string());
    std::vector<char*> envp;
    for (auto& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string bin = binary.string();
    std::string start_arg = "start";
    char* argv[] = {bin.data(), start_arg.data(), nullptr};
    const auto log = data_dir / "engine.log";
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    const pid_t pid = ::fork();
    if (pid < 0) {
        if (log_fd >= 0)
            ::close(log_fd);
        return host_error("engine_spawn", "fork failed");
    }
    if (pid == 0) {
        ::setpgid(0, 0);  // Ctrl-C reaches the host, which stops the engine after draining
        if (log_fd >= 0) {
            ::dup2(log_fd, 1);
            ::dup2(log_fd, 2);
        }
        ::execve(argv[0], argv, envp.data());
        ::_exit(127);
    }
    if (log_fd >= 0)
        ::close(log_fd);
    LocalEngine engine(pid, log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            engine.pid_ = -1;
            return host_error("engine_exited", "the engine exited at start; see " + log.string());
        }
        if (engine_healthy(endpoint))
            return engine;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return host_error("engine_not_ready", "engine not healthy after 60 s; see " + log.string());
}

void LocalEngine::stop(std::chrono::milliseconds grace) {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

LocalEngine::~LocalEngine() {
    stop();
}

}  // namespace rivetkit::host

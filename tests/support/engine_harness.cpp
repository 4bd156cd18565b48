#include "engine_harness.hpp"

#include "base/base64.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

namespace rivetkit::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

Error harness_error(std::string code, std::string message) {
    return Error("test_harness", std::move(code), std::move(message));
}

}  // namespace

std::optional<std::string> HttpResult::header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
        if (k.size() == name.size() &&
            std::equal(k.begin(), k.end(), name.begin(),
                       [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
            return v;
        }
    }
    return std::nullopt;
}

std::string gateway_target(std::string_view name, std::string_view key, std::string_view path) {
    std::string target = "/gateway/";
    target.append(name).append(path);
    target.append(path.find('?') == std::string_view::npos ? "?" : "&");
    target.append("rvt-namespace=default&rvt-method=getOrCreate&rvt-runner=default&rvt-key=");
    target.append(key).append("&rvt-crash-policy=sleep");
    return target;
}

Result<HttpResult> http_request(std::uint16_t port, std::string method, std::string target,
                                std::string body,
                                std::vector<std::pair<std::string, std::string>> headers,
                                std::chrono::milliseconds timeout) {
    // Async operations driven to completion here: unlike blocking socket calls, they honour the
    // stream's deadline (one deadline for the whole exchange).
    asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(timeout);
    beast::error_code ec;
    auto step = [&](const char* what) -> Status {
        io.run();
        io.restart();
        if (ec)
            return harness_error("http_failed",
                                 method + " " + target + ": " + what + ": " + ec.message());
        return {};
    };
    stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                         [&](beast::error_code e) { ec = e; });
    if (auto s = step("connect"); !s.ok())
        return s.error();
    stream.socket().set_option(tcp::no_delay(true));
    http::request<http::string_body> req;
    req.method_string(method);
    req.target(target);
    req.version(11);
    req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
    req.set(http::field::connection, "close");
    for (auto& [k, v] : headers)
        req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
    if (auto s = step("write"); !s.ok())
        return s.error();
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(256ull * 1024 * 1024);
    http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    if (auto s = step("read"); !s.ok())
        return s.error();
    auto res = parser.release();
    HttpResult out;
    out.status = res.result_int();
    for (const auto& f : res)
        out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    out.body = std::move(res.body());
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return out;
}

std::vector<std::uint16_t> free_loopback_ports(std::size_t n) {
    // Every socket stays bound until all n ports are picked: a port released before the next
    // bind(0) can come straight back from the kernel, and the engine was once handed the same
    // port for its API and its metrics server.
    std::vector<int> fds;
    std::vector<std::uint16_t> ports;
    for (std::size_t i = 0; i < n; ++i) {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        fds.push_back(fd);
        ports.push_back(ntohs(addr.sin_port));
    }
    for (int fd : fds)
        ::close(fd);
    return ports;
}

std::uint16_t free_loopback_port() {
    return free_loopback_ports(1).front();
}

Result<std::unique_ptr<EngineHarness>> EngineHarness::start(EngineOptions options) {
    std::unique_ptr<EngineHarness> h(new EngineHarness());
    h->options_ = std::move(options);
    std::string tmpl = (std::filesystem::temp_directory_path() / "rivetkit-engine-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        return harness_error("tmpdir", "mkdtemp failed");
    h->root_ = tmpl;
    // Free ports are picked, released, then bound by the engine: another process (tests run in
    // parallel) can take one in between. An engine that died on a taken port is started again on
    // fresh ports, a bounded number of times.
    constexpr int kAttempts = 4;
    for (int attempt = 1;; ++attempt) {
        auto ports = free_loopback_ports(3);
        h->guard_port_ = ports[0];
        h->api_peer_port_ = ports[1];
        h->metrics_port_ = ports[2];
        if (auto s = h->spawn(); !s.ok())
            return s.error();
        auto ready = h->wait_ready();
        if (ready.ok())
            return h;
        const bool port_taken = h->pid_ < 0 && h->log_tail().find("AddrInUse") != std::string::npos;
        if (!port_taken || attempt == kAttempts)
            return ready.error();
        h->kill_hard();
        std::error_code ignored;
        std::filesystem::remove_all(h->root_ / "db", ignored);
        std::filesystem::remove(h->root_ / "engine.log", ignored);
    }
}

EngineHarness::~EngineHarness() {
    kill_hard();
    // RIVETKIT_KEEP_ENGINE_DIR=1 keeps the data directory and engine.log for debugging.
    if (std::getenv("RIVETKIT_KEEP_ENGINE_DIR") != nullptr)
        return;
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
}

std::string EngineHarness::endpoint() const {
    return "http://127.0.0.1:" + std::to_string(guard_port_);
}

Status EngineHarness::spawn() {
    const char* bin = std::getenv("RIVET_ENGINE_BIN");
    std::string binary = bin != nullptr ? bin : RIVETKIT_DEFAULT_ENGINE_BIN;
    if (::access(binary.c_str(), X_OK) != 0) {
        return harness_error("engine_missing",
                             "engine binary not executable: " + binary + " (run scripts/deps.sh)");
    }
    std::vector<std::string> env = {
        "RUST_BACKTRACE=0",
        "RUST_LOG_ANSI_COLOR=0",
        "RIVET__GUARD__HOST=127.0.0.1",
        "RIVET__GUARD__PORT=" + std::to_string(guard_port_),
        "RIVET__API_PEER__HOST=127.0.0.1",
        "RIVET__API_PEER__PORT=" + std::to_string(api_peer_port_),
        "RIVET__METRICS__HOST=127.0.0.1",
        "RIVET__METRICS__PORT=" + std::to_string(metrics_port_),
        "RIVET__FILE_SYSTEM__PATH=" + (root_ / "db").string(),
        "HOME=" + root_.string(),
        "PATH=/usr/bin:/bin",
        // The engine sheds workflow pulls (down to 5 %) when CPU use passes 70-90 % of its budget,
        // measured over the whole container's cgroup: a build or other tests beside it would
        // starve actor creation (pegboard.route_resolve_query_timeout). A budget of 1000 cores
        // switches that off; a test may still set its own value through extra_env.
        "RIVET__RUNTIME__WORKER_CPU_MAX=1000000",
    };
    if (options_.gateway_v3) {
        env.emplace_back("RIVET__FEATURES__GUARD_GATEWAY_V3__MODE=on");
        env.emplace_back("RIVET__FEATURES__GUARD_GATEWAY_V3__PERCENTAGE=100");
    }
    for (const auto& [name, value] : options_.extra_env) {
        const std::string prefix = name + "=";
        std::erase_if(env, [&prefix](const std::string& e) { return e.starts_with(prefix); });
        env.push_back(prefix + value);
    }
    // RIVETKIT_ENGINE_LOG=<filter> passes a RUST_LOG filter through for debugging.
    if (const char* filter = std::getenv("RIVETKIT_ENGINE_LOG"))
        env.push_back(std::string("RUST_LOG=") + filter);
    // Everything the child needs is prepared before fork: between fork and exec only
    // async-signal-safe calls are allowed (other threads may hold the malloc lock).
    std::string log_path = (root_ / "engine.log").string();
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    std::vector<char*> envp;
    for (auto& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string start = "start";
    char* argv[] = {binary.data(), start.data(), nullptr};
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        if (log_fd >= 0)
            ::close(log_fd);
        return harness_error("spawn", "fork failed");
    }
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(1);
        if (log_fd >= 0) {
            ::dup2(log_fd, 1);
            ::dup2(log_fd, 2);
        }
        ::execve(argv[0], argv, envp.data());
        ::_exit(127);
    }
    if (log_fd >= 0)
        ::close(log_fd);
    pid_ = pid;
    return {};
}

Status EngineHarness::wait_ready() {
    auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return harness_error("engine_died", "engine exited during start-up:\n" + log_tail());
        }
        // Ready = /health answers and the `default` namespace exists: a fresh engine creates it
        // after /health already answers, and until then writes to it fail with 400
        // namespace.not_found (seen under load on create_pool's runner-config PUT).
        auto r = http_request(guard_port_, "GET", "/health", {}, {}, std::chrono::seconds(2));
        if (r.ok() && r->status == 200) {
            auto ns =
                http_request(guard_port_, "GET", "/namespaces", {}, {}, std::chrono::seconds(2));
            if (ns.ok() && ns->status == 200) {
                auto json = nlohmann::json::parse(ns->body, nullptr, false);
                if (!json.is_discarded() && json.contains("namespaces") &&
                    json["namespaces"].is_array()) {
                    for (const auto& n : json["namespaces"]) {
                        if (n.is_object() && n.value("name", "") == "default")
                            return {};
                    }
                }
            }
        }
        // Readiness poll: the engine has no start-up notification to wait on.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return harness_error("engine_not_ready", "engine not healthy in time:\n" + log_tail());
}

void EngineHarness::kill_hard() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

Status EngineHarness::restart() {
    kill_hard();
    if (auto s = spawn(); !s.ok())
        return s;
    return wait_ready();
}

std::string EngineHarness::log_tail(std::size_t max) const {
    std::ifstream in(root_ / "engine.log", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string all = ss.str();
    return all.size() > max ? all.substr(all.size() - max) : all;
}

Result<HttpResult> EngineHarness::api(std::string method, std::string target, std::string body) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!body.empty())
        headers.emplace_back("content-type", "application/json");
    return http_request(guard_port_, std::move(method), std::move(target), std::move(body),
                        headers);
}

Status EngineHarness::wait_envoy_registered(const std::string& envoy_key,
                                            std::chrono::milliseconds timeout,
                                            const std::string& ns) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string last;
    for (;;) {
        auto r = api("GET", "/envoys?namespace=" + ns);
        if (r.ok() && r->status == 200) {
            auto json = nlohmann::json::parse(r->body, nullptr, false);
            if (!json.is_discarded() && json.contains("envoys") && json["envoys"].is_array()) {
                for (const auto& e : json["envoys"]) {
                    if (e.is_object() &&
                        (envoy_key.empty() || e.value("envoy_key", "") == envoy_key))
                        return {};
                }
            }
            last = r->body;
        } else {
            last = r.ok() ? "status " + std::to_string(r->status) : r.error().to_string();
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            return harness_error("envoy_not_registered",
                                 "envoy " + envoy_key + " not listed by the engine: " + last);
        }
        // Poll: the engine has no notification for a committed envoy registration.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

Status EngineHarness::create_pool(const std::string& pool, const std::string& ns) {
    // /health answers before the engine's consensus replica is configured; until then writes fail
    // with a 500 ("replica 1 has not been configured yet"). Retry those, bounded.
    auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
    for (;;) {
        auto r = api("PUT", "/runner-configs/" + pool + "?namespace=" + ns,
                     R"({"datacenters":{"default":{"normal":{}}}})");
        if (!r.ok()) {
            // The API port can still refuse or reset connections right after /health answers.
            if (std::chrono::steady_clock::now() >= deadline)
                return r.error();
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        if (r->status == 200)
            return {};
        // A fresh engine creates the `default` namespace only after /health answers; until then
        // the PUT fails with 400 namespace.not_found.
        const bool namespace_pending =
            r->status == 400 && r->body.find("\"namespace\"") != std::string::npos &&
            r->body.find("not_found") != std::string::npos;
        if ((r->status < 500 && !namespace_pending) ||
            std::chrono::steady_clock::now() >= deadline) {
            return harness_error("create_pool",
                                 "status " + std::to_string(r->status) + ": " + r->body);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

Result<std::string> EngineHarness::create_actor(const std::string& name, const std::string& key,
                                                const std::string& pool,
                                                const std::string& crash_policy,
                                                const std::string& ns) {
    nlohmann::json body = {{"name", name},
                           {"key", key},
                           {"runner_name_selector", pool},
                           {"crash_policy", crash_policy}};
    auto r = api("POST", "/actors?namespace=" + ns, body.dump());
    if (!r.ok())
        return r.error();
    if (r->status != 200) {
        return harness_error("create_actor",
                             "status " + std::to_string(r->status) + ": " + r->body);
    }
    auto json = nlohmann::json::parse(r->body, nullptr, false);
    if (json.is_discarded() || !json.contains("actor")) {
        return harness_error("create_actor", "unexpected body: " + r->body);
    }
    return json["actor"]["actor_id"].get<std::string>();
}

Result<std::string> EngineHarness::inspector_token(const std::string& actor_id,
                                                   const std::string& ns) {
    auto r = api("GET", "/actors/" + actor_id + "/kv/keys/Aw%3D%3D?namespace=" + ns);
    if (!r.ok())
        return r.error();
    if (r->status != 200)
        return harness_error("inspector_token", "status " + std::to_string(r->status) + ": " + r->body);
    auto body = nlohmann::json::parse(r->body, nullptr, false);
    const std::string b64 = body.is_object() ? body.value("value", std::string{}) : std::string{};
    auto raw = base64::decode(b64);
    if (!raw || raw->empty())
        return harness_error("inspector_token", "no token value: " + r->body);
    return std::string(raw->begin(), raw->end());
}

}  // namespace rivetkit::testing

// The memory benchmark's engine stand-in (bench/README.md, "memory"): measures what a host holds
// for more awake actors than the real engine can keep awake on this machine (engine 2.3.19 spends
// ~1 ms of CPU per second per awake actor while nothing happens, so two cores hold ~1,500).
//
// It speaks envoy v8 to an unchanged host process (rivetkit-memory-host, started here with
// RIVET_ENDPOINT pointing at this process): answers /health and the pool's PUT, accepts the envoy's
// WebSocket, sends the init and pings, starts --actors actors, answers their KV and SQLite page
// requests from memory (pages kept per actor, as the engine's storage would), acknowledges their
// events, and opens --conns actor-connect WebSockets through the tunnel, each subscribing to
// `touched` and calling `touch` once (one broadcast each), as the official client does with the
// bare encoding. The host's RSS and CPU come from /proc at each step.
//
// --http N then sends N HTTP actions (`touch(1)`, bare encoding) to the first actor through the
// tunnel, --http-inflight at once (16), at most --http-rate a second (0: as fast as answered),
// each with the method, path, headers and inline body engine 2.3.19's gateway forwards for the
// official client's call; it prints the host's CPU per action (user and system). What this
// separates: the host's own cost per HTTP action (unpaced, an engine that costs ~nothing) from
// what the same host spends under the real engine (bench/peer), where the engine's milliseconds
// of CPU per action share the machine's two cores with it.
//
// What it does not stand in for: the engine's own cost (that is the real engine's benchmark,
// run.sh), fences and failures (the simulations test those).
//
//   rivetkit-memory-stand-in [--actors N] [--conns N] [--idle-s N] [--log FILE] -- HOST [ARGS...]

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "../../tests/envoy/fake_engine.hpp"
#include "bare/codec.hpp"
#include "proto/envoy_v8.hpp"

extern char** environ;

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace websocket = boost::beast::websocket;
namespace proto = rivetkit::proto::envoy_v8;
using tcp = asio::ip::tcp;
using rivetkit::Bytes;
using namespace std::chrono_literals;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

struct Options {
    int actors = 10'000;
    int conns = 1'000;
    int idle_s = 20;
    int window = 32;  // creates (and connection opens) in flight at once
    int rate = 0;     // creates sent per second at most (0: as fast as the window allows)
    int warmup = 16;  // actors created before the baseline reading, beyond --actors
    int http = 0;            // HTTP actions sent after the connections
    int http_inflight = 16;  // HTTP actions in flight at once
    int http_rate = 0;       // HTTP actions sent per second at most (0: as fast as answered)
    std::string log = "/dev/null";
    std::vector<std::string> host;
};

// ---- the host process, seen through /proc ----

struct Proc {
    pid_t pid = 0;
    std::string heap_file;  // where a host with the heap probe writes its heap in use

    double rss_mib() const {
        std::ifstream in("/proc/" + std::to_string(pid) + "/status");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("VmRSS:", 0) == 0)
                return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
        return 0;
    }
    double cpu_ms() const {
        auto [user, sys] = cpu_split_ms();
        return user + sys;
    }
    std::pair<double, double> cpu_split_ms() const {
        std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto close = all.rfind(')');
        if (close == std::string::npos)
            return {0, 0};
        std::istringstream rest(all.substr(close + 2));
        std::string field;
        double utime = 0, stime = 0;
        for (int i = 3; i <= 15 && rest >> field; ++i) {  // fields 14 and 15: utime, stime
            if (i == 14)
                utime = std::strtod(field.c_str(), nullptr);
            if (i == 15)
                stime = std::strtod(field.c_str(), nullptr);
        }
        const double tick_ms = 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
        return {utime * tick_ms, stime * tick_ms};
    }
    bool alive() const { return ::waitpid(pid, nullptr, WNOHANG) == 0; }
};

Proc spawn_host(const Options& o, std::uint16_t port) {
    Proc p;
    p.heap_file = "/tmp/rivetkit-stand-in-heap." + std::to_string(::getpid());
    std::vector<std::string> env_strings{"RIVET_ENDPOINT=http://127.0.0.1:" + std::to_string(port),
                                         "MEMORY_HOST_HEAP_FILE=" + p.heap_file};
    if (!std::getenv("RIVET_LOG_LEVEL"))
        env_strings.emplace_back("RIVET_LOG_LEVEL=warn");
    for (char** e = environ; *e; ++e)
        if (std::string_view(*e).rfind("RIVET_ENDPOINT=", 0) != 0)
            env_strings.emplace_back(*e);
    std::vector<char*> env, argv;
    for (auto& s : env_strings)
        env.push_back(s.data());
    env.push_back(nullptr);
    std::vector<std::string> args = o.host;
    for (auto& s : args)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, o.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    if (posix_spawn(&p.pid, argv[0], &files, nullptr, argv.data(), env.data()) != 0) {
        std::perror("stand-in: spawning the host");
        std::exit(1);
    }
    posix_spawn_file_actions_destroy(&files);
    return p;
}

// ---- the engine's side ----

// One envoy connection; a host runs one per io thread.
struct Link {
    std::unique_ptr<websocket::stream<beast::tcp_stream>> ws;
    std::deque<Bytes> outbox;
    bool writing = false;
    bool metadata = false;
};

struct Actor {
    std::shared_ptr<Link> link;  // the envoy it was placed on
    std::map<std::uint32_t, Bytes> pages;
    std::optional<std::uint64_t> head;
    std::map<Bytes, Bytes> kv;
    bool running = false;
};

struct Conn {
    std::string actor;
    std::uint16_t next_index = 1;  // the open was message 0
    bool open = false, init = false, event = false, answered = false, failed = false;
};

class StandIn {
  public:
    StandIn(asio::io_context& io, Options o) : io_(io), o_(std::move(o)), acceptor_(io) {
        tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.bind(ep);
        acceptor_.listen();
        changed_.expires_at(asio::steady_timer::time_point::max());
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    void set_host(Proc host) { host_ = host; }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
            if (ec)
                co_return;
            asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
        }
    }
    asio::awaitable<int> drive();

  private:
    asio::awaitable<void> serve(tcp::socket socket);
    asio::awaitable<void> envoy_session(beast::tcp_stream stream,
                                        http::request<http::string_body> req);
    asio::awaitable<void> write_loop(std::shared_ptr<Link> link);
    asio::awaitable<void> pinger(std::shared_ptr<Link> link);
    void send(const std::shared_ptr<Link>& link, const proto::ToEnvoy& message) {
        if (!link)
            return;  // an actor never placed: the run fails on its wait
        link->outbox.push_back(rivetkit::bare::encode_to_bytes(message));
        if (!link->writing && link->ws) {
            link->writing = true;
            asio::co_spawn(io_, write_loop(link), asio::detached);
        }
    }
    void on_frame(const std::shared_ptr<Link>& link, proto::ToRivet& message);
    void on_tunnel(const proto::ToRivetTunnelMessage& tunnel);
    void on_sqlite(const std::shared_ptr<Link>& link, proto::ToRivet& message);
    bool ready() const {
        return !links_.empty() &&
               std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->metadata; });
    }
    void send_ws(std::size_t conn, Bytes data);
    void send_http_action();
    asio::awaitable<bool> http_phase();
    void notify() {
        changed_.cancel();
        changed_.expires_at(asio::steady_timer::time_point::max());
    }
    // Waits for the next change, at most `limit`.
    asio::awaitable<void> changed(std::chrono::milliseconds limit) {
        asio::steady_timer wake(io_);
        wake.expires_after(limit);
        auto& changed = changed_;
        auto fired = [&changed](const boost::system::error_code& ec) {
            if (!ec)
                changed.cancel();
        };
        wake.async_wait(fired);
        co_await changed_.async_wait(use_tuple);
        wake.cancel();
    }
    asio::awaitable<void> pause(std::chrono::milliseconds d) {
        asio::steady_timer t(io_);
        t.expires_after(d);
        co_await t.async_wait(use_tuple);
    }
    // The host's heap in use (MiB) through its probe (memory_host.cpp); -1 when it has none.
    asio::awaitable<double> heap_mib() {
        struct Sample {
            long long pid = 0, sequence = -1, bytes = 0;
        };
        auto read = [this] {
            std::ifstream in(host_.heap_file);
            Sample s;
            in >> s.pid >> s.sequence >> s.bytes;
            return s;
        };
        const Sample before = read();
        if (before.sequence < 0 || before.pid <= 0)
            co_return -1.0;
        ::kill(static_cast<pid_t>(before.pid), SIGUSR1);
        for (int i = 0; i < 200; ++i) {
            co_await pause(std::chrono::milliseconds(10));
            if (const Sample now = read(); now.sequence > before.sequence)
                co_return static_cast<double>(now.bytes) / (1024.0 * 1024.0);
        }
        co_return -1.0;
    }
    asio::awaitable<bool> wait_until(auto done, std::chrono::seconds limit, const char* what) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (std::chrono::steady_clock::now() >= deadline || !host_.alive()) {
                std::fprintf(stderr, "stand-in: gave up waiting for %s\n", what);
                co_return false;
            }
            co_await changed(1s);
        }
        co_return true;
    }

    asio::io_context& io_;
    Options o_;
    tcp::acceptor acceptor_;
    asio::steady_timer changed_{io_};
    Proc host_;
    std::vector<std::shared_ptr<Link>> links_;
    std::unordered_map<std::string, Actor> actors_;
    int running_ = 0, stopped_ = 0;
    std::vector<Conn> conns_;
    std::map<std::array<std::uint8_t, 4>, std::size_t> conn_by_request_;
    int conns_done_ = 0, conns_failed_ = 0, events_ = 0;
    std::uint64_t kv_requests_ = 0, page_gets_ = 0, page_commits_ = 0;
    std::uint32_t http_sent_ = 0;
    int http_done_ = 0, http_failed_ = 0;
    std::string http_result_;
};

// The gateway id of the stand-in's HTTP actions; its WebSockets use {0x67, 0x77, 0x00, 0x01}.
constexpr std::array<std::uint8_t, 4> kHttpGateway = {0x67, 0x77, 0x00, 0x02};

asio::awaitable<void> StandIn::serve(tcp::socket socket) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    auto [ec, n] = co_await http::async_read(stream, buffer, req, use_tuple);
    (void)n;
    if (ec)
        co_return;
    if (websocket::is_upgrade(req)) {
        co_await envoy_session(std::move(stream), std::move(req));
        co_return;
    }
    http::response<http::string_body> res{http::status::ok, req.version()};
    const std::string target(req.target());
    if (target == "/health") {
        res.body() = R"({"status":"ok"})";
    } else if (req.method() == http::verb::put && target.rfind("/runner-configs/", 0) == 0) {
        res.body() = "{}";
    } else {
        std::fprintf(stderr, "stand-in: unexpected %s %s\n",
                     std::string(req.method_string()).c_str(), target.c_str());
        res.result(http::status::not_found);
        res.body() = R"({"group":"stand_in","code":"not_found"})";
    }
    res.set(http::field::content_type, "application/json");
    res.keep_alive(false);
    res.prepare_payload();
    co_await http::async_write(stream, res, use_tuple);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

asio::awaitable<void> StandIn::envoy_session(beast::tcp_stream stream,
                                             http::request<http::string_body> req) {
    if (std::string_view(req.target()).rfind("/envoys/connect", 0) != 0) {
        std::fprintf(stderr, "stand-in: refused WebSocket %s\n", std::string(req.target()).c_str());
        co_return;
    }
    stream.expires_never();
    auto link = std::make_shared<Link>();
    link->ws = std::make_unique<websocket::stream<beast::tcp_stream>>(std::move(stream));
    link->ws->set_option(websocket::stream_base::decorator([](websocket::response_type& res) {
        res.set(http::field::sec_websocket_protocol, "rivet");
    }));
    auto [ec] = co_await link->ws->async_accept(req, use_tuple);
    if (ec) {
        std::fprintf(stderr, "stand-in: envoy accept failed: %s\n", ec.message().c_str());
        co_return;
    }
    link->ws->binary(true);
    link->ws->auto_fragment(false);
    links_.push_back(link);
    send(link, rivetkit::envoy::testing::init_message(30'000));
    asio::co_spawn(io_, pinger(link), asio::detached);
    beast::flat_buffer buffer;
    for (;;) {
        auto [read_ec, n] = co_await link->ws->async_read(buffer, use_tuple);
        (void)n;
        if (read_ec) {
            std::fprintf(stderr, "stand-in: envoy connection ended: %s\n",
                         read_ec.message().c_str());
            std::erase(links_, link);
            link->ws.reset();
            co_return;
        }
        auto data = buffer.cdata();
        const auto* p = static_cast<const std::uint8_t*>(data.data());
        auto decoded = rivetkit::bare::decode_from_bytes<proto::ToRivet>(Bytes(p, p + data.size()));
        buffer.consume(buffer.size());
        if (!decoded.ok()) {
            std::fprintf(stderr, "stand-in: undecodable frame from the envoy\n");
            continue;
        }
        proto::ToRivet message = std::move(decoded).value();
        on_frame(link, message);
        notify();
    }
}

asio::awaitable<void> StandIn::write_loop(std::shared_ptr<Link> link) {
    while (!link->outbox.empty() && link->ws) {
        Bytes frame = std::move(link->outbox.front());
        link->outbox.pop_front();
        auto [ec, n] = co_await link->ws->async_write(asio::buffer(frame), use_tuple);
        (void)n;
        if (ec)
            break;
    }
    link->writing = false;
}

asio::awaitable<void> StandIn::pinger(std::shared_ptr<Link> link) {
    while (link->ws) {
        co_await pause(3s);
        const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::system_clock::now().time_since_epoch());
        send(link, proto::ToEnvoy{proto::ToEnvoyPing{now.count()}});
    }
}

void StandIn::on_frame(const std::shared_ptr<Link>& link, proto::ToRivet& message) {
    if (message.is<proto::ToRivetMetadata>()) {
        link->metadata = true;
    } else if (auto* events = message.get_if<proto::ToRivetEvents>()) {
        proto::ToEnvoyAckEvents ack;
        for (const auto& e : events->value) {
            if (const auto* update = e.inner.get_if<proto::EventActorStateUpdate>()) {
                Actor& actor = actors_[e.checkpoint.actor_id];
                if (update->state.is<proto::ActorStateRunning>() && !actor.running) {
                    actor.running = true;
                    ++running_;
                } else if (update->state.is<proto::ActorStateStopped>()) {
                    ++stopped_;
                    std::fprintf(stderr, "stand-in: actor %s stopped\n",
                                 e.checkpoint.actor_id.c_str());
                }
            }
            ack.last_event_checkpoints.push_back(e.checkpoint);
        }
        send(link, proto::ToEnvoy{std::move(ack)});
    } else if (auto* kv = message.get_if<proto::ToRivetKvRequest>()) {
        ++kv_requests_;
        send(link, proto::ToEnvoy{proto::ToEnvoyKvResponse{
                       kv->request_id,
                       rivetkit::envoy::testing::apply_kv(actors_[kv->actor_id].kv, kv->data)}});
    } else if (const auto* tunnel = message.get_if<proto::ToRivetTunnelMessage>()) {
        on_tunnel(*tunnel);
    } else if (!message.is<proto::ToRivetPong>() && !message.is<proto::ToRivetAckCommands>()) {
        on_sqlite(link, message);
    }
}

void StandIn::on_sqlite(const std::shared_ptr<Link>& link, proto::ToRivet& message) {
    auto error = [](const char* code) {
        return proto::SqliteErrorResponse{"depot", code, "from the memory benchmark's stand-in"};
    };
    if (auto* get = message.get_if<proto::ToRivetSqliteGetPagesRequest>()) {
        ++page_gets_;
        const Actor& actor = actors_[get->data.actor_id];
        proto::SqliteGetPagesResponse response;
        if (!actor.head) {
            response.value = error("database_not_found");
        } else {
            proto::SqliteGetPagesOk ok;
            ok.head_txid = actor.head;
            for (auto pgno : get->data.pgnos) {
                auto page = actor.pages.find(pgno);
                ok.pages.push_back(proto::SqliteFetchedPage{
                    pgno,
                    page == actor.pages.end() ? std::nullopt : std::optional<Bytes>(page->second)});
            }
            response.value = std::move(ok);
        }
        send(link, proto::ToEnvoy{
                       proto::ToEnvoySqliteGetPagesResponse{get->request_id, std::move(response)}});
    } else if (auto* commit = message.get_if<proto::ToRivetSqliteCommitRequest>()) {
        ++page_commits_;
        Actor& actor = actors_[commit->data.actor_id];
        for (auto& page : commit->data.dirty_pages)
            actor.pages[page.pgno] = std::move(page.bytes);
        std::erase_if(actor.pages,
                      [&](const auto& p) { return p.first > commit->data.db_size_pages; });
        actor.head = actor.head.value_or(0) + 1;
        proto::SqliteCommitResponse response;
        response.value = proto::SqliteCommitOk{actor.head};
        send(link, proto::ToEnvoy{proto::ToEnvoySqliteCommitResponse{commit->request_id,
                                                                     std::move(response)}});
    } else if (auto* begin = message.get_if<proto::ToRivetSqliteCommitStageBeginRequest>()) {
        // An actor of this benchmark never writes enough for a staged commit.
        proto::SqliteCommitStageBeginResponse response;
        response.value = error("unsupported");
        send(link, proto::ToEnvoy{proto::ToEnvoySqliteCommitStageBeginResponse{
                       begin->request_id, std::move(response)}});
    } else {
        std::fprintf(stderr, "stand-in: unexpected frame from the envoy (tag %llu)\n",
                     static_cast<unsigned long long>(message.tag()));
    }
}

void StandIn::on_tunnel(const proto::ToRivetTunnelMessage& tunnel) {
    if (tunnel.message_id.gateway_id == kHttpGateway) {
        if (const auto* start = tunnel.message_kind.get_if<proto::ToRivetResponseStart>()) {
            if (start->status == 200 && !start->stream)
                ++http_done_;
            else
                ++http_failed_;
        }
        return;
    }
    auto it = conn_by_request_.find(tunnel.message_id.request_id);
    if (it == conn_by_request_.end())
        return;
    Conn& c = conns_[it->second];
    const auto finish = [&] {
        if (c.event && c.answered)
            ++conns_done_;
    };
    if (tunnel.message_kind.is<proto::ToRivetWebSocketOpen>()) {
        c.open = true;
        // As the official client does on open (bare encoding, client protocol v4): subscribe to
        // `touched`, then call touch(1).
        send_ws(it->second, Bytes{4, 0, 1, 7, 't', 'o', 'u', 'c', 'h', 'e', 'd', 1});
        send_ws(it->second, Bytes{4, 0, 0, 0, 5, 't', 'o', 'u', 'c', 'h', 2, 0x81, 0x01});
    } else if (const auto* m = tunnel.message_kind.get_if<proto::ToRivetWebSocketMessage>()) {
        const int tag = m->data.size() > 2 ? m->data[2] : -1;
        if (tag == 0) {
            c.init = true;
        } else if (tag == 3 && !c.event) {
            c.event = true;
            ++events_;
            finish();
        } else if (tag == 2 && !c.answered) {
            c.answered = true;
            finish();
        } else if (tag == 1 && !c.failed) {
            c.failed = true;
            ++conns_failed_;
        }
    } else if (tunnel.message_kind.is<proto::ToRivetWebSocketClose>() && !c.failed) {
        c.failed = true;
        ++conns_failed_;
    }
}

void StandIn::send_ws(std::size_t conn, Bytes data) {
    Conn& c = conns_[conn];
    proto::ToEnvoyTunnelMessage t;
    t.message_id.gateway_id = {0x67, 0x77, 0x00, 0x01};
    for (int i = 0; i < 4; ++i)
        t.message_id.request_id[static_cast<std::size_t>(i)] =
            static_cast<std::uint8_t>(conn >> (8 * i));
    t.message_id.message_index = c.next_index++;
    t.message_kind.value = proto::ToEnvoyWebSocketMessage{std::move(data), true};
    send(actors_[c.actor].link, proto::ToEnvoy{std::move(t)});
}

// 30 characters, as long as engine 2.3.19's actor ids (e.g. "1oasnakdmqjf6wpno1wy7vci4sal00"):
// a shorter id would fit in std::string's inline buffer and hide what every copy of a real one
// costs on the heap.
std::string actor_id(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "standin%08dactor0000000000", i);
    return buf;
}

// One `touch(1)` on the first actor as engine 2.3.19's gateway forwards the official client's
// HTTP action (headers as recorded from it, body inline, client protocol v4 bare encoding).
void StandIn::send_http_action() {
    const std::uint32_t n = http_sent_++;
    proto::ToEnvoyTunnelMessage t;
    t.message_id.gateway_id = kHttpGateway;
    for (int i = 0; i < 4; ++i)
        t.message_id.request_id[static_cast<std::size_t>(i)] =
            static_cast<std::uint8_t>(n >> (8 * i));
    t.message_id.message_index = 0;
    char ray[32];
    std::snprintf(ray, sizeof ray, "standinray%020u", n);
    proto::ToEnvoyRequestStart start;
    start.actor_id = actor_id(0);
    start.actor_generation = 1;
    start.method = "POST";
    start.path = "/action/touch";
    start.headers = {{"transfer-encoding", "chunked"},
                     {"accept", "*/*"},
                     {"connection", "keep-alive"},
                     {"accept-language", "*"},
                     {"accept-encoding", "gzip, deflate"},
                     {"content-type", "application/octet-stream"},
                     {"x-rivet-ray-id", ray},
                     {"x-rivet-encoding", "bare"},
                     {"sec-fetch-mode", "cors"},
                     {"user-agent", "RivetKit/2.3.19"},
                     {"host", "127.0.0.1:6420"}};
    start.body = Bytes{4, 0, 2, 0x81, 0x01};  // v4, args: CBOR [1]
    t.message_kind.value = std::move(start);
    send(actors_[actor_id(0)].link, proto::ToEnvoy{std::move(t)});
}

asio::awaitable<bool> StandIn::http_phase() {
    const int warmup = std::min(500, o_.http);
    const int total = warmup + o_.http;
    const int inflight = o_.http_inflight;
    std::pair<double, double> cpu_before{};
    auto from = std::chrono::steady_clock::now();
    for (int i = 0; i < total; ++i) {
        if (i == warmup) {
            if (!co_await wait_until([&] { return http_done_ + http_failed_ >= warmup; }, 60s,
                                     "the HTTP warm-up"))
                co_return false;
            cpu_before = host_.cpu_split_ms();
            from = std::chrono::steady_clock::now();
        }
        while (i - http_done_ - http_failed_ >= inflight) {
            if (!host_.alive())
                co_return false;
            co_await changed(1s);
        }
        if (o_.http_rate > 0 && i >= warmup) {
            const auto due = from + std::chrono::microseconds(std::int64_t{i - warmup} *
                                                              1'000'000 / o_.http_rate);
            if (const auto now = std::chrono::steady_clock::now(); due > now)
                co_await pause(std::chrono::duration_cast<std::chrono::milliseconds>(due - now));
        }
        send_http_action();
    }
    if (!co_await wait_until([&] { return http_done_ + http_failed_ >= total; }, 120s,
                             "the last HTTP actions"))
        co_return false;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
    const auto [user, sys] = host_.cpu_split_ms();
    const double user_us = (user - cpu_before.first) * 1000.0 / o_.http;
    const double sys_us = (sys - cpu_before.second) * 1000.0 / o_.http;
    char line[400];
    std::snprintf(line, sizeof line,
                  "| HTTP actions on one actor, %d in flight, %s: host CPU per action "
                  "(user + system) | %.1f µs (%.1f + %.1f); %d actions at %.0f/s, %d failed |\n",
                  inflight,
                  o_.http_rate > 0 ? ("at most " + std::to_string(o_.http_rate) + "/s").c_str()
                                   : "unpaced",
                  user_us + sys_us, user_us, sys_us, o_.http, o_.http / seconds, http_failed_);
    http_result_ = line;
    co_return http_failed_ == 0;
}

asio::awaitable<int> StandIn::drive() {
    // Every io thread of the host connects its own envoy; wait for them to settle.
    if (!co_await wait_until([this] { return ready(); }, 60s, "the host's envoy"))
        co_return 1;
    co_await pause(1s);
    if (!co_await wait_until([this] { return ready(); }, 60s, "the host's envoys"))
        co_return 1;
    // Creates, `window` at a time and at most `rate` a second, as the engine places actors on
    // the host. The first `warmup` come before the baseline: what any first actor brings in once
    // (code pages, pools) is not what each further actor costs.
    const int total = o_.warmup + o_.actors;
    double base_rss = host_.rss_mib();
    double base_heap = co_await heap_mib();
    auto created_from = std::chrono::steady_clock::now();
    double cpu_before_create = host_.cpu_ms();
    for (int i = 0; i < total; ++i) {
        if (i == o_.warmup && i > 0) {
            if (!co_await wait_until([&] { return running_ + stopped_ >= i; }, 60s, "warm-up"))
                co_return 1;
            base_rss = host_.rss_mib();
            base_heap = co_await heap_mib();
            created_from = std::chrono::steady_clock::now();
            cpu_before_create = host_.cpu_ms();
        }
        if (!co_await wait_until([&] { return i - running_ - stopped_ < o_.window; }, 60s,
                                 "creates"))
            co_return 1;
        if (o_.rate > 0 && i >= o_.warmup) {
            const auto due = created_from + std::chrono::microseconds(
                                                std::int64_t{i - o_.warmup} * 1'000'000 / o_.rate);
            if (const auto now = std::chrono::steady_clock::now(); due > now)
                co_await pause(std::chrono::duration_cast<std::chrono::milliseconds>(due - now));
        }
        proto::CommandStartActor start;
        start.config.name = "resident";
        start.config.key = "k" + std::to_string(i);
        start.config.create_ts = 1'700'000'000'000;
        proto::ToEnvoyCommands commands;
        commands.value.push_back(proto::CommandWrapper{proto::ActorCheckpoint{actor_id(i), 1, 0},
                                                       proto::Command{std::move(start)}});
        if (links_.empty()) {
            std::fprintf(stderr, "stand-in: the host's envoys are gone\n");
            co_return 1;
        }
        auto& link = actors_[actor_id(i)].link;
        link = links_[static_cast<std::size_t>(i) % links_.size()];  // placed round robin
        send(link, proto::ToEnvoy{std::move(commands)});
    }
    if (!co_await wait_until([&] { return running_ + stopped_ >= total; }, 120s,
                             "the last creates"))
        co_return 1;
    const double create_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - created_from).count();
    const double create_cpu = host_.cpu_ms() - cpu_before_create;
    const double created_rss = host_.rss_mib();
    co_await pause(5s);  // a database quiet for 2 s closes its connection
    const double actors_rss = host_.rss_mib();
    const double actors_heap = co_await heap_mib();

    // Connections, `window` opening at a time; each subscribes and calls touch once.
    conns_.resize(static_cast<std::size_t>(o_.conns));
    const double cpu_before_conns = host_.cpu_ms();
    for (int c = 0; c < o_.conns; ++c) {
        const auto ci = static_cast<std::size_t>(c);
        if (!co_await wait_until([&] { return c - conns_done_ - conns_failed_ < o_.window; }, 60s,
                                 "connections"))
            co_return 1;
        conns_[ci].actor = actor_id(c % std::max(1, o_.actors));
        proto::ToEnvoyTunnelMessage t;
        t.message_id.gateway_id = {0x67, 0x77, 0x00, 0x01};
        for (int i = 0; i < 4; ++i)
            t.message_id.request_id[static_cast<std::size_t>(i)] =
                static_cast<std::uint8_t>(ci >> (8 * i));
        conn_by_request_[t.message_id.request_id] = ci;
        t.message_id.message_index = 0;
        t.message_kind.value = proto::ToEnvoyWebSocketOpen{
            conns_[ci].actor,
            1,
            "/connect",
            {{"sec-websocket-protocol", "rivet, rivet_encoding.bare"}, {"host", "127.0.0.1"}}};
        send(actors_[conns_[ci].actor].link, proto::ToEnvoy{std::move(t)});
    }
    if (!co_await wait_until([&] { return conns_done_ + conns_failed_ >= o_.conns; }, 120s,
                             "the last connections"))
        co_return 1;
    const double conns_cpu = host_.cpu_ms() - cpu_before_conns;
    const double conns_rss = host_.rss_mib();
    const double conns_heap = co_await heap_mib();
    const double cpu_before_idle = host_.cpu_ms();
    for (int s = 0; s < o_.idle_s; s += 5) {  // RSS through the idle window, to see it settle
        co_await pause(std::chrono::seconds(std::min(5, o_.idle_s - s)));
        std::fprintf(stderr, "stand-in: idle %d s: host RSS %.1f MiB, CPU %.0f ms\n",
                     std::min(s + 5, o_.idle_s), host_.rss_mib(), host_.cpu_ms() - cpu_before_idle);
    }
    const double idle_cpu = host_.cpu_ms() - cpu_before_idle;
    const double idle_rss = host_.rss_mib();
    if (o_.http > 0 && (o_.actors == 0 || !co_await http_phase()))
        co_return 1;

    const double per_actor_kb = o_.actors ? (actors_rss - base_rss) * 1024.0 / o_.actors : 0.0;
    const double per_conn_kb = o_.conns ? (conns_rss - actors_rss) * 1024.0 / o_.conns : 0.0;
    const double budget = 64.0 + (32.0 * o_.actors + 16.0 * o_.conns) / 1024.0;
    std::printf("| %d actors, %d connections (engine stand-in) | rivetkit-host |\n|---|---|\n",
                o_.actors, o_.conns);
    std::printf(
        "| host RSS: baseline / %d actors / 5 s later / + %d conns / after %d s idle | %.1f / %.1f "
        "/ "
        "%.1f / %.1f / %.1f MiB |\n",
        o_.actors, o_.conns, o_.idle_s, base_rss, created_rss, actors_rss, conns_rss, idle_rss);
    std::printf("| host RSS per awake actor / per connection | %.1f KB / %.1f KB |\n", per_actor_kb,
                per_conn_kb);
    if (base_heap >= 0 && actors_heap >= 0 && conns_heap >= 0)
        std::printf(
            "| host heap in use (malloc): baseline / %d actors / + %d conns; per actor / per "
            "connection | %.1f / %.1f / %.1f MiB; %.1f KB / %.1f KB |\n",
            o_.actors, o_.conns, base_heap, actors_heap, conns_heap,
            o_.actors ? (actors_heap - base_heap) * 1024.0 / o_.actors : 0.0,
            o_.conns ? (conns_heap - actors_heap) * 1024.0 / o_.conns : 0.0);
    std::printf(
        "| budget (64 MiB + 32 KiB per actor + 16 KiB per connection = %.1f MiB) | %s: %.0f %% |\n",
        budget, idle_rss <= budget ? "within" : "over", 100.0 * idle_rss / budget);
    std::printf("| create: wall / host CPU per actor | %.1f s / %.2f ms |\n", create_s,
                o_.actors ? create_cpu / o_.actors : 0.0);
    std::printf(
        "| connections: host CPU per connection (open, subscribe, one action) | %.2f ms |\n",
        o_.conns ? conns_cpu / o_.conns : 0.0);
    std::printf("| events delivered / connections failed / actors stopped | %d of %d / %d / %d |\n",
                events_, o_.conns, conns_failed_, stopped_);
    std::printf("| envoy connections (one per host io thread) | %zu |\n", links_.size());
    if (o_.idle_s > 0)
        std::printf("| idle, %d s: host CPU | %.1f ms per s |\n", o_.idle_s,
                    idle_cpu / o_.idle_s);
    std::printf("%s", http_result_.c_str());
    std::printf(
        "| engine traffic: KV requests / page reads / page commits | %llu / %llu / %llu |\n",
        static_cast<unsigned long long>(kv_requests_), static_cast<unsigned long long>(page_gets_),
        static_cast<unsigned long long>(page_commits_));
    std::fflush(stdout);
    co_return (conns_failed_ == 0 && stopped_ == 0 && events_ == o_.conns) ? 0 : 1;
}

Options parse(int argc, char** argv) {
    Options o;
    int i = 1;
    auto number = [&](const char* name) {
        if (i + 1 >= argc) {
            std::fprintf(stderr, "stand-in: %s needs a value\n", name);
            std::exit(2);
        }
        return std::atoi(argv[++i]);
    };
    const std::pair<const char*, int*> numbers[] = {
        {"--actors", &o.actors}, {"--conns", &o.conns},   {"--idle-s", &o.idle_s},
        {"--window", &o.window}, {"--rate", &o.rate},     {"--warmup", &o.warmup},
        {"--http", &o.http},     {"--http-inflight", &o.http_inflight},
        {"--http-rate", &o.http_rate}};
    for (; i < argc; ++i) {
        const std::string a = argv[i];
        const auto* named = std::find_if(std::begin(numbers), std::end(numbers),
                                         [&](const auto& n) { return a == n.first; });
        if (named != std::end(numbers))
            *named->second = number(named->first);
        else if (a == "--log" && i + 1 < argc)
            o.log = argv[++i];
        else if (a == "--") {
            for (++i; i < argc; ++i)
                o.host.emplace_back(argv[i]);
        } else {
            std::fprintf(
                stderr,
                "usage: %s [--actors N] [--conns N] [--idle-s N] [--window N] [--rate N] "
                "[--warmup N] [--http N] [--http-inflight N] [--http-rate N] [--log FILE] -- "
                "HOST [ARGS...]\n",
                argv[0]);
            std::exit(2);
        }
    }
    if (o.host.empty() || o.actors < 0 || o.conns < 0 || (o.conns > 0 && o.actors == 0)) {
        std::fprintf(stderr, "stand-in: name the host to run after --, and actors for the conns\n");
        std::exit(2);
    }
    if (o.window < 1 || o.rate < 0 || o.warmup < 0 || o.http < 0 || o.http_inflight < 1 ||
        o.http_rate < 0) {
        std::fprintf(stderr, "stand-in: --window and --http-inflight are at least 1, other "
                             "numbers at least 0\n");
        std::exit(2);
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse(argc, argv);
    asio::io_context io;
    StandIn engine(io, options);
    Proc host = spawn_host(options, engine.port());
    engine.set_host(host);
    int status = 1;
    asio::co_spawn(io, engine.accept_loop(), asio::detached);
    asio::co_spawn(io, engine.drive(), [&](std::exception_ptr e, int rc) {
        status = e ? 1 : rc;
        io.stop();
    });
    io.run();
    ::kill(host.pid, SIGTERM);
    for (int i = 0; i < 100 && host.alive(); ++i)
        ::usleep(100'000);
    if (host.alive())
        ::kill(host.pid, SIGKILL);
    ::waitpid(host.pid, nullptr, 0);
    std::remove(host.heap_file.c_str());
    return status;
}

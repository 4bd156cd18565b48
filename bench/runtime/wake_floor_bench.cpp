// The kernel's floor under one tunneled action: a thread that sleeps in epoll_wait, is woken by a
// small message on a loopback TCP connection, reads it and writes an answer, as the host's io
// thread does once per action under load. No rivetkit code: the CPU that thread spends per round
// trip is what any host pays per action on this machine before its own work (bench/README.md,
// host CPU per action).
//
//   build/<dir>/bench/runtime/wake_floor_bench
//
// Reports per round trip the echo thread's CPU (CLOCK_THREAD_CPUTIME_ID) in microseconds, split
// into user and system time (getrusage RUSAGE_THREAD), and its context switches.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include <benchmark/benchmark.h>

namespace {

constexpr std::size_t kMessage = 64;  // about a WebSocket action's tunnel message

void check(bool ok, const char* what) {
    if (!ok)
        throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

// A connected loopback TCP pair, both ends with TCP_NODELAY (as the envoy's connection).
std::pair<int, int> tcp_pair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    check(listener >= 0, "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
    check(::listen(listener, 1) == 0, "listen");
    socklen_t len = sizeof addr;
    check(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    check(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
    const int server = ::accept(listener, nullptr, nullptr);
    check(server >= 0, "accept");
    ::close(listener);
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return {client, server};
}

double thread_cpu_us() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct EchoTotals {
    double cpu_us = 0, user_us = 0, sys_us = 0, switches = 0;
    std::int64_t echoes = 0;
};

// The echo thread: edge-triggered epoll as asio's reactor, a non-blocking socket, each wake
// reads until EAGAIN (asio's speculative read after a drained one) and answers each message.
void echo(int fd, int stop_fd, EchoTotals& out) {
    const int ep = ::epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    ev.data.fd = fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    ev.data.fd = stop_fd;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev);
    const int flags = 1;
    ::ioctl(fd, FIONBIO, &flags);
    rusage r0{};
    ::getrusage(RUSAGE_THREAD, &r0);
    const double c0 = thread_cpu_us();
    char buf[16 * 1024];
    for (bool running = true; running;) {
        epoll_event got[4];
        const int n = ::epoll_wait(ep, got, 4, -1);
        for (int i = 0; i < n; ++i) {
            if (got[i].data.fd == stop_fd) {
                running = false;
                continue;
            }
            for (;;) {
                const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
                if (r <= 0)
                    break;
                for (ssize_t at = 0; at + static_cast<ssize_t>(kMessage) <= r; at += kMessage) {
                    (void)::send(fd, buf + at, kMessage, 0);
                    ++out.echoes;
                }
            }
        }
    }
    const double c1 = thread_cpu_us();
    rusage r1{};
    ::getrusage(RUSAGE_THREAD, &r1);
    auto us = [](const timeval& a, const timeval& b) {
        return static_cast<double>(b.tv_sec - a.tv_sec) * 1e6 +
               static_cast<double>(b.tv_usec - a.tv_usec);
    };
    out.cpu_us = c1 - c0;
    out.user_us = us(r0.ru_utime, r1.ru_utime);
    out.sys_us = us(r0.ru_stime, r1.ru_stime);
    out.switches = static_cast<double>((r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw));
    ::close(ep);
}

// One message at a time (the echo thread sleeps between them), as one caller's sequential
// actions; with state.range(0) messages in flight, as that many callers.
void BM_LoopbackEchoThread(benchmark::State& state) {
    const int in_flight = static_cast<int>(state.range(0));
    auto [client, server] = tcp_pair();
    int stop[2];
    check(::pipe(stop) == 0, "pipe");
    EchoTotals totals;
    std::thread thread([&, server = server] { echo(server, stop[0], totals); });
    char msg[kMessage] = {};
    char reply[kMessage];
    for (int i = 0; i < in_flight; ++i)
        (void)::send(client, msg, kMessage, 0);
    for (auto _ : state) {
        // One answer back, one new message out: `in_flight` stay outstanding.
        std::size_t got = 0;
        while (got < kMessage) {
            const ssize_t r = ::recv(client, reply + got, kMessage - got, 0);
            check(r > 0, "recv");
            got += static_cast<std::size_t>(r);
        }
        (void)::send(client, msg, kMessage, 0);
    }
    const char b = 1;
    (void)::write(stop[1], &b, 1);
    thread.join();
    ::close(client);
    ::close(server);
    ::close(stop[0]);
    ::close(stop[1]);
    const double echoes = static_cast<double>(totals.echoes);
    state.counters["echo_cpu_us"] = totals.cpu_us / echoes;
    state.counters["echo_user_us"] = totals.user_us / echoes;
    state.counters["echo_sys_us"] = totals.sys_us / echoes;
    state.counters["echo_switches"] = totals.switches / echoes;
}
BENCHMARK(BM_LoopbackEchoThread)->Arg(1)->Arg(16)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();

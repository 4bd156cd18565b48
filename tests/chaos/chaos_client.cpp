// rivetkit-chaos-client: the C++ client's part of the chaos workload (run.mjs starts one or more).
// Three loops, each on its own thread and its own actor, record every operation as one JSON line
// of the history the checker reads (check.mjs):
//
//   add     chaosCounter add(client, seq) over HTTP (reply after durable)
//   queue   chaosQueue send("jobs", {client, seq}, wait) over HTTP
//   say     chaosChat say(client, seq, attempt) over one actor-connect connection
//
// A loop sends seq n + 1 only after seq n was acknowledged; a failed operation is retried with the
// same seq (attempt + 1) after a short pause. SIGTERM/SIGINT end the loops after their current
// operation.
//
//   rivetkit-chaos-client --endpoint URL --client NAME --key K --out FILE

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rivetkit/client.hpp"

using namespace rivetkit;
using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

class History {
  public:
    explicit History(const std::string& path) : out_(std::fopen(path.c_str(), "a")) {}
    ~History() {
        if (out_)
            std::fclose(out_);
    }
    bool ok() const { return out_ != nullptr; }
    void write(const Json& line) {
        const std::string text = line.dump() + "\n";
        std::lock_guard lock(mu_);
        std::fwrite(text.data(), 1, text.size(), out_);
        std::fflush(out_);
    }

  private:
    std::mutex mu_;
    std::FILE* out_;
};

struct Op {
    std::string kind;
    std::string actor;
    std::string key;
};

// Runs `call` for seq 1, 2, ... until stopped; `call(seq, attempt)` returns the result or error.
void loop(History& history, const std::string& client, const Op& op,
          const std::function<Result<Json>(std::int64_t, std::int64_t)>& call) {
    std::int64_t seq = 1;
    std::int64_t attempt = 1;
    while (!g_stop) {
        const std::int64_t t0 = now_ms();
        Result<Json> r = call(seq, attempt);
        Json line{{"client", client}, {"kind", op.kind},  {"actor", op.actor}, {"key", op.key},
                  {"seq", seq},       {"attempt", attempt}, {"t0", t0},        {"t1", now_ms()},
                  {"ok", r.ok()}};
        if (r.ok())
            line["res"] = *r;
        else
            line["err"] = r.error().group() + "/" + r.error().code();
        history.write(line);
        if (r.ok()) {
            seq += 1;
            attempt = 1;
        } else {
            attempt += 1;
            std::this_thread::sleep_for(200ms);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::string endpoint, client_name, key, out;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--endpoint")
            endpoint = argv[i + 1];
        else if (flag == "--client")
            client_name = argv[i + 1];
        else if (flag == "--key")
            key = argv[i + 1];
        else if (flag == "--out")
            out = argv[i + 1];
    }
    if (endpoint.empty() || client_name.empty() || key.empty() || out.empty()) {
        std::fprintf(stderr,
                     "usage: rivetkit-chaos-client --endpoint URL --client NAME --key K --out FILE\n");
        return 2;
    }
    History history(out);
    if (!history.ok()) {
        std::fprintf(stderr, "chaos-client: cannot open %s\n", out.c_str());
        return 2;
    }
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    client::ClientConfig config;
    config.endpoint = endpoint;
    config.reconnect_max = 2'000ms;
    client::Client c(config);

    const Op add{"add", "chaosCounter", key};
    const Op queue{"queue", "chaosQueue", key};
    const Op say{"say", "chaosChat", key};
    client::ActorHandle counter = c.get_or_create(add.actor, {key});
    client::ActorHandle jobs = c.get_or_create(queue.actor, {key});
    std::shared_ptr<client::Connection> room = c.get_or_create(say.actor, {key}).connect();

    std::vector<std::thread> threads;
    threads.emplace_back([&] {
        loop(history, client_name, add, [&](std::int64_t seq, std::int64_t) {
            return counter.action("add", Json::array({client_name, seq}));
        });
    });
    threads.emplace_back([&] {
        loop(history, client_name, queue, [&](std::int64_t seq, std::int64_t) -> Result<Json> {
            client::QueueSendOptions opts;
            opts.wait = true;
            opts.timeout = 30'000ms;
            Result<client::QueueSendResult> r =
                jobs.send("jobs", Json{{"client", client_name}, {"seq", seq}}, opts);
            if (!r.ok())
                return std::move(r).error();
            if (!r->completed())
                return Error("chaos", "queue_timed_out", "the send was not completed in time", std::nullopt);
            return Json{{"status", r->status}};
        });
    });
    threads.emplace_back([&] {
        loop(history, client_name, say, [&](std::int64_t seq, std::int64_t attempt) {
            return room->action("say", Json::array({client_name, seq, attempt}));
        });
    });
    for (auto& t : threads)
        t.join();
    room->dispose();
    return 0;
}

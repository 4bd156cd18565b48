// rivetkit: a small command line over the C++ client.
//
//   rivetkit call  <actor> <key> <action> [json args]   one stateless action over HTTP
//   rivetkit watch <actor> <key> <event>                print each event's args (JSON lines)
//
// Options (before or after the command): --endpoint URL, --namespace NS, --token T, --pool P,
// --encoding bare|json|cbor (defaults: RIVET_ENDPOINT, RIVET_NAMESPACE, RIVET_TOKEN, RIVET_POOL,
// RIVET_ENCODING, else http://127.0.0.1:6420 / default / none / default / bare), --get (only an
// existing actor; default get-or-create), --id (<key> is an actor id), --input JSON (create
// input), --count N (watch: exit after N events), --ready-line (watch: print "ready" on stdout
// once subscribed, for scripts). <key> parts are separated by ','; "" is the
// empty key. Exit codes: 0 ok, 1 the call failed (error on stderr as group.code: message), 2 usage.

#include <csignal>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

#include "rivetkit/client.hpp"

namespace {

using rivetkit::Json;
namespace client = rivetkit::client;

int usage(const std::string& why) {
    if (!why.empty())
        std::cerr << "rivetkit: " << why << "\n";
    std::cerr << "usage: rivetkit call  <actor> <key> <action> [json args]\n"
                 "       rivetkit watch <actor> <key> <event>\n"
                 "options: --endpoint URL --namespace NS --token T --pool P\n"
                 "         --encoding bare|json|cbor --get --id --input JSON --count N --ready-line\n";
    return 2;
}

void print_error(const rivetkit::Error& e) {
    std::cerr << "error: " << e.group() << "." << e.code() << ": " << e.message() << "\n";
    if (e.metadata())
        std::cerr << "metadata: " << *e.metadata() << "\n";
    if (e.actor())
        std::cerr << "actor: " << e.actor()->actor_id << "\n";
}

std::vector<std::string> split_key(const std::string& key) {
    std::vector<std::string> parts;
    if (key.empty())
        return parts;
    std::string::size_type start = 0;
    while (true) {
        auto comma = key.find(',', start);
        parts.push_back(key.substr(start, comma - start));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return parts;
}

}  // namespace

int main(int argc, char** argv) {
    client::ClientConfig config = client::ClientConfig::from_env();
    bool get_only = false;
    bool by_id = false;
    std::optional<Json> input;
    long count = -1;
    bool ready_line = false;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* name) -> std::optional<std::string> {
            if (i + 1 >= argc) {
                usage(std::string(name) + " needs a value");
                return std::nullopt;
            }
            return std::string(argv[++i]);
        };
        if (a == "--endpoint" || a == "--namespace" || a == "--token" || a == "--pool" ||
            a == "--encoding" || a == "--input" || a == "--count") {
            auto v = value(a.c_str());
            if (!v)
                return 2;
            if (a == "--endpoint")
                config.endpoint = *v;
            else if (a == "--namespace")
                config.ns = *v;
            else if (a == "--token")
                config.token = *v;
            else if (a == "--pool")
                config.pool = *v;
            else if (a == "--encoding") {
                auto e = client::parse_encoding(*v);
                if (!e)
                    return usage("unknown encoding `" + *v + "`");
                config.encoding = *e;
            } else if (a == "--input") {
                Json j = Json::parse(*v, nullptr, false);
                if (j.is_discarded())
                    return usage("--input is not JSON");
                input = std::move(j);
            } else {
                count = std::strtol(v->c_str(), nullptr, 10);
            }
        } else if (a == "--ready-line") {
            ready_line = true;
        } else if (a == "--get") {
            get_only = true;
        } else if (a == "--id") {
            by_id = true;
        } else if (a == "-h" || a == "--help") {
            usage("");
            return 0;
        } else {
            positional.push_back(std::move(a));
        }
    }
    if (positional.empty())
        return usage("missing command");
    const std::string command = positional[0];
    if (command != "call" && command != "watch")
        return usage("unknown command `" + command + "`");
    if ((command == "call" && (positional.size() < 4 || positional.size() > 5)) ||
        (command == "watch" && positional.size() != 4))
        return usage("wrong number of arguments");

    // SIGINT/SIGTERM are taken by a waiting thread (watch), blocked everywhere else.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    client::Client c(config);
    const std::string& name = positional[1];
    const std::string& key = positional[2];
    client::GetOrCreateOptions create_options;
    create_options.input = input;
    client::ActorHandle handle = by_id      ? c.get_for_id(name, key)
                                 : get_only ? c.get(name, split_key(key))
                                            : c.get_or_create(name, split_key(key), create_options);

    if (command == "call") {
        Json args = Json::array();
        if (positional.size() == 5) {
            args = Json::parse(positional[4], nullptr, false);
            if (args.is_discarded())
                return usage("args are not JSON");
        }
        auto out = handle.action(positional[3], std::move(args));
        if (!out.ok()) {
            print_error(out.error());
            return 1;
        }
        std::cout << out->dump() << std::endl;
        return 0;
    }

    std::mutex mu;
    std::condition_variable cv;
    bool stop = false;
    long seen = 0;
    auto conn = handle.connect();
    conn->on(positional[3], [&](const Json& event_args) {
        std::lock_guard lock(mu);
        std::cout << event_args.dump() << std::endl;
        ++seen;
        if (count >= 0 && seen >= count) {
            stop = true;
            cv.notify_all();
        }
    });
    conn->on_error([](const rivetkit::Error& e) { print_error(e); });
    bool announced = false;
    conn->on_open([&](const std::string& actor_id, const std::string&) {
        std::cerr << "watching actor " << actor_id << "\n";
        std::lock_guard lock(mu);
        if (ready_line && !announced)
            std::cout << "ready" << std::endl;
        announced = true;
    });
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        std::lock_guard lock(mu);
        stop = true;
        cv.notify_all();
    });
    {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stop; });
    }
    conn->dispose();
    // Wake the signal thread if it is still waiting.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    return 0;
}

// Memory an awake actor's database costs the host: N actors each open their database through the
// internal storage (schema, a state save, the state read back, as an actor start does); prints
// per actor SQLite's own heap (sqlite3_memory_used: page cache, lookaside, schema) and the page
// VFS's cache of committed pages. The pages "in the engine" (an in-process store here) are not
// counted.
//
// Then times state saves on one actor (a one-row transaction each) two ways: on an open
// connection, and opening the connection again first (a save after a quiet period).
//
//   actor_db_memory_bench [actors=500] [keep]
//
// keep: the databases stay open; otherwise each is idle-closed after its start, as the actor
// task does after two quiet seconds.

#include <sqlite3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "core/actor/internal_storage.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"
#include "core/actor/sqlite.hpp"
#include "local_page_store.hpp"
#include "sqlite/database.hpp"
#include "sqlite/vfs.hpp"

namespace asio = boost::asio;
using namespace rivetkit;
using namespace rivetkit::core;

namespace {

struct Actor {
    std::shared_ptr<bench::LocalPageStore> pages = std::make_shared<bench::LocalPageStore>();
    std::shared_ptr<ActorSqlite> sqlite;
    std::shared_ptr<SqliteActorStore> store;
};

// A state save; with `conns`, the records of that many hibernatable connections too, their message
// indexes moved on (what a save writes for an actor with that many connections open).
asio::awaitable<Status> save(Actor& a, std::uint8_t count, int conns = 0) {
    PersistedActor state;
    state.has_initialized = true;
    state.state = Bytes{0xa1, 0x65, 'c', 'o', 'u', 'n', 't', count};  // {"count": count}
    std::vector<KvEntry> puts;
    puts.push_back({keys::to_bytes(keys::kPersistData), encode_persisted_actor(state)});
    for (int i = 0; i < conns; ++i) {
        PersistedConnection conn;
        conn.id = "conn-" + std::to_string(i);
        conn.parameters = Bytes{0xf6};
        conn.state = Bytes{0xa0};
        conn.subscriptions = {{"newCount"}};
        conn.gateway_id = {1, 2, 3, static_cast<std::uint8_t>(i)};
        conn.request_id = {5, 6, 7, static_cast<std::uint8_t>(i)};
        conn.server_message_index = count;
        conn.client_message_index = count;
        conn.request_path = "/connect";
        conn.request_headers = {{"x-rivet-encoding", "bare"}};
        puts.push_back({keys::connection_key(conn.id), encode_persisted_connection(conn)});
    }
    co_return co_await a.store->batch_put(std::move(puts));
}

double process_cpu_us() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// Wall time per save over `saves` saves, reopening the connection before each with `reopen`;
// `cpu_us`, when given, gets the process's CPU time per save (io thread and worker).
asio::awaitable<double> time_saves(Actor& a, int saves, bool reopen, double* cpu_us = nullptr,
                                   int conns = 0) {
    const double cpu0 = process_cpu_us();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < saves; ++i) {
        if (reopen)
            a.sqlite->close_if_idle();
        if (!(co_await save(a, static_cast<std::uint8_t>(i % 20), conns)).ok())
            co_return -1;
    }
    if (cpu_us != nullptr)
        *cpu_us = (process_cpu_us() - cpu0) / saves;
    co_return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                  .count() /
              saves;
}

}  // namespace

int main(int argc, char** argv) {
    const int n = argc > 1 ? std::atoi(argv[1]) : 500;
    const bool keep = argc > 2 && std::string(argv[2]) == "keep";
    std::vector<Actor> actors(static_cast<std::size_t>(n));
    double save_us = 0;
    double reopen_save_us = 0;
    // The same saves with no statement kept (each save compiles its statements again), alternated
    // with the default, two rounds each.
    double uncached_us[2] = {0, 0};
    double cached_us[2] = {0, 0};
    double uncached_cpu_us[2] = {0, 0};
    double cached_cpu_us[2] = {0, 0};
    constexpr int kConns = 16;
    double conns_uncached_cpu_us[2] = {0, 0};
    double conns_cached_cpu_us[2] = {0, 0};
    const sqlite3_int64 before = sqlite3_memory_used();
    asio::io_context io;
    // Named: the coroutine refers to the lambda's captures, which must outlive io.run().
    auto work = [&]() -> asio::awaitable<bool> {
        for (int i = 0; i < n; ++i) {
            Actor& a = actors[static_cast<std::size_t>(i)];
            a.sqlite = std::make_shared<ActorSqlite>("mem-bench-" + std::to_string(i), a.pages);
            a.store = std::make_shared<SqliteActorStore>("actor-" + std::to_string(i), a.sqlite,
                                                         std::make_shared<InMemoryKv>());
            auto put = co_await save(a, 5);
            if (!put.ok()) {
                std::fprintf(stderr, "put: %s\n", put.error().to_string().c_str());
                co_return false;
            }
            std::vector<Bytes> get_keys;
            get_keys.push_back(keys::to_bytes(keys::kPersistData));
            auto got = co_await a.store->batch_get(std::move(get_keys));
            if (!got.ok() || got->empty() || !(*got)[0]) {
                std::fprintf(stderr, "get failed\n");
                co_return false;
            }
            if (!keep)
                a.sqlite->close_if_idle();
        }
        constexpr int kSaves = 2000;
        reopen_save_us = co_await time_saves(actors[0], kSaves, true);
        save_us = co_await time_saves(actors[0], kSaves, false);
        for (int round = 0; round < 2; ++round) {
            const std::size_t kept = sqlite::set_statement_cache_capacity(0);
            uncached_us[round] =
                co_await time_saves(actors[0], kSaves, false, &uncached_cpu_us[round]);
            sqlite::set_statement_cache_capacity(kept);
            cached_us[round] = co_await time_saves(actors[0], kSaves, false, &cached_cpu_us[round]);
        }
        for (int round = 0; round < 2; ++round) {
            const std::size_t kept = sqlite::set_statement_cache_capacity(0);
            if (co_await time_saves(actors[1], kSaves / 4, false, &conns_uncached_cpu_us[round],
                                    kConns) < 0)
                co_return false;
            sqlite::set_statement_cache_capacity(kept);
            if (co_await time_saves(actors[1], kSaves / 4, false, &conns_cached_cpu_us[round],
                                    kConns) < 0)
                co_return false;
        }
        co_return save_us > 0 && reopen_save_us > 0 && uncached_us[1] > 0 && cached_us[1] > 0;
    };
    auto done = asio::co_spawn(io, work(), asio::use_future);
    io.run();
    if (!done.get())
        return 1;
    sqlite::wait_for_workers(std::chrono::seconds(10));
    const double per_actor_sqlite = static_cast<double>(sqlite3_memory_used() - before) / n;
    std::size_t engine_pages = 0;
    for (auto& a : actors)
        engine_pages += a.pages->pages();
    std::printf("actors: %d\n", n);
    std::printf("sqlite heap per actor: %.1f KB (page cache, lookaside, schema, statements)\n",
                per_actor_sqlite / 1024);
    std::printf("page VFS cache per actor: %.1f KB (committed pages, compacted)\n",
                static_cast<double>(sqlite::cached_page_bytes()) / n / 1024);
    std::printf("database pages per actor (in the engine): %.1f\n",
                static_cast<double>(engine_pages) / n);
    std::printf("state save (one-row transaction, wall): %.1f us on an open connection, %.1f us "
                "opening it again first\n",
                save_us, reopen_save_us);
    std::printf("state save, statements kept / compiled each time (two alternating rounds): wall "
                "%.1f / %.1f us and %.1f / %.1f us; CPU %.1f / %.1f us and %.1f / %.1f us\n",
                cached_us[0], uncached_us[0], cached_us[1], uncached_us[1], cached_cpu_us[0],
                uncached_cpu_us[0], cached_cpu_us[1], uncached_cpu_us[1]);
    std::printf("state save with %d hibernatable connections' records, statements kept / compiled "
                "each time: CPU %.1f / %.1f us and %.1f / %.1f us\n",
                kConns, conns_cached_cpu_us[0], conns_uncached_cpu_us[0], conns_cached_cpu_us[1],
                conns_uncached_cpu_us[1]);
    std::printf("open connections: %zu\n", sqlite::open_connections());
    std::printf("sqlite highwater: %.1f MB\n",
                static_cast<double>(sqlite3_memory_highwater(0)) / 1e6);
    return 0;
}

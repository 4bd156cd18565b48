// One SQLite transaction of N rows (4,000-byte blobs, about one page each) through an actor's
// database whose pages live in the engine (envoy v8 SqliteCommit, or the staged commit past 320
// dirty pages), against the same database over an in-process page store in the same run — the
// ratio is what the engine round trips cost. Prints the median wall time per transaction and the
// payload rate for each size.
//
//   sqlite_commit_bench [repeats=5]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "local_page_store.hpp"
#include "sqlite/database.hpp"
#include "sqlite/envoy_store.hpp"
#include "engine_harness.hpp"
#include "live_envoy.hpp"

namespace asio = boost::asio;
using rivetkit::Bytes;
using rivetkit::Result;
using rivetkit::Status;
using rivetkit::testing::EngineHarness;
using namespace rivetkit::envoy;
using namespace rivetkit::envoy::testing;
namespace sql = rivetkit::sqlite;

namespace {

using rivetkit::bench::LocalPageStore;  // the baseline

std::shared_ptr<sql::Database> open_db(LiveEnvoy& envoy, std::string name,
                                       std::shared_ptr<sql::PageStore> store) {
    auto opened = envoy.run([name, store]() -> asio::awaitable<Result<std::shared_ptr<sql::Database>>> {
        auto op = sql::Database::open(name, store);
        co_return co_await std::move(op);
    });
    if (!opened || !opened->ok()) {
        std::fprintf(stderr, "open %s: %s\n", name.c_str(),
                     opened ? opened->error().to_string().c_str() : "no reply");
        return nullptr;
    }
    return opened->value();
}

Status exec(LiveEnvoy& envoy, const std::shared_ptr<sql::Database>& db, std::string text) {
    auto r = envoy.run([db, text]() -> asio::awaitable<Status> {
        auto op = db->exec(text);
        co_return co_await std::move(op);
    }, std::chrono::minutes(5));
    return r ? *r : Status(rivetkit::Error("bench", "timeout", "no reply"));
}

// Median milliseconds of `repeats` transactions of `rows` rows.
double median_ms(LiveEnvoy& envoy, const std::shared_ptr<sql::Database>& db, int rows,
                 int repeats) {
    std::vector<double> ms;
    for (int i = 0; i < repeats; ++i) {
        std::string text =
            "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
            std::to_string(rows) + ") INSERT INTO blobs (body) SELECT randomblob(4000) FROM n; COMMIT;";
        auto t0 = std::chrono::steady_clock::now();
        Status s = exec(envoy, db, text);
        auto t1 = std::chrono::steady_clock::now();
        if (!s.ok()) {
            std::fprintf(stderr, "transaction of %d rows: %s\n", rows, s.error().to_string().c_str());
            return -1;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    auto engine = EngineHarness::start();
    if (!engine.ok()) {
        std::fprintf(stderr, "engine: %s\n", engine.error().to_string().c_str());
        return 1;
    }
    if (auto s = (*engine)->create_pool("cpp-pool"); !s.ok()) {
        std::fprintf(stderr, "pool: %s\n", s.error().to_string().c_str());
        return 1;
    }
    EnvoyConfig config;
    config.endpoint = (*engine)->endpoint();
    config.pool_name = "cpp-pool";
    config.prepopulate_actor_names = {{"bench", "{}"}};
    auto cb = std::make_shared<LiveCallbacks>();
    LiveEnvoy envoy(config, cb);
    if (!cb->wait([](const auto& s) { return s.connects >= 1; }))
        return 1;
    if (!(*engine)->wait_envoy_registered(envoy.handle().envoy_key()).ok())
        return 1;
    auto actor = (*engine)->create_actor("bench", "sqlite-bench", "cpp-pool");
    if (!actor.ok())
        return 1;
    const std::string id = *actor;
    if (!cb->wait([&](const auto& s) { return s.starts_of(id) >= 1; }))
        return 1;
    const auto generation = cb->read([](const auto& s) { return s.starts.back().generation; });
    auto io = envoy.run([]() -> asio::awaitable<asio::any_io_executor> {
        co_return co_await asio::this_coro::executor;
    });
    if (!io)
        return 1;

    auto remote = open_db(envoy, id, std::make_shared<sql::EnvoyPageStore>(envoy.handle(), *io,
                                                                         id, generation));
    auto local = open_db(envoy, "local-baseline", std::make_shared<LocalPageStore>());
    if (!remote || !local)
        return 1;
    for (auto* db : {&remote, &local}) {
        if (!exec(envoy, *db, "CREATE TABLE blobs (id INTEGER PRIMARY KEY, body BLOB)").ok())
            return 1;
    }

    std::printf("rows (~pages) | engine median ms | in-process median ms | ratio | engine MB/s\n");
    for (int rows : {1, 100, 300, 1200, 4800}) {
        const double in_engine = median_ms(envoy, remote, rows, repeats);
        const double in_process = median_ms(envoy, local, rows, repeats);
        if (in_engine < 0 || in_process < 0)
            return 1;
        const double mb = rows * 4000.0 / 1e6;
        std::printf("%13d | %16.2f | %20.2f | %5.1fx | %11.1f\n", rows, in_engine, in_process,
                    in_engine / in_process, mb / (in_engine / 1000.0));
    }
    return 0;
}

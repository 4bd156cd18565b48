#pragma once
// An actor's SQLite database as the actor sees it: statements with bound parameters, rows as
// values, transactions. SQLite itself runs on a shared pool of worker threads (one job queue per
// database, so one database never runs two statements at once and no actor owns a thread); the
// awaitables resume on the caller's executor.
//
// Errors: sqlite/closed, sqlite/invalid_bind_parameter, sqlite/constraint, sqlite/busy,
// sqlite/query_error (any other SQLite error; metadata {"sqliteCode": n}), sqlite/storage_error
// (the page store failed; metadata {"cause": "group/code"} of the store's error), plus
// Connection::open's sqlite/open_failed and sqlite/already_open.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/shared_string.hpp"
#include "sqlite/vfs.hpp"

namespace rivetkit::sqlite {

// NULL, INTEGER, REAL, TEXT, BLOB.
using Value = std::variant<std::monostate, std::int64_t, double, std::string, Bytes>;

// Parameters by name: `name` matches `:name`, `@name` or `$name` in the statement (a key that
// includes the prefix matches exactly).
using NamedValues = std::vector<std::pair<std::string, Value>>;

struct QueryResult {
    std::vector<std::string> columns;
    std::vector<std::vector<Value>> rows;
};

struct RunResult {
    std::int64_t changes = 0;
    std::int64_t last_insert_rowid = 0;
};

// Synchronous statements on an open connection; only ever used on the database's worker.
class Session {
  public:
    explicit Session(Connection& conn) : conn_(conn) {}
    Result<QueryResult> query(const std::string& sql, const std::vector<Value>& params = {});
    Result<QueryResult> query_named(const std::string& sql, const NamedValues& params);
    Result<RunResult> run(const std::string& sql, const std::vector<Value>& params = {});
    // Any number of statements, no parameters, results discarded.
    Status exec(const std::string& sql);

  private:
    Error error(int rc) const;
    template <typename Bind>
    Result<QueryResult> run_one(const std::string& sql, Bind&& bind_all);
    // Steps a prepared, bound statement to the end and collects its rows.
    Result<QueryResult> collect(void* stmt);
    Connection& conn_;
};

// A database's jobs, run one at a time and in order on the worker pool (database.cpp).
class JobQueue;

// Blocks until every job the worker pool started before the call has returned (jobs waiting in a
// database's queue behind a running one included), with its last step: the post that hands its
// result to the caller's io_context (a job may still be in it when that io_context stops). An
// owner of an io_context whose actors used databases calls it after its io_context stopped and
// before destroying it. False when `bound` passed first (a job blocked, e.g. on a page read its
// stopped io_context never answers).
bool wait_for_workers(std::chrono::milliseconds bound);

// Connections of idle-closing databases (below) open after their last use are capped per process:
// past the limit, the least recently used closes at once, as after its quiet seconds. A burst of
// actor starts then holds at most this many connections (~22 KB each) open, not one per actor
// started within two seconds, whose memory glibc would mostly keep once they close. Past the
// limit, a database used again reopens (~0.1 ms, reading nothing from the page store). 16: what
// the connections open at a burst's peak held stays in the process's RSS after they close (the
// blocks of actors started meanwhile sit between theirs), so 128 cost ~3 KB per actor against 16
// with 1,000 actors (bench/README.md); 16 still keep a hot set of 16 actors, each saving once a
// second, from reopening.
inline constexpr std::size_t kDefaultReusableConnectionLimit = 16;
// Sets the limit (at least 1) and returns the previous one; for hosts and tests.
std::size_t set_reusable_connection_limit(std::size_t limit);

// Prepared statements a connection keeps for reuse, by their SQL text, least recently used
// dropped first; a text is kept from its second use, so statements run once (an actor start's
// loads) take no memory. The internal storage's save is a few statements and a commit, which
// SQLite otherwise compiles again at every save (a save with 16 hibernatable connections spent 3x
// its CPU compiling, bench/sqlite/actor_db_memory_bench). 16, as rusqlite's cache; a connection an
// actor's storage alone uses closes when idle and frees them.
inline constexpr std::size_t kDefaultStatementCacheCapacity = 16;
// Sets the capacity per connection (0: none kept) and returns the previous one; for benchmarks and
// tests. A connection's statements past a lower capacity go at its next statement.
std::size_t set_statement_cache_capacity(std::size_t capacity);

class ReusableConnections;

class Database : public std::enable_shared_from_this<Database> {
  public:
    template <typename T>
    using Task = boost::asio::awaitable<T>;

    // `name` is unique per process (the actor id).
    static Task<Result<std::shared_ptr<Database>>> open(SharedString name,
                                                        std::shared_ptr<PageStore> store);

    Task<Result<QueryResult>> query(std::string sql, std::vector<Value> params = {});
    Task<Result<QueryResult>> query_named(std::string sql, NamedValues params);
    Task<Result<RunResult>> run(std::string sql, std::vector<Value> params = {});
    Task<Status> exec(std::string sql);
    // `body` runs on the worker between BEGIN IMMEDIATE and COMMIT; an error from it or from the
    // commit rolls everything back and is returned.
    //
    // With GCC 12, name the body before the co_await (`auto body = [..](Session& s) {..};
    // co_await db->transaction(std::move(body));`): GCC 12 destroys some temporaries of a
    // co_await expression twice, and a lambda temporary there that owns memory (a captured
    // std::string) is freed twice (TypedDatabase test).
    Task<Status> transaction(std::function<Status(Session&)> body);
    // Closes the connection; later calls fail with sqlite/closed.
    Task<void> close();

    // Idle close: closes the SQLite connection if no transaction is open and nobody asked to keep
    // it (asynchronously, on the database's worker); the next call opens it again on the same file
    // state, whose committed pages stay in memory, so reopening reads nothing from the page store.
    // An awake actor whose database only its internal storage uses then holds its pages
    // (compactly), not a connection and a parsed schema (~25 KB); the actor task calls it after
    // two seconds without a use. Until `keep_open()`, SQLite's own page cache is also released
    // after every call. `keep_open()` ends both for good: a connection may carry state a reopen
    // would lose (PRAGMAs such as foreign_keys, temporary tables), so a database anyone else runs
    // SQL on stays open with its cache.
    void close_if_idle();
    void keep_open() { kept_open_.store(true, std::memory_order_relaxed); }
    // Connections opened so far (the first open included); a diagnostic for tests.
    std::uint64_t opens() const { return opens_.load(std::memory_order_relaxed); }

    Database(std::shared_ptr<JobQueue> jobs, std::unique_ptr<Connection> conn,
             SharedString name);
    ~Database();

  private:
    friend class ReusableConnections;
    template <typename T, typename F>
    Task<T> on_worker(F work);
    // After a job (on the worker): the connection joins or moves to the front of the reusable
    // ones, or leaves them once kept open or closed.
    void note_connection_use();

    std::shared_ptr<JobQueue> jobs_;
    std::unique_ptr<Connection> conn_;  // null while idle-closed (or closed)
    SharedString name_;
    std::shared_ptr<PagedFileState> idle_file_;  // the file state while idle-closed
    bool closed_ = false;                       // in the job queue
    std::atomic<bool> kept_open_{false};
    std::atomic<std::uint64_t> opens_{1};
    // Links among the reusable connections (ReusableConnections' lock guards them).
    Database* lru_newer_ = nullptr;
    Database* lru_older_ = nullptr;
    bool lru_linked_ = false;
    // Kept open or closed, both for good: out of the reusable ones from then on. Only this
    // database's jobs (and its open, before any) touch it.
    bool left_reusable_for_good_ = false;
};

}  // namespace rivetkit::sqlite

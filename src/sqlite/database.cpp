#include "sqlite/database.hpp"

#include <sqlite3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "base/log.hpp"
#include "runtime/outside_work.hpp"

namespace rivetkit::sqlite {

namespace asio = boost::asio;

namespace {

// One thread per core, at least two: SQLite work of different actors overlaps, a worker blocked
// on the engine never holds up the io threads, and a host running one io thread per core (several
// engine connections) does not funnel every connection's databases through two workers.
std::size_t worker_count() {
    return std::max<std::size_t>(2, std::thread::hardware_concurrency());
}

asio::thread_pool& worker_pool() {
    static asio::thread_pool pool(worker_count());
    return pool;
}

sqlite3* raw(Connection& conn) {
    return static_cast<sqlite3*>(conn.raw());
}

struct StatementGuard {
    sqlite3_stmt* stmt = nullptr;
    ~StatementGuard() { sqlite3_finalize(stmt); }
};

bool only_whitespace(const char* tail) {
    for (; tail != nullptr && *tail != '\0'; ++tail) {
        if (std::isspace(static_cast<unsigned char>(*tail)) == 0)
            return false;
    }
    return true;
}

Value column_value(sqlite3_stmt* stmt, int i) {
    switch (sqlite3_column_type(stmt, i)) {
        case SQLITE_INTEGER:
            return Value(static_cast<std::int64_t>(sqlite3_column_int64(stmt, i)));
        case SQLITE_FLOAT:
            return Value(sqlite3_column_double(stmt, i));
        case SQLITE_TEXT: {
            const auto* text = sqlite3_column_text(stmt, i);
            return Value(std::string(reinterpret_cast<const char*>(text),
                                     static_cast<std::size_t>(sqlite3_column_bytes(stmt, i))));
        }
        case SQLITE_BLOB: {
            const auto* blob = static_cast<const std::uint8_t*>(sqlite3_column_blob(stmt, i));
            const auto n = static_cast<std::size_t>(sqlite3_column_bytes(stmt, i));
            return Value(blob == nullptr ? Bytes{} : Bytes(blob, blob + n));
        }
        default:
            return Value(std::monostate{});
    }
}

int bind(sqlite3_stmt* stmt, int index, const Value& value) {
    return std::visit(
        [&](const auto& v) -> int {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return sqlite3_bind_null(stmt, index);
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                return sqlite3_bind_int64(stmt, index, v);
            } else if constexpr (std::is_same_v<T, double>) {
                return sqlite3_bind_double(stmt, index, v);
            } else if constexpr (std::is_same_v<T, std::string>) {
                return sqlite3_bind_text64(stmt, index, v.data(), v.size(), SQLITE_TRANSIENT,
                                           SQLITE_UTF8);
            } else {
                // An empty vector's data() may be null, which SQLite would bind as NULL.
                if (v.empty())
                    return sqlite3_bind_zeroblob(stmt, index, 0);
                return sqlite3_bind_blob64(stmt, index, v.data(), v.size(), SQLITE_TRANSIENT);
            }
        },
        value);
}

Error closed_error() {
    return Error("sqlite", "closed", "the database is closed");
}

}  // namespace

// MARK: Session

Error Session::error(int rc) const {
    if (auto store = conn_.take_store_error())
        return storage_error(*store);
    std::string message = sqlite3_errmsg(raw(conn_));
    switch (rc & 0xff) {
        case SQLITE_CONSTRAINT:
            return Error("sqlite", "constraint", std::move(message));
        case SQLITE_BUSY:
            return Error("sqlite", "busy", std::move(message));
        default:
            return Error("sqlite", "query_error", std::move(message),
                         R"({"sqliteCode":)" + std::to_string(rc) + "}");
    }
}

// Prepares `sql` as exactly one statement, lets `bind_all(stmt)` bind its parameters (an int
// SQLite code, or an Error), and steps it to the end.
template <typename Bind>
Result<QueryResult> Session::run_one(const std::string& sql, Bind&& bind_all) {
    sqlite3* db = raw(conn_);
    StatementGuard guard;
    const char* tail = nullptr;
    int rc =
        sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size() + 1), &guard.stmt, &tail);
    if (rc != SQLITE_OK)
        return error(rc);
    if (guard.stmt == nullptr)
        return QueryResult{};
    if (!only_whitespace(tail)) {
        return Error("sqlite", "query_error", "a query takes one statement; use exec for several");
    }
    if (std::optional<Error> bad = bind_all(guard.stmt))
        return std::move(*bad);
    return collect(guard.stmt);
}

Result<QueryResult> Session::query(const std::string& sql, const std::vector<Value>& params) {
    return run_one(sql, [&](sqlite3_stmt* stmt) -> std::optional<Error> {
        const int expected = sqlite3_bind_parameter_count(stmt);
        if (expected != static_cast<int>(params.size())) {
            return Error("sqlite", "invalid_bind_parameter",
                         "statement takes " + std::to_string(expected) + " parameters, got " +
                             std::to_string(params.size()));
        }
        for (std::size_t i = 0; i < params.size(); ++i) {
            if (int rc = bind(stmt, static_cast<int>(i + 1), params[i]); rc != SQLITE_OK)
                return error(rc);
        }
        return std::nullopt;
    });
}

Result<QueryResult> Session::query_named(const std::string& sql, const NamedValues& params) {
    return run_one(sql, [&](sqlite3_stmt* stmt) -> std::optional<Error> {
        const int count = sqlite3_bind_parameter_count(stmt);
        for (int i = 1; i <= count; ++i) {
            const char* raw_name = sqlite3_bind_parameter_name(stmt, i);
            if (raw_name == nullptr) {
                return Error("sqlite", "invalid_bind_parameter",
                             "parameter " + std::to_string(i) +
                                 " is positional; named values given");
            }
            const std::string_view name(raw_name);
            const Value* value = nullptr;
            for (const auto& [key, v] : params) {
                if (key == name || (name.size() > 1 && key == name.substr(1))) {
                    value = &v;
                    break;
                }
            }
            if (value == nullptr) {
                return Error("sqlite", "invalid_bind_parameter",
                             "no value for parameter " + std::string(name));
            }
            if (int rc = bind(stmt, i, *value); rc != SQLITE_OK)
                return error(rc);
        }
        return std::nullopt;
    });
}

Result<QueryResult> Session::collect(void* raw_stmt) {
    auto* stmt = static_cast<sqlite3_stmt*>(raw_stmt);
    QueryResult out;
    const int columns = sqlite3_column_count(stmt);
    out.columns.reserve(static_cast<std::size_t>(columns));
    for (int i = 0; i < columns; ++i)
        out.columns.emplace_back(sqlite3_column_name(stmt, i));
    int rc = SQLITE_OK;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        std::vector<Value> row;
        row.reserve(static_cast<std::size_t>(columns));
        for (int i = 0; i < columns; ++i)
            row.push_back(column_value(stmt, i));
        out.rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE)
        return error(rc);
    return out;
}

Result<RunResult> Session::run(const std::string& sql, const std::vector<Value>& params) {
    auto done = query(sql, params);
    if (!done.ok())
        return std::move(done).error();
    sqlite3* db = raw(conn_);
    return RunResult{sqlite3_changes64(db), sqlite3_last_insert_rowid(db)};
}

Status Session::exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(raw(conn_), sql.c_str(), nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK)
        return error(rc);
    return {};
}

// MARK: Database

namespace {

bool worker_barrier(std::chrono::milliseconds bound) {
    // One job per worker thread, each held until all of them run: a thread runs one job at a
    // time, so with every thread inside this barrier no earlier job is still running, and the
    // pool's queue is FIFO, so none queued before it is still waiting.
    struct Barrier {
        std::mutex mutex;
        std::condition_variable cv;
        std::size_t arrived = 0;
        std::size_t left = 0;
        bool released = false;
    };
    // One barrier at a time: two interleaved ones could each hold part of the pool and wait
    // for the rest (several host threads stop at once).
    static std::mutex one_at_a_time;
    std::lock_guard serial(one_at_a_time);
    auto barrier = std::make_shared<Barrier>();
    const std::size_t threads = worker_count();
    for (std::size_t i = 0; i < threads; ++i) {
        asio::post(worker_pool(), [barrier, threads] {
            std::unique_lock lock(barrier->mutex);
            if (++barrier->arrived == threads)
                barrier->released = true;
            barrier->cv.notify_all();
            // Bounded, so a caller that gave up does not leave workers parked here for good.
            barrier->cv.wait_for(lock, std::chrono::seconds(30), [&] { return barrier->released; });
            barrier->released = true;
            ++barrier->left;
            barrier->cv.notify_all();
        });
    }
    std::unique_lock lock(barrier->mutex);
    const bool done =
        barrier->cv.wait_for(lock, bound, [&] { return barrier->left == threads; });
    if (!done)
        barrier->released = true;  // let the ones that arrived go
    barrier->cv.notify_all();
    return done;
}

}  // namespace

bool wait_for_workers(std::chrono::milliseconds bound) {
    // Twice: a job posted to a database's strand while the strand ran another waits in the
    // strand, which posts it to the pool again only when that other one returns — possibly after
    // the first barrier's jobs were queued. That return happens before the first barrier can
    // complete (its thread must take a barrier job), so the second barrier is queued behind it.
    const auto started = std::chrono::steady_clock::now();
    if (!worker_barrier(bound))
        return false;
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    return worker_barrier(std::max(bound - spent, std::chrono::milliseconds(1)));
}

asio::any_io_executor make_database_strand() {
    return asio::make_strand(worker_pool().get_executor());
}

Database::Database(asio::any_io_executor strand, std::unique_ptr<Connection> conn,
                   std::string name)
    : strand_(std::move(strand)), conn_(std::move(conn)), name_(std::move(name)) {}

Database::~Database() {
    // Closing may roll back an open transaction, which may reach the page store: never on the
    // caller's (possibly io) thread.
    if (conn_)
        asio::post(strand_, [conn = std::shared_ptr<Connection>(std::move(conn_))] {});
}

template <typename T, typename F>
Database::Task<T> Database::on_worker(F work) {
    auto self = shared_from_this();
    auto job = [self, work = std::move(work)]() mutable -> asio::awaitable<std::optional<T>> {
        if (self->closed_)
            co_return std::optional<T>(closed_error());
        if (!self->conn_) {
            // On failure the file state stays for the next call to try again.
            auto reopened = Connection::reopen(self->name_, self->idle_file_);
            if (!reopened.ok()) {
                log::warn("sqlite reopen failed",
                          {{"actor_id", self->name_}, {"error", reopened.error().to_string()}});
                co_return std::optional<T>(std::move(reopened).error());
            }
            self->conn_ = std::move(reopened).value();
            self->idle_file_.reset();
            self->opens_.fetch_add(1, std::memory_order_relaxed);
        }
        // A store error left over from a rollback belongs to no statement of this call.
        (void)self->conn_->take_store_error();
        Session session(*self->conn_);
        std::optional<T> out(work(session));
        // A database only the actor's internal storage uses is small, and the file's cache holds
        // all of it: SQLite's own cache would hold its pages a second time. One the user runs
        // SQL on keeps its cache (it may be larger than the file's cache limit).
        if (!self->kept_open_.load(std::memory_order_relaxed))
            self->conn_->release_memory();
        co_return out;
    };
    auto op = asio::co_spawn(strand_, std::move(job), asio::use_awaitable);
    rt::OutsideWork outside;
    std::optional<T> out = co_await std::move(op);
    co_return std::move(*out);
}

Database::Task<Result<std::shared_ptr<Database>>> Database::open(std::string name,
                                                                 std::shared_ptr<PageStore> store) {
    auto strand = make_database_strand();
    auto job = [name,
                store]() -> asio::awaitable<std::optional<Result<std::unique_ptr<Connection>>>> {
        co_return Connection::open(name, store);
    };
    auto op = asio::co_spawn(strand, std::move(job), asio::use_awaitable);
    rt::OutsideWork outside;
    auto conn = co_await std::move(op);
    if (!conn->ok())
        co_return std::move(*conn).error();
    co_return std::make_shared<Database>(strand, std::move(**conn), name);
}

Database::Task<Result<QueryResult>> Database::query(std::string sql, std::vector<Value> params) {
    auto op = on_worker<Result<QueryResult>>([sql = std::move(sql), params = std::move(params)](
                                                 Session& s) { return s.query(sql, params); });
    co_return co_await std::move(op);
}

Database::Task<Result<QueryResult>> Database::query_named(std::string sql, NamedValues params) {
    auto op = on_worker<Result<QueryResult>>(
        [sql = std::move(sql), params = std::move(params)](Session& s) {
            return s.query_named(sql, params);
        });
    co_return co_await std::move(op);
}

Database::Task<Result<RunResult>> Database::run(std::string sql, std::vector<Value> params) {
    auto op = on_worker<Result<RunResult>>([sql = std::move(sql), params = std::move(params)](
                                               Session& s) { return s.run(sql, params); });
    co_return co_await std::move(op);
}

Database::Task<Status> Database::exec(std::string sql) {
    auto op = on_worker<Status>([sql = std::move(sql)](Session& s) { return s.exec(sql); });
    co_return co_await std::move(op);
}

Database::Task<Status> Database::transaction(std::function<Status(Session&)> body) {
    auto op = on_worker<Status>([body = std::move(body)](Session& s) -> Status {
        if (auto begun = s.exec("BEGIN IMMEDIATE"); !begun.ok())
            return begun;
        Status result = body(s);
        if (result.ok())
            result = s.exec("COMMIT");
        if (!result.ok()) {
            // After a failed COMMIT SQLite may already have rolled back; then this one fails
            // harmlessly ("no transaction is active").
            (void)s.exec("ROLLBACK");
        }
        return result;
    });
    co_return co_await std::move(op);
}

void Database::close_if_idle() {
    if (kept_open_.load(std::memory_order_relaxed))
        return;
    asio::post(strand_, [self = shared_from_this()] {
        if (self->closed_ || !self->conn_ || self->kept_open_.load(std::memory_order_relaxed) ||
            !self->conn_->autocommit())
            return;
        self->idle_file_ = self->conn_->file();
        self->conn_.reset();
    });
}

Database::Task<void> Database::close() {
    auto self = shared_from_this();
    auto job = [self]() -> asio::awaitable<void> {
        self->closed_ = true;
        self->conn_.reset();
        self->idle_file_.reset();
        co_return;
    };
    auto op = asio::co_spawn(strand_, std::move(job), asio::use_awaitable);
    rt::OutsideWork outside;
    co_await std::move(op);
}

}  // namespace rivetkit::sqlite

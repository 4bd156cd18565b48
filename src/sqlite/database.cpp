#include "sqlite/database.hpp"

#include <sqlite3.h>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "base/log.hpp"
#include "runtime/outside_work.hpp"
#include "runtime/ring_buffer.hpp"

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

// The pool of databases opened in lockstep (a deterministic simulation, runtime/outside_work.hpp):
// there a job handed to the pool must start at once, even while other workers are blocked on the
// io thread that waits for it to settle, so it has more threads than a simulation has jobs
// blocked at once (it is shared by every run of the process; wait_for_workers does not cover it:
// a simulation settles its workers itself).
asio::thread_pool& lockstep_pool() {
    static asio::thread_pool pool(64);
    return pool;
}

sqlite3* raw(Connection& conn) {
    return static_cast<sqlite3*>(conn.raw());
}

// Through the statement cache, as every transaction takes them.
const std::string kBegin = "BEGIN IMMEDIATE";
const std::string kCommit = "COMMIT";

std::atomic<std::size_t>& statement_cache_capacity() {
    static std::atomic<std::size_t> capacity{kDefaultStatementCacheCapacity};
    return capacity;
}

// A statement for one call: a cached one is reset (its bindings cleared) for its next use when the
// call ends, any other finalized.
class StatementLease {
  public:
    StatementLease(sqlite3_stmt* stmt, bool cached) : stmt_(stmt), cached_(cached) {}
    StatementLease(const StatementLease&) = delete;
    StatementLease& operator=(const StatementLease&) = delete;
    ~StatementLease() {
        if (!cached_) {
            sqlite3_finalize(stmt_);
            return;
        }
        sqlite3_reset(stmt_);
        sqlite3_clear_bindings(stmt_);
    }

  private:
    sqlite3_stmt* stmt_;
    bool cached_;
};

// Whether a statement for `sql` is worth keeping: its text was prepared on this connection before
// (a text run once, such as an actor start's loads, is not kept). Notes the text otherwise, the
// last 2 x capacity texts remembered.
bool seen_before(std::vector<std::size_t>& seen, std::size_t capacity, const std::string& sql) {
    const std::size_t hash = std::hash<std::string>{}(sql);
    if (auto it = std::find(seen.begin(), seen.end(), hash); it != seen.end()) {
        seen.erase(it);
        return true;
    }
    if (seen.size() >= 2 * capacity)
        seen.erase(seen.begin());
    seen.push_back(hash);
    return false;
}

// The connection's cached statement for exactly this text, moved to the most recently used end.
sqlite3_stmt* take_cached(std::vector<Connection::CachedStatement>& cache, const std::string& sql) {
    for (auto it = cache.rbegin(); it != cache.rend(); ++it) {
        if (it->sql != sql)
            continue;
        auto* stmt = static_cast<sqlite3_stmt*>(it->stmt);
        std::rotate(std::prev(it.base()), it.base(), cache.end());
        return stmt;
    }
    return nullptr;
}

// Finalizes the least recently used statements until at most `keep` are left.
void trim_cache(std::vector<Connection::CachedStatement>& cache, std::size_t keep) {
    if (cache.size() <= keep)
        return;
    const auto gone = cache.begin() + static_cast<std::ptrdiff_t>(cache.size() - keep);
    for (auto it = cache.begin(); it != gone; ++it)
        sqlite3_finalize(static_cast<sqlite3_stmt*>(it->stmt));
    cache.erase(cache.begin(), gone);
}

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

// Takes `sql` as exactly one statement — the connection's prepared one for the same text, or a
// new one, kept for the next call when its text was prepared before — lets `bind_all(stmt)` bind
// its parameters (an int SQLite code, or an Error), and steps it to the end. A kept statement sees
// schema changes: SQLite prepares it again when the schema it was prepared on changed.
template <typename Bind>
Result<QueryResult> Session::run_one(const std::string& sql, Bind&& bind_all) {
    auto& cache = conn_.statement_cache();
    const std::size_t capacity = statement_cache_capacity().load(std::memory_order_relaxed);
    trim_cache(cache, capacity);
    sqlite3_stmt* stmt = take_cached(cache, sql);
    bool cached = stmt != nullptr;
    if (stmt == nullptr) {
        cached = capacity > 0 && seen_before(conn_.statements_seen(), capacity, sql);
        const char* tail = nullptr;
        conn_.count_prepare();
        int rc = sqlite3_prepare_v3(raw(conn_), sql.c_str(), static_cast<int>(sql.size() + 1),
                                    cached ? SQLITE_PREPARE_PERSISTENT : 0, &stmt, &tail);
        if (rc != SQLITE_OK)
            return error(rc);  // stmt is null
        if (stmt == nullptr)
            return QueryResult{};  // no statement: only whitespace or comments
        if (!only_whitespace(tail)) {
            sqlite3_finalize(stmt);
            return Error("sqlite", "query_error",
                         "a query takes one statement; use exec for several");
        }
        if (cached) {
            trim_cache(cache, capacity - 1);
            cache.push_back(Connection::CachedStatement{sql, stmt});
        }
    }
    StatementLease lease(stmt, cached);
    if (std::optional<Error> bad = bind_all(stmt))
        return std::move(*bad);
    return collect(stmt);
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
    // The columns are read after the first step: a kept statement whose schema changed since it
    // was prepared is prepared again by that step, and may then have other columns.
    int rc = sqlite3_step(stmt);
    const int columns = sqlite3_column_count(stmt);
    out.columns.reserve(static_cast<std::size_t>(columns));
    for (int i = 0; i < columns; ++i)
        out.columns.emplace_back(sqlite3_column_name(stmt, i));
    for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt)) {
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
    // Twice: a job posted to a database's queue while it ran another waits in the queue, which
    // posts it to the pool only when that other one returns — possibly after
    // the first barrier's jobs were queued. That return happens before the first barrier can
    // complete (its thread must take a barrier job), so the second barrier is queued behind it.
    const auto started = std::chrono::steady_clock::now();
    if (!worker_barrier(bound))
        return false;
    const auto spent =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    return worker_barrier(std::max(bound - spent, std::chrono::milliseconds(1)));
}

// An asio strand would order the jobs the same way; this queue also knows when it hands its next
// job to a worker, which lockstep counts (a job queued behind one that is blocked on the io
// thread is not running, and must not hold up that thread).
class JobQueue : public std::enable_shared_from_this<JobQueue> {
  public:
    explicit JobQueue(asio::thread_pool& pool) : pool_(pool) {}

    template <typename F>
    void post(F work) {
        auto job = std::make_unique<Job<F>>(std::move(work));
        bool start = false;
        {
            std::lock_guard lock(mutex_);
            jobs_.push_back(std::move(job));
            start = !busy_;
            busy_ = true;
        }
        if (start)
            dispatch();
    }

  private:
    struct JobBase {
        virtual ~JobBase() = default;
        virtual void run() = 0;
    };
    template <typename F>
    struct Job final : JobBase {
        explicit Job(F f) : work(std::move(f)) {}
        void run() override { work(); }
        F work;
    };

    void dispatch() {
        const std::uint64_t ticket = rt::lockstep::hand_off();
        asio::post(pool_, [self = shared_from_this(), ticket] {
            rt::lockstep::wait_turn(ticket);
            self->run_next();
        });
        rt::lockstep::after_hand_off();
    }

    void run_next() {
        std::unique_ptr<JobBase> job;
        {
            std::lock_guard lock(mutex_);
            job = jobs_.pop_front();
        }
        try {
            job->run();
        } catch (const std::exception& e) {
            log::error("sqlite job failed", {{"error", e.what()}});
        } catch (...) {
            log::error("sqlite job failed", {{"error", "unknown exception"}});
        }
        job.reset();
        bool more = false;
        {
            std::lock_guard lock(mutex_);
            more = !jobs_.empty();
            busy_ = more;
        }
        if (more)
            dispatch();
        rt::lockstep::hand_back();
    }

    asio::thread_pool& pool_;
    std::mutex mutex_;
    rt::detail::RingBuffer<std::unique_ptr<JobBase>> jobs_;  // ~64 bytes once used; a deque, 512
    bool busy_ = false;
};

namespace {

std::shared_ptr<JobQueue> make_job_queue() {
    return std::make_shared<JobQueue>(rt::lockstep::enabled() ? lockstep_pool() : worker_pool());
}

// Runs `work()` in `jobs` and resumes the caller on its own executor with what it returned (an
// exception it threw is rethrown there). Everything the job owns is gone before that resumption
// is posted, and the post is the job's last step.
template <typename R, typename F>
asio::awaitable<R> on_queue(JobQueue& jobs, F work) {
    std::optional<R> out;
    std::exception_ptr failure;
    auto initiate = [&jobs, &out, &failure, &work](auto handler) {
        jobs.post([&out, &failure, job = std::optional<F>(std::move(work)),
                   handler = std::move(handler)]() mutable {
            try {
                out.emplace((*job)());
            } catch (...) {
                failure = std::current_exception();
            }
            job.reset();
            auto resume = asio::get_associated_executor(handler);
            asio::post(resume, std::move(handler));
        });
    };
    auto op = asio::async_initiate<const asio::use_awaitable_t<>&, void()>(initiate,
                                                                             asio::use_awaitable);
    rt::OutsideWork outside;
    co_await std::move(op);
    if (failure)
        std::rethrow_exception(failure);
    co_return std::move(*out);
}

}  // namespace

// The connections of idle-closing databases, most recently used first (database.hpp).
class ReusableConnections {
  public:
    static ReusableConnections& get() {
        static auto* one = new ReusableConnections();  // never destroyed: databases may outlive
        return *one;                                   // static destruction
    }

    std::size_t set_limit(std::size_t limit) {
        std::size_t previous = 0;
        std::vector<std::shared_ptr<Database>> over;
        {
            std::lock_guard lock(mutex_);
            previous = limit_;
            limit_ = std::max<std::size_t>(limit, 1);
            while (count_ > limit_)
                over.push_back(pop_oldest());
        }
        for (const auto& victim : over)
            if (victim)
                victim->close_if_idle();
        return previous;
    }

    // `db` was just used with its connection open: to the front. Returns the database that fell
    // past the limit, if any, to be closed by the caller outside the lock.
    std::shared_ptr<Database> used(Database& db) {
        std::lock_guard lock(mutex_);
        if (db.lru_linked_) {
            if (newest_ == &db)
                return nullptr;
            unlink(db);
        }
        db.lru_older_ = newest_;
        db.lru_newer_ = nullptr;
        if (newest_)
            newest_->lru_newer_ = &db;
        newest_ = &db;
        if (!oldest_)
            oldest_ = &db;
        db.lru_linked_ = true;
        ++count_;
        if (count_ <= limit_)
            return nullptr;
        return pop_oldest();
    }

    void forget(Database& db) {
        std::lock_guard lock(mutex_);
        if (db.lru_linked_)
            unlink(db);
    }

  private:
    void unlink(Database& db) {
        (db.lru_newer_ ? db.lru_newer_->lru_older_ : newest_) = db.lru_older_;
        (db.lru_older_ ? db.lru_older_->lru_newer_ : oldest_) = db.lru_newer_;
        db.lru_newer_ = db.lru_older_ = nullptr;
        db.lru_linked_ = false;
        --count_;
    }

    // Unlinks the least recently used; null when it is being destroyed (its destructor waits
    // on the lock to unlink itself, and finds it done).
    std::shared_ptr<Database> pop_oldest() {
        Database& victim = *oldest_;
        unlink(victim);
        return victim.weak_from_this().lock();
    }

    std::mutex mutex_;
    Database* newest_ = nullptr;
    Database* oldest_ = nullptr;
    std::size_t count_ = 0;
    std::size_t limit_ = kDefaultReusableConnectionLimit;
};

std::size_t set_reusable_connection_limit(std::size_t limit) {
    return ReusableConnections::get().set_limit(limit);
}

std::size_t set_statement_cache_capacity(std::size_t capacity) {
    return statement_cache_capacity().exchange(capacity, std::memory_order_relaxed);
}

void Database::note_connection_use() {
    if (left_reusable_for_good_)
        return;  // kept open or closed: every later job of its SQL would take the lock for nothing
    auto& reusable = ReusableConnections::get();
    const bool kept = kept_open_.load(std::memory_order_relaxed);
    if (!conn_ || closed_ || kept) {
        reusable.forget(*this);
        left_reusable_for_good_ = kept || closed_;
        return;
    }
    if (auto victim = reusable.used(*this))
        victim->close_if_idle();
}

Database::Database(std::shared_ptr<JobQueue> jobs, std::unique_ptr<Connection> conn,
                   SharedString name)
    : jobs_(std::move(jobs)), conn_(std::move(conn)), name_(std::move(name)) {}

Database::~Database() {
    ReusableConnections::get().forget(*this);
    // Closing may roll back an open transaction, which may reach the page store: never on the
    // caller's (possibly io) thread.
    if (conn_)
        jobs_->post([conn = std::shared_ptr<Connection>(std::move(conn_))] {});
}

template <typename T, typename F>
Database::Task<T> Database::on_worker(F work) {
    auto self = shared_from_this();
    auto job = [self, work = std::move(work)]() mutable -> T {
        if (self->closed_)
            return T(closed_error());
        if (!self->conn_) {
            // On failure the file state stays for the next call to try again.
            auto reopened = Connection::reopen(self->name_, self->idle_file_);
            if (!reopened.ok()) {
                log::warn("sqlite reopen failed",
                          {{"actor_id", self->name_}, {"error", reopened.error().to_string()}});
                return T(std::move(reopened).error());
            }
            self->conn_ = std::move(reopened).value();
            self->idle_file_.reset();
            self->opens_.fetch_add(1, std::memory_order_relaxed);
        }
        // A store error left over from a rollback belongs to no statement of this call.
        (void)self->conn_->take_store_error();
        Session session(*self->conn_);
        T out(work(session));
        // A database only the actor's internal storage uses is small, and the file's cache holds
        // all of it: SQLite's own cache would hold its pages a second time. One the user runs
        // SQL on keeps its cache (it may be larger than the file's cache limit).
        if (!self->kept_open_.load(std::memory_order_relaxed))
            self->conn_->release_memory();
        self->note_connection_use();
        return out;
    };
    auto op = on_queue<T>(*jobs_, std::move(job));
    co_return co_await std::move(op);
}

Database::Task<Result<std::shared_ptr<Database>>> Database::open(SharedString name,
                                                                 std::shared_ptr<PageStore> store) {
    auto jobs = make_job_queue();
    auto op = on_queue<Result<std::unique_ptr<Connection>>>(
        *jobs, [name, store] { return Connection::open(name, store); });
    auto conn = co_await std::move(op);
    if (!conn.ok())
        co_return std::move(conn).error();
    auto db = std::make_shared<Database>(std::move(jobs), std::move(*conn), name);
    db->note_connection_use();
    co_return db;
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
        if (auto begun = s.run(kBegin); !begun.ok())
            return std::move(begun).error();
        Status result = body(s);
        if (result.ok()) {
            if (auto committed = s.run(kCommit); !committed.ok())
                result = std::move(committed).error();
        }
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
    jobs_->post([self = shared_from_this()] {
        if (!self->closed_ && self->conn_ && !self->kept_open_.load(std::memory_order_relaxed) &&
            self->conn_->autocommit()) {
            self->idle_file_ = self->conn_->file();
            self->conn_.reset();
        }
        self->note_connection_use();
    });
}

Database::Task<void> Database::close() {
    auto op = on_queue<bool>(*jobs_, [self = shared_from_this()] {
        self->closed_ = true;
        self->conn_.reset();
        self->idle_file_.reset();
        self->note_connection_use();
        return true;
    });
    (void)co_await std::move(op);
}

}  // namespace rivetkit::sqlite

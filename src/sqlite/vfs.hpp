#pragma once
// An actor's SQLite database whose main file lives in the engine as pages (envoy protocol v8
// page store), reached through a SQLite VFS ("rivetkit-pages").
//
// Design (after upstream's depot-client VFS, adapted to Debian's SQLite, which is built without
// SQLITE_ENABLE_BATCH_ATOMIC_WRITE):
//  - The main file is a page array of kSqlitePageSize bytes. Reads come from the pages the
//    writer last committed (fetched on demand and cached) overlaid by this transaction's dirty
//    pages; writes only touch the dirty pages.
//  - The rollback journal stays in memory (journal_mode=MEMORY); SQLite syncs the main file once
//    its pages are written at commit, and that xSync is the commit point: all dirty pages and the
//    new size go to the engine in one atomic commit.
//  - A failed commit drops the dirty pages, so the file reads as the last committed state again;
//    SQLite reports the error and rolls the transaction back.
//  - Invariant: the file SQLite sees == last committed engine state + dirty pages.
//
// Threading: SQLite is synchronous; every call on one database runs on a worker thread (never
// the envoy's io thread) and a PageStore may block that worker until the engine answers.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/shared_string.hpp"
#include "envoy/types.hpp"

namespace rivetkit::sqlite {

// Upstream's page store works in 4 KiB pages; the database is created with this page size.
inline constexpr std::uint32_t kSqlitePageSize = 4096;

// Where the pages live. Called only from the database's worker thread; calls may block.
class PageStore {
  public:
    virtual ~PageStore() = default;
    // One entry per requested page, in order; nullopt for a page never stored. A database that
    // does not exist yet has no pages.
    virtual Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) = 0;
    // Atomic: either every page and the new size are stored, or nothing changed.
    virtual Status commit(std::vector<envoy::SqliteDirtyPage> pages,
                          std::uint32_t db_size_pages) = 0;
};

// sqlite/storage_error for a failed page-store call; metadata {"cause": "<group>/<code>"}.
Error storage_error(const Error& store_error);

// Registers the VFS with SQLite once per process (thread-safe); its name.
const char* register_page_vfs();

// Opens a SQLite connection on `store` through the VFS. `name` must be unique among open
// databases of the process (the actor id). Sets the pragmas the VFS relies on.
struct PagedFileState;

// Committed pages a database keeps in memory by default (16 MiB); the least recently read beyond
// that are dropped and fetched again when needed. Dirty pages of the open transaction never count.
inline constexpr std::size_t kDefaultPageCacheLimit = 4096;

// The bytes of committed pages all databases of the process hold in memory, idle-closed ones
// included, each distinct page once: databases holding the same page (one actor type's schema
// pages) share its bytes (a diagnostic).
std::size_t cached_page_bytes();
// SQLite connections open in the process (a diagnostic; idle-closed databases hold none).
std::size_t open_connections();

class Connection {
  public:
    static Result<std::unique_ptr<Connection>> open(
        SharedString name, std::shared_ptr<PageStore> store,
        std::size_t page_cache_limit = kDefaultPageCacheLimit);
    // Opens again on the file state an earlier connection of this database left (`file()`): its
    // committed pages are still known, so the open reads nothing from the page store.
    static Result<std::unique_ptr<Connection>> reopen(SharedString name,
                                                      std::shared_ptr<PagedFileState> file);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // The file state this connection reads and writes (kept by whoever may reopen it).
    std::shared_ptr<PagedFileState> file() const { return file_; }
    // No transaction is open (SQLite's autocommit mode).
    bool autocommit() const;
    // The raw handle (sqlite3*), for the statement layer.
    void* raw() const noexcept { return db_; }
    // The error of the last failed page-store call, if the last SQLite error came from one.
    std::optional<Error> take_store_error();
    // Frees what SQLite's own page cache holds beyond the pages in use. Pages the file's cache
    // still holds are read again by a copy; one it dropped (past its limit) is fetched again.
    void release_memory();
    // Committed pages with bytes held in memory now, and the bytes they take (compacted; pages
    // shared with other databases counted in full).
    std::size_t cached_pages() const;
    std::size_t cached_bytes() const;

    // Prepared statements the statement layer (database.cpp) keeps for reuse, least recently
    // used first; finalized before the connection closes.
    struct CachedStatement {
        std::string sql;
        void* stmt = nullptr;  // sqlite3_stmt*
    };
    std::vector<CachedStatement>& statement_cache() noexcept { return statements_; }
    // Hashes of statement texts prepared once and not kept (a text is kept when it comes back).
    std::vector<std::size_t>& statements_seen() noexcept { return seen_; }
    // Statements prepared on this connection so far, cached or not (a diagnostic).
    std::uint64_t statements_prepared() const noexcept { return prepared_; }
    void count_prepare() noexcept { ++prepared_; }

  private:
    Connection() = default;
    std::vector<CachedStatement> statements_;
    std::vector<std::size_t> seen_;
    std::uint64_t prepared_ = 0;
    void* db_ = nullptr;
    SharedString name_;
    std::shared_ptr<PagedFileState> file_;
};

}  // namespace rivetkit::sqlite

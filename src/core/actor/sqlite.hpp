#pragma once
// The actor's SQLite database (upstream's actor/sqlite.rs): configured at start with the page
// store of this generation, opened on first use, closed as a shutdown step before the generation
// reports Stopped — so the next generation never meets a connection of this one.
//
// Single-threaded like the rest of the context (the database itself runs on its worker).
// Errors: sqlite/not_configured (no page store, e.g. a context made by tests), sqlite/closed
// (after cleanup), and whatever opening the database returns (sqlite_database.hpp).

#include <memory>
#include <string>
#include <utility>

#include "base/shared_string.hpp"
#include "sqlite/database.hpp"
#include "runtime/notify.hpp"

namespace rivetkit::core {

class ActorSqlite {
  public:
    // `name` is unique per open database in the process (actor id and generation).
    ActorSqlite(SharedString name, std::shared_ptr<sqlite::PageStore> store)
        : name_(std::move(name)), store_(std::move(store)) {}

    boost::asio::awaitable<Result<std::shared_ptr<sqlite::Database>>> database();
    // Closes the database if it was opened; later database() calls fail with sqlite/closed.
    boost::asio::awaitable<void> cleanup();
    bool is_open() const noexcept { return db_ != nullptr; }
    // Closes the SQLite connection at a quiet point, keeping its pages (Database::close_if_idle).
    void close_if_idle() const {
        if (db_)
            db_->close_if_idle();
    }
    // Whether database() was asked for since the last call (the actor's idle-close debounce).
    bool take_touched() noexcept { return std::exchange(touched_, false); }

  private:
    SharedString name_;
    std::shared_ptr<sqlite::PageStore> store_;
    std::shared_ptr<sqlite::Database> db_;
    bool opening_ = false;
    bool closed_ = false;
    bool touched_ = false;
    rt::Notify open_done_;
};

}  // namespace rivetkit::core

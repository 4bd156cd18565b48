#include "core/actor/sqlite.hpp"

#include "base/log.hpp"
#include "core/actor/context.hpp"

namespace rivetkit::core {

boost::asio::awaitable<Result<std::shared_ptr<sqlite::Database>>> ActorSqlite::database() {
    touched_ = true;
    // One open at a time: callers arriving meanwhile wait for its outcome.
    while (opening_)
        co_await open_done_.notified();
    if (closed_)
        co_return Error("sqlite", "closed", "the actor's database is closed");
    if (db_)
        co_return db_;
    opening_ = true;
    auto opened = co_await sqlite::Database::open(name_, store_);
    // cleanup() may have been called while this open was in flight: it waits until this open is
    // settled, the late database closed included.
    if (opened.ok() && closed_)
        co_await opened.value()->close();
    opening_ = false;
    open_done_.notify_waiters();
    if (!opened.ok()) {
        log::warn("actor database open failed",
                  {{"actor_id", name_}, {"error", opened.error().to_string()}});
        co_return std::move(opened).error();
    }
    if (closed_)
        co_return Error("sqlite", "closed", "the actor's database is closed");
    db_ = std::move(opened).value();
    co_return db_;
}

boost::asio::awaitable<void> ActorSqlite::cleanup() {
    closed_ = true;
    while (opening_)
        co_await open_done_.notified();
    if (auto db = std::move(db_))
        co_await db->close();
}

void ActorContext::configure_sqlite(std::shared_ptr<sqlite::PageStore> store) const {
    std::string name = p_->actor_id;
    if (p_->generation)
        name += "#" + std::to_string(*p_->generation);
    p_->sqlite = std::make_shared<ActorSqlite>(std::move(name), std::move(store));
}

void ActorContext::configure_sqlite(std::shared_ptr<ActorSqlite> database) const {
    p_->sqlite = std::move(database);
}

ActorContext::Task<Result<std::shared_ptr<sqlite::Database>>> ActorContext::db() const {
    auto sqlite = p_->sqlite;
    if (!sqlite)
        co_return Error("sqlite", "not_configured", "this actor has no database configured");
    auto opened = co_await sqlite->database();
    if (opened.ok())
        (*opened)->keep_open();  // the caller's SQL may leave connection state behind
    co_return opened;
}

ActorContext::Task<void> ActorContext::cleanup_sqlite() const {
    if (auto sqlite = p_->sqlite)
        co_await sqlite->cleanup();
}

void ActorContext::close_database_if_idle() const {
    if (auto sqlite = p_->sqlite)
        sqlite->close_if_idle();
}

bool ActorContext::take_database_touched() const {
    auto sqlite = p_->sqlite;
    return sqlite && sqlite->take_touched();
}

bool ActorContext::db_opened() const {
    auto sqlite = p_->sqlite;
    return sqlite && sqlite->is_open();
}

}  // namespace rivetkit::core

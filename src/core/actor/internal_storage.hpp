#pragma once
// An actor's internal storage as rivetkit 2.3.19 keeps it: rows in the actor's own SQLite database
// (the one `db()` opens, pages in the engine), so an actor written by the TypeScript host wakes on
// this one and the other way round.
//
//   _rivet_meta              schema_version (i64 LE blob), kv_import_state ("importing"/"done")
//   _rivet_runtime           last_pushed_alarm, inspector_token, queue_next_id (one row, id 1)
//   _rivet_actor             has_initialized, input (one row)
//   _rivet_actor_state       state (one row; the only row a save rewrites)
//   _rivet_schedule_events   one row per scheduled event (kind 0: one-shot)
//   _rivet_conns, _rivet_conn_state   a hibernatable connection's fixed and changing halves
//   _rivet_queue             one row per queue message
//   _rivet_user_kv           the user KV API, keys verbatim ([4] + user key)
//
// The core names its records as the legacy KV layout does ([1] actor, [2]+id connection, [3]
// inspector token, [4]+key user KV, [5,1,1] queue metadata, [5,1,2]+id queue message, [6] last
// pushed alarm). `SqliteActorStore` is the KvBackend that keeps each record in its rows: a batch is
// one SQLite transaction (so a save is atomic, which the engine's KV never was), and a record is
// re-encoded in the layout's BARE form when read.
//
// Before the first operation the store brings the database to the internal schema version this
// host knows (upstream's migration ladder) and, once, imports what the legacy KV layout holds (an
// older host's data, or this project's before it stored in SQLite). Fail closed: a newer schema,
// an unknown import state or an undecodable row is a protocol/invalid_persisted_data error naming
// the actor and what was found; the actor does not start and nothing is overwritten.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/shared_string.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"

namespace rivetkit::sqlite {
class Database;
}

namespace rivetkit::core {

class ActorSqlite;

// The internal schema version this host reads and writes (rivetkit 2.3.19's).
inline constexpr std::int64_t kInternalSchemaVersion = 2;

class SqliteActorStore final : public KvBackend {
  public:
    // `legacy` is the actor's engine KV, read once by the import.
    SqliteActorStore(SharedString actor_id, std::shared_ptr<ActorSqlite> sqlite,
                     std::shared_ptr<KvBackend> legacy);

    std::string_view label() const noexcept override { return "sqlite"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override;
    Task<Status> batch_put(std::vector<KvEntry> entries) override;
    Task<Status> batch_delete(std::vector<Bytes> keys) override;
    Task<Status> delete_range(Bytes start, Bytes end) override;
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) override;
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts) override;
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) override;

    // Schema ladder and legacy import; every operation waits for it. Idempotent.
    Task<Status> prepare();

    // What the last read or write of [1] left in the rows a save does not touch, so a save
    // rewrites only the state row unless input, initialized flag or schedule changed.
    struct ActorColdRows {
        std::optional<Bytes> input;
        bool has_initialized = false;
        std::vector<PersistedScheduleEvent> events;
    };

  private:
    Task<Result<std::shared_ptr<sqlite::Database>>> ready();
    Task<Status> prepare_once();
    Task<Status> import_legacy(std::shared_ptr<sqlite::Database> db, bool retry);

    SharedString actor_id_;
    std::shared_ptr<ActorSqlite> sqlite_;
    std::shared_ptr<KvBackend> legacy_;
    struct Prepare;
    std::shared_ptr<Prepare> prepare_;
    std::optional<ActorColdRows> cold_;
    // Bumped whenever cold_ changes: a read that began before a write must not put back what it
    // read (its rows may be older than that write's).
    std::uint64_t cold_version_ = 0;
};

// The user KV API's view of an actor's store: keys and prefixes under [4], as the TypeScript
// host's `c.kv` (its text keys are UTF-8). Results come back without the prefix.
class UserKv final : public KvBackend {
  public:
    explicit UserKv(std::shared_ptr<KvBackend> inner) : inner_(std::move(inner)) {}

    std::string_view label() const noexcept override { return inner_->label(); }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override;
    Task<Status> batch_put(std::vector<KvEntry> entries) override;
    Task<Status> batch_delete(std::vector<Bytes> keys) override;
    Task<Status> delete_range(Bytes start, Bytes end) override;
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) override;
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts) override;
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) override;

  private:
    std::shared_ptr<KvBackend> inner_;
};

}  // namespace rivetkit::core

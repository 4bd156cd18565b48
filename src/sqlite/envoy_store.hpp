#pragma once
// The production PageStore: the actor's pages in the engine, through the envoy's SQLite page
// requests. Calls block the database's worker thread while the request runs on the envoy's io
// executor — so they must never be made on that io thread.
//
// Fencing: every request names the actor generation; after the first answer every request also
// names the head txid this store last saw, so a second writer of the same database (a stale
// generation that is still running) fails with depot/head_fence_mismatch instead of overwriting.

#include <boost/asio/any_io_executor.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/shared_string.hpp"
#include "sqlite/vfs.hpp"
#include "envoy/handle.hpp"

namespace rivetkit::sqlite {

// The engine's page storage geometry (its depot): pages live in shards of kShardPages; one
// commit request carries at most kSingleCommitMaxPages pages. A larger commit is staged in
// segments that each start on a shard boundary, span at most kSegmentMaxShards shards and never
// split a shard between two segments; the engine refuses segments cut any other way.
inline constexpr std::uint32_t kShardPages = 64;
inline constexpr std::uint32_t kSegmentMaxShards = 5;
inline constexpr std::size_t kSingleCommitMaxPages = 320;

struct CommitSegment {
    std::uint32_t first_pgno = 0;
    std::vector<envoy::SqliteDirtyPage> pages;
};

// Sorts `pages` by page number and cuts them into staged-commit segments, in ascending order.
std::vector<CommitSegment> cut_commit_segments(std::vector<envoy::SqliteDirtyPage> pages);

// What a commit wrote to one page, kept to recognize the commit after its reply was lost.
struct PageDigest {
    std::uint32_t pgno = 0;
    std::size_t hash = 0;
};
std::vector<PageDigest> digest_pages(const std::vector<envoy::SqliteDirtyPage>& pages);

class EnvoyPageStore final : public PageStore {
  public:
    EnvoyPageStore(envoy::EnvoyHandle envoy, boost::asio::any_io_executor io, SharedString actor_id,
                   std::uint32_t generation)
        : envoy_(std::move(envoy)),
          io_(std::move(io)),
          actor_id_(std::move(actor_id)),
          generation_(generation) {}

    Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) override;
    // Up to kSingleCommitMaxPages pages in one request; more as a staged commit (begin, one
    // request per segment, finalize) that becomes visible only at finalize, so a failure at any
    // step leaves the database as it was.
    // A commit that times out is sent again (three sends in all) rather than failed: the engine
    // may have applied it, and SQLite would roll back what the engine then holds.
    Status commit(std::vector<envoy::SqliteDirtyPage> pages, std::uint32_t db_size_pages) override;

    // After a commit (or finalize) failed with depot/head_fence_mismatch, or failed at all after
    // it was sent again because its outcome was unknown: whether the engine
    // already holds exactly these pages at a head newer than the one this store last saw — the
    // commit was applied and only its reply was lost (the envoy re-sends a request in flight
    // across a reconnect, and the engine fences the second copy). Adopts the engine's head then.
    // Only this generation writes its database, so a match is this store's own commit.
    Result<bool> commit_was_applied(const std::vector<PageDigest>& written);

    // Once the engine's database is not the one this store knows — a commit fenced that was not
    // this store's own, a stale generation, a commit whose outcome could not be learned — every
    // later call fails with sqlite/diverged (a write on a stale head would be fenced anyway, or
    // worse), and `callback` runs once on the io executor: the host puts the generation to sleep,
    // and the next one starts from what the engine holds. Set before the store is used.
    void on_diverged(std::function<void()> callback) { on_diverged_ = std::move(callback); }

  private:
    void diverge(const Error& why);
    Status commit_staged(std::vector<envoy::SqliteDirtyPage> pages, std::uint32_t db_size_pages);
    Status settle_fenced(Error error, const std::vector<PageDigest>& written, bool sent_again);

    envoy::EnvoyHandle envoy_;
    boost::asio::any_io_executor io_;
    SharedString actor_id_;
    std::uint32_t generation_;
    std::optional<std::uint64_t> head_txid_;
    std::optional<Error> diverged_;
    std::function<void()> on_diverged_;
};

}  // namespace rivetkit::sqlite

#include "sqlite/envoy_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <string_view>

#include "base/log.hpp"
#include "runtime/outside_work.hpp"

namespace rivetkit::sqlite {

namespace asio = boost::asio;

namespace {

// Runs `make()` (an awaitable of Result<T>) on `io` and blocks the calling thread until it
// finishes. The promise lives with the completion handler: if `io` is torn down before the
// request runs, the handler is destroyed unrun and the wait ends as broken_promise, never hangs.
// In lockstep the worker hands back while it waits, and the handler that wakes it hands it off.
template <typename T, typename Make>
Result<T> block_on(const asio::any_io_executor& io, Make make) {
    // Only the handler owns the promise: a handler destroyed unrun breaks it. The wake carries
    // lockstep's ticket, taken by the handler that wakes this worker.
    using Wake = std::pair<Result<T>, std::uint64_t>;
    auto promise = std::make_shared<std::promise<Wake>>();
    auto future = promise->get_future();
    auto job = [make = std::move(make)]() mutable -> asio::awaitable<std::optional<Result<T>>> {
        auto op = make();
        Result<T> r = co_await std::move(op);
        co_return std::optional<Result<T>>(std::move(r));
    };
    asio::co_spawn(io, std::move(job),
                   [promise = std::move(promise)](std::exception_ptr e,
                                                  std::optional<Result<T>> r) {
                       const std::uint64_t ticket = rt::lockstep::hand_off();
                       if (e || !r) {
                           promise->set_value(Wake(
                               Result<T>(Error("sqlite", "internal_error",
                                               "page request failed with an exception")),
                               ticket));
                       } else {
                           promise->set_value(Wake(std::move(*r), ticket));
                       }
                       rt::lockstep::after_hand_off();
                   });
    rt::lockstep::hand_back();
    try {
        Wake woken = future.get();
        rt::lockstep::wait_turn(woken.second);
        return std::move(woken.first);
    } catch (const std::future_error&) {
        rt::lockstep::wait_turn(rt::lockstep::hand_off());  // no handler woke this worker
        return Error("sqlite", "unavailable", "the envoy stopped before the page request ran");
    }
}

// Only a timeout leaves a commit's outcome unknown: the engine may have applied it, or may still.
// Every other answer is definite, and a lost connection keeps the request to send it again.
bool outcome_unknown(const Error& e) { return e.is("sqlite", "timeout"); }

// A commit whose outcome stays unknown is sent this many times in all (each waits the envoy's
// sqlite_request_timeout) before its error goes back to SQLite: a worker is not held for long.
constexpr int kUnknownOutcomeTries = 3;

// Errors after which a read-back cannot help: the envoy or its io_context is gone.
bool store_gone(const Error& e) {
    return e.is("sqlite", "unavailable") || e.group() == "envoy";
}
// Read-backs of a commit whose reply was lost, before its outcome is given up as unknown.
constexpr int kReadBackTries = 5;

// Sends a commit (or a finalize) until its outcome is known, at most kUnknownOutcomeTries times:
// the last answer, and whether the request went out more than once.
template <typename T, typename Send>
std::pair<Result<T>, bool> send_until_known(const std::string& actor_id, const char* what,
                                            Send send) {
    for (int attempt = 1;; ++attempt) {
        Result<T> result = send();
        if (result.ok() || !outcome_unknown(result.error()) || attempt == kUnknownOutcomeTries)
            return {std::move(result), attempt > 1};
        log::warn("sqlite commit outcome unknown, sending it again",
                  {{"actor_id", actor_id},
                   {"request", what},
                   {"attempt", attempt},
                   {"error", result.error().to_string()}});
    }
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

std::vector<CommitSegment> cut_commit_segments(std::vector<envoy::SqliteDirtyPage> pages) {
    std::sort(pages.begin(), pages.end(),
              [](const auto& a, const auto& b) { return a.pgno < b.pgno; });
    std::vector<CommitSegment> segments;
    for (auto& page : pages) {
        const std::uint64_t shard = page.pgno / kShardPages;
        if (segments.empty() ||
            shard >= segments.back().first_pgno / kShardPages + std::uint64_t{kSegmentMaxShards}) {
            segments.push_back(CommitSegment{static_cast<std::uint32_t>(shard * kShardPages), {}});
        }
        segments.back().pages.push_back(std::move(page));
    }
    return segments;
}

std::vector<PageDigest> digest_pages(const std::vector<envoy::SqliteDirtyPage>& pages) {
    std::vector<PageDigest> out;
    out.reserve(pages.size());
    for (const auto& page : pages) {
        out.push_back(PageDigest{page.pgno, std::hash<std::string_view>{}(as_chars(page.bytes))});
    }
    return out;
}

Result<bool> EnvoyPageStore::commit_was_applied(const std::vector<PageDigest>& written) {
    // Read back without a head fence (the store's head is the stale one), a bounded batch at a
    // time.
    constexpr std::size_t kBatch = 256;
    const std::optional<std::uint64_t> seen = head_txid_;
    std::optional<std::uint64_t> head;
    for (std::size_t at = 0; at < written.size(); at += kBatch) {
        std::vector<std::uint32_t> pgnos;
        for (std::size_t i = at; i < std::min(written.size(), at + kBatch); ++i)
            pgnos.push_back(written[i].pgno);
        envoy::SqliteFence fence{generation_, std::nullopt};
        auto read = [&] {
            return block_on<envoy::SqliteGetPagesResult>(
                io_, [envoy = envoy_, actor = actor_id_, pgnos, fence] {
                    return envoy.sqlite_get_pages(actor, pgnos, fence);
                });
        };
        // A read that failed says nothing about the commit: asked again, a few times. Giving up
        // leaves the commit's outcome unknown, and the next commit fenced.
        auto got = read();
        for (int tries = 1; !got.ok() && tries < kReadBackTries &&
                            !got.error().is("depot", "generation_fence_mismatch") &&
                            !got.error().is("depot", "database_not_found") &&
                            !store_gone(got.error());
             ++tries)
            got = read();
        if (!got.ok()) {
            if (got.error().is("depot", "database_not_found"))
                return false;  // nothing was ever committed, so neither was this
            return std::move(got).error();
        }
        if (!got->head_txid || (seen && *got->head_txid <= *seen))
            return false;
        if (head && *head != *got->head_txid)
            return false;  // the database moved while it was being read
        head = got->head_txid;
        for (std::size_t i = at; i < std::min(written.size(), at + kBatch); ++i) {
            const auto& want = written[i];
            auto page = std::find_if(got->pages.begin(), got->pages.end(),
                                     [&](const auto& p) { return p.pgno == want.pgno; });
            if (page == got->pages.end() || !page->bytes)
                return false;
            if (std::hash<std::string_view>{}(as_chars(*page->bytes)) != want.hash)
                return false;
        }
    }
    if (!head)
        return false;
    head_txid_ = head;
    return true;
}

// A fence mismatch on a commit that was in fact applied (its reply lost) is success; so is any
// error of a request sent again after an unknown outcome (the engine may answer a finalize whose
// stage it already published with something else than a fence mismatch).
Status EnvoyPageStore::settle_fenced(Error error, const std::vector<PageDigest>& written,
                                     bool sent_again) {
    if (written.empty() || store_gone(error) ||
        (!error.is("depot", "head_fence_mismatch") && !sent_again))
        return error;
    auto applied = commit_was_applied(written);
    if (applied.ok() && *applied) {
        log::info("sqlite commit was applied before its reply was lost",
                  {{"actor_id", actor_id_},
                   {"head_txid", head_txid_.value_or(0)},
                   {"pages", static_cast<unsigned long long>(written.size())}});
        return {};
    }
    // Fenced by a commit that is not this store's, or no way to tell whether this one landed.
    if (error.is("depot", "head_fence_mismatch") ||
        error.is("depot", "generation_fence_mismatch") || !applied.ok())
        diverge(error);
    return error;
}

void EnvoyPageStore::diverge(const Error& why) {
    if (diverged_)
        return;
    diverged_ = why;
    log::error("sqlite page store diverged from the engine; the generation is put to sleep",
               {{"actor_id", actor_id_},
                {"generation", static_cast<unsigned long long>(generation_)},
                {"error", why.to_string()}});
    if (on_diverged_)
        asio::post(io_, on_diverged_);
}

namespace {
Error diverged_error(const Error& why) {
    return Error("sqlite", "diverged",
                 "the engine's database is no longer the one this generation knows (" +
                     why.to_string() + ")");
}
}  // namespace

Result<std::vector<std::optional<Bytes>>> EnvoyPageStore::get_pages(
    const std::vector<std::uint32_t>& pgnos) {
    if (diverged_)
        return diverged_error(*diverged_);
    envoy::SqliteFence fence{generation_, head_txid_};
    auto got = block_on<envoy::SqliteGetPagesResult>(
        io_, [envoy = envoy_, actor = actor_id_, pgnos, fence] {
            return envoy.sqlite_get_pages(actor, pgnos, fence);
        });
    if (!got.ok()) {
        // Nothing was ever committed: the engine has no database yet, which reads as empty.
        if (got.error().is("depot", "database_not_found") && !head_txid_)
            return std::vector<std::optional<Bytes>>(pgnos.size());
        if (got.error().is("depot", "head_fence_mismatch") ||
            got.error().is("depot", "generation_fence_mismatch"))
            diverge(got.error());
        return std::move(got).error();
    }
    if (got->head_txid)
        head_txid_ = got->head_txid;
    std::vector<std::optional<Bytes>> out(pgnos.size());
    for (auto& page : got->pages) {
        for (std::size_t i = 0; i < pgnos.size(); ++i) {
            if (pgnos[i] == page.pgno && !out[i]) {
                out[i] = std::move(page.bytes);
                break;
            }
        }
    }
    return out;
}

Status EnvoyPageStore::commit(std::vector<envoy::SqliteDirtyPage> pages,
                              std::uint32_t db_size_pages) {
    if (diverged_)
        return diverged_error(*diverged_);
    if (pages.size() > kSingleCommitMaxPages)
        return commit_staged(std::move(pages), db_size_pages);
    envoy::SqliteFence fence{generation_, head_txid_};
    const auto written = digest_pages(pages);
    // The pages stay here until the outcome is known: a commit that timed out is sent again.
    auto [committed, sent_again] = send_until_known<std::optional<std::uint64_t>>(
        actor_id_, "commit", [&] {
            envoy::SqliteCommit request{pages, db_size_pages, now_ms()};
            return block_on<std::optional<std::uint64_t>>(
                io_, [envoy = envoy_, actor = actor_id_, request = std::move(request),
                      fence]() mutable {
                    return envoy.sqlite_commit(actor, std::move(request), fence);
                });
        });
    if (!committed.ok())
        return settle_fenced(std::move(committed).error(), written, sent_again);
    if (*committed)
        head_txid_ = *committed;
    return {};
}

Status EnvoyPageStore::commit_staged(std::vector<envoy::SqliteDirtyPage> pages,
                                     std::uint32_t db_size_pages) {
    const std::size_t page_count = pages.size();
    const auto written = digest_pages(pages);
    auto segments = cut_commit_segments(std::move(pages));
    envoy::SqliteFence fence{generation_, head_txid_};
    auto begun = block_on<std::uint64_t>(io_, [envoy = envoy_, actor = actor_id_, fence] {
        return envoy.sqlite_commit_stage_begin(actor, fence);
    });
    if (!begun.ok())
        return std::move(begun).error();
    const std::uint64_t txid = *begun;
    const std::uint32_t generation = generation_;

    std::vector<std::uint32_t> first_pgnos;
    first_pgnos.reserve(segments.size());
    for (auto& segment : segments) {
        first_pgnos.push_back(segment.first_pgno);
        auto staged = block_on<std::uint64_t>(
            io_, [envoy = envoy_, actor = actor_id_, generation, txid,
                  first = segment.first_pgno, seg = std::move(segment.pages)]() mutable {
                return envoy.sqlite_commit_stage_segment(actor, generation, txid, first,
                                                         std::move(seg));
            });
        if (!staged.ok()) {
            // The stage stays unpublished; the engine reclaims it when the next commit or stage
            // claims the same txid.
            log::warn("sqlite staged commit segment failed",
                      {{"actor_id", actor_id_},
                       {"txid", txid},
                       {"first_pgno", static_cast<unsigned>(first_pgnos.back())},
                       {"error", staged.error().to_string()}});
            return std::move(staged).error();
        }
    }

    auto [finalized, sent_again] = send_until_known<std::optional<std::uint64_t>>(
        actor_id_, "finalize", [&] {
            return block_on<std::optional<std::uint64_t>>(
                io_, [envoy = envoy_, actor = actor_id_, generation, txid, db_size_pages,
                      now = now_ms(), first_pgnos]() mutable {
                    return envoy.sqlite_commit_finalize(actor, generation, txid, db_size_pages,
                                                        now, std::move(first_pgnos));
                });
        });
    if (!finalized.ok())
        return settle_fenced(std::move(finalized).error(), written, sent_again);
    const std::optional<std::uint64_t> published = *finalized;
    head_txid_ = published.value_or(txid);
    log::debug("sqlite staged commit published",
               {{"actor_id", actor_id_},
                {"txid", txid},
                {"pages", static_cast<unsigned long long>(page_count)},
                {"segments", static_cast<unsigned long long>(segments.size())}});
    return {};
}

}  // namespace rivetkit::sqlite

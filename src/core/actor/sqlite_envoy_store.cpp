#include "core/actor/sqlite_envoy_store.hpp"

#include <boost/asio/co_spawn.hpp>
#include <chrono>
#include <future>

namespace rivetkit::core::sqlite {

namespace asio = boost::asio;

namespace {

// Runs `make()` (an awaitable of Result<T>) on `io` and blocks the calling thread until it
// finishes. The promise lives with the completion handler: if `io` is torn down before the
// request runs, the handler is destroyed unrun and the wait ends as broken_promise, never hangs.
template <typename T, typename Make>
Result<T> block_on(const asio::any_io_executor& io, Make make) {
    auto promise = std::make_shared<std::promise<Result<T>>>();
    auto future = promise->get_future();
    auto job = [make = std::move(make)]() mutable -> asio::awaitable<std::optional<Result<T>>> {
        auto op = make();
        Result<T> r = co_await std::move(op);
        co_return std::optional<Result<T>>(std::move(r));
    };
    asio::co_spawn(
        io, std::move(job),
        [promise = std::move(promise)](std::exception_ptr e, std::optional<Result<T>> r) {
            if (e || !r) {
                promise->set_value(Result<T>(
                    Error("sqlite", "internal_error", "page request failed with an exception")));
            } else {
                promise->set_value(std::move(*r));
            }
        });
    try {
        return future.get();
    } catch (const std::future_error&) {
        return Error("sqlite", "unavailable", "the envoy stopped before the page request ran");
    }
}

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

Result<std::vector<std::optional<Bytes>>> EnvoyPageStore::get_pages(
    const std::vector<std::uint32_t>& pgnos) {
    envoy::SqliteFence fence{generation_, head_txid_};
    auto got = block_on<envoy::SqliteGetPagesResult>(
        io_, [envoy = envoy_, actor = actor_id_, pgnos, fence] {
            return envoy.sqlite_get_pages(actor, pgnos, fence);
        });
    if (!got.ok()) {
        // Nothing was ever committed: the engine has no database yet, which reads as empty.
        if (got.error().is("depot", "database_not_found") && !head_txid_)
            return std::vector<std::optional<Bytes>>(pgnos.size());
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
    envoy::SqliteFence fence{generation_, head_txid_};
    envoy::SqliteCommit request{std::move(pages), db_size_pages, now_ms()};
    auto committed = block_on<std::optional<std::uint64_t>>(
        io_, [envoy = envoy_, actor = actor_id_, request = std::move(request), fence]() mutable {
            return envoy.sqlite_commit(actor, std::move(request), fence);
        });
    if (!committed.ok())
        return std::move(committed).error();
    if (*committed)
        head_txid_ = *committed;
    return {};
}

}  // namespace rivetkit::core::sqlite

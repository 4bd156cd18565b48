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
#include <optional>
#include <string>

#include "core/actor/sqlite_vfs.hpp"
#include "envoy/handle.hpp"

namespace rivetkit::core::sqlite {

class EnvoyPageStore final : public PageStore {
  public:
    EnvoyPageStore(envoy::EnvoyHandle envoy, boost::asio::any_io_executor io, std::string actor_id,
                   std::uint32_t generation)
        : envoy_(std::move(envoy)),
          io_(std::move(io)),
          actor_id_(std::move(actor_id)),
          generation_(generation) {}

    Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) override;
    Status commit(std::vector<envoy::SqliteDirtyPage> pages, std::uint32_t db_size_pages) override;

  private:
    envoy::EnvoyHandle envoy_;
    boost::asio::any_io_executor io_;
    std::string actor_id_;
    std::uint32_t generation_;
    std::optional<std::uint64_t> head_txid_;
};

}  // namespace rivetkit::core::sqlite

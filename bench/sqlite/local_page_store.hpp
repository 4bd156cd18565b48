#pragma once
// The sqlite benchmarks' in-process page store: pages in a map (atomic commits, like the
// engine's), the baseline against which the engine's page store is measured.

#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "sqlite/vfs.hpp"

namespace rivetkit::bench {

class LocalPageStore final : public sqlite::PageStore {
  public:
    Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) override {
        std::lock_guard lock(mutex_);
        std::vector<std::optional<Bytes>> out;
        for (auto pgno : pgnos) {
            auto it = pages_.find(pgno);
            out.emplace_back(it == pages_.end() || pgno > size_ ? std::nullopt
                                                                 : std::optional(it->second));
        }
        return out;
    }
    Status commit(std::vector<envoy::SqliteDirtyPage> dirty, std::uint32_t size) override {
        std::lock_guard lock(mutex_);
        for (auto& p : dirty)
            pages_[p.pgno] = std::move(p.bytes);
        size_ = size;
        return {};
    }
    std::size_t pages() {
        std::lock_guard lock(mutex_);
        return pages_.size();
    }

  private:
    std::mutex mutex_;
    std::map<std::uint32_t, Bytes> pages_;
    std::uint32_t size_ = 0;
};

}  // namespace rivetkit::bench

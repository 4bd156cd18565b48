#pragma once
// An in-memory page store that behaves like the engine's (atomic commits, missing pages, the
// commit size limit, injected failures), for the VFS and internal-storage unit tests.

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "sqlite/vfs.hpp"

namespace rivetkit::testing {

class MemoryPageStore final : public sqlite::PageStore {
  public:
    Result<std::vector<std::optional<Bytes>>> get_pages(
        const std::vector<std::uint32_t>& pgnos) override {
        std::lock_guard lock(mutex_);
        ++reads;
        if (fail_reads)
            return Error("depot", "unavailable", "injected read failure");
        // The engine's depot refuses a database whose page one states another size than the
        // committed one (depot/stale_main_page).
        if (auto page1 = pages.find(1); page1 != pages.end() && size_pages > 0 &&
                                        page1->second.size() >= 32) {
            const Bytes& p = page1->second;
            const std::uint32_t stated = (std::uint32_t(p[28]) << 24) |
                                         (std::uint32_t(p[29]) << 16) |
                                         (std::uint32_t(p[30]) << 8) | std::uint32_t(p[31]);
            if (stated != size_pages)
                return Error("depot", "stale_main_page",
                             "sqlite page one reports " + std::to_string(stated) +
                                 " pages but the commit records " + std::to_string(size_pages));
        }
        std::vector<std::optional<Bytes>> out;
        for (auto pgno : pgnos) {
            auto it = pages.find(pgno);
            if (it == pages.end() || pgno > size_pages) {
                out.emplace_back(std::nullopt);
            } else {
                out.emplace_back(it->second);
            }
        }
        return out;
    }

    Status commit(std::vector<rivetkit::envoy::SqliteDirtyPage> dirty,
                  std::uint32_t db_size_pages) override {
        std::lock_guard lock(mutex_);
        if (dirty.size() > max_commit_pages) {
            return Error("depot", "commit_too_large",
                         "sqlite commit too large: " + std::to_string(dirty.size()) + " pages");
        }
        if (fail_commits > 0) {
            --fail_commits;
            return Error("depot", "head_fence_mismatch", "injected commit failure");
        }
        last_commit_pgnos.clear();
        for (auto& page : dirty) {
            last_commit_pgnos.push_back(page.pgno);
            EXPECT_EQ(page.bytes.size(), sqlite::kSqlitePageSize);
            pages[page.pgno] = std::move(page.bytes);
        }
        size_pages = db_size_pages;
        ++commits;
        return {};
    }

    std::map<std::uint32_t, Bytes> pages;
    std::uint32_t size_pages = 0;
    int commits = 0;
    std::vector<std::uint32_t> last_commit_pgnos;  // the pages of the last commit, as sent
    int reads = 0;
    int fail_commits = 0;
    bool fail_reads = false;
    // The engine's limit (upstream depot MAX_COMMIT_DIRTY_PAGES).
    std::size_t max_commit_pages = 320;

  private:
    std::mutex mutex_;
};

}  // namespace rivetkit::testing

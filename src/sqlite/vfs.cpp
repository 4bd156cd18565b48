// The page VFS (see sqlite_vfs.hpp for the design). Main database files are PagedFiles bound by
// name to the state their Connection registered; every other file SQLite asks for (temp files,
// a journal before journal_mode=MEMORY is set) is a MemoryFile that never leaves the process.

#include "sqlite/vfs.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/bytes.hpp"
#include "base/log.hpp"

namespace rivetkit::sqlite {

// Bytes of committed pages held in the process, each distinct page once (cached_page_bytes()).
static std::atomic<std::size_t>& held_page_bytes() {
    static auto* total = new std::atomic<std::size_t>(0);  // never destroyed, as the registry
    return *total;
}

// SQLite connections open in the process (open_connections()).
static std::atomic<std::size_t>& live_connections() {
    static auto* total = new std::atomic<std::size_t>(0);
    return *total;
}

// A committed page held compactly: its longest run of zero bytes is not stored (a B-tree page
// keeps its header and cell pointers at the start, its cells at the end and, mostly, zeros in
// between; an actor's small tables are pages of a few dozen bytes). The page reads as
// stored[0, head) + zeros + stored[head, size). Immutable, shared by every file state that holds
// the same page (see intern_page), and one allocation: this header, then the stored bytes.
class CompactPage {
  public:
    CompactPage(const CompactPage&) = delete;
    CompactPage& operator=(const CompactPage&) = delete;

    std::size_t size() const noexcept { return size_; }
    std::uint16_t head() const noexcept { return head_; }
    const std::uint8_t* stored() const noexcept {
        return reinterpret_cast<const std::uint8_t*>(this + 1);
    }
    void read(std::size_t offset, std::size_t n, std::uint8_t* out) const;

  private:
    friend class PageRef;
    friend class PageTable;
    CompactPage(std::uint16_t size, std::uint16_t head) noexcept : size_(size), head_(head) {}

    // Holders (PageRef); the intern table does not count. At zero the page is being freed and
    // the table hands it out no more.
    std::atomic<std::uint32_t> refs_{1};
    const std::uint16_t size_;
    const std::uint16_t head_;
};

// A counted reference to a CompactPage (8 bytes: a page index entry is 16, not 24 as with a
// shared_ptr). Holders may be on different threads; the last one out frees the page.
class PageRef {
  public:
    PageRef() = default;
    PageRef(const PageRef& other) noexcept : p_(other.p_) {
        if (p_)
            p_->refs_.fetch_add(1, std::memory_order_relaxed);
    }
    PageRef(PageRef&& other) noexcept : p_(std::exchange(other.p_, nullptr)) {}
    PageRef& operator=(PageRef other) noexcept {
        std::swap(p_, other.p_);
        return *this;
    }
    ~PageRef() { reset(); }

    void reset() noexcept;
    explicit operator bool() const noexcept { return p_ != nullptr; }
    const CompactPage* operator->() const noexcept { return p_; }

  private:
    friend class PageTable;
    explicit PageRef(CompactPage* adopted) noexcept : p_(adopted) {}
    CompactPage* p_ = nullptr;
};

// The committed pages a file state knows, by page number: known to hold bytes, known to hold
// none (reads as zeros), or unknown (not present). Page numbers up to kDense sit in a vector
// (an actor's database is a few dozen pages: 24 bytes each instead of a hash node), the rest in
// a map.
class PageIndex {
  public:
    struct Entry {
        PageRef bytes;  // null: known to hold no bytes
        // The file's read clock when last read (eviction order; a wrap only misorders eviction).
        std::uint32_t last_read = 0;
        bool known = false;
    };
    static constexpr std::uint32_t kDense = 4096;

    const Entry* find(std::uint32_t pgno) const {
        if (pgno - 1 < kDense) {
            const Entry* e = pgno - 1 < dense_.size() ? &dense_[pgno - 1] : nullptr;
            return e && e->known ? e : nullptr;
        }
        auto it = sparse_.find(pgno);
        return it == sparse_.end() ? nullptr : &it->second;
    }
    Entry* find(std::uint32_t pgno) {
        return const_cast<Entry*>(std::as_const(*this).find(pgno));
    }
    bool contains(std::uint32_t pgno) const { return find(pgno) != nullptr; }
    // The entry for `pgno`, made known (bytes null) if it was not.
    Entry& add(std::uint32_t pgno) {
        Entry* e = nullptr;
        if (pgno - 1 < kDense) {
            if (pgno > dense_.size()) {
                if (pgno > dense_.capacity())
                    dense_.reserve(std::min<std::size_t>(
                        kDense, std::max<std::size_t>(pgno, dense_.size() + dense_.size() / 2)));
                dense_.resize(pgno);
            }
            e = &dense_[pgno - 1];
        } else {
            e = &sparse_[pgno];
        }
        e->known = true;
        return *e;
    }
    // Room for pages 1..pages without growing again (a database's size, once known).
    void reserve(std::uint32_t pages) {
        dense_.reserve(std::min<std::uint32_t>(pages, kDense));
    }
    void erase(std::uint32_t pgno) {
        if (pgno - 1 < kDense) {
            if (pgno - 1 < dense_.size())
                dense_[pgno - 1] = Entry{};
        } else {
            sparse_.erase(pgno);
        }
    }
    template <typename F>
    void for_each(F&& f) {
        for (std::size_t i = 0; i < dense_.size(); ++i)
            if (dense_[i].known)
                f(static_cast<std::uint32_t>(i + 1), dense_[i]);
        for (auto& [pgno, e] : sparse_)
            f(pgno, e);
    }

  private:
    std::vector<Entry> dense_;
    std::unordered_map<std::uint32_t, Entry> sparse_;
};

struct PagedFileState {
    // This file's bytes of committed pages (shared ones counted in full) from `before` to
    // `after` for a page.
    void held(std::size_t before, std::size_t after) { held_bytes = held_bytes - before + after; }

    SharedString name;
    std::size_t held_bytes = 0;
    std::shared_ptr<PageStore> store;
    bool loaded = false;
    // Pages as last committed. A page with bytes may be dropped again (least recently read
    // first) to keep at most `cache_limit` of them; pages known to be zeros are never dropped
    // (the engine may still hold old bytes).
    PageIndex committed;
    std::size_t cache_limit = kDefaultPageCacheLimit;
    std::size_t cached_with_bytes = 0;
    std::uint32_t read_clock = 0;
    std::map<std::uint32_t, Bytes> dirty;
    std::uint32_t committed_size_pages = 0;
    std::uint32_t size_pages = 0;
    std::optional<Error> last_error;
};

namespace {

constexpr const char* kVfsName = "rivetkit-pages";
constexpr std::size_t kPage = kSqlitePageSize;
// A fetch also asks for up to this many unknown pages after the requested ones (inside the
// file): scans then cost one round trip per kReadAhead pages instead of one per page.
constexpr std::uint32_t kReadAhead = 16;

std::mutex& registry_mutex() {
    // Never destroyed: a connection closed during static destruction (a worker pool handler
    // dropped at exit) still finds it.
    static auto* m = new std::mutex;
    return *m;
}
std::map<SharedString, std::shared_ptr<PagedFileState>, std::less<>>& registry() {
    static auto* files = new std::map<SharedString, std::shared_ptr<PagedFileState>, std::less<>>;
    return *files;
}

// The "in-header database size" of a database header page (bytes 28..31, big-endian).
std::uint32_t header_size_pages(const Bytes& page1) {
    if (page1.size() < 32)
        return 0;
    return (std::uint32_t(page1[28]) << 24) | (std::uint32_t(page1[29]) << 16) |
           (std::uint32_t(page1[30]) << 8) | std::uint32_t(page1[31]);
}

}  // namespace

// Every page interned in the process, by a hash of its compact form. A page leaves it when its
// last holder lets go (PageRef::reset), so the table holds no page nobody reads. SQLite's worker
// threads intern as they commit and fetch: a lock, held for a lookup or an insert.
class PageTable {
  public:
    static PageTable& get() {
        static auto* table = new PageTable;  // never destroyed: pages may outlive static locals
        return *table;
    }

    // The page stored[0, n) with `head`, shared with its other holders if the process has it.
    PageRef intern(const std::uint8_t* stored, std::size_t n, std::uint16_t head) {
        const std::size_t hash = hash_of(stored, n, head);
        std::lock_guard lock(mutex_);
        auto [first, last] = pages_.equal_range(hash);
        for (auto it = first; it != last; ++it) {
            CompactPage* held = it->second;
            if (held->head_ == head && held->size_ == n &&
                std::memcmp(held->stored(), stored, n) == 0 && acquire(*held))
                return PageRef(held);
        }
        void* raw = ::operator new(sizeof(CompactPage) + n);
        auto* made =
            new (raw) CompactPage(static_cast<std::uint16_t>(n), head);  // refs_ = 1: ours
        std::memcpy(raw_bytes(made), stored, n);
        held_page_bytes().fetch_add(n, std::memory_order_relaxed);
        pages_.emplace(hash, made);
        return PageRef(made);
    }

    // From the holder that took the count to zero: out of the table, then freed.
    void release(CompactPage* page) noexcept {
        {
            std::lock_guard lock(mutex_);
            const std::size_t hash = hash_of(page->stored(), page->size_, page->head_);
            auto [first, last] = pages_.equal_range(hash);
            for (auto it = first; it != last; ++it) {
                if (it->second == page) {
                    pages_.erase(it);
                    break;
                }
            }
        }
        held_page_bytes().fetch_sub(page->size_, std::memory_order_relaxed);
        page->~CompactPage();
        ::operator delete(page);
    }

  private:
    static std::size_t hash_of(const std::uint8_t* stored, std::size_t n, std::uint16_t head) {
        const std::string_view view = as_chars(BytesView(stored, n));
        return std::hash<std::string_view>{}(view) ^ (std::size_t{head} * 0x9e3779b97f4a7c15ULL);
    }
    static std::uint8_t* raw_bytes(CompactPage* page) {
        return reinterpret_cast<std::uint8_t*>(page + 1);
    }
    // A count for a page found in the table, unless its last holder is freeing it.
    static bool acquire(CompactPage& page) noexcept {
        std::uint32_t refs = page.refs_.load(std::memory_order_relaxed);
        while (refs != 0) {
            if (page.refs_.compare_exchange_weak(refs, refs + 1, std::memory_order_relaxed))
                return true;
        }
        return false;
    }

    std::mutex mutex_;
    std::unordered_multimap<std::size_t, CompactPage*> pages_;
};

void PageRef::reset() noexcept {
    CompactPage* page = std::exchange(p_, nullptr);
    if (page && page->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
        PageTable::get().release(page);
}

namespace {

// The page (kSqlitePageSize bytes) held compactly, shared with every other file state that
// holds the same bytes: the databases of one actor type have the same schema pages and
// empty-table roots, so a thousand actors hold those once.
PageRef intern_page(const Bytes& page) {
    // The longest run of zeros, found in one pass.
    std::size_t best_at = page.size(), best_len = 0;
    for (std::size_t i = 0; i < page.size();) {
        if (page[i] != 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < page.size() && page[j] == 0)
            ++j;
        if (j - i > best_len) {
            best_at = i;
            best_len = j - i;
        }
        i = j;
    }
    if (best_len < 64)  // not worth an indirection
        return PageTable::get().intern(page.data(), page.size(),
                                       static_cast<std::uint16_t>(page.size()));
    // The compact form, in this thread's scratch buffer (no allocation once it has grown).
    thread_local Bytes compact;
    compact.assign(page.begin(), page.begin() + static_cast<std::ptrdiff_t>(best_at));
    compact.insert(compact.end(), page.begin() + static_cast<std::ptrdiff_t>(best_at + best_len),
                   page.end());
    return PageTable::get().intern(compact.data(), compact.size(),
                                   static_cast<std::uint16_t>(best_at));
}

}  // namespace

void CompactPage::read(std::size_t offset, std::size_t n, std::uint8_t* out) const {
    // Three spans of the page: [0, head) stored, [head, zeros_end) zeros, [zeros_end, kPage) the
    // rest of what is stored.
    const std::size_t zeros_end = kSqlitePageSize - (size_ - head_);
    const std::size_t end = offset + n;
    if (offset < head_) {
        const std::size_t k = std::min(end, std::size_t{head_}) - offset;
        std::memcpy(out, stored() + offset, k);
        out += k;
        offset += k;
    }
    if (offset < end && offset < zeros_end) {
        const std::size_t k = std::min(end, zeros_end) - offset;
        std::memset(out, 0, k);
        out += k;
        offset += k;
    }
    if (offset < end)
        std::memcpy(out, stored() + head_ + (offset - zeros_end), end - offset);
}

namespace {

bool known(const PagedFileState& f, std::uint32_t pgno) {
    return f.dirty.contains(pgno) || f.committed.contains(pgno);
}

std::size_t held_by(const PageRef& page) {
    return page ? page->size() : 0;
}

void set_committed(PagedFileState& f, std::uint32_t pgno, const std::optional<Bytes>& bytes) {
    PageIndex::Entry& entry = f.committed.add(pgno);
    const std::size_t before = held_by(entry.bytes);
    if (entry.bytes)
        --f.cached_with_bytes;
    if (bytes) {
        ++f.cached_with_bytes;
        entry.bytes = intern_page(*bytes);
    } else {
        entry.bytes.reset();
    }
    f.held(before, held_by(entry.bytes));
    entry.last_read = ++f.read_clock;
}

// Drops the least recently read pages with bytes down to 3/4 of the limit once it is exceeded
// (so the O(n) pass runs once per quarter-limit of new pages, not on every fetch).
void evict_if_needed(PagedFileState& f) {
    if (f.cached_with_bytes <= f.cache_limit)
        return;
    const std::size_t keep = f.cache_limit - f.cache_limit / 4;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> candidates;
    candidates.reserve(f.cached_with_bytes);
    f.committed.for_each([&](std::uint32_t pgno, const PageIndex::Entry& page) {
        if (page.bytes)
            candidates.emplace_back(page.last_read, pgno);
    });
    const std::size_t drop = candidates.size() - std::min(keep, candidates.size());
    std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(drop),
                     candidates.end());
    for (std::size_t i = 0; i < drop; ++i) {
        f.held(held_by(f.committed.find(candidates[i].second)->bytes), 0);
        f.committed.erase(candidates[i].second);
    }
    f.cached_with_bytes -= drop;
}

// Loads the pages of [first, last] that are neither dirty nor cached, plus read-ahead, in one
// request. Reads of cached pages (the common case) allocate nothing.
int fetch_missing(PagedFileState& f, std::uint32_t first, std::uint32_t last) {
    std::uint32_t pgno = first;
    while (pgno <= last && known(f, pgno))
        ++pgno;
    if (pgno > last)
        return SQLITE_OK;
    std::vector<std::uint32_t> missing;
    for (; pgno <= last; ++pgno) {
        if (!known(f, pgno))
            missing.push_back(pgno);
    }
    const std::uint32_t ahead_end = std::min(f.size_pages, last + kReadAhead);
    for (pgno = last + 1; pgno <= ahead_end && !known(f, pgno); ++pgno)
        missing.push_back(pgno);
    auto got = f.store->get_pages(missing);
    if (!got.ok()) {
        log::warn("sqlite page fetch failed",
                  {{"actor_id", f.name}, {"error", got.error().to_string()}});
        f.last_error = got.error();
        return SQLITE_IOERR_READ;
    }
    for (std::size_t i = 0; i < missing.size(); ++i) {
        std::optional<Bytes> bytes = i < got->size() ? std::move((*got)[i]) : std::nullopt;
        if (bytes && bytes->size() != kPage) {
            f.last_error = Error("sqlite", "corrupt_page",
                                 "page " + std::to_string(missing[i]) + " has " +
                                     std::to_string(bytes->size()) + " bytes");
            return SQLITE_IOERR_READ;
        }
        set_committed(f, missing[i], bytes);
    }
    return SQLITE_OK;
}

// The database's size comes from its header page, the only place the engine keeps it.
int load(PagedFileState& f) {
    if (f.loaded)
        return SQLITE_OK;
    if (int rc = fetch_missing(f, 1, 1); rc != SQLITE_OK)
        return rc;
    const PageRef& page1 = f.committed.find(1)->bytes;
    if (page1) {
        Bytes header(32);
        page1->read(0, header.size(), header.data());
        f.committed_size_pages = header_size_pages(header);
    } else {
        f.committed_size_pages = 0;
    }
    f.size_pages = f.committed_size_pages;
    f.committed.reserve(f.size_pages);
    f.loaded = true;
    return SQLITE_OK;
}

// Copies part of page `pgno` as the file reads it: dirty, else committed, else zeros.
void copy_from_page(PagedFileState& f, std::uint32_t pgno, std::size_t offset, std::size_t n,
                    std::uint8_t* out) {
    if (auto d = f.dirty.find(pgno); d != f.dirty.end()) {
        std::memcpy(out, d->second.data() + offset, n);
        return;
    }
    PageIndex::Entry* c = f.committed.find(pgno);
    if (c == nullptr || !c->bytes) {
        std::memset(out, 0, n);
        return;
    }
    c->last_read = ++f.read_clock;
    c->bytes->read(offset, n, out);
}

// MARK: main database file

struct PagedFile {
    sqlite3_file base;
    PagedFileState* state;
};

PagedFileState& state_of(sqlite3_file* file) {
    return *reinterpret_cast<PagedFile*>(file)->state;
}

int paged_close(sqlite3_file*) {
    return SQLITE_OK;
}

int paged_read(sqlite3_file* file, void* buf, int amount, sqlite3_int64 offset) {
    auto& f = state_of(file);
    if (int rc = load(f); rc != SQLITE_OK)
        return rc;
    auto* out = static_cast<std::uint8_t*>(buf);
    const std::uint64_t begin = static_cast<std::uint64_t>(offset);
    const std::uint64_t end = begin + static_cast<std::uint64_t>(amount);
    const std::uint64_t file_end = std::uint64_t(f.size_pages) * kPage;
    const std::uint64_t readable_end = std::min(end, file_end);
    if (begin < readable_end) {
        const auto first = static_cast<std::uint32_t>(begin / kPage + 1);
        const auto last = static_cast<std::uint32_t>((readable_end - 1) / kPage + 1);
        if (int rc = fetch_missing(f, first, last); rc != SQLITE_OK)
            return rc;
    }
    for (std::uint64_t pos = begin; pos < end;) {
        if (pos >= file_end) {
            std::memset(out + (pos - begin), 0, end - pos);
            return SQLITE_IOERR_SHORT_READ;
        }
        const std::uint64_t in_page = pos % kPage;
        const std::uint64_t n = std::min<std::uint64_t>(kPage - in_page, end - pos);
        copy_from_page(f, static_cast<std::uint32_t>(pos / kPage + 1), in_page, n,
                       out + (pos - begin));
        pos += n;
    }
    evict_if_needed(f);
    return SQLITE_OK;
}

int paged_write(sqlite3_file* file, const void* buf, int amount, sqlite3_int64 offset) {
    auto& f = state_of(file);
    if (int rc = load(f); rc != SQLITE_OK)
        return rc;
    const auto* in = static_cast<const std::uint8_t*>(buf);
    const std::uint64_t begin = static_cast<std::uint64_t>(offset);
    const std::uint64_t end = begin + static_cast<std::uint64_t>(amount);
    for (std::uint64_t pos = begin; pos < end;) {
        const auto pgno = static_cast<std::uint32_t>(pos / kPage + 1);
        const std::uint64_t in_page = pos % kPage;
        const std::uint64_t n = std::min<std::uint64_t>(kPage - in_page, end - pos);
        auto it = f.dirty.find(pgno);
        if (it == f.dirty.end()) {
            Bytes page(kPage);
            if (n != kPage) {
                if (pgno <= f.size_pages) {
                    if (int rc = fetch_missing(f, pgno, pgno); rc != SQLITE_OK)
                        return rc;
                }
                copy_from_page(f, pgno, 0, kPage, page.data());
            }
            it = f.dirty.emplace(pgno, std::move(page)).first;
        }
        std::memcpy(it->second.data() + in_page, in + (pos - begin), n);
        f.size_pages = std::max(f.size_pages, pgno);
        pos += n;
    }
    return SQLITE_OK;
}

int paged_truncate(sqlite3_file* file, sqlite3_int64 size) {
    auto& f = state_of(file);
    if (int rc = load(f); rc != SQLITE_OK)
        return rc;
    const auto pages =
        static_cast<std::uint32_t>((static_cast<std::uint64_t>(size) + kPage - 1) / kPage);
    f.dirty.erase(f.dirty.upper_bound(pages), f.dirty.end());
    f.size_pages = pages;
    return SQLITE_OK;
}

// The database's size as its header page states it, when that field is valid (SQLite's rule:
// the change counter at 24 equals the version-valid-for number at 92); 0 when not.
std::uint32_t valid_header_size_pages(const Bytes& page1) {
    if (page1.size() < 96 || !std::equal(page1.begin() + 24, page1.begin() + 28, page1.begin() + 92))
        return 0;
    return header_size_pages(page1);
}

// The commit point (see the header): everything written since the last sync goes out at once.
int paged_sync(sqlite3_file* file, int) {
    auto& f = state_of(file);
    // A transaction that shrinks the database (VACUUM, a large DELETE with auto-vacuum, ...) is
    // synced before SQLite truncates the file: the pager truncates only once the commit is done.
    // The size committed is the one the new header page states, so the commit is the shrunk
    // database in one step (the engine refuses a database whose page one disagrees with its
    // committed size), and the truncate that follows changes nothing.
    if (auto page1 = f.dirty.find(1); page1 != f.dirty.end()) {
        const std::uint32_t stated = valid_header_size_pages(page1->second);
        if (stated != 0 && stated < f.size_pages) {
            f.dirty.erase(f.dirty.upper_bound(stated), f.dirty.end());
            f.size_pages = stated;
        }
    }
    if (f.dirty.empty() && f.size_pages == f.committed_size_pages)
        return SQLITE_OK;
    std::vector<envoy::SqliteDirtyPage> pages;
    pages.reserve(f.dirty.size());
    for (const auto& [pgno, bytes] : f.dirty)
        pages.push_back(envoy::SqliteDirtyPage{pgno, bytes});
    auto committed = f.store->commit(std::move(pages), f.size_pages);
    if (!committed.ok()) {
        log::warn("sqlite commit failed, transaction rolled back",
                  {{"actor_id", f.name},
                   {"dirty_pages", static_cast<unsigned long>(f.dirty.size())},
                   {"error", committed.error().to_string()}});
        f.last_error = committed.error();
        f.dirty.clear();
        f.size_pages = f.committed_size_pages;
        return SQLITE_IOERR_FSYNC;
    }
    f.committed.reserve(f.size_pages);
    for (auto& [pgno, bytes] : f.dirty)
        set_committed(f, pgno, bytes);
    f.dirty.clear();
    // Pages past the new end read as zeros if the file grows again, whatever the engine kept.
    f.committed.for_each([&](std::uint32_t pgno, PageIndex::Entry& page) {
        if (pgno > f.size_pages && page.bytes) {
            f.held(held_by(page.bytes), 0);
            page.bytes.reset();
            --f.cached_with_bytes;
        }
    });
    for (std::uint32_t p = f.size_pages + 1; p <= f.committed_size_pages; ++p)
        set_committed(f, p, std::nullopt);
    f.committed_size_pages = f.size_pages;
    evict_if_needed(f);
    return SQLITE_OK;
}

int paged_file_size(sqlite3_file* file, sqlite3_int64* size) {
    auto& f = state_of(file);
    if (int rc = load(f); rc != SQLITE_OK)
        return rc;
    *size = static_cast<sqlite3_int64>(f.size_pages) * static_cast<sqlite3_int64>(kPage);
    return SQLITE_OK;
}

// One connection per database and no other process: locks always succeed.
int no_lock(sqlite3_file*, int) {
    return SQLITE_OK;
}
int no_reserved_lock(sqlite3_file*, int* out) {
    *out = 0;
    return SQLITE_OK;
}
int no_file_control(sqlite3_file*, int, void*) {
    return SQLITE_NOTFOUND;
}
int page_sector_size(sqlite3_file*) {
    return static_cast<int>(kPage);
}
int paged_device_characteristics(sqlite3_file*) {
    return SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

sqlite3_io_methods make_methods(int (*close)(sqlite3_file*),
                                int (*read)(sqlite3_file*, void*, int, sqlite3_int64),
                                int (*write)(sqlite3_file*, const void*, int, sqlite3_int64),
                                int (*truncate)(sqlite3_file*, sqlite3_int64),
                                int (*sync)(sqlite3_file*, int),
                                int (*file_size)(sqlite3_file*, sqlite3_int64*),
                                int (*device_characteristics)(sqlite3_file*)) {
    sqlite3_io_methods m{};
    m.iVersion = 1;
    m.xClose = close;
    m.xRead = read;
    m.xWrite = write;
    m.xTruncate = truncate;
    m.xSync = sync;
    m.xFileSize = file_size;
    m.xLock = no_lock;
    m.xUnlock = no_lock;
    m.xCheckReservedLock = no_reserved_lock;
    m.xFileControl = no_file_control;
    m.xSectorSize = page_sector_size;
    m.xDeviceCharacteristics = device_characteristics;
    return m;
}

const sqlite3_io_methods kPagedMethods =
    make_methods(paged_close, paged_read, paged_write, paged_truncate, paged_sync, paged_file_size,
                 paged_device_characteristics);

// MARK: in-memory files (everything but the main database)

struct MemoryFile {
    sqlite3_file base;
    std::vector<std::uint8_t>* data;
};

std::vector<std::uint8_t>& data_of(sqlite3_file* file) {
    return *reinterpret_cast<MemoryFile*>(file)->data;
}

int memory_close(sqlite3_file* file) {
    delete reinterpret_cast<MemoryFile*>(file)->data;
    return SQLITE_OK;
}

int memory_read(sqlite3_file* file, void* buf, int amount, sqlite3_int64 offset) {
    auto& d = data_of(file);
    const auto begin = static_cast<std::size_t>(offset);
    const auto n = static_cast<std::size_t>(amount);
    const std::size_t available = begin < d.size() ? std::min(n, d.size() - begin) : 0;
    if (available > 0)
        std::memcpy(buf, d.data() + begin, available);
    if (available < n) {
        std::memset(static_cast<std::uint8_t*>(buf) + available, 0, n - available);
        return SQLITE_IOERR_SHORT_READ;
    }
    return SQLITE_OK;
}

int memory_write(sqlite3_file* file, const void* buf, int amount, sqlite3_int64 offset) {
    auto& d = data_of(file);
    const auto end = static_cast<std::size_t>(offset) + static_cast<std::size_t>(amount);
    if (d.size() < end)
        d.resize(end);
    std::memcpy(d.data() + offset, buf, static_cast<std::size_t>(amount));
    return SQLITE_OK;
}

int memory_truncate(sqlite3_file* file, sqlite3_int64 size) {
    data_of(file).resize(static_cast<std::size_t>(size));
    return SQLITE_OK;
}

int memory_sync(sqlite3_file*, int) {
    return SQLITE_OK;
}

int memory_file_size(sqlite3_file* file, sqlite3_int64* size) {
    *size = static_cast<sqlite3_int64>(data_of(file).size());
    return SQLITE_OK;
}

int memory_device_characteristics(sqlite3_file*) {
    return 0;
}

const sqlite3_io_methods kMemoryMethods =
    make_methods(memory_close, memory_read, memory_write, memory_truncate, memory_sync,
                 memory_file_size, memory_device_characteristics);

// MARK: the VFS

sqlite3_vfs* default_vfs() {
    static sqlite3_vfs* vfs = sqlite3_vfs_find(nullptr);
    return vfs;
}

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
    if (out_flags != nullptr)
        *out_flags = flags;
    if ((flags & SQLITE_OPEN_MAIN_DB) != 0 && name != nullptr) {
        std::shared_ptr<PagedFileState> state;
        {
            std::lock_guard lock(registry_mutex());
            auto it = registry().find(std::string_view(name));
            if (it != registry().end())
                state = it->second;
        }
        if (!state)
            return SQLITE_CANTOPEN;
        auto* paged = reinterpret_cast<PagedFile*>(file);
        paged->state = state.get();
        paged->base.pMethods = &kPagedMethods;
        return SQLITE_OK;
    }
    auto* memory = reinterpret_cast<MemoryFile*>(file);
    memory->data = new std::vector<std::uint8_t>();
    memory->base.pMethods = &kMemoryMethods;
    return SQLITE_OK;
}

int vfs_delete(sqlite3_vfs*, const char*, int) {
    return SQLITE_OK;
}

// No journal or WAL file ever exists between connections.
int vfs_access(sqlite3_vfs*, const char*, int, int* out) {
    *out = 0;
    return SQLITE_OK;
}

int vfs_full_pathname(sqlite3_vfs*, const char* name, int out_size, char* out) {
    sqlite3_snprintf(out_size, out, "%s", name);
    return SQLITE_OK;
}

int vfs_randomness(sqlite3_vfs*, int n, char* out) {
    return default_vfs()->xRandomness(default_vfs(), n, out);
}
int vfs_sleep(sqlite3_vfs*, int micros) {
    return default_vfs()->xSleep(default_vfs(), micros);
}
int vfs_current_time(sqlite3_vfs*, double* out) {
    return default_vfs()->xCurrentTime(default_vfs(), out);
}
int vfs_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
    return default_vfs()->xCurrentTimeInt64(default_vfs(), out);
}
int vfs_get_last_error(sqlite3_vfs*, int, char*) {
    return 0;
}

sqlite3_vfs make_vfs() {
    sqlite3_vfs vfs{};
    vfs.iVersion = 2;
    vfs.szOsFile = static_cast<int>(std::max(sizeof(PagedFile), sizeof(MemoryFile)));
    vfs.mxPathname = 512;
    vfs.zName = kVfsName;
    vfs.xOpen = vfs_open;
    vfs.xDelete = vfs_delete;
    vfs.xAccess = vfs_access;
    vfs.xFullPathname = vfs_full_pathname;
    vfs.xRandomness = vfs_randomness;
    vfs.xSleep = vfs_sleep;
    vfs.xCurrentTime = vfs_current_time;
    vfs.xGetLastError = vfs_get_last_error;
    vfs.xCurrentTimeInt64 = vfs_current_time_int64;
    return vfs;
}

Error sqlite_error(sqlite3* db, int rc, const std::string& what) {
    std::string message = what + ": ";
    message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    return Error("sqlite", "open_failed", std::move(message));
}

}  // namespace

Error storage_error(const Error& store_error) {
    return Error("sqlite", "storage_error", store_error.id() + ": " + store_error.message(),
                 R"({"cause":")" + store_error.id() + R"("})");
}

const char* register_page_vfs() {
    static const int registered = [] {
        static sqlite3_vfs vfs = make_vfs();
        return sqlite3_vfs_register(&vfs, 0);
    }();
    if (registered != SQLITE_OK)
        log::error("sqlite vfs registration failed", {{"rc", registered}});
    return kVfsName;
}

Result<std::unique_ptr<Connection>> Connection::open(SharedString name,
                                                     std::shared_ptr<PageStore> store,
                                                     std::size_t page_cache_limit) {
    auto state = std::make_shared<PagedFileState>();
    state->name = name;
    state->store = std::move(store);
    state->cache_limit = std::max<std::size_t>(page_cache_limit, 8);
    return reopen(std::move(name), std::move(state));
}

Result<std::unique_ptr<Connection>> Connection::reopen(SharedString name,
                                                       std::shared_ptr<PagedFileState> state) {
    if (!state)
        return Error("sqlite", "closed", "no file state to reopen " + name.str() + " on");
    const char* vfs = register_page_vfs();
    // A connection closed outside a transaction leaves nothing uncommitted; anything else (a
    // failed close) is dropped here, as SQLite's rollback would have.
    state->dirty.clear();
    state->size_pages = state->committed_size_pages;
    state->last_error.reset();
    {
        std::lock_guard lock(registry_mutex());
        if (!registry().emplace(name, state).second) {
            return Error("sqlite", "already_open",
                         "a database named " + name.str() + " is already open in this process");
        }
    }
    std::unique_ptr<Connection> conn(new Connection());
    conn->name_ = name;
    conn->file_ = state;
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(name.c_str(), &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
    conn->db_ = db;
    if (db != nullptr)
        live_connections().fetch_add(1, std::memory_order_relaxed);
    if (rc != SQLITE_OK) {
        if (auto store_error = conn->take_store_error())
            return storage_error(*store_error);
        return sqlite_error(db, rc, "open");
    }
    sqlite3_extended_result_codes(db, 1);
    // page_size and auto_vacuum only take effect on a new database (the VFS requires both); the
    // rest are the connection's own and set at every open. The connection is the database's only
    // one, so it keeps its lock (as upstream pins it): SQLite then bumps page one's change counter
    // once per open instead of at every commit, and a one-row update commits one page, not two.
    const bool existing = state->loaded && state->committed_size_pages > 0;
    const char* pragmas = existing ? "PRAGMA journal_mode = MEMORY;"
                                     "PRAGMA synchronous = NORMAL;"
                                     "PRAGMA temp_store = MEMORY;"
                                     "PRAGMA locking_mode = EXCLUSIVE;"
                                   : "PRAGMA page_size = 4096;"
                                     "PRAGMA journal_mode = MEMORY;"
                                     "PRAGMA synchronous = NORMAL;"
                                     "PRAGMA temp_store = MEMORY;"
                                     "PRAGMA auto_vacuum = NONE;"
                                     "PRAGMA locking_mode = EXCLUSIVE;";
    char* err = nullptr;
    rc = sqlite3_exec(db, pragmas, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string message = err != nullptr ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        if (auto store_error = conn->take_store_error())
            return storage_error(*store_error);
        return Error("sqlite", "open_failed", "pragmas: " + message);
    }
    return conn;
}

Connection::~Connection() {
    for (const CachedStatement& cached : statements_)
        sqlite3_finalize(static_cast<sqlite3_stmt*>(cached.stmt));
    if (db_ != nullptr) {
        sqlite3_close_v2(static_cast<sqlite3*>(db_));
        live_connections().fetch_sub(1, std::memory_order_relaxed);
    }
    std::lock_guard lock(registry_mutex());
    auto it = registry().find(name_);
    if (it != registry().end() && it->second == file_)
        registry().erase(it);
}

std::optional<Error> Connection::take_store_error() {
    if (!file_)
        return std::nullopt;
    return std::exchange(file_->last_error, std::nullopt);
}

bool Connection::autocommit() const {
    return db_ == nullptr || sqlite3_get_autocommit(static_cast<sqlite3*>(db_)) != 0;
}

void Connection::release_memory() {
    if (db_ != nullptr)
        sqlite3_db_release_memory(static_cast<sqlite3*>(db_));
}

std::size_t Connection::cached_pages() const {
    return file_ ? file_->cached_with_bytes : 0;
}

std::size_t Connection::cached_bytes() const {
    return file_ ? file_->held_bytes : 0;
}

std::size_t open_connections() {
    return live_connections().load(std::memory_order_relaxed);
}

std::size_t cached_page_bytes() {
    return held_page_bytes().load(std::memory_order_relaxed);
}

}  // namespace rivetkit::sqlite

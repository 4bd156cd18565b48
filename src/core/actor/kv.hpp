#pragma once
// Actor KV: the interface every storage backend implements, and the `Kv` handle the core uses.
//
// Backends: the engine through the envoy client (production) and an in-memory map (unit tests only,
// with call counters the ActorTask spec inspects). Arguments are taken by value because the calls
// are coroutines and must not hold references into the caller's frame.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "base/shared_string.hpp"

namespace rivetkit::core {

template <typename T>
using Task = boost::asio::awaitable<T>;

using KvEntry = std::pair<Bytes, Bytes>;

struct ListOpts {
    bool reverse = false;
    std::optional<std::uint32_t> limit;
};

// Upstream's engine-side limit on keys per put or delete list; batches are chunked to this size.
inline constexpr std::size_t kApplyBatchChunkSize = 128;

class KvBackend {
  public:
    virtual ~KvBackend() = default;
    virtual std::string_view label() const noexcept = 0;

    virtual Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) = 0;
    virtual Task<Status> batch_put(std::vector<KvEntry> entries) = 0;
    virtual Task<Status> batch_delete(std::vector<Bytes> keys) = 0;
    virtual Task<Status> delete_range(Bytes start, Bytes end) = 0;
    virtual Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) = 0;
    // Keys in [start, end).
    virtual Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end,
                                                          ListOpts opts) = 0;
    // Deletes and puts as one write where the backend can; the default issues a put then a delete.
    virtual Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes);
};

class ActorMetrics;
enum class KvOperation : std::uint8_t;

// A cheap, copyable handle on an actor's KV. A default-constructed Kv is unconfigured: every call
// fails with actor/not_configured.
class Kv {
  public:
    Kv() = default;
    Kv(std::shared_ptr<KvBackend> backend, SharedString actor_id)
        : backend_(std::move(backend)), actor_id_(std::move(actor_id)) {}

    bool configured() const noexcept { return backend_ != nullptr; }
    const std::string& actor_id() const noexcept { return actor_id_; }
    KvBackend* backend() const noexcept { return backend_.get(); }
    const std::shared_ptr<KvBackend>& shared_backend() const noexcept { return backend_; }
    // Counts this handle's operations (rivetkit_actor_kv_operations_total); set by metrics_of.
    void set_metrics(std::shared_ptr<ActorMetrics> metrics) { metrics_ = std::move(metrics); }

    Task<Result<std::optional<Bytes>>> get(Bytes key) const;
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) const;
    Task<Status> put(Bytes key, Bytes value) const;
    Task<Status> batch_put(std::vector<KvEntry> entries) const;
    Task<Status> del(Bytes key) const;
    Task<Status> batch_delete(std::vector<Bytes> keys) const;
    Task<Status> delete_range(Bytes start, Bytes end) const;
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts = {}) const;
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts = {}) const;
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) const;

  private:
    void record(KvOperation op) const noexcept;

    std::shared_ptr<KvBackend> backend_;
    SharedString actor_id_;
    std::shared_ptr<ActorMetrics> metrics_;
};

// In-memory backend for unit tests. Single-threaded like the rest of the runtime.
class InMemoryKv final : public KvBackend {
  public:
    struct ApplyBatchSnapshot {
        std::vector<KvEntry> puts;
        std::vector<Bytes> deletes;
        friend bool operator==(const ApplyBatchSnapshot&, const ApplyBatchSnapshot&) = default;
    };

    std::string_view label() const noexcept override { return "in_memory"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override;
    Task<Status> batch_put(std::vector<KvEntry> entries) override;
    Task<Status> batch_delete(std::vector<Bytes> keys) override;
    Task<Status> delete_range(Bytes start, Bytes end) override;
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) override;
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts) override;
    // Applies deletes, then puts, at once.
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) override;

    // Direct access for tests.
    const std::map<Bytes, Bytes>& entries() const noexcept { return store_; }
    std::optional<Bytes> peek(BytesView key) const;
    void insert(Bytes key, Bytes value) { store_[std::move(key)] = std::move(value); }

    std::size_t apply_batch_call_count() const noexcept { return apply_batch_calls_; }
    std::size_t batch_get_call_count() const noexcept { return batch_get_calls_; }
    std::size_t batch_delete_call_count() const noexcept { return batch_delete_calls_; }
    const std::optional<ApplyBatchSnapshot>& last_apply_batch() const noexcept {
        return last_apply_batch_;
    }

  private:
    std::map<Bytes, Bytes> store_;
    std::size_t apply_batch_calls_ = 0;
    std::size_t batch_get_calls_ = 0;
    std::size_t batch_delete_calls_ = 0;
    std::optional<ApplyBatchSnapshot> last_apply_batch_;
};

}  // namespace rivetkit::core

#include "core/actor/kv.hpp"

#include "core/actor/metrics.hpp"

#include <algorithm>
#include <chrono>

#include "base/log.hpp"

namespace rivetkit::core {
namespace {

void apply_list_opts(std::vector<KvEntry>& entries, const ListOpts& opts) {
    if (opts.reverse)
        std::reverse(entries.begin(), entries.end());
    if (opts.limit && entries.size() > *opts.limit)
        entries.resize(*opts.limit);
}

Error not_configured() {
    return errors::actor_not_configured("kv handle");
}

// Logs one completed KV call at DEBUG, the way upstream's Kv does.
class CallLog {
  public:
    CallLog(const Kv& kv, std::string_view operation, std::size_t key_count)
        : kv_(kv),
          operation_(operation),
          key_count_(key_count),
          started_(std::chrono::steady_clock::now()) {}

    template <typename R>
    void done(const R& result, std::optional<std::size_t> result_count = std::nullopt) const {
        if (!log::enabled(log::Level::debug))
            return;
        const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - started_);
        const std::string error = result.ok() ? std::string() : result.error().to_string();
        log::debug("kv call completed",
                   {{"actor_id", kv_.actor_id()},
                    {"backend", kv_.backend() ? kv_.backend()->label() : "unconfigured"},
                    {"operation", operation_},
                    {"key_count", key_count_},
                    {"result_count", result_count.value_or(0)},
                    {"elapsed_us", static_cast<std::uint64_t>(elapsed.count())},
                    {"outcome", result.ok() ? "ok" : "error"},
                    {"error", error}});
    }

  private:
    const Kv& kv_;
    std::string_view operation_;
    std::size_t key_count_;
    std::chrono::steady_clock::time_point started_;
};

}  // namespace

Task<Status> KvBackend::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) {
    if (!puts.empty()) {
        Status put = co_await batch_put(std::move(puts));
        if (!put.ok())
            co_return put;
    }
    if (!deletes.empty()) {
        Status del = co_await batch_delete(std::move(deletes));
        if (!del.ok())
            co_return del;
    }
    co_return Status{};
}

void Kv::record(KvOperation op) const noexcept {
    if (metrics_)
        metrics_->kv_operation(op);
}

Task<Result<std::optional<Bytes>>> Kv::get(Bytes key) const {
    std::vector<Bytes> keys;
    keys.push_back(std::move(key));
    auto values = co_await batch_get(std::move(keys));
    if (!values.ok())
        co_return std::move(values).error();
    if (values->empty())
        co_return std::optional<Bytes>{};
    co_return std::move(values->front());
}

Task<Result<std::vector<std::optional<Bytes>>>> Kv::batch_get(std::vector<Bytes> keys) const {
    CallLog call(*this, "batch_get", keys.size());
    if (!backend_)
        co_return not_configured();
    record(KvOperation::Get);
    auto result = co_await backend_->batch_get(std::move(keys));
    call.done(result, result.ok() ? std::optional<std::size_t>(result->size()) : std::nullopt);
    co_return result;
}

Task<Status> Kv::put(Bytes key, Bytes value) const {
    std::vector<KvEntry> entries;
    entries.emplace_back(std::move(key), std::move(value));
    co_return co_await batch_put(std::move(entries));
}

Task<Status> Kv::batch_put(std::vector<KvEntry> entries) const {
    CallLog call(*this, "batch_put", entries.size());
    if (!backend_)
        co_return not_configured();
    record(KvOperation::Put);
    Status result = co_await backend_->batch_put(std::move(entries));
    call.done(result);
    co_return result;
}

Task<Status> Kv::del(Bytes key) const {
    std::vector<Bytes> keys;
    keys.push_back(std::move(key));
    co_return co_await batch_delete(std::move(keys));
}

Task<Status> Kv::batch_delete(std::vector<Bytes> keys) const {
    CallLog call(*this, "delete", keys.size());
    if (!backend_)
        co_return not_configured();
    record(KvOperation::Delete);
    Status result = co_await backend_->batch_delete(std::move(keys));
    call.done(result);
    co_return result;
}

Task<Status> Kv::delete_range(Bytes start, Bytes end) const {
    CallLog call(*this, "delete_range", 0);
    if (!backend_)
        co_return not_configured();
    record(KvOperation::Delete);
    Status result = co_await backend_->delete_range(std::move(start), std::move(end));
    call.done(result);
    co_return result;
}

Task<Result<std::vector<KvEntry>>> Kv::list_prefix(Bytes prefix, ListOpts opts) const {
    CallLog call(*this, "list_prefix", 0);
    if (!backend_)
        co_return not_configured();
    record(KvOperation::List);
    auto result = co_await backend_->list_prefix(std::move(prefix), opts);
    call.done(result, result.ok() ? std::optional<std::size_t>(result->size()) : std::nullopt);
    co_return result;
}

Task<Result<std::vector<KvEntry>>> Kv::list_range(Bytes start, Bytes end, ListOpts opts) const {
    CallLog call(*this, "list_range", 0);
    if (!backend_)
        co_return not_configured();
    record(KvOperation::List);
    auto result = co_await backend_->list_range(std::move(start), std::move(end), opts);
    call.done(result, result.ok() ? std::optional<std::size_t>(result->size()) : std::nullopt);
    co_return result;
}

Task<Status> Kv::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) const {
    CallLog call(*this, "apply_batch", puts.size() + deletes.size());
    if (!backend_)
        co_return not_configured();
    record(KvOperation::Put);
    Status result = co_await backend_->apply_batch(std::move(puts), std::move(deletes));
    call.done(result);
    co_return result;
}

Task<Result<std::vector<std::optional<Bytes>>>> InMemoryKv::batch_get(std::vector<Bytes> keys) {
    ++batch_get_calls_;
    std::vector<std::optional<Bytes>> out;
    out.reserve(keys.size());
    for (const auto& key : keys)
        out.push_back(peek(key));
    co_return out;
}

Task<Status> InMemoryKv::batch_put(std::vector<KvEntry> entries) {
    for (auto& [key, value] : entries)
        store_[std::move(key)] = std::move(value);
    co_return Status{};
}

Task<Status> InMemoryKv::batch_delete(std::vector<Bytes> keys) {
    ++batch_delete_calls_;
    for (const auto& key : keys)
        store_.erase(key);
    co_return Status{};
}

Task<Status> InMemoryKv::delete_range(Bytes start, Bytes end) {
    if (start < end)
        store_.erase(store_.lower_bound(start), store_.lower_bound(end));
    co_return Status{};
}

Task<Result<std::vector<KvEntry>>> InMemoryKv::list_prefix(Bytes prefix, ListOpts opts) {
    std::vector<KvEntry> out;
    for (auto it = store_.lower_bound(prefix); it != store_.end() && starts_with(it->first, prefix);
         ++it) {
        out.emplace_back(it->first, it->second);
    }
    apply_list_opts(out, opts);
    co_return out;
}

Task<Result<std::vector<KvEntry>>> InMemoryKv::list_range(Bytes start, Bytes end, ListOpts opts) {
    std::vector<KvEntry> out;
    if (start < end) {
        for (auto it = store_.lower_bound(start); it != store_.end() && it->first < end; ++it) {
            out.emplace_back(it->first, it->second);
        }
    }
    apply_list_opts(out, opts);
    co_return out;
}

Task<Status> InMemoryKv::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) {
    ++apply_batch_calls_;
    last_apply_batch_ = ApplyBatchSnapshot{puts, deletes};
    for (const auto& key : deletes)
        store_.erase(key);
    for (auto& [key, value] : puts)
        store_[std::move(key)] = std::move(value);
    co_return Status{};
}

std::optional<Bytes> InMemoryKv::peek(BytesView key) const {
    auto it = store_.find(Bytes(key.begin(), key.end()));
    if (it == store_.end())
        return std::nullopt;
    return it->second;
}

}  // namespace rivetkit::core

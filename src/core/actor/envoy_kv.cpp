#include "core/actor/envoy_kv.hpp"

namespace rivetkit::core {

namespace {

// Keep each put comfortably below the engine's 976 KiB payload limit.
constexpr std::size_t kMaxPutChunkBytes = 900 * 1024;

envoy::KvListOptions to_envoy(const ListOpts& opts) {
    envoy::KvListOptions out;
    out.reverse = opts.reverse;
    if (opts.limit)
        out.limit = *opts.limit;
    return out;
}

std::vector<std::vector<Bytes>> chunk_keys(std::vector<Bytes> keys) {
    std::vector<std::vector<Bytes>> chunks;
    for (auto& k : keys) {
        if (chunks.empty() || chunks.back().size() >= kApplyBatchChunkSize)
            chunks.emplace_back();
        chunks.back().push_back(std::move(k));
    }
    return chunks;
}

std::vector<std::vector<KvEntry>> chunk_entries(std::vector<KvEntry> entries) {
    std::vector<std::vector<KvEntry>> chunks;
    std::size_t bytes = 0;
    for (auto& e : entries) {
        std::size_t size = e.first.size() + e.second.size();
        if (chunks.empty() || chunks.back().size() >= kApplyBatchChunkSize ||
            (!chunks.back().empty() && bytes + size > kMaxPutChunkBytes)) {
            chunks.emplace_back();
            bytes = 0;
        }
        bytes += size;
        chunks.back().push_back(std::move(e));
    }
    return chunks;
}

}  // namespace

Task<Result<std::vector<std::optional<Bytes>>>> EnvoyKv::batch_get(std::vector<Bytes> keys) {
    if (auto s = envoy::check_kv_key_sizes(keys); !s.ok())
        co_return s.error();
    std::vector<std::optional<Bytes>> out;
    out.reserve(keys.size());
    for (auto& chunk : chunk_keys(std::move(keys))) {
        auto op = envoy_.kv_get(actor_id_, std::move(chunk));
        auto values = co_await std::move(op);
        if (!values.ok())
            co_return std::move(values).error();
        for (auto& v : *values)
            out.push_back(std::move(v));
    }
    co_return out;
}

// Whole batches are checked before the first chunk goes out: an oversize entry late in a batch
// must not leave the earlier chunks written.
Task<Status> EnvoyKv::batch_put(std::vector<KvEntry> entries) {
    if (auto s = envoy::check_kv_entry_sizes(entries); !s.ok())
        co_return s;
    for (auto& chunk : chunk_entries(std::move(entries))) {
        auto op = envoy_.kv_put(actor_id_, std::move(chunk));
        Status s = co_await std::move(op);
        if (!s.ok())
            co_return s;
    }
    co_return Status{};
}

Task<Status> EnvoyKv::batch_delete(std::vector<Bytes> keys) {
    if (auto s = envoy::check_kv_key_sizes(keys); !s.ok())
        co_return s;
    for (auto& chunk : chunk_keys(std::move(keys))) {
        auto op = envoy_.kv_delete(actor_id_, std::move(chunk));
        Status s = co_await std::move(op);
        if (!s.ok())
            co_return s;
    }
    co_return Status{};
}

Task<Status> EnvoyKv::delete_range(Bytes start, Bytes end) {
    auto op = envoy_.kv_delete_range(actor_id_, std::move(start), std::move(end));
    co_return co_await std::move(op);
}

Task<Result<std::vector<KvEntry>>> EnvoyKv::list_prefix(Bytes prefix, ListOpts opts) {
    auto op = envoy_.kv_list_prefix(actor_id_, std::move(prefix), to_envoy(opts));
    co_return co_await std::move(op);
}

Task<Result<std::vector<KvEntry>>> EnvoyKv::list_range(Bytes start, Bytes end, ListOpts opts) {
    auto op =
        envoy_.kv_list_range(actor_id_, std::move(start), std::move(end), true, to_envoy(opts));
    co_return co_await std::move(op);
}

Task<Status> EnvoyKv::apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) {
    // Nothing is deleted when a put would be refused.
    if (auto s = envoy::check_kv_entry_sizes(puts); !s.ok())
        co_return s;
    if (auto s = envoy::check_kv_key_sizes(deletes); !s.ok())
        co_return s;
    if (!deletes.empty()) {
        auto del = batch_delete(std::move(deletes));
        Status s = co_await std::move(del);
        if (!s.ok())
            co_return s;
    }
    if (!puts.empty()) {
        auto put = batch_put(std::move(puts));
        Status s = co_await std::move(put);
        if (!s.ok())
            co_return s;
    }
    co_return Status{};
}

}  // namespace rivetkit::core

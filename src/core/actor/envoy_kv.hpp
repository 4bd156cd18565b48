#pragma once
// The production KV backend: an actor's KV in the engine, reached through the envoy client.
// One instance per actor (the backend interface carries no actor id). Batches larger than the
// engine's per-request limits (128 keys, 976 KiB of put payload) are split into several requests;
// an oversize key or value anywhere in a batch fails the whole batch locally with
// kv/key_too_large / kv/value_too_large before any request is sent.

#include <string>

#include "base/shared_string.hpp"
#include "core/actor/kv.hpp"
#include "envoy/handle.hpp"

namespace rivetkit::core {

class EnvoyKv final : public KvBackend {
  public:
    EnvoyKv(envoy::EnvoyHandle envoy, SharedString actor_id)
        : envoy_(std::move(envoy)), actor_id_(std::move(actor_id)) {}

    std::string_view label() const noexcept override { return "envoy"; }
    Task<Result<std::vector<std::optional<Bytes>>>> batch_get(std::vector<Bytes> keys) override;
    Task<Status> batch_put(std::vector<KvEntry> entries) override;
    Task<Status> batch_delete(std::vector<Bytes> keys) override;
    Task<Status> delete_range(Bytes start, Bytes end) override;
    Task<Result<std::vector<KvEntry>>> list_prefix(Bytes prefix, ListOpts opts) override;
    Task<Result<std::vector<KvEntry>>> list_range(Bytes start, Bytes end, ListOpts opts) override;
    // Deletes, then puts (as InMemoryKv): a key in both ends up written. Not atomic across the
    // two halves — the engine has no multi-operation request.
    Task<Status> apply_batch(std::vector<KvEntry> puts, std::vector<Bytes> deletes) override;

  private:
    envoy::EnvoyHandle envoy_;
    SharedString actor_id_;
};

}  // namespace rivetkit::core

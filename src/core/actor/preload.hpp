#pragma once
// KV data the engine sends along with a start command, so startup can skip live KV round trips.
//
// A key lookup is tri-state: present (value), requested but absent (known empty), or not requested
// (unknown: ask live KV). A prefix lookup answers only for a prefix that was requested exactly.

#include <optional>
#include <vector>

#include "base/bytes.hpp"
#include "core/actor/kv.hpp"
#include "core/actor/persist.hpp"

namespace rivetkit::core {

class PreloadedKv {
  public:
    PreloadedKv() = default;
    PreloadedKv(std::vector<KvEntry> entries, std::vector<Bytes> requested_get_keys,
                std::vector<Bytes> requested_prefixes)
        : entries_(std::move(entries)),
          requested_get_keys_(std::move(requested_get_keys)),
          requested_prefixes_(std::move(requested_prefixes)) {}

    // nullopt: not covered by the preload. Some(nullopt): known absent. Some(value): present.
    std::optional<std::optional<Bytes>> key_entry(BytesView key) const;
    // nullopt unless exactly this prefix was requested.
    std::optional<std::vector<KvEntry>> prefix_entries(BytesView prefix) const;
    bool requested_key(BytesView key) const;

    const std::vector<KvEntry>& entries() const noexcept { return entries_; }

  private:
    std::vector<KvEntry> entries_;
    std::vector<Bytes> requested_get_keys_;
    std::vector<Bytes> requested_prefixes_;
};

// What the registry learned about key [1] from the start command's preload bundle.
struct PreloadedPersistedActor {
    enum class Kind : std::uint8_t { NoBundle, BundleExistsButEmpty, Some };
    Kind kind = Kind::NoBundle;
    PersistedActor actor;

    static PreloadedPersistedActor no_bundle() { return {}; }
    static PreloadedPersistedActor bundle_exists_but_empty() {
        return {Kind::BundleExistsButEmpty, {}};
    }
    static PreloadedPersistedActor some(PersistedActor actor) {
        return {Kind::Some, std::move(actor)};
    }
};

}  // namespace rivetkit::core

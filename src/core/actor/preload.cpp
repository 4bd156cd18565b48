#include "core/actor/preload.hpp"

#include <algorithm>

namespace rivetkit::core {
namespace {
bool same(BytesView a, BytesView b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
}
}  // namespace

bool PreloadedKv::requested_key(BytesView key) const {
    return std::any_of(requested_get_keys_.begin(), requested_get_keys_.end(),
                       [&](const Bytes& k) { return same(k, key); });
}

std::optional<std::optional<Bytes>> PreloadedKv::key_entry(BytesView key) const {
    for (const auto& [k, v] : entries_) {
        if (same(k, key))
            return std::optional<Bytes>(v);
    }
    if (requested_key(key))
        return std::optional<Bytes>();
    return std::nullopt;
}

std::optional<std::vector<KvEntry>> PreloadedKv::prefix_entries(BytesView prefix) const {
    const bool requested = std::any_of(requested_prefixes_.begin(), requested_prefixes_.end(),
                                       [&](const Bytes& p) { return same(p, prefix); });
    if (!requested)
        return std::nullopt;
    std::vector<KvEntry> out;
    for (const auto& entry : entries_) {
        if (starts_with(entry.first, prefix))
            out.push_back(entry);
    }
    return out;
}

}  // namespace rivetkit::core

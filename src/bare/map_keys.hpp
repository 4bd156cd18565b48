#pragma once
// Used by generated map decoders: BARE maps must not repeat a key.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace rivetkit::bare {

// Index of the first entry whose key already appeared earlier, if any. Up to 32 entries (a
// request's headers) each key is compared with the ones before it, without allocating; past that,
// sorting pointers keeps this O(n log n) without requiring keys to be hashable.
template <typename K, typename V>
std::optional<std::size_t> find_duplicate_key(const std::vector<std::pair<K, V>>& entries) {
    if (entries.size() < 2)
        return std::nullopt;
    if (entries.size() <= 32) {
        for (std::size_t i = 1; i < entries.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (entries[j].first == entries[i].first)
                    return i;
            }
        }
        return std::nullopt;
    }
    std::vector<const std::pair<K, V>*> sorted;
    sorted.reserve(entries.size());
    for (const auto& e : entries)
        sorted.push_back(&e);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
    std::optional<std::size_t> first_dup;
    for (std::size_t i = 1; i < sorted.size(); ++i) {
        if (sorted[i - 1]->first == sorted[i]->first) {
            const auto idx = static_cast<std::size_t>(sorted[i] - entries.data());
            if (!first_dup || idx < *first_dup)
                first_dup = idx;
        }
    }
    return first_dup;
}

}  // namespace rivetkit::bare

#pragma once
// The inspector UI the engine's dashboard loads from the actor itself, served as rivetkit 2.3.19
// serves it: public paths that never ask for the inspector token (the UI then uses the token for
// the data paths, which stay behind it).
//
//   GET /inspector/ui/, /inspector/ui   index.html
//   GET /inspector/ui/<path>            a file of the bundle, 404 inspector/ui_asset_not_found
//   GET /inspector/tab.css              the stylesheet custom tabs link to
//
// The bytes are not part of core: a host links the bundle library (rivetkit::inspector_ui,
// extracted from the pinned npm package by scripts/deps.sh) and hands it to the registry through
// RegistryOptions::inspector_ui. Without it those paths answer 404.

#include <span>
#include <string_view>

#include "envoy/types.hpp"

namespace rivetkit::core::inspector {

struct UiFile {
    std::string_view path;  // relative to the bundle root, e.g. "assets/index-abc.js"
    std::string_view bytes;
};

struct UiBundle {
    std::span<const UiFile> files;  // sorted by path
    std::string_view tab_css;

    const UiFile* find(std::string_view path) const;
};

// Whether `method` `path` (no query string) is one of the public bundle paths.
bool is_ui_bundle_path(std::string_view method, std::string_view path);

// The response for a public bundle path; `bundle` may be null (no bundle linked: 404).
envoy::HttpResponse serve_ui_bundle(const UiBundle* bundle, std::string_view path);

}  // namespace rivetkit::core::inspector

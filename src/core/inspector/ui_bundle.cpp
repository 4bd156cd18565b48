#include "core/inspector/ui_bundle.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace rivetkit::core::inspector {

namespace {

constexpr std::string_view kUiPrefix = "/inspector/ui/";

std::string_view content_type_of(std::string_view path) {
    const auto dot = path.rfind('.');
    if (dot == std::string_view::npos)
        return "application/octet-stream";
    std::string ext(path.substr(dot + 1));
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
        {"html", "text/html; charset=utf-8"},
        {"htm", "text/html; charset=utf-8"},
        {"js", "application/javascript; charset=utf-8"},
        {"mjs", "application/javascript; charset=utf-8"},
        {"cjs", "application/javascript; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"json", "application/json; charset=utf-8"},
        {"map", "application/json; charset=utf-8"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"jpg", "image/jpeg"},
        {"jpeg", "image/jpeg"},
        {"gif", "image/gif"},
        {"webp", "image/webp"},
        {"ico", "image/x-icon"},
        {"woff", "font/woff"},
        {"woff2", "font/woff2"},
        {"ttf", "font/ttf"},
        {"otf", "font/otf"},
        {"txt", "text/plain; charset=utf-8"},
        {"wasm", "application/wasm"},
    };
    for (const auto& [e, type] : kTypes) {
        if (e == ext)
            return type;
    }
    return "application/octet-stream";
}

// Empty, absolute, or with a "." / ".." segment.
bool unsafe(std::string_view rel) {
    if (rel.empty() || rel.front() == '/')
        return true;
    std::size_t start = 0;
    while (start <= rel.size()) {
        auto end = rel.find('/', start);
        if (end == std::string_view::npos)
            end = rel.size();
        const auto seg = rel.substr(start, end - start);
        if (seg == "." || seg == "..")
            return true;
        start = end + 1;
    }
    return false;
}

envoy::HttpResponse with_body(std::uint16_t status, std::string_view type, std::string_view body) {
    envoy::HttpResponse r;
    r.status = status;
    r.headers.emplace_back("content-type", std::string(type));
    // As upstream: revalidate every time (the bundle changes with the host's version), and keep
    // the dashboard's URL (actor id, token-bearing query) out of the asset requests' Referer.
    r.headers.emplace_back("cache-control", "no-cache");
    r.headers.emplace_back("referrer-policy", "no-referrer");
    r.body.assign(body.begin(), body.end());
    return r;
}

envoy::HttpResponse not_found() {
    return with_body(404, "application/json",
                     R"({"group":"inspector","code":"ui_asset_not_found","message":"Inspector UI asset was not found in the embedded bundle","metadata":null})");
}

}  // namespace

const UiFile* UiBundle::find(std::string_view path) const {
    auto it = std::lower_bound(files.begin(), files.end(), path,
                               [](const UiFile& f, std::string_view p) { return f.path < p; });
    return it != files.end() && it->path == path ? &*it : nullptr;
}

bool is_ui_bundle_path(std::string_view method, std::string_view path) {
    if (method != "GET")
        return false;
    return path == "/inspector/tab.css" || path == "/inspector/ui" || path.starts_with(kUiPrefix);
}

envoy::HttpResponse serve_ui_bundle(const UiBundle* bundle, std::string_view path) {
    if (bundle == nullptr)
        return not_found();
    if (path == "/inspector/tab.css")
        return bundle->tab_css.empty() ? not_found()
                                       : with_body(200, "text/css; charset=utf-8", bundle->tab_css);
    std::string rel = path == "/inspector/ui" ? "" : std::string(path.substr(kUiPrefix.size()));
    if (rel.empty() || rel.back() == '/')
        rel += "index.html";
    if (unsafe(rel))
        return not_found();
    const UiFile* file = bundle->find(rel);
    if (file == nullptr)
        return not_found();
    return with_body(200, content_type_of(rel), file->bytes);
}

}  // namespace rivetkit::core::inspector

// The inspector UI's public paths: which requests they are, what each answers (content type,
// caching, the 404 body), traversal refused; and the bundle linked from the pinned package.

#include "core/inspector/ui_bundle.hpp"

#include <gtest/gtest.h>

#include <string>

#include "rivetkit_inspector_ui.hpp"

namespace rivetkit::core::inspector {
namespace {

std::string header(const envoy::HttpResponse& r, std::string_view name) {
    for (const auto& [k, v] : r.headers) {
        if (k == name)
            return v;
    }
    return {};
}

std::string body(const envoy::HttpResponse& r) {
    return std::string(r.body.begin(), r.body.end());
}

constexpr UiFile kFiles[] = {
    {"assets/app.js", "console.log(1)"},
    {"assets/app.js.map", "{}"},
    {"assets/font.woff2", "wOF2"},
    {"docs/index.html", "<p>docs</p>"},
    {"index.html", "<!doctype html>"},
};
const UiBundle kBundle{kFiles, "a{}"};

TEST(InspectorUiBundle, OnlyGetsOnTheUiAndTabCssPathsArePublic) {
    EXPECT_TRUE(is_ui_bundle_path("GET", "/inspector/ui/"));
    EXPECT_TRUE(is_ui_bundle_path("GET", "/inspector/ui"));
    EXPECT_TRUE(is_ui_bundle_path("GET", "/inspector/ui/assets/app.js"));
    EXPECT_TRUE(is_ui_bundle_path("GET", "/inspector/tab.css"));
    EXPECT_FALSE(is_ui_bundle_path("POST", "/inspector/ui/"));
    EXPECT_FALSE(is_ui_bundle_path("HEAD", "/inspector/tab.css"));
    EXPECT_FALSE(is_ui_bundle_path("GET", "/inspector/state"));
    EXPECT_FALSE(is_ui_bundle_path("GET", "/inspector/uix"));
    EXPECT_FALSE(is_ui_bundle_path("GET", "/inspector/summary"));
}

TEST(InspectorUiBundle, ServesIndexAssetsAndTabCssWithTheirTypes) {
    for (std::string_view path : {"/inspector/ui/", "/inspector/ui"}) {
        auto r = serve_ui_bundle(&kBundle, path);
        EXPECT_EQ(r.status, 200);
        EXPECT_EQ(header(r, "content-type"), "text/html; charset=utf-8");
        EXPECT_EQ(header(r, "cache-control"), "no-cache");
        EXPECT_EQ(header(r, "referrer-policy"), "no-referrer");
        EXPECT_EQ(body(r), "<!doctype html>");
    }
    auto js = serve_ui_bundle(&kBundle, "/inspector/ui/assets/app.js");
    EXPECT_EQ(js.status, 200);
    EXPECT_EQ(header(js, "content-type"), "application/javascript; charset=utf-8");
    EXPECT_EQ(body(js), "console.log(1)");
    EXPECT_EQ(header(serve_ui_bundle(&kBundle, "/inspector/ui/assets/app.js.map"), "content-type"),
              "application/json; charset=utf-8");
    EXPECT_EQ(header(serve_ui_bundle(&kBundle, "/inspector/ui/assets/font.woff2"), "content-type"),
              "font/woff2");
    auto sub = serve_ui_bundle(&kBundle, "/inspector/ui/docs/");
    EXPECT_EQ(body(sub), "<p>docs</p>");
    auto css = serve_ui_bundle(&kBundle, "/inspector/tab.css");
    EXPECT_EQ(css.status, 200);
    EXPECT_EQ(header(css, "content-type"), "text/css; charset=utf-8");
    EXPECT_EQ(body(css), "a{}");
}

TEST(InspectorUiBundle, UnknownAssetsTraversalAndAMissingBundleAre404) {
    for (std::string_view path :
         {"/inspector/ui/assets/nope.js", "/inspector/ui/../index.html",
          "/inspector/ui/assets/../index.html", "/inspector/ui/./index.html",
          "/inspector/ui//index.html", "/inspector/ui/assets/", "/inspector/ui/assets"}) {
        auto r = serve_ui_bundle(&kBundle, path);
        EXPECT_EQ(r.status, 404) << path;
        EXPECT_EQ(header(r, "content-type"), "application/json") << path;
        EXPECT_EQ(body(r),
                  R"({"group":"inspector","code":"ui_asset_not_found","message":"Inspector UI asset was not found in the embedded bundle","metadata":null})")
            << path;
    }
    EXPECT_EQ(serve_ui_bundle(nullptr, "/inspector/ui/").status, 404);
    EXPECT_EQ(serve_ui_bundle(nullptr, "/inspector/tab.css").status, 404);
}

// The linked bundle is rivetkit 2.3.19's: an index whose scripts and stylesheets are all in it,
// in the byte order the lookup needs, and the tab stylesheet.
TEST(InspectorUiBundle, TheLinkedBundleHoldsEveryFileItsIndexLoads) {
    const UiBundle& b = inspector_ui::bundle();
    ASSERT_GT(b.files.size(), 10u);
    for (std::size_t i = 1; i < b.files.size(); ++i)
        EXPECT_LT(b.files[i - 1].path, b.files[i].path);
    const UiFile* index = b.find("index.html");
    ASSERT_NE(index, nullptr);
    const std::string html(index->bytes);
    EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
    int referenced = 0;
    for (auto at = html.find("/assets/"); at != std::string::npos; at = html.find("/assets/", at + 1)) {
        const std::string rel = html.substr(at + 1, html.find('"', at) - at - 1);
        EXPECT_NE(b.find(rel), nullptr) << rel;
        ++referenced;
    }
    EXPECT_GT(referenced, 0);
    EXPECT_NE(b.tab_css.find("--rivet-"), std::string_view::npos);
}

}  // namespace
}  // namespace rivetkit::core::inspector

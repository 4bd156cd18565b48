#pragma once
// The inspector UI bundle of the pinned rivetkit release, linked into this library (see
// CMakeLists.txt): hand it to core::registry::RegistryOptions::inspector_ui.

#include "core/inspector/ui_bundle.hpp"

namespace rivetkit::inspector_ui {

const core::inspector::UiBundle& bundle();

}  // namespace rivetkit::inspector_ui

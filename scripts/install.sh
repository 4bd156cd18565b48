#!/usr/bin/env bash
# Builds rivetkit-cpp (Release) and installs it — headers, libraries, the CMake package, the
# rivetkit-host executable and the pinned Rivet Engine — under a prefix:
#
#   bash scripts/install.sh [prefix]        # default: ~/.local/rivetkit
#
# Then a project of your own finds it with `cmake -DCMAKE_PREFIX_PATH=<prefix>` and
# find_package(rivetkit) (docs/getting-started.md). Installs what it needs first (scripts/deps.sh).
# RIVETKIT_INSTALL_FROM=<configured build dir> installs an existing build instead of building
# (the docs test uses CI's build).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/deps.sh"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"
prefix="${1:-$HOME/.local/rivetkit}"
build="${RIVETKIT_INSTALL_FROM:-}"
if [[ -z $build ]]; then
    build=build/release
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
        -DRIVETKIT_TESTS=OFF -DRIVETKIT_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j "$jobs" --target rivetkit_api rivetkit_host rivetkit_testing \
    rivetkit_client rivetkit-host
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "rivetkit-cpp installed in $prefix (CMake: -DCMAKE_PREFIX_PATH=$prefix)"

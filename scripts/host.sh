#!/usr/bin/env bash
# The main job: build the host executable and run it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/deps.sh"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DRIVETKIT_TESTS=OFF \
    -DRIVETKIT_BENCH=OFF >/dev/null
cmake --build build/release -j "$jobs" --target rivetkit-host
exec build/release/examples/host/rivetkit-host "$@"

#!/usr/bin/env bash
# The main job: build the host executable and run it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/deps.sh"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"
# -O2 (not CMake's -O3): the level CI builds with warnings as errors, so GCC 12's -O3-only false
# positives (-Wstringop-overread, -Wrestrict in libstdc++) do not greet a new user. Unity batches
# as in CI (see README, build times).
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DRIVETKIT_TESTS=OFF -DRIVETKIT_BENCH=OFF >/dev/null
cmake --build build/release -j "$jobs" --target rivetkit-host
exec build/release/examples/host/rivetkit-host "$@"

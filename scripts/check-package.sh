#!/usr/bin/env bash
# Checks the installed CMake package: installs an existing (RelWithDebInfo, non-sanitizer) build
# into a temporary prefix, then configures and builds examples/outside — a separate project that
# does find_package(rivetkit) and links rivetkit::rivetkit — against that prefix only. Builds,
# runs nothing (no engine needed).
#
#   bash scripts/check-package.sh build/ci
#
# Exit status non-zero on any failure. The temporary prefix is removed afterwards
# (RIVETKIT_KEEP_PACKAGE_CHECK=1 keeps it and prints its path).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

build="${1:?usage: check-package.sh <configured build dir>}"
build="$(cd "$build" && pwd)"
[[ -f "$build/CMakeCache.txt" ]] || { echo "check-package: $build is not a CMake build dir" >&2; exit 2; }
if grep -q '^RIVETKIT_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "check-package: $build is a sanitizer build; pass the release build" >&2
    exit 2
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-package.XXXXXX")"
cleanup() {
    if [[ "${RIVETKIT_KEEP_PACKAGE_CHECK:-0}" == 1 ]]; then
        echo "check-package: kept $work"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

start=$SECONDS
# The libraries the package exports (building rivetkit_api builds everything it links; this also
# re-runs CMake when the build dir predates the install rules).
cmake --build "$build" --target rivetkit_api -- -j"$jobs"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
echo "check-package: installed $(find "$work/prefix" -type f | wc -l) files into $work/prefix"

# Only the temporary prefix (plus the system) may satisfy find_package: the outside project must
# not see this source tree.
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$RIVETKIT_ROOT/examples/outside" -B "$work/outside" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
    "${launcher[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/outside" -- -j"$jobs"
[[ -x "$work/outside/counter-host" ]]
if grep -rq "$RIVETKIT_ROOT/src\|$RIVETKIT_ROOT/include" "$work/outside/build.ninja"; then
    echo "check-package: the outside build refers to the source tree" >&2
    exit 1
fi
echo "check-package: OK (examples/outside built against the installed package in $((SECONDS - start)) s)"

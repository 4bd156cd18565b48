#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it:
#   1. install dependencies (idempotent),
#   2. warnings-as-errors build + every test,
#   3. the installed CMake package, used by an outside project (examples/outside),
#   4. ASan+UBSan build + every test,
#   5. bounded libFuzzer runs of the decoders.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/deps.sh"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"

build() {  # build <dir> <extra cmake args...>
    local dir=$1; shift
    local start=$SECONDS
    cmake -S . -B "$dir" -G Ninja -DRIVETKIT_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    echo "== $dir built in $((SECONDS - start)) s (ccache $([[ -n ${CCACHE_DISABLE:-} ]] && echo off || echo on))"
}

echo "== build (release, -Werror)"
build build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo
echo "== tests (release)"
ctest --test-dir build/ci --output-on-failure -j "$jobs"

echo "== package (cmake --install, examples/outside built against it with find_package)"
bash "$here/check-package.sh" build/ci

echo "== build (asan+ubsan)"
build build/asan -DCMAKE_BUILD_TYPE=Debug -DRIVETKIT_SANITIZE=ON -DRIVETKIT_BENCH=OFF
echo "== tests (asan+ubsan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure -j "$jobs"

if [[ -x "$here/fuzz.sh" ]]; then
    echo "== fuzz (bounded)"
    "$here/fuzz.sh"
fi

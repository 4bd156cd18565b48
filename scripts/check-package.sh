#!/usr/bin/env bash
# Checks the installed CMake package: installs an existing (RelWithDebInfo, non-sanitizer) build
# into a temporary prefix, then, against that prefix only, builds two separate projects that do
# find_package(rivetkit):
#   examples/testing  the example actors' unit tests on rivetkit::testing — built and run;
#   examples/outside  a ~15-line program hosting a counter — built and run with no endpoint, so it
#                     starts the engine installed with the package (libexec/rivetkit) on
#                     127.0.0.1:6420 (or reuses one answering there), serves an action, and
#                     stops on SIGTERM.
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
cmake --build "$build" --target rivetkit_api rivetkit_host rivetkit_testing rivetkit-host -- -j"$jobs"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
echo "check-package: installed $(find "$work/prefix" -type f | wc -l) files into $work/prefix"

# Only the temporary prefix (plus the system) may satisfy find_package: the outside project must
# not see this source tree.
launcher=()
if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# build_against_package <examples/ subfolder>: configured and built in $work/<subfolder> with the
# temporary prefix as the only rivetkit, and none of the source tree's headers used.
build_against_package() {
    local name=$1
    cmake -S "$RIVETKIT_ROOT/examples/$name" -B "$work/$name" -G Ninja \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_PREFIX_PATH="$work/prefix" \
        -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON \
        "${launcher[@]}" >"$work/configure-$name.log" || { cat "$work/configure-$name.log"; exit 1; }
    cmake --build "$work/$name" -- -j"$jobs"
    if grep -rq "$RIVETKIT_ROOT/src\|$RIVETKIT_ROOT/include" "$work/$name/build.ninja"; then
        echo "check-package: the $name build refers to the source tree" >&2
        exit 1
    fi
}
build_against_package outside
[[ -x "$work/outside/counter-host" ]]

# The test kit: the example actors' tests, built against the package and run.
build_against_package testing
"$work/testing/examples-test" --gtest_brief=1

# The outside program with no endpoint: the installed engine, started and stopped by it.
[[ -x "$work/prefix/libexec/rivetkit/rivet-engine" ]] || {
    echo "check-package: cmake --install did not install the engine (libexec/rivetkit/rivet-engine)" >&2
    exit 1
}
env -u RIVET_ENDPOINT -u RIVET_ENGINE_BIN XDG_DATA_HOME="$work/data" RIVET_THREADS=1 \
    "$work/outside/counter-host" >"$work/host.log" 2>&1 &
host_pid=$!
deadline=$((SECONDS + 90))
until grep -q "host ready" "$work/host.log"; do
    if ! kill -0 "$host_pid" 2>/dev/null || ((SECONDS > deadline)); then
        echo "check-package: counter-host did not become ready:" >&2
        tail -20 "$work/host.log" >&2
        kill -KILL "$host_pid" 2>/dev/null || true
        exit 1
    fi
    sleep 0.2
done
answer=""
for _ in $(seq 1 50); do
    answer="$(curl -fsS -X POST -H 'content-type: application/json' -d '{"args":[2]}' \
        'http://127.0.0.1:6420/gateway/counter/action/increment?rvt-namespace=default&rvt-method=getOrCreate&rvt-runner=default&rvt-key=package-check&rvt-crash-policy=sleep' || true)"
    [[ $answer == *'"output"'* ]] && break
    sleep 0.2
done
kill -TERM "$host_pid"
wait "$host_pid" || { echo "check-package: counter-host exited with $?" >&2; tail -20 "$work/host.log" >&2; exit 1; }
[[ $answer == *'"output"'* ]] || { echo "check-package: no answer from the counter: $answer" >&2; tail -20 "$work/host.log" >&2; exit 1; }
grep -q "starting local engine\|reusing the engine" "$work/host.log"
echo "check-package: counter-host answered $answer on the engine it $(grep -q 'starting local engine' "$work/host.log" && echo started || echo reused)"
echo "check-package: OK (examples/outside and examples/testing built against the installed package, run, in $((SECONDS - start)) s)"

#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it:
#   1. install dependencies (idempotent),
#   2. warnings-as-errors build + the real-engine tests (every encoding),
#   3. the installed CMake package, used by an outside project (examples/outside),
#   4. ASan+UBSan build + every unit test and the real-engine tests (the encoding-parametrized
#      interop suites in bare only: json and cbor differ from it only in the codec, which the
#      unit tests and the client-encoding fuzzer cover under the sanitizers),
#   5. bounded libFuzzer runs of the decoders.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/timing.sh"

phase deps "$here/deps.sh"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"
timing_ccache_baseline

# CI builds: unity batches (each group of sources compiled once together, see README's build-time
# section) and line-table debug info (-g1: stack traces and sanitizer reports keep file:line; build
# with full -g yourself for a debugger).
build() {  # build <dir> <extra cmake args...>
    local dir=$1; shift
    cmake -S . -B "$dir" -G Ninja -DRIVETKIT_WERROR=ON -DCMAKE_UNITY_BUILD=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
}

# The release build first, at full priority. Every other build runs at nice 19 beside it or beside
# a test phase, taking only the CPU left idle (the release build's links and lone last units; the
# tests' waits on engines and clients), and its remainder is awaited as its own phase.
# Benchmarks are not run here (bench/README.md has how); the dev build compiles them.
# The code under test is built at -O2; the tests themselves at -Og (RIVETKIT_TEST_OPTIMIZATION).
# The unit tests (virtual time, no engine) run once, in the sanitizer pass: this build leaves them
# out (RIVETKIT_UNIT_TESTS=OFF) and runs the real-engine tests, whose behaviour depends on speed.
# The sanitizer build uses clang 14 (installed for the fuzzers anyway): at -O0 it compiles the
# heavy units in 59-87 % of GCC 12's CPU time (README, "Build times"), and its ASan reported what
# GCC's had missed. GCC still builds, with warnings as errors, the release tree that the engine
# tests run and that ships.
mkdir -p build/logs
background "asan+ubsan build" build/logs/asan-build.log \
    build build/asan-clang -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-g1" -DRIVETKIT_SANITIZE=ON -DRIVETKIT_BENCH=OFF
phase "release build" build build/ci -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DRIVETKIT_BENCH=OFF \
    -DRIVETKIT_TEST_OPTIMIZATION=-Og -DRIVETKIT_UNIT_TESTS=OFF
# Tests that start an engine run first (COST in tests/CMakeLists.txt), one more than the cores.
# The seeded simulations are built here too and run at length: at -O2 a seed costs 28-48x less
# CPU than under the sanitizers (plain build: the runtime's 1,000 seeds 2.4 s, the envoy's 1,000
# 8 s, the whole host's 100 10 s; under the sanitizers 116 s, 300 s and 280 s).
tests_jobs=$((jobs + 1))
# (Twice the seeds CI ran before for the runtime and the envoy, 1.5x for the whole host.)
RIVETKIT_SIM_SEEDS=2000 RIVETKIT_ENVOY_SIM_SEEDS=1000 RIVETKIT_STACK_SIM_SEEDS=60 \
    phase "release tests" ctest --test-dir build/ci --output-on-failure -j "$tests_jobs"

# cmake --install, then examples/outside and examples/testing built against it and run; then
# docs/getting-started.md run as a new user would (installing from this build).
phase package bash "$here/check-package.sh" build/ci
phase "getting-started guide" bash "$here/check-docs.sh" build/ci

await "asan+ubsan build"
background "fuzz build" build/logs/fuzz-build.log "$here/fuzz.sh" build
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Under the sanitizers: the 100-connection fan-outs send 250 broadcasts instead of 1,000 (the same
# code paths; at 1,000 they took ~25 s each, one at a time), and the dashboard test is left to
# the release run: the sanitizer build does not compile it (it drives Chromium; the host's side of
# it, the inspector routes, has its own tests here).
export RIVETKIT_INTEROP_FANOUT_EVENTS=250
# The seeded simulations, which ran thousands of seeds in the release pass: here a few, for the
# sanitizers' sake (the runtime's 200, the envoy's 60, the whole host's 6: ~20 s each).
export RIVETKIT_SIM_SEEDS=200 RIVETKIT_ENVOY_SIM_SEEDS=60 RIVETKIT_STACK_SIM_SEEDS=6
phase "asan+ubsan tests" ctest --test-dir build/asan-clang --output-on-failure -j "$tests_jobs" \
    -E '^Encodings/(Examples|Interop|InteropFanout|QueueInterop)\.[^ ]*/(json|cbor)( |$)'

unset ASAN_OPTIONS UBSAN_OPTIONS RIVETKIT_INTEROP_FANOUT_EVENTS RIVETKIT_SIM_SEEDS \
    RIVETKIT_ENVOY_SIM_SEEDS RIVETKIT_STACK_SIM_SEEDS

await "fuzz build"
# 15 s per target here (fuzz.sh's default is 20): the seven targets run two at a time, four rounds;
# the corpus kept in the repo is replayed in full either way, and scripts/fuzz-deep.sh runs long.
RIVETKIT_FUZZ_SECONDS=15 phase "fuzz (bounded)" "$here/fuzz.sh" run

timing_summary

#!/usr/bin/env bash
# The chaos runner in one command (README.md here): builds the chaos host and client (release),
# then runs run.mjs with the given options, e.g.
#
#   bash tests/chaos/run.sh --seed 18 --duration-s 3600
#
# Results: the last line of stdout (the report), and <out>/report.json with every violation and the
# operations involved; <out> (default: a fresh folder under /tmp) keeps the logs, the history and
# the final states. Env: RIVETKIT_CHAOS_BUILD (default build/chaos) is the build folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/env.sh"
cd "$RIVETKIT_ROOT"
build="${RIVETKIT_CHAOS_BUILD:-build/chaos}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_UNITY_BUILD=ON -DRIVETKIT_UNIT_TESTS=OFF -DRIVETKIT_BENCH=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target rivetkit-chaos-host rivetkit-chaos-client >/dev/null
out=""
args=()
while (($#)); do
    if [[ $1 == --out ]]; then out=$2; shift 2; continue; fi
    args+=("$1")
    shift
done
[[ -n $out ]] || out="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-chaos-XXXXXX")"
echo "chaos: logs, history and report in $out" >&2
exec "${RIVET_NODE_BIN:-node}" "$here/run.mjs" --host-bin "$build/tests/chaos/rivetkit-chaos-host" \
    --client-bin "$build/tests/chaos/rivetkit-chaos-client" --out "$out" "${args[@]}"

#!/usr/bin/env bash
# The peer benchmark: the same actors (`counter`, and `resident` for the awake scenario) served by
# upstream's TypeScript host (rivetkit 2.3.19, tests/interop/js/ts_host.mjs) and by rivetkit-host,
# each on its own fresh engine 2.3.19 (one after the other, same machine, same invocation), driven
# by the official TypeScript client (driver.mjs). Prints a side-by-side table with C++/TS ratios
# (report.mjs); see bench/README.md.
#
#   bash bench/peer/run.sh [--quick] [--rounds N] [--only REGEX] [--awake N] [--no-ts] [--isolate]
#
# --only picks scenario groups (cold, sequential, throughput, fanout, sleep, awake), --awake the
# number of awake actors, --no-ts leaves out the TypeScript host (a quick look at one change).
#
# --isolate: each scenario group on an engine and a host of its own, both fresh, instead of all
# groups one after the other on one engine. Without it a group's engine CPU per operation carries
# what the groups before it left the engine doing (the fan-out rows cost the engine 8–11 ms per
# broadcast after the throughput groups, 5–6 ms on a fresh engine), and that residue is not the
# same for both hosts: the faster host reaches each group sooner.
#
# With N rounds the TS host and rivetkit-host alternate N times (ts cpp, cpp ts, ...), each on a
# fresh engine, and the table shows each measure's median over the rounds: the engine's CPU per
# operation drifts between runs minutes apart, so one run per host cannot rank engine cost.
# The one-thread run happens once. Default: 1 round with --quick, 3 otherwise.
#
# The C++ side is rivetkit-host's registry with the example actors plus `resident`, the memory
# benchmark's never-sleeping actor (bench/memory/memory_host.cpp), which the awake scenario needs:
# its actors must all be awake when the RSS is read, and creating 1,000 takes longer than the
# counter's 30 s sleep timeout. ts_host.mjs serves the same `resident`.
#
# Env: RIVETKIT_HOST_BIN (default: builds build/release/bench/memory/rivetkit-memory-host; any
#      host serving `counter` and `resident` that prints "endpoint:" once ready),
#      KEEP_TMP=1 keeps the engines' and hosts' logs and the raw results,
#      RIVET_LOG_LEVEL the hosts' log level (default warn),
#      PEER_ENGINE_PERF=<perf events> counts them for the engine over each driver run (perf stat,
#      kept as <label>/engine-perf.csv; with KEEP_TMP=1), e.g.
#      syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_wait,context-switches,task-clock
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/env.sh"
source "$here/../../scripts/engine.sh"
cd "$RIVETKIT_ROOT"
quick=()
extra=()
rounds=""
no_ts=""
only=""
isolate=""
while (($#)); do
    case $1 in
        --quick) quick+=(--quick) ;;
        --rounds) rounds=$2; shift ;;
        --only) only=$2; shift ;;
        --awake) extra+=(--awake "$2"); shift ;;
        --no-ts) no_ts=1 ;;
        --isolate) isolate=1 ;;
        *) echo "usage: run.sh [--quick] [--rounds N] [--only REGEX] [--awake N] [--no-ts]" \
                "[--isolate]" >&2; exit 2 ;;
    esac
    shift
done
[[ -n $rounds ]] || { ((${#quick[@]})) && rounds=1 || rounds=3; }

host_bin="${RIVETKIT_HOST_BIN:-}"
if [[ -z $host_bin ]]; then
    cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
        -DRIVETKIT_TESTS=OFF -DRIVETKIT_BENCH=ON >/dev/null
    cmake --build build/release -j "$jobs" --target rivetkit-memory-host >/dev/null
    host_bin=build/release/bench/memory/rivetkit-memory-host
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-peer-XXXXXX")"
host_pid=""
engine_cleanup_on_exit peer

stop_host() {  # SIGTERM, then SIGKILL after 10 s (a draining host may take its time)
    kill -TERM "$host_pid" 2>/dev/null || true
    local deadline=$((SECONDS + 10))
    while kill -0 "$host_pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -KILL "$host_pid" 2>/dev/null || true
    wait "$host_pid" 2>/dev/null || true
    host_pid=""
}

# run_group <label> <dir> <out> <only regex> <ready pattern> <command...>: fresh engine, the host,
# the driver for the groups the regex picks (all when empty), both stopped.
run_group() {
    local label=$1 dir=$2 out=$3 pick=$4 ready=$5; shift 5
    local only_arg=()
    [[ -z $pick ]] || only_arg=(--only "$pick")
    mkdir -p "$dir"
    engine_start "$dir"
    # A host with the memory host's heap probe writes its malloc heap in use there (others ignore it).
    RIVET_ENDPOINT="$engine_endpoint" RIVET_LOG_LEVEL="${RIVET_LOG_LEVEL:-warn}" \
        MEMORY_HOST_HEAP_FILE="$dir/heap" "$@" >"$dir/host.log" 2>&1 &
    host_pid=$!
    host_wait_ready "peer: $label" "$dir/host.log" "$ready" 60 || return 1
    echo "peer: $label host ready on $engine_endpoint" >&2
    local perf_pid=""
    if [[ -n ${PEER_ENGINE_PERF:-} ]]; then  # the engine's syscalls and context switches
        perf stat -x, -o "$dir/engine-perf.csv" -e "$PEER_ENGINE_PERF" -p "$engine_pid" &
        perf_pid=$!
    fi
    node "$here/driver.mjs" --endpoint "$engine_endpoint" --engine-pid "$engine_pid" \
        --host-pid "$host_pid" --heap-file "$dir/heap" --engine-metrics "$engine_metrics_url" \
        --out "$out" "${quick[@]}" "${only_arg[@]}" "${extra[@]}" >"$dir/driver.log" 2>&1 || {
        echo "peer: $label driver failed:" >&2; tail -20 "$dir/driver.log" >&2; return 1; }
    if [[ -n $perf_pid ]]; then
        kill -INT "$perf_pid" 2>/dev/null || true
        wait "$perf_pid" 2>/dev/null || true
    fi
    stop_host

    engine_stop
}

# run_one <label> <ready pattern> <command...>: the picked groups on one engine, or with
# --isolate each on its own (results merged into <label>.json in the groups' order).
groups=(cold sequential throughput fanout sleep awake)
run_one() {
    local label=$1 ready=$2; shift 2
    if [[ -z $isolate ]]; then
        run_group "$label" "$tmp/$label" "$tmp/$label.json" "$only" "$ready" "$@"
        return
    fi
    local parts=() g
    for g in "${groups[@]}"; do
        [[ -z $only || $g =~ $only ]] || continue
        run_group "$label $g" "$tmp/$label/$g" "$tmp/$label/$g.json" "^$g\$" "$ready" "$@" || return 1
        parts+=("$tmp/$label/$g.json")
    done
    node -e 'const fs = require("fs");
        const [out, ...parts] = process.argv.slice(1);
        const docs = parts.map((p) => JSON.parse(fs.readFileSync(p, "utf8")));
        fs.writeFileSync(out, JSON.stringify(
            { quick: docs[0]?.quick ?? false, results: docs.flatMap((d) => d.results) }, null, 1));' \
        "$tmp/$label.json" "${parts[@]}"
}

run_ts() { run_one "ts$1" '^ready$' node tests/interop/js/ts_host.mjs; }
run_cpp() { run_one "cpp$1" "endpoint:" "$host_bin"; }
if [[ -n $no_ts ]]; then  # rivetkit-host alone, once: each scenario's measures as JSON lines
    run_cpp "-1"
    node -e 'for (const r of JSON.parse(require("fs").readFileSync(process.argv[1])).results) console.log(JSON.stringify(r))' "$tmp/cpp-1.json"
    exit 0
fi
ts_files="" cpp_files=""
for ((r = 1; r <= rounds; r++)); do
    echo "peer: round $r of $rounds" >&2
    if ((r % 2)); then run_ts "-$r"; run_cpp "-$r"; else run_cpp "-$r"; run_ts "-$r"; fi
    ts_files+="${ts_files:+,}$tmp/ts-$r.json"
    cpp_files+="${cpp_files:+,}$tmp/cpp-$r.json"
done
# The same host on one io thread: how throughput scales with --threads (default: one per core).
run_one cpp1 "endpoint:" "$host_bin" --threads 1
node "$here/report.mjs" "$ts_files" "$cpp_files" "$tmp/cpp1.json"

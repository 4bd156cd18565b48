#!/usr/bin/env bash
# Instructions per action: rivetkit-host under callgrind on a fresh engine 2.3.19, the official
# client making --ops `counter` increments from --callers callers (16), counted only while they run
# (instructions.mjs). A CPU measure that does not drift with the machine's load, for comparing
# two builds of the host (bench/README.md); every thread of the host counts.
#
#   bash bench/peer/instructions.sh [--mode ws|http] [--ops N] [--actors K] [--callers C]
#                                   [--host BIN | --ts] [--perf | --record] [--engine]
#
# Prints "<mode> <ops> ops, <instructions> instructions, <per action> per action, <allocations>
# allocations per action" (heap allocations: calls to malloc, calloc, realloc). Keeps the
# callgrind output (callgrind.out.*) in the printed folder for callgrind_annotate.
#
# --perf: the host runs natively and `perf stat` counts, per action over the same load, its
# syscalls (epoll_wait: one per pass of its io loop), context switches and task-clock, with the
# /proc CPU; prints them as JSON. Needs perf and kernel.perf_event_paranoid <= 1 or root.
#
# --record: the host runs natively and `perf record -g` samples it (kernel included) over the same
# load; perf.data stays in the printed folder for `perf report -i`.
#
# --engine (with --perf or --record): the engine is the process counted or sampled, not the host.
# --ts (with --perf or --record): the host is upstream's TypeScript host
# (tests/interop/js/ts_host.mjs), for the engine's cost beside each host.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/env.sh"
source "$here/../../scripts/engine.sh"
cd "$RIVETKIT_ROOT"
mode=ws ops=2000 actors=1 callers=16 perf="" record="" on_engine="" ts=""
host_bin=build/dev/examples/host/rivetkit-host
while (($#)); do
    case $1 in
        --mode) mode=$2; shift ;;
        --ops) ops=$2; shift ;;
        --actors) actors=$2; shift ;;
        --callers) callers=$2; shift ;;
        --host) host_bin=$2; shift ;;
        --perf) perf=1 ;;
        --record) perf=1 record=1 ;;
        --engine) on_engine=1 ;;
        --ts) ts=1 ;;
        *) echo "usage: instructions.sh [--mode ws|http] [--ops N] [--actors K] [--callers C]" \
                "[--host BIN | --ts] [--perf | --record] [--engine]" >&2; exit 2 ;;
    esac
    shift
done
if [[ -z $perf && -n $on_engine$ts ]]; then
    echo "instructions: --engine and --ts go with --perf or --record" >&2
    exit 2
fi
if [[ -n $perf ]]; then
    command -v perf >/dev/null || { echo "instructions: perf is not installed" >&2; exit 1; }
else
    command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed" >&2; exit 1; }
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-instructions-XXXXXX")"
host_pid=""
engine_cleanup_on_exit instructions keep  # the callgrind output stays for callgrind_annotate

engine_start "$tmp"
if [[ -n $perf ]]; then
    ready="endpoint:" host_cmd=("$host_bin")
    [[ -z $ts ]] || ready='^ready$' host_cmd=(node tests/interop/js/ts_host.mjs)
    RIVET_ENDPOINT="$engine_endpoint" RIVET_LOG_LEVEL=warn "${host_cmd[@]}" >"$tmp/host.log" 2>&1 &
    host_pid=$!
    host_wait_ready instructions "$tmp/host.log" "$ready" 60 || exit 1
    counted=$host_pid
    [[ -z $on_engine ]] || counted=$engine_pid
    node "$here/instructions.mjs" --endpoint "$engine_endpoint" --host-pid "$counted" \
        --mode "$mode" --ops "$ops" --actors "$actors" --callers "$callers" \
        --perf ${record:+--record "$tmp/perf.data"} \
        >"$tmp/driver.out" 2>"$tmp/driver.log" || {
        echo "instructions: driver failed:" >&2; tail -20 "$tmp/driver.log" >&2; exit 1; }
    cat "$tmp/driver.out"
    [[ -z $record ]] || echo "perf report -i $tmp/perf.data"
    exit 0
fi
RIVET_ENDPOINT="$engine_endpoint" RIVET_LOG_LEVEL=warn \
    valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$tmp/callgrind.out.%p" "$host_bin" >"$tmp/host.log" 2>&1 &
host_pid=$!
host_wait_ready instructions "$tmp/host.log" "endpoint:" 180 || exit 1  # slow under callgrind
node "$here/instructions.mjs" --endpoint "$engine_endpoint" --host-pid "$host_pid" --mode "$mode" \
    --ops "$ops" --actors "$actors" --callers "$callers" >"$tmp/driver.out" 2>"$tmp/driver.log" || {
    echo "instructions: driver failed:" >&2; tail -20 "$tmp/driver.log" >&2; exit 1; }
callgrind_control -d "$host_pid" >/dev/null
kill -TERM "$host_pid" 2>/dev/null || true
wait "$host_pid" 2>/dev/null || true
host_pid=""
# Heap allocations: the calls to malloc, calloc and realloc that callgrind counted (operator new
# and asio's aligned allocations go through malloc). Function names appear once in the file, at
# their first "fn=(id) name" or "cfn=(id) name"; later references carry only the id.
count_allocations() {
    awk '
        /^c?fn=\(/ {
            line = $0; is_call = (line ~ /^cfn=/)
            sub(/^c?fn=\(/, "", line); id = line; sub(/\).*/, "", id)
            rest = line; sub(/^[0-9]+\) ?/, "", rest)
            if (rest != "") name[id] = rest
            if (is_call) callee = name[id]
            next
        }
        /^calls=/ {
            v = substr($0, 7); sub(/ .*/, "", v)
            if (callee == "malloc" || callee == "calloc" || callee == "realloc") n += v
        }
        END { print n + 0 }' "$1"
}
total=0
allocations=0
for f in "$tmp"/callgrind.out.*; do
    n=$(awk '/^totals:/ {print $2}' "$f")
    total=$((total + ${n:-0}))
    allocations=$((allocations + $(count_allocations "$f")))
done
echo "$mode $ops ops, $total instructions, $((total / ops)) per action," \
    "$(awk -v a="$allocations" -v o="$ops" 'BEGIN { printf "%.1f", a / o }') allocations per action"

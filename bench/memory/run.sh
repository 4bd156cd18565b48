#!/usr/bin/env bash
# The memory-budget benchmark (bench/README.md): a fresh engine 2.3.19, rivetkit-memory-host (one
# never-sleeping actor type), and the official TypeScript client creating --actors actors and
# opening --conns connections (driver.mjs). Prints the host's RSS at each step and per actor and
# per connection, and the budget it is held to (reported, not asserted).
#
#   bash bench/memory/run.sh [--actors N] [--conns N] [--ts]   # default 10,000 actors, 1,000 conns
#   bash bench/memory/run.sh --stand-in [--actors N] [--conns N]
#
# --ts runs the same load on upstream's TypeScript host (tests/interop/js/ts_host.mjs, its
# `resident` actor) instead, for the engine's side of the comparison.
# --stand-in runs the host against the engine stand-in (stand_in_engine.cpp) instead of engine
# 2.3.19, which cannot keep more than ~1,500 actors awake on two cores: the host's side only.
#
# Env: RIVETKIT_MEMORY_HOST_BIN (default: builds build/release/bench/memory/rivetkit-memory-host),
#      RIVETKIT_MEMORY_STAND_IN_BIN (default: built beside it),
#      KEEP_TMP=1 keeps the engine's and host's logs and the raw result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../scripts/env.sh"
source "$here/../../scripts/engine.sh"
cd "$RIVETKIT_ROOT"
actors=10000
conns=1000
ts=""
stand_in=""
while (($#)); do
    case $1 in
        --actors) actors=$2; shift ;;
        --conns) conns=$2; shift ;;
        --ts) ts=1 ;;
        --stand-in) stand_in=1 ;;
        *) echo "usage: run.sh [--actors N] [--conns N] [--ts | --stand-in]" >&2; exit 2 ;;
    esac
    shift
done

host_bin="${RIVETKIT_MEMORY_HOST_BIN:-}"
if [[ -z $host_bin && -z $ts ]]; then
    cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
        -DRIVETKIT_TESTS=OFF -DRIVETKIT_BENCH=ON >/dev/null
    cmake --build build/release -j "$jobs" --target rivetkit-memory-host rivetkit-memory-stand-in >/dev/null
    host_bin=build/release/bench/memory/rivetkit-memory-host
fi
if [[ -n $stand_in ]]; then
    stand_in_bin="${RIVETKIT_MEMORY_STAND_IN_BIN:-$(dirname "$host_bin")/rivetkit-memory-stand-in}"
    if [[ ! -x $stand_in_bin ]]; then
        cmake --build "$(dirname "$(dirname "$(dirname "$host_bin")")")" -j "$jobs" --target rivetkit-memory-stand-in >/dev/null
    fi
    log="$(mktemp "${TMPDIR:-/tmp}/rivetkit-memory-stand-in-XXXXXX.log")"
    echo "memory: $actors actors, $conns connections against the engine stand-in (host log: $log)" >&2
    exec "$stand_in_bin" --actors "$actors" --conns "$conns" --log "$log" -- "$host_bin"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-memory-XXXXXX")"
host_pid=""
engine_cleanup_on_exit memory

engine_start "$tmp"
if [[ -n $ts ]]; then
    RIVET_ENDPOINT="$engine_endpoint" node tests/interop/js/ts_host.mjs >"$tmp/host.log" 2>&1 &
    ready='^ready$'
else
    RIVET_ENDPOINT="$engine_endpoint" RIVET_LOG_LEVEL=info "$host_bin" >"$tmp/host.log" 2>&1 &
    ready="memory host ready"
fi
host_pid=$!
host_wait_ready memory "$tmp/host.log" "$ready" 60 || exit 1
echo "memory: host ready on $engine_endpoint; $actors actors, $conns connections" >&2
node "$here/driver.mjs" --endpoint "$engine_endpoint" --engine-pid "$engine_pid" --host-pid "$host_pid" \
    --out "$tmp/result.json" --actors "$actors" --conns "$conns" --engine-metrics "$engine_metrics_url" 2> >(tee "$tmp/driver.log" >&2)
if [[ -n $ts ]]; then  # the TypeScript host logs in its own format
    started=n/a stopped=n/a
else
    stopped=$(grep -c 'msg="actor stopped"' "$tmp/host.log" || true)
    started=$(grep -c 'msg="actor started"' "$tmp/host.log" || true)
fi
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1]));
const [started, stopped] = [process.argv[2], process.argv[3]];
const mib = (kb) => (kb / 1024).toFixed(1);
// The stated budget: 64 MiB for the process, 32 KiB per awake actor, 16 KiB per connection.
const budgetKb = 64 * 1024 + 32 * r.actors + 16 * r.connections;
console.log(`| actors started / stopped meanwhile | ${started} / ${stopped} |`);
console.log(`| host RSS: baseline / ${r.actors} actors / + ${r.connections} connections / after a broadcast each / after 20 s idle | ${r.samples.map((s) => mib(s.host_rss_kb)).join(" / ")} MiB |`);
console.log(`| host RSS per awake actor / per connection | ${r.host_kb_per_actor.toFixed(1)} KB / ${r.connections ? r.host_kb_per_connection.toFixed(1) + " KB" : "n/a"} |`);
console.log(`| budget (64 MiB + 32 KiB per actor + 16 KiB per connection) | ${mib(budgetKb)} MiB: ${r.host_rss_kb <= budgetKb ? "within" : "OVER"} (${(100 * r.host_rss_kb / budgetKb).toFixed(0)} %) |`);
console.log(`| engine RSS at the end | ${mib(r.engine_rss_kb)} MiB |`);
console.log(`| create: wall / engine CPU per actor / host CPU per actor | ${r.create_seconds.toFixed(0)} s / ${r.engine_cpu_ms_per_actor.toFixed(1)} ms / ${r.host_cpu_ms_per_actor.toFixed(2)} ms (${r.create_retries} retried) |`);
console.log(`| events delivered (one broadcast per connected actor) | ${r.events_delivered} of ${r.connections} |`);
console.log(`| CPU while idle, 20 s: engine / host | ${r.idle_engine_cpu_ms_per_s.toFixed(0)} / ${r.idle_host_cpu_ms_per_s.toFixed(1)} ms per s |`);
const w = r.engine_work_per_actor, iw = r.idle_engine_work_per_s;
if (w && iw) console.log(`| engine DB transactions / workflow signals: per create, per idle second | ${w.transactions.toFixed(1)} / ${w.signals.toFixed(2)}, ${iw.transactions.toFixed(0)} / ${iw.signals.toFixed(1)} |`);
const t = r.idle_traffic;
console.log(`| while idle: host → engine / engine → host | ${t ? `${t.sent_bytes_per_s.toFixed(0)} B (${t.segs_out_per_s.toFixed(1)} segments) / ${t.received_bytes_per_s.toFixed(0)} B (${t.segs_in_per_s.toFixed(1)} segments) per s` : "unknown (the engine closed a connection)"} |`);
' "$tmp/result.json" "$started" "$stopped"

# Sourced by scripts that need a throw-away Rivet Engine outside the C++ test harness (the
# official-client scripts in tests/interop/js, the peer benchmark in bench/peer). Started the way
# tests/support/engine_harness.cpp starts one: free loopback ports, a fresh data directory under
# the given folder, pool "default" created through the API. Needs scripts/env.sh sourced first.
#
#   engine_start <dir>   starts it; sets engine_pid, engine_endpoint, engine_guard_port and
#                        engine_metrics_url (its Prometheus metrics)
#   engine_stop          SIGKILLs it (its data directory goes with <dir>)
#   engine_cleanup_on_exit <label> [keep]
#                        on exit or interrupt: SIGKILLs the process in $host_pid (if set) and the
#                        engine, and removes $tmp unless KEEP_TMP is set or `keep` is given (the
#                        folder is then named on stderr)
#   host_wait_ready <label> <log> <pattern> <seconds>
#                        waits until the host in $host_pid writes <pattern> to <log>; returns 1
#                        (with the log's tail on stderr) if it exits or the time runs out first
#
# ENGINE_MEMORY_FAST_PATH=1 keeps the engine's lossy in-process pubsub fast path (default: off).

engine_free_ports() {  # three distinct free loopback ports, held open until all are known
    "${RIVET_NODE_BIN:-node}" -e '
const net = require("net");
const servers = [0, 1, 2].map(() => net.createServer());
Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", ok)))).then(() => {
    console.log(servers.map((s) => s.address().port).join(" "));
    servers.forEach((s) => s.close());
});'
}

engine_start() {
    local dir=$1 api_peer_port metrics_port
    read -r engine_guard_port api_peer_port metrics_port < <(engine_free_ports)
    engine_endpoint="http://127.0.0.1:$engine_guard_port"
    engine_metrics_url="http://127.0.0.1:$metrics_port/metrics"
    local env=(
        RUST_BACKTRACE=0
        RUST_LOG_ANSI_COLOR=0
        RIVET__GUARD__HOST=127.0.0.1
        "RIVET__GUARD__PORT=$engine_guard_port"
        RIVET__API_PEER__HOST=127.0.0.1
        "RIVET__API_PEER__PORT=$api_peer_port"
        RIVET__METRICS__HOST=127.0.0.1
        "RIVET__METRICS__PORT=$metrics_port"
        "RIVET__FILE_SYSTEM__PATH=$dir/db"
        "HOME=$dir"
        PATH=/usr/bin:/bin
        # The engine sheds workflow pulls (down to 5%) when CPU use passes 70-90% of its budget,
        # and it measures the whole container's cgroup, so parallel C++ builds starve actor
        # creation (pegboard.route_resolve_query_timeout). A budget of 1000 cores disables that.
        RIVET__RUNTIME__WORKER_CPU_MAX=1000000
    )
    if [[ -z "${ENGINE_MEMORY_FAST_PATH:-}" ]]; then
        # The in-process pubsub fast path hands tunnel messages to the gateway through a
        # 1024-slot broadcast channel and silently skips what a lagging receiver missed.
        env+=(RIVET__MEMORY__DISABLE_MEMORY_OPTIMIZATION=true)
    fi
    env -i "${env[@]}" "$RIVET_ENGINE_BIN" start >"$dir/engine.log" 2>&1 &
    engine_pid=$!

    local deadline=$((SECONDS + 60))
    until curl -sf -o /dev/null "$engine_endpoint/health"; do
        kill -0 "$engine_pid" 2>/dev/null || { echo "engine exited:" >&2; tail -20 "$dir/engine.log" >&2; return 1; }
        ((SECONDS < deadline)) || { echo "engine not healthy in 60 s" >&2; return 1; }
        sleep 0.1
    done
    # /health answers before the engine can take writes (500 "replica ... not configured").
    deadline=$((SECONDS + 60))
    local code
    while :; do
        code="$(curl -s -o "$dir/pool.json" -w '%{http_code}' -X PUT -H 'content-type: application/json' \
            -d '{"datacenters":{"default":{"normal":{}}}}' "$engine_endpoint/runner-configs/default?namespace=default")"
        [[ "$code" == 200 ]] && break
        if [[ "$code" != 5* && "$code" != 000 ]] || ((SECONDS >= deadline)); then
            echo "creating pool failed: $code $(cat "$dir/pool.json")" >&2
            return 1
        fi
        sleep 0.1
    done
}

engine_stop() {
    [[ -n ${engine_pid:-} ]] || return 0
    kill -KILL "$engine_pid" 2>/dev/null || true
    wait "$engine_pid" 2>/dev/null || true
    engine_pid=""
}

engine_cleanup_on_exit() {
    _engine_cleanup_label=$1
    _engine_cleanup_keep=${2:-${KEEP_TMP:-}}
    _engine_cleanup() {
        local status=$?
        set +e
        [[ -n ${host_pid:-} ]] && { kill -KILL "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null; }
        engine_stop
        if [[ -n $_engine_cleanup_keep ]]; then
            echo "$_engine_cleanup_label: logs kept in $tmp" >&2
        else
            rm -rf "$tmp"
        fi
        exit "$status"
    }
    trap _engine_cleanup EXIT
    trap 'exit 130' INT TERM
}

host_wait_ready() {
    local label=$1 log=$2 pattern=$3 seconds=$4
    local deadline=$((SECONDS + seconds))
    until grep -q "$pattern" "$log" 2>/dev/null; do
        if ! kill -0 "$host_pid" 2>/dev/null; then
            echo "$label: host exited:" >&2
            tail -20 "$log" >&2
            return 1
        fi
        ((SECONDS < deadline)) || { echo "$label: host not ready in $seconds s" >&2; return 1; }
        sleep 0.1
    done
}

# Sourced by scripts/test.sh: times each phase of the run and prints a summary at the end, so every
# CI log shows where its minutes went and whether the compiler cache was cold or warm.
#   phase <name> <command...>   run a command as a named, timed phase (stops the run on failure)
#   timing_ccache_baseline      note the cache counters before the first build
#   timing_summary              print the phase table, the total and the cache hits of this run
timing_start=$SECONDS
timing_names=()
timing_secs=()

phase() {
    local name=$1; shift
    local start=$SECONDS
    echo "== $name"
    "$@"
    timing_names+=("$name")
    timing_secs+=($((SECONDS - start)))
    echo "== $name: $((SECONDS - start)) s"
}

ccache_counts() {  # prints "<hits> <misses>" of the local cache, or nothing without ccache
    command -v ccache >/dev/null || return 0
    ccache --print-stats 2>/dev/null | awk '
        $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
        $1 == "cache_miss" { m += $2 }
        END { print h + 0, m + 0 }'
}

timing_ccache_baseline() {
    read -r timing_hits0 timing_misses0 < <(ccache_counts; echo "0 0")
}

timing_summary() {
    local total=$((SECONDS - timing_start)) i
    echo "== timing (this run, $(nproc) cores)"
    for i in "${!timing_names[@]}"; do
        printf '   %-26s %5d s\n' "${timing_names[$i]}" "${timing_secs[$i]}"
    done
    printf '   %-26s %5d s (%d min %d s)\n' total "$total" $((total / 60)) $((total % 60))
    local hits misses
    read -r hits misses < <(ccache_counts; echo "0 0")
    if [[ -n ${CCACHE_DISABLE:-} ]] || ! command -v ccache >/dev/null; then
        echo "   ccache: off"
    else
        hits=$((hits - ${timing_hits0:-0})); misses=$((misses - ${timing_misses0:-0}))
        echo "   ccache: $hits hits, $misses misses among the compiles Ninja ran ($( ((hits + misses)) && echo $((100 * hits / (hits + misses))) || echo 0)% hits; 0% of many means a cold cache)"
    fi
}

# Background work that fills the CPU a test phase leaves idle (tests mostly wait on the engine):
#   background <name> <log> <command...>   start it at nice 19, so the tests keep the CPU they use
#   await <name>                            a timed phase that waits for it (its log on failure)
declare -A timing_bg_pid=() timing_bg_log=()
background() {
    local name=$1 log=$2; shift 2
    echo "== $name: started in the background at nice 19 (log: $log)"
    # A subshell that lowers its own priority, so shell functions can be run too.
    (renice -n 19 -p "$BASHPID" >/dev/null && "$@") >"$log" 2>&1 &
    timing_bg_pid[$name]=$!
    timing_bg_log[$name]=$log
}
await() {
    local name=$1
    phase "$name (rest)" wait_background "$name"
}
wait_background() {
    local name=$1 status=0
    wait "${timing_bg_pid[$name]}" || status=$?
    if ((status != 0)); then
        tail -60 "${timing_bg_log[$name]}" >&2
        echo "== $name failed ($status), log: ${timing_bg_log[$name]}" >&2
        return "$status"
    fi
    tail -3 "${timing_bg_log[$name]}"
}

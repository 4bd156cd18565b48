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
        printf '   %-20s %5d s\n' "${timing_names[$i]}" "${timing_secs[$i]}"
    done
    printf '   %-20s %5d s (%d min %d s)\n' total "$total" $((total / 60)) $((total % 60))
    local hits misses
    read -r hits misses < <(ccache_counts; echo "0 0")
    if [[ -n ${CCACHE_DISABLE:-} ]] || ! command -v ccache >/dev/null; then
        echo "   ccache: off"
    else
        hits=$((hits - ${timing_hits0:-0})); misses=$((misses - ${timing_misses0:-0}))
        echo "   ccache: $hits hits, $misses misses among the compiles Ninja ran ($( ((hits + misses)) && echo $((100 * hits / (hits + misses))) || echo 0)% hits; 0% of many means a cold cache)"
    fi
}

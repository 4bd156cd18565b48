#!/usr/bin/env bash
# Long libFuzzer runs, one per decoder, to be done once per change to a decoder (CI's fuzz phase
# runs each target for seconds and names the targets whose decoder changed since their last
# deep run):
#
#   scripts/fuzz-deep.sh [minutes]   each target for `minutes` (default 10), two at a time; the
#                                    new inputs are merged (minimized) into fuzz/corpus/<target>,
#                                    kept in the repo, and a row per target is appended to
#                                    fuzz/deep-runs.tsv (executions, corpus size, decoder hash)
#   scripts/fuzz-deep.sh --stale     lists the targets whose decoder sources differ from their
#                                    last recorded deep run
#   RIVETKIT_FUZZ_TARGETS="a b"      deep-runs only those targets (names as in `targets` below)
#
# Any crash, leak, timeout or sanitizer report fails the run (the input is in
# build/fuzz/artifacts) and nothing is recorded for that target.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"
dir=build/fuzz
record=fuzz/deep-runs.tsv
targets=(envoy client persist client_encoding inspector storage plain_args)

# What each target decodes with: its harness, the BARE runtime and generator, its schema and the
# hand-written decoders it links.
decoder_paths() {
    local common="fuzz/$1.cpp fuzz/round_trip.hpp src/bare tools/baregen"
    case $1 in
        fuzz_envoy) echo "$common schemas/envoy-protocol" ;;
        fuzz_client) echo "$common schemas/client-protocol" ;;
        fuzz_persist) echo "$common schemas/actor-persist" ;;
        fuzz_client_encoding)
            echo "$common schemas/client-protocol src/core/registry/encoding.cpp" \
                "src/core/registry/encoding.hpp src/core/registry/routes.cpp" ;;
        fuzz_inspector)
            echo "$common schemas/inspector-protocol src/core/inspector/protocol.cpp" \
                "src/core/inspector/protocol.hpp" ;;
        fuzz_storage)
            echo "$common schemas/actor-persist src/core/actor/storage_rows.cpp" \
                "src/core/actor/storage_rows.hpp" ;;
        fuzz_plain_args)
            echo "fuzz/$1.cpp src/api/value.cpp include/rivetkit/value.hpp" \
                "include/rivetkit/detail/callable.hpp src/base/cbor.cpp" \
                "src/core/registry/encoding.cpp" ;;
    esac
}
decoder_hash() {  # content hash of the target's decoder sources as they are in the work tree
    # shellcheck disable=SC2046
    git ls-files -- $(decoder_paths "fuzz_$1") | sort | xargs sha256sum | sha256sum | cut -c1-16
}

if [[ ${1:-} == --stale ]]; then
    stale=()
    for t in "${targets[@]}"; do
        last=$(awk -F'\t' -v t="$t" '$3 == t { h = $8 } END { print h }' "$record" 2>/dev/null || true)
        [[ $last == "$(decoder_hash "$t")" ]] || stale+=("$t")
    done
    if ((${#stale[@]})); then
        echo "fuzz: decoders changed since their last deep run (scripts/fuzz-deep.sh): ${stale[*]}"
    else
        echo "fuzz: every decoder's last change has had its deep run ($record)"
    fi
    exit 0
fi

[[ -n ${RIVETKIT_FUZZ_TARGETS:-} ]] && read -ra targets <<<"$RIVETKIT_FUZZ_TARGETS"
minutes=${1:-10}
[[ $minutes =~ ^[0-9]+$ ]] && ((minutes > 0)) || { echo "usage: $0 [minutes] | --stale" >&2; exit 2; }
"$here/fuzz.sh" build
"$here/fuzz.sh" seeds
[[ -f $record ]] || printf 'date\tcommit\ttarget\tminutes\texecutions\tcorpus_files\tcrashes\tdecoder_hash\n' >"$record"
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- || echo "+dirty")

run_one() {
    local t=$1 work="$dir/deep/$1"
    rm -rf "$work" && mkdir -p "$work" "fuzz/corpus/$t" "$dir/artifacts"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$dir/fuzz/fuzz_$t" -max_total_time=$((minutes * 60)) -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t-" \
        "$work" "fuzz/corpus/$t" "$dir/seeds/$t" 2>"$dir/deep_$t.log"
    # Minimize what the repo keeps: the old corpus plus this run's finds, merged into a fresh dir.
    local merged="$dir/deep/$t.merged"
    rm -rf "$merged" && mkdir -p "$merged"
    "$dir/fuzz/fuzz_$t" -merge=1 -max_len=4096 "$merged" "fuzz/corpus/$t" "$work" \
        2>"$dir/deep_${t}_merge.log"
    # Named regression inputs (regression-*) stay whatever the merge thinks of their coverage.
    find "fuzz/corpus/$t" -maxdepth 1 -type f -name 'regression-*' -exec cp {} "$merged/" \;
    rm -rf "fuzz/corpus/$t" && mv "$merged" "fuzz/corpus/$t"
}

record_target() {
    local t=$1 status=$2
    if ((status != 0)); then
        tail -40 "$dir/deep_$t.log" >&2
        echo "fuzz-deep: fuzz_$t failed (log: $dir/deep_$t.log)" >&2
        return
    fi
    local execs files
    execs=$(grep -hoE "stat::number_of_executed_units: *[0-9]+" "$dir/deep_$t.log" | grep -oE "[0-9]+$" | tail -1)
    files=$(find "fuzz/corpus/$t" -type f | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t0\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit" "$t" \
        "$minutes" "$execs" "$files" "$(decoder_hash "$t")" >>"$record"
    echo "fuzz-deep: fuzz_$t: $execs executions, corpus $files files, no crash" >&2
}
echo "fuzz-deep: ${targets[*]} for ${minutes} min each, $jobs at a time" >&2
source "$here/each-target.sh"
each_target run_one record_target "${targets[@]}"
((${#each_target_failed[@]} == 0)) || { echo "fuzz-deep: failed: ${each_target_failed[*]}" >&2; exit 1; }

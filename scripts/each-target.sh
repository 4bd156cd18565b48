# Sourced by fuzz.sh and fuzz-deep.sh: runs one function per fuzz target, `jobs` at a time.
#
#   each_target <run> <done> <target...>
#
# `<run> <target>` runs in the background; `<done> <target> <status>` runs as each one ends.
# Afterwards `each_target_failed` holds the targets whose run failed.
each_target() {
    local run=$1 done=$2
    shift 2
    local -A running=()
    local t pid status ended
    each_target_failed=()
    for t in "$@" ""; do
        while ((${#running[@]} > 0)) && { ((${#running[@]} >= jobs)) || [[ -z $t ]]; }; do
            wait -n -p pid "${!running[@]}" && status=0 || status=$?
            ended=${running[$pid]}
            unset "running[$pid]"
            ((status == 0)) || each_target_failed+=("$ended")
            "$done" "$ended" "$status"
        done
        [[ -n $t ]] || break
        "$run" "$t" &
        running[$!]=$t
    done
}

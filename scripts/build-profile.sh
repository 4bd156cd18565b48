#!/usr/bin/env bash
# Where a build's time went, from Ninja's own log: the slowest compile steps and links, and the
# total by kind and by target. Usage: scripts/build-profile.sh <build dir> [top N]
set -euo pipefail
dir=${1:?usage: build-profile.sh <build dir> [top N]}
top=${2:-25}
log="$dir/.ninja_log"
[[ -f $log ]] || { echo "build-profile: no $log" >&2; exit 1; }
# .ninja_log v5: start_ms end_ms mtime output hash; a rebuilt output appears again, keep the last.
awk -v top="$top" '
    /^#/ { next }
    { dur[$4] = ($2 - $1) / 1000.0 }
    END {
        for (o in dur) {
            kind = (o ~ /\.o$/) ? "compile" : (o ~ /\.gch$/ ? "pch" : "link/other")
            total[kind] += dur[o]; n[kind]++
            t = o; sub(/\/CMakeFiles\/.*/, "", t)
            if (o ~ /CMakeFiles\/[^\/]+\.dir\//) { tt = o; sub(/.*CMakeFiles\//, "", tt); sub(/\.dir\/.*/, "", tt); t = tt }
            bytarget[t] += dur[o]
        }
        for (k in total) printf "%-11s %4d steps %8.1f s (sum over both cores)\n", k, n[k], total[k]
        print ""
        print "slowest steps:"
        cmd = "sort -rn | head -" top
        for (o in dur) printf "%8.1f s  %s\n", dur[o], o | cmd
        close(cmd)
        print ""
        print "by target:"
        for (t in bytarget) printf "%8.1f s  %s\n", bytarget[t], t | cmd
        close(cmd)
    }' "$log"

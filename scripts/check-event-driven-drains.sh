#!/usr/bin/env bash
# Grep gate (port of upstream's scripts/check-event-driven-drains.sh, spec test
# event_driven_drain_grep_gate_script_passes): shutdown drains in src/core must be event driven.
#  1. no polling waits (sleep_for / sleep_until / this_thread::sleep) in the drain and shutdown code;
#  2. no legacy begin_/end_keep_awake-style counter APIs anywhere in src/core;
#  3. sleep counters change only through WorkRegion (context.cpp), never by hand elsewhere.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
core="$root/src/core"
status=0

fail() {
    echo "check-event-driven-drains: $1" >&2
    status=1
}

drain_files=("$core/actor/sleep.cpp" "$core/actor/task.cpp" "$core/actor/task_shutdown.cpp"
             "$core/actor/state.cpp")
for f in "${drain_files[@]}"; do
    [[ -f "$f" ]] || { fail "missing $f"; continue; }
    if grep -nE 'sleep_for\(|sleep_until\(|this_thread::sleep' "$f"; then
        fail "polling sleep in drain/shutdown code: $f"
    fi
done

if grep -rnE '\b(begin|end)_(internal_)?keep_awake\b' "$core"; then
    fail "legacy begin_/end_keep_awake API in src/core"
fi

if grep -rnE '(\+\+|--)\s*(inner->|s\.|p_->|inner_->)?(keep_awake|internal_keep_awake|core_hooks|websocket_callbacks|pending_disconnects|run_handlers)\b|\b(keep_awake|internal_keep_awake|core_hooks|websocket_callbacks|pending_disconnects|run_handlers)\s*(\+\+|--)' \
    "$core" --include='*.cpp' --include='*.hpp' | grep -v '/actor/context.cpp:'; then
    fail "sleep counter changed outside WorkRegion (context.cpp)"
fi

if grep -rn 'this_thread::sleep' "$core"; then
    fail "thread sleep in src/core"
fi

exit "$status"

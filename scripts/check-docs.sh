#!/usr/bin/env bash
# The docs test: runs docs/getting-started.md as a new user would, in order — every file it shows
# written under a fresh $HOME, every command run (in the checkout or in $HOME, as the block says),
# background commands (the host) started and stopped with SIGINT at the end (exit 0 expected).
#
#   bash scripts/check-docs.sh [build dir to install from]
#
# With a build dir, the guide's `scripts/install.sh` installs that build instead of building
# Release (RIVETKIT_INSTALL_FROM). The guide's host uses the default local engine on
# 127.0.0.1:6420 (started by the host with its data under the temporary $HOME).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
guide="$RIVETKIT_ROOT/docs/getting-started.md"
if [[ -n ${1:-} ]]; then
    export RIVETKIT_INSTALL_FROM="$(cd "$1" && pwd)"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-docs.XXXXXX")"
# The user's project builds with the same compiler cache as the rest of the test run (looked up
# before $HOME moves).
if command -v ccache >/dev/null; then
    export CCACHE_DIR="${CCACHE_DIR:-$(ccache --get-config cache_dir)}"
fi
export HOME="$work/home" XDG_DATA_HOME="$work/home/.local/share"
mkdir -p "$HOME"
unset RIVET_ENDPOINT RIVET_ENGINE_BIN RIVET_TOKEN RIVET_NAMESPACE RIVET_POOL
export RIVET_THREADS=1
pids=()
cleanup() {
    local status=$?
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    if ((status != 0)); then
        echo "check-docs: failed; logs in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

n=0
while IFS= read -r line; do
    n=$((n + 1))
    kind="$(node -e 'console.log(JSON.parse(process.argv[1]).kind)' "$line")"
    field() { node -e 'const v = JSON.parse(process.argv[1])[process.argv[2]]; process.stdout.write(v == null ? "" : String(v))' "$line" "$1"; }
    case $kind in
        file)
            path="$HOME/$(field path)"
            mkdir -p "$(dirname "$path")"
            field content >"$path"
            echo "check-docs: [$n] wrote ~/$(field path)"
            ;;
        run)
            dir="$HOME"; [[ $(field cwd) == checkout ]] && dir="$RIVETKIT_ROOT"
            echo "check-docs: [$n] run in $([[ $dir == "$HOME" ]] && echo '~' || echo checkout):"
            field content | sed 's/^/    $ /'
            (cd "$dir" && bash -euo pipefail -c "$(field content)") >"$work/step$n.log" 2>&1 || {
                echo "check-docs: step $n failed:" >&2; tail -30 "$work/step$n.log" >&2; exit 1; }
            sed 's/^/    /' "$work/step$n.log" | tail -5
            ;;
        background)
            wait_for="$(field wait)"
            echo "check-docs: [$n] start in the background (until '$wait_for'):"
            field content | sed 's/^/    $ /'
            (cd "$HOME" && exec bash -c "exec $(field content)") >"$work/step$n.log" 2>&1 &
            pids+=($!)
            deadline=$((SECONDS + 120))
            until grep -q "$wait_for" "$work/step$n.log"; do
                if ! kill -0 "${pids[-1]}" 2>/dev/null || ((SECONDS > deadline)); then
                    echo "check-docs: step $n never printed '$wait_for':" >&2
                    tail -30 "$work/step$n.log" >&2
                    exit 1
                fi
                sleep 0.2
            done
            ;;
    esac
done < <(node "$here/docs-blocks.mjs" "$guide")

# The guide's last step: Ctrl-C stops the host (draining) with exit 0.
for p in "${pids[@]}"; do
    kill -INT "$p"
    wait "$p" || { echo "check-docs: a background command exited with $? after SIGINT" >&2; exit 1; }
done
pids=()
echo "check-docs: OK ($n blocks of docs/getting-started.md)"

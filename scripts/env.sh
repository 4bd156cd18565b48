# Sourced by the scripts: locations of pinned tools.
RIVETKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RIVETKIT_ROOT
export RIVET_ENGINE_BIN="${RIVET_ENGINE_BIN:-$RIVETKIT_ROOT/.deps/npm/node_modules/@rivetkit/engine-cli-linux-x64-musl/rivet-engine}"
export RIVETKIT_NODE_MODULES="$RIVETKIT_ROOT/.deps/npm/node_modules"
jobs="$(nproc 2>/dev/null || echo 2)"

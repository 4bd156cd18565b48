# Sourced by the scripts: locations of pinned tools.
RIVETKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export RIVETKIT_ROOT
export RIVET_ENGINE_BIN="${RIVET_ENGINE_BIN:-$RIVETKIT_ROOT/.deps/npm/node_modules/@rivetkit/engine-cli-linux-x64-musl/rivet-engine}"
export RIVETKIT_NODE_MODULES="$RIVETKIT_ROOT/.deps/npm/node_modules"
jobs="$(nproc 2>/dev/null || echo 2)"
# ccache: share hits across clones and build folders (CI builds a fresh clone elsewhere).
export CCACHE_BASEDIR="$RIVETKIT_ROOT"
export CCACHE_NOHASHDIR=1
# Depend mode: on a miss ccache takes the headers from the compiler's -MD output instead of
# running the preprocessor first (a heavy unit's preprocessing is ~5 % of its compile).
export CCACHE_DEPEND="${CCACHE_DEPEND:-1}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"

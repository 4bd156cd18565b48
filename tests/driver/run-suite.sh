#!/usr/bin/env bash
# Runs upstream's driver test suite (rivetkit-typescript/packages/rivetkit/tests/driver in
# rivet-dev/rivet, with npm rivetkit 2.3.19's src/) against rivetkit-driver-host. Manual: it needs
# upstream's repository, which CI cannot reach (tests/driver/README.md).
#
#   UPSTREAM_GIT=<git dir of rivet-dev/rivet> tests/driver/run-suite.sh [file ...]
#   ENCODINGS="bare cbor json" (default bare)   HOST=<driver host binary> (default build/dev's)
#
# The runner (a copy of the workplace's driver-suite-runner: setup.sh, run.sh, spawn.patch,
# vitest.config.ts) lives in $DRIVER_SUITE_DIR (default build/driver-suite); it is set up once.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUNNER_SRC=${DRIVER_SUITE_RUNNER:-$ROOT/../shared/driver-suite-runner}
WORK=${DRIVER_SUITE_DIR:-$ROOT/build/driver-suite}
HOST=${HOST:-$ROOT/build/dev/tests/driver/rivetkit-driver-host}
# The files whose fixtures rivetkit-driver-host serves (README.md has the counts).
COVERED="actor-state actor-conn-status actor-handle manager-driver actor-conn gateway-query-url
actor-kv actor-metadata actor-vars action-features actor-error-handling conn-error-serialization
lifecycle-hooks actor-onstatechange raw-http raw-http-request-properties request-access
gateway-routing gateway-skip-ready-wait-client actor-conn-state actor-schedule actor-queue
actor-inspector actor-sleep actor-run actor-lifecycle actor-destroy raw-websocket
hibernatable-websocket-protocol actor-conn-hibernation access-control actor-stateless
actor-state-zod-coercion actor-save-state actor-db-raw actor-db-pragma-migration actor-db-init-order
actor-db-stress actor-sleep-db actor-db"

[[ -x $HOST ]] || { echo "no driver host at $HOST (build target rivetkit-driver-host)" >&2; exit 2; }
if [[ ! -d $WORK/pkg/tests/driver ]]; then
    mkdir -p "$WORK"
    cp "$RUNNER_SRC"/{setup.sh,run.sh,spawn.patch,vitest.config.ts} "$WORK"/
    : "${UPSTREAM_GIT:?set UPSTREAM_GIT to a git dir of rivet-dev/rivet (first run only)}"
    UPSTREAM_GIT=$UPSTREAM_GIT "$WORK/setup.sh"
fi
# Some tests use Node 22's global WebSocket; with an older node, npm's node@22 is fetched into the
# runner's directory once and put first on PATH.
if [[ $(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0) -lt 22 ]]; then
    if [[ ! -x $WORK/node22/node_modules/node/bin/node ]]; then
        mkdir -p "$WORK/node22"
        npm install --prefix "$WORK/node22" --no-audit --no-fund node@22 >/dev/null
    fi
    export PATH=$WORK/node22/node_modules/node/bin:$PATH
fi
echo "node $(node --version)" >&2
export RIVETKIT_DRIVER_HOST_BIN=$HOST
export ENCODINGS=${ENCODINGS:-bare}
# shellcheck disable=SC2086
exec "$WORK/run.sh" ${*:-$COVERED}

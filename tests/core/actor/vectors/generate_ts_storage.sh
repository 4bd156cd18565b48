#!/usr/bin/env bash
# Regenerates ts-2.3.19-vault.json: every table of a `vault` actor's SQLite database as written by
# upstream's TypeScript host (rivetkit 2.3.19, tests/interop/js/ts_host.mjs) through the official
# client — round 1 of tests/interop/js/two_runtimes.mjs (count 5, user KV greeting, a waiting
# queue message, a notes row, an action scheduled an hour ahead) — read out by the actor itself
# (schema and rows, a blob as an array of its bytes). tests/core/actor/internal_storage_test.cpp loads these rows
# and reads them back through the C++ storage.
#
#   bash tests/core/actor/vectors/generate_ts_storage.sh
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
js="$here/../../../interop/js"
source "$here/../../../../scripts/env.sh"
source "$here/../../../../scripts/engine.sh"
node_bin="${RIVET_NODE_BIN:-node}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/rivetkit-vectors-XXXXXX")"
host_pid=""
cleanup() {
    local status=$?
    set +e
    [[ -n "$host_pid" ]] && { kill -KILL "$host_pid" 2>/dev/null; wait "$host_pid" 2>/dev/null; }
    engine_stop
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT

engine_start "$tmp"
RIVET_ENDPOINT="$engine_endpoint" "$node_bin" "$js/ts_host.mjs" >"$tmp/host.log" 2>&1 &
host_pid=$!
deadline=$((SECONDS + 60))
until grep -qx ready "$tmp/host.log" 2>/dev/null; do
    kill -0 "$host_pid" 2>/dev/null || { tail -20 "$tmp/host.log" >&2; exit 1; }
    ((SECONDS < deadline)) || { echo "ts_host not ready in 60 s" >&2; exit 1; }
    sleep 0.1
done

RIVET_ENDPOINT="$engine_endpoint" "$node_bin" "$js/two_runtimes.mjs" write --encoding json \
    --key vector --round 1 --remindMs 3600000 >&2
out="$here/ts-2.3.19-vault.json"
RIVET_ENDPOINT="$engine_endpoint" OUT="$out" "$node_bin" --input-type=module -e '
import fs from "node:fs";
import { importPackage } from "'"$js"'/deps.mjs";
const { createClient } = await importPackage("rivetkit", "./client");
const client = createClient({ endpoint: process.env.RIVET_ENDPOINT, encoding: "json" });
const vault = client.vault.getOrCreate(["vector"]);
// Sleep first, so the debounced state save has landed; the dump wakes the actor again.
await vault.goToSleep();
await new Promise((res) => setTimeout(res, 3000));
const dump = await vault.dumpDb();
fs.writeFileSync(process.env.OUT, JSON.stringify(dump, null, 1) + "\n");
await client.dispose();
' >&2
echo "wrote $out ($(stat -c %s "$out") bytes)" >&2

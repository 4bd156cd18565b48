#!/usr/bin/env bash
# Bounded libFuzzer runs of the BARE decoders: builds fuzz/ with clang in build/fuzz, seeds each
# target from the checked-in known-answer vectors, runs each for RIVETKIT_FUZZ_SECONDS (default 20
# each, the targets side by side on the cores) and fails on the first crash, leak, timeout or
# sanitizer report.
#
#   scripts/fuzz.sh [build|run|seeds]   build and run by default; `build` only compiles, `run`
#                                       only runs, `seeds` only writes build/fuzz/seeds
# Each run also reads the corpus kept in the repo (fuzz/corpus/<target>, grown by
# scripts/fuzz-deep.sh) and ends by naming the targets whose decoder changed since their last
# deep run.
set -euo pipefail
what=${1:-all}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/env.sh"
cd "$RIVETKIT_ROOT"

dir=build/fuzz
seconds="${RIVETKIT_FUZZ_SECONDS:-20}"
targets=(envoy client persist client_encoding inspector storage plain_args)

if [[ $what == all || $what == build ]]; then
    # -O1 -g1, as libFuzzer's documentation builds its targets: 155 s of compile CPU against 190 s
    # at -O2 -g (the targets cold, 2026-12-07); stack traces keep file:line.
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
        -DCMAKE_CXX_COMPILER=clang++-14 -DRIVETKIT_FUZZ=ON \
        -DRIVETKIT_TESTS=OFF -DRIVETKIT_BENCH=OFF >/dev/null
    cmake --build "$dir" -j "$jobs" --target "${targets[@]/#/fuzz_}"
fi
[[ $what == build ]] && exit 0

# Seeds: each vector as the bytes the decoder sees (client and persist payloads carry their
# 2-byte little-endian version prefix).
node --input-type=module - "$dir/seeds" <<'JS'
import fs from "node:fs";
import path from "node:path";
const out = process.argv[2];
const files = { envoy: "envoy_v8.json", client: "client.json", persist: "persist.json" };
// client_encoding: first byte selects decoder and encoding (see fuzz_client_encoding.cpp).
{
    const dir = path.join(out, "client_encoding");
    fs.mkdirSync(dir, { recursive: true });
    const seeds = {
        "json-action": [0, Buffer.from('{"args":[1,"x",{"a":["$BigInt","9007199254740993"]}]}')],
        "bare-action": [2, Buffer.from([4, 0, 2, 0x81, 1])],
        "cbor-action": [1, Buffer.from([0xb9, 0, 1, 0x64, 0x61, 0x72, 0x67, 0x73, 0x81, 3])],
        "json-frame": [6, Buffer.from('{"body":{"tag":"ActionRequest","val":{"id":["$BigInt","0"],"name":"increment","args":[5]}}}')],
        "bare-frame": [8, Buffer.from([4, 0, 1, 8, ...Buffer.from("newCount"), 1])],
        "json-value": [9, Buffer.from('[["$Uint8Array","AQID"],["$$x",1],{"k":null}]')],
        "cbor-tags": [12, Buffer.from([0xc2, 0x49, 1, 0, 0, 0, 0, 0, 0, 0, 0])],
        "path": [15, Buffer.from("/action/a%20b?x=1")],
    };
    for (const [name, [selector, bytes]] of Object.entries(seeds))
        fs.writeFileSync(path.join(dir, name), Buffer.concat([Buffer.from([selector]), bytes]));
}
// storage: rows of the internal tables (see fuzz_storage.cpp for the format): a connection row as
// upstream writes it, an actor row with a one-shot event, a runtime row.
{
    const dir = path.join(out, "storage");
    fs.mkdirSync(dir, { recursive: true });
    const text = (s) => Buffer.concat([Buffer.from([3, s.length]), Buffer.from(s)]);
    const blob = (b) => Buffer.concat([Buffer.from([4, b.length & 0xff, b.length >> 8]), Buffer.from(b)]);
    const int = (n) => { const b = Buffer.alloc(9); b[0] = 1; b.writeBigInt64LE(BigInt(n), 1); return b; };
    const seeds = {
        connection: [text("conn-1"), blob([0xf6]), blob([0xa0]), blob([0x81, 0x63, 0x61, 0x62, 0x63]),
            blob([1, 2, 3, 4]), blob([5, 6, 7, 8]), int(7), int(3), text("/connect"),
            blob([0xa1, 0x61, 0x6b, 0x61, 0x76])],
        actor: [int(1), Buffer.from([0]), blob([0xa1, 0x61, 0x6e, 0x05]), Buffer.from([0xff]),
            text("ev-1"), int(1800000000000), text("remind"), blob([0x80])],
        runtime: [int(1800000000000), text("token"), int(2)],
    };
    for (const [name, parts] of Object.entries(seeds)) fs.writeFileSync(path.join(dir, name), Buffer.concat(parts));
}
// plain_args: first byte picks the parameter types (see fuzz_plain_args.cpp), then the args array
// as the official client writes it.
{
    const dir = path.join(out, "plain_args");
    fs.mkdirSync(dir, { recursive: true });
    const seeds = {
        "int": [0, [0x81, 0x05]],
        "int-optional-text": [1, [0x82, 0x18, 0x2a, 0x62, 0x68, 0x69]],
        "text-bool-double": [2, [0x83, 0x61, 0x61, 0xf5, 0xfb, 0x40, 0x04, 0, 0, 0, 0, 0, 0]],
        "u16-null-float": [3, [0x83, 0x19, 0x01, 0x00, 0xf6, 0xfa, 0x3e, 0x80, 0, 0]],
        "dollar-pair": [4, [0x82, 0x62, 0x24, 0x78, 0x61, 0x79]],
        "integral-float": [5, [0x82, 0xfb, 0x40, 0x14, 0, 0, 0, 0, 0, 0, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]],
    };
    for (const [name, [selector, bytes]] of Object.entries(seeds))
        fs.writeFileSync(path.join(dir, name), Buffer.from([selector, ...bytes]));
}
// inspector.json frames already carry their version prefix.
{
    const doc = JSON.parse(fs.readFileSync("tests/bare/vectors/inspector.json", "utf8"));
    const dir = path.join(out, "inspector");
    fs.mkdirSync(dir, { recursive: true });
    for (const v of doc.vectors) fs.writeFileSync(path.join(dir, v.name), Buffer.from(v.hex, "hex"));
}
for (const [target, file] of Object.entries(files)) {
    const doc = JSON.parse(fs.readFileSync(path.join("tests/bare/vectors", file), "utf8"));
    const dir = path.join(out, target);
    fs.mkdirSync(dir, { recursive: true });
    for (const v of doc.vectors) {
        let bytes = Buffer.from(v.hex, "hex");
        if (v.version !== undefined) bytes = Buffer.concat([Buffer.from([v.version, 0]), bytes]);
        fs.writeFileSync(path.join(dir, v.name), bytes);
    }
}
JS
[[ $what == seeds ]] && exit 0

# Each target runs on its own core (they share nothing), `jobs` at a time.
run_target() {
    local t=$1 corpus="$dir/corpus/$1" artifacts="$dir/artifacts"
    mkdir -p "$corpus" "$artifacts"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$dir/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" \
        "$corpus" "$dir/seeds/$t" $( [[ -d fuzz/corpus/$t ]] && echo "fuzz/corpus/$t" ) \
        2>"$dir/fuzz_$t.log"
}
report_target() {
    local t=$1 status=$2
    if ((status != 0)); then
        tail -40 "$dir/fuzz_$t.log" >&2
        echo "fuzz: fuzz_$t failed (log: $dir/fuzz_$t.log)" >&2
    else
        echo "fuzz: fuzz_$t: $(grep -hE "stat::number_of_executed_units" "$dir/fuzz_$t.log" | tr -s ' ')" >&2
    fi
}
echo "fuzz: ${targets[*]} for ${seconds}s each, $jobs at a time" >&2
source "$here/each-target.sh"
each_target run_target report_target "${targets[@]}"
((${#each_target_failed[@]} == 0)) || { echo "fuzz: failed: ${each_target_failed[*]}" >&2; exit 1; }
echo "fuzz: all targets passed" >&2
bash "$here/fuzz-deep.sh" --stale >&2 || true

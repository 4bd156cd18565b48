// Drives one load against a host running under callgrind with instrumentation off, and switches it
// on only around the measured actions (callgrind_control -i on/off), so the count holds nothing but
// those actions and what they cause. Used by instructions.sh.
//
//   node instructions.mjs --endpoint URL --host-pid P --mode ws|http --ops N [--actors K]
import { execFileSync } from "node:child_process";
import { importPackage } from "../../tests/interop/js/deps.mjs";
import { driverArgs } from "../driver_common.mjs";

const args = driverArgs(["endpoint", "host-pid", "mode", "ops"]);
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
const callers = 16;
const ops = Number(args.ops);
const actors = Number(args.actors ?? 1);
const { createClient } = await importPackage("rivetkit", "./client");
const client = createClient({ endpoint: args.endpoint, namespace: "default", poolName: "default" });

const handles = Array.from({ length: callers }, (_, i) =>
    client.counter.getOrCreate([`instr-${i % actors}`]),
);
// Under callgrind the host takes a while to connect to the engine: the first call retries.
for (let attempt = 0; ; attempt++) {
    try {
        await handles[0].increment(0);
        break;
    } catch (error) {
        if (attempt >= 60) throw error;
        await new Promise((r) => setTimeout(r, 1000));
    }
}
await Promise.all(handles.map((h) => h.increment(0)));
let targets = handles;
if (args.mode === "ws") {
    targets = handles.map((h) => h.connect());
    await Promise.all(targets.map((c) => c.increment(0)));
}
// Warm-up at the same load: allocator caches and connections settle before the count starts.
async function load(n) {
    let left = n;
    await Promise.all(
        targets.map(async (t) => {
            while (left > 0) {
                left -= 1;
                await t.increment(1);
            }
        }),
    );
}
await load(Math.min(ops, 500));
const control = (on) => execFileSync("callgrind_control", ["-i", on, String(args["host-pid"])]);
control("on");
await load(ops);
control("off");
process.stdout.write(JSON.stringify({ mode: args.mode, ops, actors }) + "\n");
if (args.mode === "ws") await Promise.all(targets.map((c) => c.dispose()));
process.exit(0);

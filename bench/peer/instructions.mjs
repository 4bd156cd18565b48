// Drives one load against a host running under callgrind with instrumentation off, and switches it
// on only around the measured actions (callgrind_control -i on/off), so the count holds nothing but
// those actions and what they cause. Used by instructions.sh.
//
// With --perf the host runs natively and `perf stat` counts its syscalls, context switches and
// task-clock around the same actions instead; the /proc CPU ticks over them come with it.
//
// With --record FILE as well, `perf record -g` samples the host over those actions into FILE.
//
//   node instructions.mjs --endpoint URL --host-pid P --mode ws|http --ops N [--actors K]
//                         [--callers C] [--perf [--record FILE]]
import { execFileSync, spawn } from "node:child_process";
import { importPackage } from "../../tests/interop/js/deps.mjs";
import { cpuSplitMs, driverArgs } from "../driver_common.mjs";

const args = driverArgs(["endpoint", "host-pid", "mode", "ops"]);
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
const callers = Number(args.callers ?? 16);
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
const pid = String(args["host-pid"]);
if (!args.perf) {
    const control = (on) => execFileSync("callgrind_control", ["-i", on, pid]);
    control("on");
    await load(ops);
    control("off");
    process.stdout.write(JSON.stringify({ mode: args.mode, ops, actors, callers }) + "\n");
} else {
    // perf prints its counts to stderr when interrupted; instructions.sh reads them from there.
    const events = [
        "syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_sendto",
        "syscalls:sys_enter_epoll_ctl", "syscalls:sys_enter_timerfd_settime",
        "syscalls:sys_enter_futex", "context-switches", "task-clock",
    ];
    const perfArgs = args.record
        ? ["record", "-g", "-F", "4999", "-o", String(args.record), "-p", pid]
        : ["stat", "-x", ",", "-e", events.join(","), "-p", pid];
    const perf = spawn("perf", perfArgs, { stdio: ["ignore", "ignore", "pipe"] });
    let counts = "";
    perf.stderr.on("data", (d) => (counts += d));
    await new Promise((r) => setTimeout(r, 300));  // perf attached before the first action
    const before = cpuSplitMs(pid);
    const start = performance.now();
    await load(ops);
    const seconds = (performance.now() - start) / 1000;
    const after = cpuSplitMs(pid);
    perf.kill("SIGINT");
    await new Promise((r) => perf.on("exit", r));
    const perAction = { ops_per_s: Math.round(ops / seconds) };
    // /proc's CPU (10 ms ticks), as microseconds per action.
    perAction.user_us = ((after.user - before.user) * 1e3) / ops;
    perAction.sys_us = ((after.sys - before.sys) * 1e3) / ops;
    for (const line of counts.split("\n")) {
        const [value, unit, event] = line.split(",");
        if (!event || Number.isNaN(Number(value))) continue;
        const name = event.replace("syscalls:sys_enter_", "");
        perAction[unit === "msec" ? `${name}_us` : name] =
            (Number(value) * (unit === "msec" ? 1000 : 1)) / ops;
    }
    process.stdout.write(
        JSON.stringify({ mode: args.mode, ops, actors, callers, per_action: perAction }) + "\n");
}
if (args.mode === "ws") await Promise.all(targets.map((c) => c.dispose()));
process.exit(0);

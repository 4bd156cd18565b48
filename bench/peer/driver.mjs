// The peer benchmark's load: the official TypeScript client (rivetkit 2.3.19) against whichever
// host serves `counter` on the engine at --endpoint. Each scenario reports its operations, wall
// time, latency percentiles and the CPU time the engine and the host spent meanwhile (from
// /proc/<pid>/stat, all threads), plus the host's RSS. Writes one JSON document to --out.
//
//   node driver.mjs --endpoint URL --engine-pid P --host-pid P --out FILE [--quick]
//                   [--only REGEX] [--awake N] [--heap-file F] [--engine-metrics URL]
//
// --engine-metrics: the engine's Prometheus endpoint; each scenario then also reports the
// database transactions and workflow signals the engine counted per operation.
// --heap-file: where a host with the memory host's heap probe writes its malloc heap in use (the
// awake scenario then reports heap per actor beside RSS per actor).
// --only runs the scenario groups whose key matches (cold, sequential, throughput, fanout, sleep,
// awake); --awake sets the number of awake actors (default 1,000, 100 with --quick).
import fs from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { importPackage } from "../../tests/interop/js/deps.mjs";
import {
    cpuMs,
    diskWriteBytes,
    driverArgs,
    engineWork,
    heapBytes,
    processAgeS,
    rssKb,
    tcpDelta,
    tcpStats,
    transactionsByName,
} from "../driver_common.mjs";

const args = driverArgs(["endpoint", "engine-pid", "host-pid", "out"]);
const quick = Boolean(args.quick);
const enginePid = Number(args["engine-pid"]);
const hostPid = Number(args["host-pid"]);

// rivetkit logs to stdout; keep stdout for nothing but our own lines.
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");

function percentile(sorted, p) {
    if (sorted.length === 0) return null;
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Engine 2.3.19 stalls request handling for 0.3-0.6 s once a minute of its uptime (measured
// 2026-12-07: a window's slowest calls began at 59.2-60.4 s and at 120.2 s of engine uptime, with
// the host logging nothing and its event loop free meanwhile). Whichever host's window held that
// moment took the stall as its p99: rivetkit-host's 100/s window, twice, because its faster
// schedule put it there. So a window that would take in the next minute mark starts after it
// (windows here last under 15 s; the awake scenario's minutes cannot avoid them).
const engineMinuteS = 60;
async function clearOfEngineMinute(windowS) {
    if (windowS >= engineMinuteS) return;
    const intoMinute = processAgeS(enginePid) % engineMinuteS;
    if (intoMinute + windowS + 0.5 < engineMinuteS && intoMinute > 1.5) return;
    const wait = intoMinute > 1.5 ? engineMinuteS - intoMinute + 1.5 : 1.5 - intoMinute;
    await new Promise((r) => setTimeout(r, wait * 1000));
}

// Runs `body` and reports what it cost: `body` returns { ops, latencies? }. `windowS`: how long
// the window may last at most.
async function measure(name, body, windowS = 15) {
    await clearOfEngineMinute(windowS);
    // Read before the CPU counters and after them: the engine's metrics page costs it CPU to write.
    const work0 = await engineWork(args["engine-metrics"]);
    const e0 = cpuMs(enginePid);
    const h0 = cpuMs(hostPid);
    const tcp0 = tcpStats(hostPid);
    const disk0 = diskWriteBytes(enginePid);
    const t0 = performance.now();
    slowest = [];
    // The driver's own pauses (its garbage collector, say) delay every call in flight: its event
    // loop's longest delay in the window tells a stall of the driver from one of host or engine.
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    loopDelay.enable();
    const { ops, latencies = [], extra = {} } = await body();
    loopDelay.disable();
    const seconds = (performance.now() - t0) / 1000;
    const engineMs = cpuMs(enginePid) - e0;
    const hostMs = cpuMs(hostPid) - h0;
    // Null when the engine closed a host connection meanwhile (engine 2.3.19 expires an envoy
    // whose ping bookkeeping fell 10 s behind, `ws.registration_expired`, when it is overloaded):
    // the traffic rows are then not known.
    const tcp = tcpDelta(tcp0, tcpStats(hostPid));
    const disk = diskWriteBytes(enginePid);
    const work1 = work0 && (await engineWork(args["engine-metrics"]));
    latencies.sort((a, b) => a - b);
    const result = {
        name,
        ops,
        seconds,
        ops_per_s: ops / seconds,
        p50_ms: percentile(latencies, 50),
        p95_ms: percentile(latencies, 95),
        p99_ms: percentile(latencies, 99),
        engine_cpu_ms_per_op: engineMs / ops,
        host_cpu_ms_per_op: hostMs / ops,
        host_rss_kb: rssKb(hostPid),
        // What the host and the engine asked of each other (the host's TCP connections: bytes and
        // data segments each way), and the bytes the engine wrote to its storage meanwhile.
        host_sent_kb_per_op: tcp && tcp.bytes_sent / 1024 / ops,
        host_segs_out_per_op: tcp && tcp.data_segs_out / ops,
        host_received_kb_per_op: tcp && tcp.bytes_received / 1024 / ops,
        host_segs_in_per_op: tcp && tcp.data_segs_in / ops,
        host_reconnected: tcp === null,
        engine_disk_kb_per_op: (disk - disk0) / 1024 / ops,
        engine_transactions_per_op: work1 ? (work1.transactions - work0.transactions) / ops : null,
        engine_signals_per_op: work1 ? (work1.signals - work0.signals) / ops : null,
        engine_transactions_by_name: transactionsByName(work0, work1, ops),
        slowest_calls: slowest,
        driver_max_loop_delay_ms: Math.round(loopDelay.max / 1e6),
        ...extra,
    };
    console.error(`driver: ${name}: ${JSON.stringify(result)}`);
    return result;
}

// The five slowest calls of the scenario being measured, with their wall-clock start (to set a
// tail beside the host's and the engine's logs).
let slowest = [];
async function timed(fn) {
    const t = performance.now();
    const at = Date.now();
    await fn();
    const ms = performance.now() - t;
    if (slowest.length < 5 || ms > slowest[slowest.length - 1].ms) {
        slowest.push({ at: new Date(at).toISOString(), ms: Math.round(ms) });
        slowest.sort((a, b) => b.ms - a.ms);
        slowest.length = Math.min(slowest.length, 5);
    }
    return ms;
}

// `callers` loops, each calling `call(i)` back to back until `seconds` have passed.
async function closedLoop(callers, seconds, call) {
    const latencies = [];
    const until = performance.now() + seconds * 1000;
    await Promise.all(
        Array.from({ length: callers }, async (_, i) => {
            while (performance.now() < until) latencies.push(await timed(() => call(i)));
        }),
    );
    return { ops: latencies.length, latencies };
}

// Calls `call(i)` at `perSecond` for `seconds`, each started on time whether or not the ones
// before have answered.
async function openLoop(perSecond, seconds, call) {
    const n = Math.round(perSecond * seconds);
    const start = performance.now();
    const calls = [];
    for (let i = 0; i < n; i++) {
        const wait = start + (i * 1000) / perSecond - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        calls.push(timed(() => call(i)));
    }
    const latencies = await Promise.all(calls);
    return { ops: n, latencies };
}

const { createClient } = await importPackage("rivetkit", "./client");
const client = createClient({ endpoint: args.endpoint, namespace: "default", poolName: "default" });
const run = `${process.pid}`;
const seqOps = quick ? 100 : 500;
const loadSeconds = quick ? 3 : 10;
const callers = 16;
const httpRate = 100;
const results = [];
const only = typeof args.only === "string" ? new RegExp(args.only) : null;
const want = (group) => !only || only.test(group);

// A scenario's actors are put to sleep once it is over, outside any measured window: a counter
// sleeps 30 s after its last call, and the engine's work for that (its actor workflow stopping,
// about 30 transactions and 2 signals each), and for every awake actor meanwhile (a signal poll
// every 1.5 s), landed in whichever later window was running then. The faster host's earlier
// scenarios end sooner, so its cold creates fell asleep inside its 16-actor HTTP window (31
// actors, ~0.7 transactions per action more, 2026-12-07) and the TS host's elsewhere.
//
// An actor's workflow polls for signals in memory for ~6 s after the actor stopped, then commits
// itself to the database (`gas_commit_workflow`, once per actor): that is the end of the
// engine's work for it, waited for here (at most 15 s; 8 s when the engine's metrics are unknown).
async function retire(handles) {
    const url = args["engine-metrics"];
    const commits = (work) => work?.by_name.gas_commit_workflow ?? 0;
    const before = await engineWork(url);
    await Promise.all(handles.map((h) => h.goToSleep()));
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    if (!before) return sleep(8000);
    for (const deadline = performance.now() + 15_000; performance.now() < deadline; ) {
        await sleep(250);
        if (commits(await engineWork(url)) - commits(before) >= handles.length) return;
    }
    console.error(`driver: ${handles.length} actors put to sleep, not all put away by the engine in 15 s`);
}

// Cold create: a new actor per call, its first action.
if (want("cold")) {
    const n = quick ? 10 : 30;
    const handles = Array.from({ length: n }, (_, i) => client.counter.getOrCreate([`cold-${run}-${i}`]));
    results.push(
        await measure("cold create + first action", async () => {
            const latencies = [];
            for (const h of handles) latencies.push(await timed(() => h.increment(1)));
            return { ops: n, latencies };
        }),
    );
    await retire(handles);
}

// Sequential actions on one actor.
if (want("sequential")) {
    const h = client.counter.getOrCreate([`seq-${run}`]);
    await h.increment(0);
    results.push(
        await measure("sequential HTTP actions", async () => {
            const latencies = [];
            for (let i = 0; i < seqOps; i++) latencies.push(await timed(() => h.increment(1)));
            return { ops: seqOps, latencies };
        }),
    );
    const conn = h.connect();
    await conn.increment(0);
    results.push(
        await measure("sequential WebSocket actions", async () => {
            const latencies = [];
            for (let i = 0; i < seqOps; i++) latencies.push(await timed(() => conn.increment(1)));
            return { ops: seqOps, latencies };
        }),
    );
    await conn.dispose();
    await retire([h]);
}

// Throughput with 16 callers: one actor, then one actor each; over HTTP and WebSocket.
for (const [label, actorsFor] of want("throughput")
    ? [
          ["one actor", () => `one-${run}`],
          ["16 actors", (i) => `many-${run}-${i}`],
      ]
    : []) {
    const keys = Array.from({ length: callers }, (_, i) => actorsFor(i));
    const handles = keys.map((key) => client.counter.getOrCreate([key]));
    await Promise.all(handles.map((h) => h.increment(0)));
    results.push(
        await measure(`HTTP actions, 16 callers, ${label}`, () =>
            closedLoop(callers, loadSeconds, (i) => handles[i].increment(1)),
        ),
    );
    if (label === "16 actors") {
        // The same actors at a fixed 100 actions/s (open loop), below either host's saturation:
        // latency and the engine's CPU per action at equal load, without the engine's queueing.
        results.push(
            await measure(`HTTP actions, 16 actors, ${httpRate}/s`, () =>
                openLoop(httpRate, loadSeconds, (i) => handles[i % callers].increment(1)),
            ),
        );
    }
    const conns = handles.map((h) => h.connect());
    await Promise.all(conns.map((c) => c.increment(0)));
    results.push(
        await measure(`WebSocket actions, 16 connections, ${label}`, () =>
            closedLoop(callers, loadSeconds, (i) => conns[i].increment(1)),
        ),
    );
    await Promise.all(conns.map((c) => c.dispose()));
    await retire([...new Map(keys.map((key, i) => [key, handles[i]])).values()]);
}

// Event fan-out: 50 subscribed connections, one increment at a time; latency until the last
// connection has the event.
if (want("fanout")) {
    const nConns = 50;
    const events = quick ? 30 : 100;
    const h = client.counter.getOrCreate([`fanout-${run}`]);
    await h.increment(0);
    const conns = Array.from({ length: nConns }, () => h.connect());
    let waiting = null;
    for (const c of conns) {
        c.on("newCount", (n) => {
            if (waiting && n === waiting.value && --waiting.left === 0) waiting.done();
        });
    }
    await Promise.all(conns.map((c) => c.getCount()));
    let value = await h.getCount();
    // The engine's gateway writes each hibernatable socket's keepalive at once after it opens
    // (then every 45 s): 50 transactions that belong to the opens, not to the broadcasts, and
    // that fell into the first window of whichever host starts it sooner.
    await new Promise((r) => setTimeout(r, 1000));
    // One broadcast after another; then the same at a fixed 10 per second, which either host
    // sustains: the engine's CPU per broadcast at equal load, since back to back the faster host
    // also asks the engine for more broadcasts per second.
    for (const perSecond of [0, 10]) {
        const name = perSecond
            ? `event fan-out to 50 connections, ${perSecond}/s`
            : "event fan-out to 50 connections";
        results.push(
            await measure(name, async () => {
                const latencies = [];
                const start = performance.now();
                for (let i = 0; i < events; i++) {
                    const due = start + (i * 1000) / (perSecond || Infinity);
                    const wait = due - performance.now();
                    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
                    value += 1;
                    const delivered = new Promise((done) => (waiting = { value, left: nConns, done }));
                    latencies.push(await timed(() => Promise.all([h.increment(1), delivered])));
                }
                return { ops: events, latencies, extra: { deliveries: events * nConns } };
            }),
        );
    }
    await Promise.all(conns.map((c) => c.dispose()));
    await retire([h]);
}

// First action after sleep: actors put to sleep by an action, then woken by their next call,
// one at a time (the wake is the engine starting the actor again and the host loading its state).
if (want("sleep")) {
    const n = quick ? 10 : 30;
    const handles = Array.from({ length: n }, (_, i) => client.counter.getOrCreate([`sleep-${run}-${i}`]));
    for (const h of handles) {
        await h.increment(1);
        await h.goToSleep();
    }
    // Both hosts finish a requested sleep within a second; the engine then marks the actor asleep.
    await new Promise((r) => setTimeout(r, 3000));
    results.push(
        await measure("first action after sleep", async () => {
            const latencies = [];
            for (const h of handles) latencies.push(await timed(() => h.increment(1)));
            return { ops: n, latencies };
        }),
    );
    await retire(handles);
}

// Many awake actors: create rate, engine CPU per create, host RSS per actor. The actors are
// `resident`, which never sleeps: creating 1,000 takes the engine longer than a counter's 30 s
// sleep timeout, and a host's RSS after the first ones slept is not what N awake actors hold.
// A few actors made before the first RSS reading bring in what any first actor does once (code
// pages, pools, caches), so the rest is what each further awake actor costs.
if (want("awake")) {
    const n = args.awake ? Number(args.awake) : quick ? 100 : 1000;
    const parallel = 8;
    const warmup = 16;
    // With many actors awake the engine sometimes times out routing a create or waiting for the
    // actor (route_resolve_query_timeout, actor_ready_timeout; after 15 s): such a create is
    // retried a second later, up to 20 times, its latency counting until it answers, and the
    // retries are reported. Any other error ends the run.
    const engineTimeouts = ["route_resolve_query_timeout", "actor_ready_timeout"];
    let retries = 0;
    const create = async (key) => {
        for (let attempt = 1; ; attempt++) {
            try {
                return await client.resident.getOrCreate([key]).touch(1);
            } catch (e) {
                if (attempt === 20 || !engineTimeouts.includes(e?.code)) throw e;
                retries += 1;
                await new Promise((ok) => setTimeout(ok, 1000));
            }
        }
    };
    for (let i = 0; i < warmup; i++) await create(`awake-warmup-${run}-${i}`);
    retries = 0;
    const heap0 = await heapBytes(args["heap-file"]);
    const rss0 = rssKb(hostPid);
    const r = await measure(`${n} awake actors (8 creating at a time)`, async () => {
        const latencies = [];
        let next = 0;
        await Promise.all(
            Array.from({ length: parallel }, async () => {
                while (next < n) {
                    const i = next++;
                    latencies.push(await timed(() => create(`awake-${run}-${i}`)));
                }
            }),
        );
        return { ops: n, latencies, extra: { create_retries: retries } };
    }, Infinity);
    r.host_rss_kb_per_actor = (rssKb(hostPid) - rss0) / n;
    const heap1 = await heapBytes(args["heap-file"]);
    if (heap0 !== null && heap1 !== null) r.host_heap_kb_per_actor = (heap1 - heap0) / 1024 / n;
    results.push(r);
}

await client.dispose();
fs.writeFileSync(args.out, JSON.stringify({ quick, results }, null, 1));
process.exit(0);

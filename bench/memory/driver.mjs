// The memory-budget benchmark's load (run.sh here): the official TypeScript client creates
// --actors never-sleeping actors on the host at --endpoint (8 at a time), then opens --conns
// actor connections (one per actor, each subscribed to the actor's event) and has every connected
// actor broadcast once. It samples the host's and the engine's RSS (/proc/<pid>/status) before,
// after the actors and after the connections, and writes one JSON document to --out.
//
//   node driver.mjs --endpoint URL --engine-pid P --host-pid P --out FILE [--actors N] [--conns N]
//                   [--actor resident --action touch --event touched]   (the actor and its calls,
//                   these by default: both the C++ and the TypeScript host serve `resident`; the
//                   action gets 1 as argument) [--engine-metrics URL]
// --engine-metrics: the engine's Prometheus endpoint; the engine's database transactions and
// workflow signals per create and per idle second are then reported too.
import fs from "node:fs";
import { importPackage } from "../../tests/interop/js/deps.mjs";
import { cpuMs, driverArgs, engineWork, rssKb, tcpDelta, tcpStats } from "../driver_common.mjs";

const args = driverArgs(["endpoint", "engine-pid", "host-pid", "out"]);
const nActors = Number(args.actors ?? 10000);
const nConns = Math.min(nActors, Number(args.conns ?? 1000));
const actorName = args.actor ?? "resident";
const actionName = args.action ?? "touch";
const eventName = args.event ?? "touched";
const enginePid = Number(args["engine-pid"]);
const hostPid = Number(args["host-pid"]);
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");

const sample = (label) => {
    const s = { label, host_rss_kb: rssKb(hostPid), engine_rss_kb: rssKb(enginePid), at_s: (performance.now() - t0) / 1000 };
    console.error(`driver: ${JSON.stringify(s)}`);
    return s;
};

const { createClient } = await importPackage("rivetkit", "./client");
const client = createClient({ endpoint: args.endpoint, namespace: "default", poolName: "default" });
const run = `${process.pid}`;
const t0 = performance.now();
const samples = [sample("baseline")];
const metricsUrl = args["engine-metrics"];
const createWork0 = await engineWork(metricsUrl);
const engineCpu0 = cpuMs(enginePid);
const hostCpu0 = cpuMs(hostPid);

// The actors, 8 creating at a time (as the peer benchmark). A create the engine times out on
// (route_resolve_query_timeout when it is short of CPU) is retried, up to 20 times a second apart.
let next = 0;
let failures = 0;
await Promise.all(
    Array.from({ length: 8 }, async () => {
        while (next < nActors) {
            const i = next++;
            for (let attempt = 1; ; attempt++) {
                try {
                    await client[actorName].getOrCreate([`m-${run}-${i}`]).action({ name: actionName, args: [1] });
                    break;
                } catch (e) {
                    failures += 1;
                    if (attempt === 20) throw e;
                    await new Promise((r) => setTimeout(r, 1000));
                }
            }
            if ((i + 1) % 1000 === 0) console.error(`driver: ${i + 1} actors`);
        }
    }),
);
const createSeconds = (performance.now() - t0) / 1000;
const createEngineMs = cpuMs(enginePid) - engineCpu0;
const createHostMs = cpuMs(hostPid) - hostCpu0;
const createWork1 = createWork0 && (await engineWork(metricsUrl));
samples.push(sample(`${nActors} actors`));

// The connections: one per actor, subscribed, each confirmed by an action over it.
const conns = [];
let events = 0;
for (let i = 0; i < nConns; i++) {
    const c = client[actorName].getOrCreate([`m-${run}-${i}`]).connect();
    c.on(eventName, () => {
        events += 1;
    });
    conns.push(c);
}
for (let i = 0; i < nConns; i += 50) await Promise.all(conns.slice(i, i + 50).map((c) => c.action({ name: actionName, args: [1] })));
samples.push(sample(`${nActors} actors, ${nConns} connections`));
const waitEvents = performance.now() + 30_000;
while (events < nConns && performance.now() < waitEvents) await new Promise((r) => setTimeout(r, 100));
samples.push(sample("after one broadcast per connected actor"));

// What the awake actors cost while nothing happens: 20 s of engine and host CPU.
// And what host and engine say to each other meanwhile (the host's connections; null if the
// engine closed one). The window opens 5 s after the last step, so that the last creates' own
// work (a save a second after the first action, the database's idle close) is not counted in it.
await new Promise((r) => setTimeout(r, 5_000));
const idleWork0 = await engineWork(metricsUrl);
const idleEngine0 = cpuMs(enginePid);
const idleHost0 = cpuMs(hostPid);
const idleTcp0 = tcpStats(hostPid);
await new Promise((r) => setTimeout(r, 20_000));
const idleEngineMsPerS = (cpuMs(enginePid) - idleEngine0) / 20;
const idleHostMsPerS = (cpuMs(hostPid) - idleHost0) / 20;
const idleTcp = tcpDelta(idleTcp0, tcpStats(hostPid));
const idleWork1 = idleWork0 && (await engineWork(metricsUrl));
const perUnit = (a, b, n) => (a && b ? { transactions: (b.transactions - a.transactions) / n, signals: (b.signals - a.signals) / n } : null);
const idleTraffic = idleTcp && {
    sent_bytes_per_s: idleTcp.bytes_sent / 20,
    segs_out_per_s: idleTcp.data_segs_out / 20,
    received_bytes_per_s: idleTcp.bytes_received / 20,
    segs_in_per_s: idleTcp.data_segs_in / 20,
};
samples.push(sample("after 20 s idle"));

const [base, actors, connected] = samples;
const result = {
    actors: nActors,
    connections: nConns,
    create_seconds: createSeconds,
    create_retries: failures,
    events_delivered: events,
    engine_cpu_ms_per_actor: createEngineMs / nActors,
    host_cpu_ms_per_actor: createHostMs / nActors,
    host_rss_kb: samples.at(-1).host_rss_kb,
    host_rss_kb_baseline: base.host_rss_kb,
    host_kb_per_actor: (actors.host_rss_kb - base.host_rss_kb) / nActors,
    host_kb_per_connection: (connected.host_rss_kb - actors.host_rss_kb) / nConns,
    engine_rss_kb: samples.at(-1).engine_rss_kb,
    idle_engine_cpu_ms_per_s: idleEngineMsPerS,
    idle_host_cpu_ms_per_s: idleHostMsPerS,
    idle_traffic: idleTraffic,
    // The engine's own count of its work: per create, and per idle second.
    engine_work_per_actor: perUnit(createWork0, createWork1, nActors),
    idle_engine_work_per_s: perUnit(idleWork0, idleWork1, 20),
    samples,
};
fs.writeFileSync(args.out, JSON.stringify(result, null, 1));
await Promise.all(conns.map((c) => c.dispose()));
await client.dispose();
process.exit(0);

// The chaos runner: a real engine, several rivetkit-chaos-host processes in one pool, a workload
// of the official TypeScript client (in this process) and the C++ client (rivetkit-chaos-client
// processes), and faults drawn from a seed, for a bounded time. Then the faults stop, everything
// is healed, the actors' final states are read and check.mjs compares them with the history.
// README.md here has the promises, the fault kinds and the command (run.sh).
//
//   node run.mjs --host-bin B --client-bin B --out DIR [--seed N] [--duration-s S] [--hosts N]
//                [--keys N] [--cpp-clients N] [--faults kind,kind] [--gap-ms LO-HI]
//
// Prints one JSON line (the report) last; exit 0 when no promise was broken, 1 otherwise, 2 when
// the run itself could not be set up.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { check } from "./check.mjs";
import { importPackage, nodeModules } from "../interop/js/deps.mjs";

// rivetkit logs to stdout; keep stdout for the report.
console.log = (...a) => process.stderr.write(a.join(" ") + "\n");
const say = (...a) => process.stderr.write(`[chaos ${new Date().toISOString().slice(11, 23)}] ${a.join(" ")}\n`);

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 && i + 1 < argv.length ? argv[i + 1] : dflt;
};
const hostBin = opt("host-bin");
const clientBin = opt("client-bin");
const outDir = opt("out");
if (!hostBin || !clientBin || !outDir) {
    process.stderr.write("usage: run.mjs --host-bin B --client-bin B --out DIR [--seed N] ...\n");
    process.exit(2);
}
const seed = Number(opt("seed", String(Date.now() % 1_000_000)));
const durationMs = Number(opt("duration-s", "60")) * 1000;
const hostCount = Number(opt("hosts", "2"));
const keyCount = Number(opt("keys", "3"));
const cppClients = Number(opt("cpp-clients", "2"));
const [gapLo, gapHi] = opt("gap-ms", "2000-8000").split("-").map(Number);
const FAULT_WEIGHTS = {
    "host-kill": 4,
    "host-term": 2,
    "host-pause": 2,
    "host-pause-long": 1,
    "engine-restart": 1,
    "engine-pause": 1,
    "slow-reader": 1,
};
const faultKinds = opt("faults", Object.keys(FAULT_WEIGHTS).join(",")).split(",").filter(Boolean);
for (const k of faultKinds) {
    if (!(k in FAULT_WEIGHTS)) {
        process.stderr.write(`unknown fault kind ${k}\n`);
        process.exit(2);
    }
}
const ENGINE_BIN =
    process.env.RIVET_ENGINE_BIN ??
    path.join(nodeModules, "@rivetkit/engine-cli-linux-x64-musl/rivet-engine");
fs.mkdirSync(outDir, { recursive: true });

// MARK: seeded randomness (mulberry32): the seed fixes the fault schedule.
function rng(s) {
    let a = s >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
const rand = rng(seed);
const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// MARK: processes
class Proc {
    constructor(name, cmd, args, env, logFile, { stdoutToLog = false } = {}) {
        this.name = name;
        const log = fs.openSync(logFile, "a");
        this.child = spawn(cmd, args, { env, stdio: ["ignore", stdoutToLog ? log : "pipe", log] });
        fs.closeSync(log);
        this.stdout = "";
        this.child.stdout?.on("data", (d) => {
            this.stdout += d;
            if (this.stdout.length > 65536) this.stdout = this.stdout.slice(-32768);
        });
        this.exited = new Promise((r) => this.child.on("exit", (code, signal) => r({ code, signal })));
        this.done = false;
        this.exited.then((e) => {
            this.done = true;
            this.exit = e;
        });
    }
    get pid() {
        return this.child.pid;
    }
    signal(sig) {
        if (!this.done) this.child.kill(sig);
    }
    async waitStdout(needle, ms) {
        const end = Date.now() + ms;
        while (Date.now() < end && !this.done) {
            if (this.stdout.includes(needle)) return true;
            await sleep(50);
        }
        return this.stdout.includes(needle);
    }
    async waitExit(ms) {
        return Promise.race([this.exited, sleep(ms).then(() => null)]);
    }
}

async function freePorts(n) {
    const servers = Array.from({ length: n }, () => net.createServer());
    await Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", ok))));
    const ports = servers.map((s) => s.address().port);
    await Promise.all(servers.map((s) => new Promise((ok) => s.close(ok))));
    return ports;
}

const [guardPort, peerPort, metricsPort] = await freePorts(3);
const endpoint = `http://127.0.0.1:${guardPort}`;
const engineDir = path.join(outDir, "engine");
fs.mkdirSync(engineDir, { recursive: true });
let engine = null;
let engineStarts = 0;

async function startEngine() {
    engineStarts += 1;
    const env = {
        RUST_BACKTRACE: "0",
        RUST_LOG_ANSI_COLOR: "0",
        RIVET__GUARD__HOST: "127.0.0.1",
        RIVET__GUARD__PORT: String(guardPort),
        RIVET__API_PEER__HOST: "127.0.0.1",
        RIVET__API_PEER__PORT: String(peerPort),
        RIVET__METRICS__HOST: "127.0.0.1",
        RIVET__METRICS__PORT: String(metricsPort),
        RIVET__FILE_SYSTEM__PATH: path.join(engineDir, "db"),
        HOME: engineDir,
        PATH: "/usr/bin:/bin",
        RIVET__RUNTIME__WORKER_CPU_MAX: "1000000",
        RIVET__MEMORY__DISABLE_MEMORY_OPTIMIZATION: "true",
    };
    engine = new Proc("engine", ENGINE_BIN, ["start"], env, path.join(outDir, "engine.log"), { stdoutToLog: true });
    const deadline = Date.now() + 90_000;
    for (;;) {
        if (engine.done) throw new Error(`engine exited at start ${JSON.stringify(engine.exit)}`);
        if (Date.now() > deadline) throw new Error("engine not healthy in 90 s");
        try {
            const r = await fetch(`${endpoint}/health`);
            if (r.ok) break;
        } catch {}
        await sleep(100);
    }
    // /health answers before the engine takes writes; the pool's config is created (again).
    for (;;) {
        try {
            const r = await fetch(`${endpoint}/runner-configs/default?namespace=default`, {
                method: "PUT",
                headers: { "content-type": "application/json" },
                body: JSON.stringify({ datacenters: { default: { normal: {} } } }),
            });
            if (r.status === 200) break;
            if (r.status < 500) throw new Error(`creating the pool failed: ${r.status} ${await r.text()}`);
        } catch (e) {
            if (String(e).includes("creating the pool")) throw e;
        }
        if (Date.now() > deadline) throw new Error("pool not created in 90 s");
        await sleep(100);
    }
}

const hosts = Array(hostCount).fill(null);
let hostStarts = 0;
const unexpectedExits = [];

async function startHost(i) {
    hostStarts += 1;
    const env = {
        ...process.env,
        RIVET_ENDPOINT: endpoint,
        RIVET_NAMESPACE: "default",
        RIVET_POOL: "default",
        RIVET_THREADS: "1",
        RIVET_LOG_LEVEL: process.env.CHAOS_HOST_LOG_LEVEL ?? "info",
    };
    const p = new Proc(`host${i}`, hostBin, [], env, path.join(outDir, `host${i}.log`));
    fs.appendFileSync(path.join(outDir, `host${i}.log`), `--- chaos: host${i} start ${hostStarts} pid ${p.pid} at ${Date.now()}\n`);
    hosts[i] = p;
    p.expectedExit = false;
    p.exited.then((e) => {
        if (!p.expectedExit) {
            unexpectedExits.push({ host: i, pid: p.pid, at: Date.now(), ...e });
            say(`host${i} (pid ${p.pid}) exited by itself: ${JSON.stringify(e)}`);
        }
    });
    if (!(await p.waitStdout("chaos host ready", 60_000)))
        say(`host${i} (pid ${p.pid}) not ready in 60 s; going on`);
}

// MARK: faults
const faults = [];

function record(kind, target, t0, extra = {}) {
    const f = { kind, target, t0, t1: Date.now(), ...extra };
    faults.push(f);
    fs.appendFileSync(path.join(outDir, "faults.jsonl"), JSON.stringify(f) + "\n");
    say(`fault ${kind} ${target} (${f.t1 - t0} ms)`);
}

async function pauseHost(kind, loMs, hiMs) {
    const i = between(0, hostCount - 1);
    const t0 = Date.now();
    hosts[i].signal("SIGSTOP");
    await sleep(between(loMs, hiMs));
    hosts[i].signal("SIGCONT");
    record(kind, `host${i}`, t0);
}

async function restartIfDown(i) {
    if (!hosts[i] || hosts[i].done) await startHost(i);
}

const FAULTS = {
    async "host-kill"() {
        const i = between(0, hostCount - 1);
        const t0 = Date.now();
        hosts[i].expectedExit = true;
        hosts[i].signal("SIGKILL");
        await hosts[i].waitExit(10_000);
        await sleep(between(200, 3000));
        await startHost(i);
        record("host-kill", `host${i}`, t0);
    },
    async "host-term"() {
        const i = between(0, hostCount - 1);
        const t0 = Date.now();
        hosts[i].expectedExit = true;
        hosts[i].signal("SIGTERM");
        const e = await hosts[i].waitExit(60_000);
        let drained = true;
        if (!e) {
            drained = false;
            hosts[i].signal("SIGKILL");
            await hosts[i].waitExit(10_000);
        }
        await sleep(between(200, 2000));
        await startHost(i);
        record("host-term", `host${i}`, t0, { drained, exit: e ?? null });
    },
    "host-pause": () => pauseHost("host-pause", 1000, 5000),
    // Past the engine's 15 s ping timeout: the engine gives the host's actors to another.
    "host-pause-long": () => pauseHost("host-pause-long", 17_000, 24_000),
    async "engine-restart"() {
        const t0 = Date.now();
        engine.signal("SIGKILL");
        await engine.waitExit(10_000);
        await sleep(between(500, 3000));
        await startEngine();
        record("engine-restart", "engine", t0);
    },
    async "engine-pause"() {
        const t0 = Date.now();
        engine.signal("SIGSTOP");
        await sleep(between(16_000, 20_000));
        engine.signal("SIGCONT");
        record("engine-pause", "engine", t0);
    },
    async "slow-reader"() {
        // A connection that subscribes to a busy room's broadcasts and then stops reading.
        const key = `k${between(0, keyCount - 1)}`;
        const t0 = Date.now();
        const ms = between(5000, 20_000);
        const outcome = await slowReader(key, ms);
        record("slow-reader", `chaosChat/${key}`, t0, { heldMs: ms, ...outcome });
    },
};

function wsFrame(text) {
    const payload = Buffer.from(text);
    const mask = Buffer.from([1, 2, 3, 4]);
    const head =
        payload.length < 126
            ? Buffer.from([0x81, 0x80 | payload.length])
            : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255]);
    const body = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
    return Buffer.concat([head, mask, body]);
}

function slowReader(key, holdMs) {
    return new Promise((resolve) => {
        const sock = net.connect(guardPort, "127.0.0.1");
        let upgraded = false;
        let received = 0;
        const q = `rvt-namespace=default&rvt-method=getOrCreate&rvt-runner=default&rvt-key=${key}&rvt-crash-policy=sleep`;
        sock.on("connect", () => {
            sock.write(
                `GET /gateway/chaosChat/connect?${q} HTTP/1.1\r\nHost: 127.0.0.1:${guardPort}\r\n` +
                    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
                    "Sec-WebSocket-Key: Y2hhb3MtY2hhb3MtY2hhb3M=\r\n" +
                    "Sec-WebSocket-Protocol: rivet,rivet_encoding.json\r\n\r\n",
            );
        });
        sock.on("data", (d) => {
            received += d.length;
            if (!upgraded && d.toString("latin1").startsWith("HTTP/1.1 101")) {
                upgraded = true;
                sock.write(
                    wsFrame(JSON.stringify({ body: { tag: "SubscriptionRequest", val: { eventName: "said", subscribe: true } } })),
                );
                setTimeout(() => sock.pause(), 200);
            }
        });
        sock.on("error", () => {});
        setTimeout(() => {
            sock.destroy();
            resolve({ upgraded, received });
        }, holdMs);
    });
}

// MARK: workload (TypeScript client)
const { createClient } = await importPackage("rivetkit", "./client");
const client = createClient({ endpoint, namespace: "default", poolName: "default" });
const history = fs.createWriteStream(path.join(outDir, "history-ts.jsonl"));
let stopping = false;
const OP_TIMEOUT_MS = 60_000;

function withTimeout(p, ms) {
    let t;
    return Promise.race([
        p.finally(() => clearTimeout(t)),
        new Promise((_, rej) => {
            t = setTimeout(() => rej(new Error("chaos: no answer in time")), ms);
        }),
    ]);
}

async function loop(c, kind, actor, key, call, every = null) {
    let seq = 1;
    let attempt = 1;
    let n = 0;
    while (!stopping) {
        const t0 = Date.now();
        const line = { client: c, kind, actor, key, seq, attempt, t0 };
        try {
            line.res = await withTimeout(call(seq, attempt), OP_TIMEOUT_MS);
            line.ok = true;
        } catch (e) {
            line.ok = false;
            line.err = e?.group ? `${e.group}/${e.code}` : String(e?.message ?? e).slice(0, 200);
        }
        line.t1 = Date.now();
        history.write(JSON.stringify(line) + "\n");
        if (line.ok) {
            seq += 1;
            attempt = 1;
            n += 1;
            if (every && n % every.n === 0) await every.fn().catch(() => {});
        } else {
            attempt += 1;
            await sleep(200);
        }
    }
}

function tsWorkload() {
    const loops = [];
    for (let k = 0; k < keyCount; k++) {
        const key = `k${k}`;
        const counter = client.chaosCounter.getOrCreate([key]);
        loops.push(loop(`ts-add-${k}`, "add", "chaosCounter", key, (s) => counter.add(`ts-add-${k}`, s)));
        loops.push(
            loop(`ts-fast-${k}`, "fast", "chaosCounter", key, (s) => counter.addFast(`ts-fast-${k}`, s), {
                n: 60,
                fn: () => counter.nap(),
            }),
        );
        const conn = client.chaosChat.getOrCreate([key]).connect();
        conn.on("said", () => {});
        loops.push(
            loop(`ts-say-${k}`, "say", "chaosChat", key, (s, a) => conn.say(`ts-say-${k}`, s, a)),
        );
        const jobs = client.chaosQueue.getOrCreate([key]);
        loops.push(
            loop(`ts-queue-${k}`, "queue", "chaosQueue", key, (s) => jobs.send("jobs", { client: `ts-queue-${k}`, seq: s })),
        );
        const planner = client.chaosSchedule.getOrCreate([key]);
        loops.push(
            loop(`ts-plan-${k}`, "plan", "chaosSchedule", key, (s) => planner.plan(`ts-plan-${k}`, s, 1500)),
        );
    }
    return loops;
}

// MARK: the run
const started = Date.now();
// An interrupted run leaves no process behind.
const children = () => [engine, ...hosts, ...cpp].filter(Boolean);
for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, () => {
        for (const p of children()) {
            p.signal("SIGCONT");
            p.signal("SIGKILL");
        }
        process.exit(2);
    });
}
const cpp = [];
let tsLoops = [];
let report = null;
try {
    say(`seed ${seed}, ${durationMs / 1000} s, ${hostCount} hosts, ${keyCount} keys, faults ${faultKinds.join(",")}`);
    await startEngine();
    for (let i = 0; i < hostCount; i++) await startHost(i);
    // Every actor is created once, one at a time, before the workload: engine 2.3.19 can create
    // two actors for one key when the first getOrCreate calls for it come together (seen at the
    // start of seed 5: two actor ids started for chaosCounter/k2, each answering generation 1),
    // and the clients' first calls would then land on different actors. README: open findings.
    for (const name of ["chaosCounter", "chaosChat", "chaosQueue", "chaosSchedule"])
        for (let k = 0; k < keyCount; k++) await withTimeout(client[name].getOrCreate([`k${k}`]).read(), 30_000);
    tsLoops = tsWorkload();
    for (let j = 0; j < cppClients; j++) {
        const key = `k${j % keyCount}`;
        cpp.push(
            new Proc(`cpp${j}`, clientBin, ["--endpoint", endpoint, "--client", `cpp-${j}`, "--key", key, "--out", path.join(outDir, `history-cpp-${j}.jsonl`)], process.env, path.join(outDir, `cpp-client-${j}.log`)),
        );
    }

    const weighted = faultKinds.flatMap((k) => Array(FAULT_WEIGHTS[k]).fill(k));
    while (Date.now() - started < durationMs) {
        await sleep(between(gapLo, gapHi));
        if (Date.now() - started >= durationMs) break;
        for (let i = 0; i < hostCount; i++) await restartIfDown(i);
        if (weighted.length === 0) continue;
        const kind = weighted[between(0, weighted.length - 1)];
        await FAULTS[kind]();
    }

    // Heal: nothing paused, every process up; then stop the workload.
    say("faults stopped; healing and stopping the workload");
    if (engine.done) await startEngine();
    for (let i = 0; i < hostCount; i++) await restartIfDown(i);
    stopping = true;
    for (const p of cpp) p.signal("SIGTERM");
    await Promise.all(tsLoops);
    for (const p of cpp) if (!(await p.waitExit(OP_TIMEOUT_MS))) p.signal("SIGKILL");
    await new Promise((r) => history.end(r));

    // Read the history, then wait for queues and schedules to catch up with it.
    const lines = fs
        .readdirSync(outDir)
        .filter((f) => f.startsWith("history-") && f.endsWith(".jsonl"))
        .flatMap((f) =>
            fs
                .readFileSync(path.join(outDir, f), "utf8")
                .split("\n")
                .filter(Boolean)
                .map((l) => JSON.parse(l)),
        );
    const actors = [...new Set(lines.map((l) => `${l.actor}/${l.key}`))];
    const need = new Map(); // "<actor>/<key>" -> [[track, seq]]
    for (const l of lines) {
        if (!l.ok || (l.kind !== "queue" && l.kind !== "plan")) continue;
        const k = `${l.actor}/${l.key}`;
        if (!need.has(k)) need.set(k, new Map());
        const track = `${l.kind === "plan" ? "fire" : "queue"}:${l.client}`;
        need.get(k).set(track, Math.max(need.get(k).get(track) ?? 0, l.seq));
    }
    // An actor the engine lost with a host may take it minutes to place again (after an engine
    // restart it waits for its own timeout): up to SETTLE_MS for every actor to answer and catch
    // up. The actors are read in parallel, again only while unreadable or behind.
    const finals = {};
    const behind = (a) =>
        !finals[a] || finals[a].error !== undefined ||
        [...(need.get(a) ?? [])].some(([t, seq]) => {
            const tr = finals[a]?.tracks?.[t];
            return !tr || (tr.last < seq && !(tr.above ?? []).includes(seq));
        });
    const SETTLE_MS = Number(opt("settle-s", "420")) * 1000;
    const settleStart = Date.now();
    for (;;) {
        const pending = actors.filter(behind);
        if (pending.length === 0 || Date.now() - settleStart > SETTLE_MS) break;
        await Promise.all(
            pending.map(async (a) => {
                const [name, key] = a.split("/");
                try {
                    finals[a] = await withTimeout(client[name].getOrCreate([key]).read(), 30_000);
                } catch (e) {
                    finals[a] = { error: String(e?.message ?? e) };
                }
            }),
        );
        if (actors.some(behind)) await sleep(1000);
    }
    const settleSeconds = Math.round((Date.now() - settleStart) / 1000);
    fs.writeFileSync(path.join(outDir, "finals.json"), JSON.stringify(finals, null, 1));

    const result = check({ history: lines, finals, faults });
    const byKind = {};
    for (const f of faults) byKind[f.kind] = (byKind[f.kind] ?? 0) + 1;
    report = {
        ok: result.violations.length === 0,
        seed,
        seconds: Math.round((Date.now() - started) / 1000),
        hosts: hostCount,
        hostStarts,
        engineStarts,
        unexpectedHostExits: unexpectedExits.length,
        settleSeconds,
        faults: byKind,
        ops: result.ops,
        checked: result.checked,
        notes: result.notes,
        violations: result.violations.length,
    };
    fs.writeFileSync(path.join(outDir, "report.json"), JSON.stringify({ ...report, violationList: result.violations, unexpectedExits }, null, 1));
    for (const v of result.violations.slice(0, 20)) say(`VIOLATION ${v.promise}: ${v.what}`);
} catch (e) {
    say(`run failed: ${e?.stack ?? e}`);
} finally {
    stopping = true;
    if (engine) engine.signal("SIGCONT");
    for (const h of hosts) {
        if (h) {
            h.expectedExit = true;
            h.signal("SIGCONT");
            h.signal("SIGKILL");
        }
    }
    for (const p of cpp) p.signal("SIGKILL");
    await client.dispose().catch(() => {});
    if (engine) engine.signal("SIGKILL");
}
process.stdout.write(JSON.stringify(report ?? { ok: false, seed, error: "the run did not finish" }) + "\n");
process.exit(report ? (report.ok ? 0 : 1) : 2);

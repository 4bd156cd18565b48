// Drives the official TypeScript client (rivetkit 2.3.19, `createClient`) through one scenario
// against whatever actor host serves the `counter` contract on the engine at $RIVET_ENDPOINT
// (see README.md). Prints exactly one JSON line with what it observed and exits 0; on an
// unexpected failure prints {"ok":false,"error":{...}} and exits 1. The caller asserts on values.
//
//   node client.mjs <scenario> [--encoding json|cbor|bare] [--key K] [--timeout SECONDS]
//                   [--conns 100] [--events 1000]          (fanout only)
//
// Env: RIVET_ENDPOINT (required), RIVET_NAMESPACE (default "default"), RIVET_POOL ("default").
// rivetkit logs to stdout; everything but the result line is redirected to stderr.
import { importPackage } from "./deps.mjs";

const writeResultLine = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

const SCENARIOS = {
    "http-increment": httpIncrement,
    resolve,
    "create-input": createInput,
    "get-missing": getMissing,
    "user-error": userError,
    "unknown-action": unknownAction,
    events,
    "sleep-wake": sleepWake,
    "destroy-fresh": destroyFresh,
    hibernate,
    fanout,
};

function parseArgs(argv) {
    const opts = {
        scenario: argv[0],
        encoding: "bare",
        key: undefined,
        timeout: 150,
        conns: 100,
        events: 1000,
    };
    for (let i = 1; i < argv.length; i++) {
        const flag = argv[i];
        const value = argv[++i];
        if (value === undefined) throw new Error(`missing value for ${flag}`);
        if (flag === "--encoding") opts.encoding = value;
        else if (flag === "--key") opts.key = value;
        else if (flag === "--timeout") opts.timeout = Number(value);
        else if (flag === "--conns") opts.conns = Number(value);
        else if (flag === "--events") opts.events = Number(value);
        else throw new Error(`unknown option ${flag}`);
    }
    if (!(opts.scenario in SCENARIOS)) {
        throw new Error(
            `unknown scenario ${JSON.stringify(opts.scenario)}; one of: ${Object.keys(SCENARIOS).join(", ")}`,
        );
    }
    if (!["json", "cbor", "bare"].includes(opts.encoding)) {
        throw new Error(`unknown encoding ${opts.encoding}`);
    }
    return opts;
}

// --- helpers -------------------------------------------------------------------------------

const endpoint = process.env.RIVET_ENDPOINT;
const namespace = process.env.RIVET_NAMESPACE || "default";
const poolName = process.env.RIVET_POOL || "default";

function jsonSafe(value) {
    return JSON.parse(
        JSON.stringify(value, (_k, v) => {
            if (typeof v === "bigint") return Number(v);
            if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString("base64") };
            return v;
        }) ?? "null",
    );
}

// The fields of a thrown ActorError (RivetError) that a host controls.
function describeError(e) {
    if (e === null || typeof e !== "object") return { thrown: String(e) };
    return jsonSafe({
        name: e.constructor?.name ?? e.name,
        group: e.group ?? null,
        code: e.code ?? null,
        message: e.message ?? null,
        metadata: e.metadata ?? null,
        actor: e.actor ?? null,
    });
}

async function expectThrow(fn) {
    try {
        const value = await fn();
        return { threw: false, value: jsonSafe(value) };
    } catch (e) {
        return { threw: true, error: describeError(e) };
    }
}

// Progress lines on stderr: they show where a scenario stalled when the caller reports a timeout.
const scenarioStart = Date.now();
function note(message) {
    process.stderr.write(`client.mjs +${Date.now() - scenarioStart}ms: ${message}\n`);
}

// Settles within `ms` or reports that it did not: {settled, value?, error?}.
async function outcomeWithin(ms, promise) {
    let timer;
    const timeout = new Promise((res) => {
        timer = setTimeout(() => res({ settled: false }), ms);
    });
    try {
        return await Promise.race([
            promise.then(
                (value) => ({ settled: true, value: jsonSafe(value) }),
                (e) => ({ settled: true, error: describeError(e) }),
            ),
            timeout,
        ]);
    } finally {
        clearTimeout(timer);
    }
}

// True when `promise` settled (either way) within `ms`.
async function within(ms, promise) {
    return (await outcomeWithin(ms, promise)).settled;
}

const delay = (ms) => new Promise((res) => setTimeout(res, ms));

async function engineApi(method, path) {
    const sep = path.includes("?") ? "&" : "?";
    const res = await fetch(`${endpoint}${path}${sep}namespace=${encodeURIComponent(namespace)}`, {
        method,
    });
    const text = await res.text();
    let body = text;
    try {
        body = JSON.parse(text);
    } catch {}
    return { status: res.status, body };
}

async function getActor(actorId) {
    const r = await engineApi("GET", `/actors?actor_ids=${encodeURIComponent(actorId)}`);
    if (r.status !== 200) throw new Error(`GET /actors: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.actors?.[0] ?? null;
}

// Polls the engine until the actor reports sleep_ts (an engine-API poll: there is no push).
async function waitForSleep(actorId, boundMs) {
    const deadline = Date.now() + boundMs;
    const started = Date.now();
    for (;;) {
        const actor = await getActor(actorId);
        if (actor?.sleep_ts != null) return { observed: true, afterMs: Date.now() - started, actor };
        if (Date.now() >= deadline) return { observed: false, afterMs: Date.now() - started, actor };
        await delay(100);
    }
}

// The actor generation from the x-rivet-actor-generation header of a raw request (the host
// adds it to every per-actor HTTP response, errors included); null if the host did not answer.
async function actorGeneration(handle) {
    try {
        const res = await handle.fetch("/interop-generation-probe");
        await res.arrayBuffer();
        const value = res.headers.get("x-rivet-actor-generation");
        return value === null ? null : Number(value);
    } catch {
        return null;
    }
}

// Everything a connection reports, in arrival order.
function recordConn(conn, log, events) {
    conn.onOpen(() => log.push("open"));
    conn.onClose(() => log.push("close"));
    conn.onError((e) => log.push(`error:${e?.group}.${e?.code}`));
    const waiters = [];
    for (const name of events) {
        conn.on(name, (...args) => {
            log.push(`event:${args.map((a) => JSON.stringify(jsonSafe(a))).join(",")}`);
            for (const w of [...waiters]) w();
        });
    }
    return {
        // Resolves once `predicate(log)` holds, re-checked on every event.
        until(predicate) {
            if (predicate(log)) return Promise.resolve();
            return new Promise((res) => {
                const check = () => {
                    if (predicate(log)) {
                        waiters.splice(waiters.indexOf(check), 1);
                        res();
                    }
                };
                waiters.push(check);
            });
        },
    };
}

// --- scenarios ------------------------------------------------------------------------------

async function httpIncrement({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const outputs = [];
    for (const n of [1, 2, 3]) outputs.push(await h.increment(n));
    const count = await h.getCount();
    return { outputs, count };
}

async function resolve({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const actorId = await h.resolve();
    const again = await client.counter.getOrCreate([key]).resolve();
    const byId = client.counter.getForId(actorId);
    const incremented = await byId.increment(4);
    const countByKey = await h.getCount();
    return { actorId, sameIdTwice: again === actorId, incremented, countByKey };
}

async function createInput({ client, key }) {
    const h = await client.counter.create([key], { input: { start: 5 } });
    const actorId = await h.resolve();
    const input = await h.getInput();
    const count = await h.getCount();
    const plain = client.counter.getOrCreate([`${key}-noinput`]);
    const inputWithout = await plain.getInput();
    const countWithout = await plain.getCount();
    const duplicate = await expectThrow(() =>
        client.counter.create([key], { input: { start: 9 } }),
    );
    return { actorId, input, count, inputWithout, countWithout, duplicate };
}

async function getMissing({ client }) {
    const missingKey = `no-such-key-${Math.random().toString(36).slice(2)}`;
    const started = Date.now();
    const result = await expectThrow(() => client.counter.get([missingKey]).getCount());
    return { missingKey, ...result, elapsedMs: Date.now() - started };
}

async function userError({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const http = await expectThrow(() => h.fail());
    const conn = h.connect();
    try {
        const ws = await expectThrow(() => conn.fail());
        // The connection must survive an action error.
        const afterOnConn = await conn.increment(1);
        return { http, conn: ws, afterOnConn };
    } finally {
        await within(5_000, conn.dispose());
    }
}

async function unknownAction({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const http = await expectThrow(() => h.action({ name: "nope", args: [] }));
    const conn = h.connect();
    try {
        const ws = await expectThrow(() => conn.action({ name: "nope", args: [] }));
        const afterOnConn = await conn.increment(1);
        return { http, conn: ws, afterOnConn };
    } finally {
        await within(5_000, conn.dispose());
    }
}

async function events({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const names = ["A", "B", "C"];
    const conns = {};
    const logs = {};
    const recorders = {};
    for (const name of names) {
        conns[name] = h.connect();
        logs[name] = [];
    }
    try {
        // Subscriptions are sent before any action on the same socket, so a round trip on each
        // connection proves its subscription reached the actor before A increments.
        const setup = [];
        for (const name of names) {
            const subscribed = name !== "C";
            recorders[name] = recordConn(conns[name], logs[name], subscribed ? ["newCount"] : []);
            setup.push(conns[name].getCount());
        }
        await Promise.all(setup);
        for (const name of names) logs[name].length = 0;

        const reply = await conns.A.increment(3);
        logs.A.push(`reply:${reply}`);
        // On each socket frames arrive in the order the actor sent them: once a later action's
        // reply is in, any event for that connection must have been delivered already.
        for (const name of ["B", "C"]) logs[name].push(`reply:${await conns[name].getCount()}`);
        const bGotEvent = await within(
            10_000,
            recorders.B.until((log) => log.some((x) => x.startsWith("event:"))),
        );
        return {
            value: reply,
            bGotEvent,
            seen: Object.fromEntries(names.map((n) => [n, [...logs[n]]])),
            note: "B and C end with a getCount() round trip on their own connection",
        };
    } finally {
        await within(5_000, Promise.all(names.map((n) => conns[n].dispose())));
    }
}

async function sleepWake({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const before = await h.increment(7);
    const actorId = await h.resolve();
    const actorBefore = await getActor(actorId);
    const generationBefore = await actorGeneration(h);
    const sleepReply = await h.goToSleep();
    const sleep = await waitForSleep(actorId, 30_000);
    const countAfterWake = await h.getCount();
    const actorAfter = await getActor(actorId);
    return {
        actorId,
        before,
        sleepReply,
        sleepObserved: sleep.observed,
        sleepObservedAfterMs: sleep.afterMs,
        countAfterWake,
        sameActorId: (await h.resolve()) === actorId,
        sleepTsAfterWake: actorAfter?.sleep_ts ?? null,
        connectableTsChanged: actorBefore?.connectable_ts !== actorAfter?.connectable_ts,
        generationBefore,
        generationAfter: await actorGeneration(h),
    };
}

async function destroyFresh({ client, key }) {
    // rivetkit 2.3.19's client has no destroy call on a handle; destruction goes through the
    // engine API, as it does for `rivet actor destroy`.
    const h = client.counter.getOrCreate([key]);
    await h.increment(5);
    const before = await h.increment(6);
    const oldId = await h.resolve();
    const del = await engineApi("DELETE", `/actors/${encodeURIComponent(oldId)}`);
    // Bounded wait for the engine to mark it destroyed (poll: the engine API has no push).
    const deadline = Date.now() + 30_000;
    let destroyTs = null;
    while (Date.now() < deadline) {
        const a = await getActor(oldId);
        destroyTs = a?.destroy_ts ?? (a === null ? "gone" : null);
        if (destroyTs !== null) break;
        await delay(100);
    }
    const oldById = await expectThrow(() => client.counter.getForId(oldId).getCount());
    const fresh = client.counter.getOrCreate([key]);
    const countAfter = await fresh.getCount();
    const newId = await fresh.resolve();
    return {
        before,
        oldId,
        deleteStatus: del.status,
        deleteBody: del.body,
        destroyObserved: destroyTs !== null,
        oldById,
        countAfter,
        newId,
        newIdDiffers: newId !== oldId,
    };
}

async function hibernate({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const conn = h.connect();
    const log = [];
    const statuses = [];
    conn.onStatusChange((s) => statuses.push(s));
    const rec = recordConn(conn, log, ["newCount"]);
    try {
        log.push(`reply:${await conn.increment(1)}`);
        const actorId = await h.resolve();
        const connIdBefore = conn.connId ?? null;
        const actorBefore = await getActor(actorId);
        const generationBefore = await actorGeneration(h);
        // A separate HTTP handle asks the actor to sleep while the connection stays open.
        const sleepReply = await client.counter.getForId(actorId).goToSleep();
        const sleep = await waitForSleep(actorId, 30_000);
        log.push(sleep.observed ? "sleep-observed" : "sleep-not-observed");
        const statusWhileAsleep = conn.connStatus;
        const second = await conn.increment(1);
        log.push(`reply:${second}`);
        const eventAfterWake = await within(
            10_000,
            rec.until((l) => l.includes(`event:${second}`)),
        );
        const actorAfter = await getActor(actorId);
        return {
            actorId,
            sleepReply,
            sleepObserved: sleep.observed,
            sleepObservedAfterMs: sleep.afterMs,
            statusWhileAsleep,
            log: [...log],
            statuses: [...statuses],
            eventAfterWake,
            connIdBefore,
            connIdAfter: conn.connId ?? null,
            sameConnId: connIdBefore === (conn.connId ?? null),
            closed: log.includes("close"),
            connectableTsChanged: actorBefore?.connectable_ts !== actorAfter?.connectable_ts,
            generationBefore,
            generationAfter: await actorGeneration(h),
            countAfter: await h.getCount(),
        };
    } finally {
        await within(5_000, conn.dispose());
    }
}

async function fanout({ client, key, conns: CONNS, events: N }) {
    const h = client.counter.getOrCreate([key]);
    await h.getCount();
    const conns = [];
    const received = [];
    for (let i = 0; i < CONNS; i++) {
        const conn = h.connect();
        const seq = [];
        conn.on("tick", (i) => seq.push(i));
        conns.push(conn);
        received.push(seq);
    }
    try {
        // Round trip per connection: its subscription is in place before the broadcast.
        const subscribed = await outcomeWithin(30_000, Promise.all(conns.map((c) => c.getCount())));
        if (!subscribed.settled || subscribed.error) {
            throw new Error(`connections not ready: ${JSON.stringify(subscribed)}`);
        }
        note(`${CONNS} connections subscribed`);
        const started = Date.now();
        // Bounded: if the engine drops the HTTP response (see README) the call would only end at
        // the gateway's request timeout; the report says so instead of timing out blind.
        const broadcast = await outcomeWithin(45_000, h.broadcastMany(N));
        const replyAfterMs = Date.now() - started;
        note(`broadcastMany: ${JSON.stringify(broadcast)}`);
        // Per-socket ordering: once a later reply is in, every tick sent to it has arrived.
        let barrierDone = 0;
        await outcomeWithin(
            30_000,
            Promise.all(conns.map((c) => c.getCount().then(() => barrierDone++))),
        );
        note(`barrier round trips done on ${barrierDone} connections`);
        const completeAtBarrier = received.filter((s) => s.length >= N).length;
        // Stragglers only matter if a host reorders; give them a bounded grace period.
        const deadline = Date.now() + 5_000;
        while (received.some((s) => s.length < N) && Date.now() < deadline) await delay(50);
        const elapsedMs = Date.now() - started;
        const perConn = received.map((seq) => {
            const seen = new Set(seq);
            let inOrder = seq.length === N;
            for (let i = 0; inOrder && i < N; i++) inOrder = seq[i] === i;
            let lost = 0;
            const lostRanges = [];
            for (let i = 0; i < N; i++) {
                if (seen.has(i)) continue;
                lost++;
                const last = lostRanges[lostRanges.length - 1];
                if (last && last[1] === i - 1) last[1] = i;
                else lostRanges.push([i, i]);
            }
            return {
                count: seq.length,
                exact: inOrder,
                duplicates: seq.length - seen.size,
                lost,
                lostRanges: lostRanges.slice(0, 10).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)),
            };
        });
        return {
            connections: CONNS,
            events: N,
            replyReceived: broadcast.settled && !broadcast.error,
            reply: broadcast.value ?? null,
            replyError: broadcast.error ?? null,
            replyAfterMs,
            barrierDone,
            exactConns: perConn.filter((p) => p.exact).length,
            completeAtBarrier,
            totalReceived: perConn.reduce((a, p) => a + p.count, 0),
            totalDuplicates: perConn.reduce((a, p) => a + p.duplicates, 0),
            totalLost: perConn.reduce((a, p) => a + p.lost, 0),
            notExact: perConn
                .map((p, i) => ({ conn: i, ...p }))
                .filter((p) => !p.exact)
                .slice(0, 10),
            elapsedMs,
        };
    } finally {
        await within(5_000, Promise.all(conns.map((c) => c.dispose())));
    }
}

// --- main -----------------------------------------------------------------------------------

function finish(line, code) {
    writeResultLine(`${JSON.stringify(line)}\n`, () => process.exit(code));
}

let opts;
try {
    opts = parseArgs(process.argv.slice(2));
    if (!endpoint) throw new Error("RIVET_ENDPOINT is required");
} catch (e) {
    finish({ ok: false, error: { message: e.message } }, 2);
}

if (opts) {
    const watchdog = setTimeout(() => {
        finish(
            {
                ok: false,
                scenario: opts.scenario,
                encoding: opts.encoding,
                error: { message: `scenario timed out after ${opts.timeout} s` },
            },
            1,
        );
    }, opts.timeout * 1000);
    watchdog.unref();
    const key =
        opts.key ?? `interop-${opts.scenario}-${opts.encoding}-${Math.random().toString(36).slice(2, 10)}`;
    let client;
    try {
        const { createClient } = await importPackage("rivetkit", "./client");
        client = createClient({ endpoint, namespace, poolName, encoding: opts.encoding });
        const result = await SCENARIOS[opts.scenario]({ ...opts, client, key });
        await within(5_000, client.dispose());
        finish(
            { ok: true, scenario: opts.scenario, encoding: opts.encoding, key, ...jsonSafe(result) },
            0,
        );
    } catch (e) {
        finish(
            {
                ok: false,
                scenario: opts.scenario,
                encoding: opts.encoding,
                key,
                error: { ...describeError(e), stack: e?.stack ?? null },
            },
            1,
        );
    }
}

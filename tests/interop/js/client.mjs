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
import {
    actorGeneration,
    delay,
    engineApi,
    expectThrow,
    getActor,
    note,
    outcomeWithin,
    recordConn,
    runMain,
    waitForSleep,
    within,
} from "./helpers.mjs";

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
    // Made before the three connections look it up (two getOrCreate calls for a new key that
    // arrive together can make two actors on engine 2.3.19; see examples.mjs, chatRoom).
    await h.resolve();
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
    // What happened to each socket besides its ticks: a close and the client's reconnect would
    // explain a gap, so a loss report carries them.
    const lifecycle = [];
    const t0 = Date.now();
    for (let i = 0; i < CONNS; i++) {
        const conn = h.connect();
        const seq = [];
        const life = [];
        conn.on("tick", (i) => seq.push(i));
        conn.onOpen(() => life.push(`open@${Date.now() - t0}ms:${seq.length}`));
        conn.onClose(() => life.push(`close@${Date.now() - t0}ms:${seq.length}`));
        conn.onError((e) => life.push(`error:${e?.group}.${e?.code}:${e?.message ?? e}`));
        conns.push(conn);
        received.push(seq);
        lifecycle.push(life);
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
        const perConn = received.map((seq, conn) => {
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
                lifecycle: lifecycle[conn].slice(0, 8),
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

await runMain(SCENARIOS, { numeric: { conns: 100, events: 1000 } });

// Drives the official TypeScript client (rivetkit 2.3.19, `createClient`) through one scenario
// against a host serving the example actors of examples/ ("counter", "chatRoom", "reminder",
// "rateLimiter"; see examples/*/*.hpp for their contracts) on the engine at $RIVET_ENDPOINT.
// Same conventions as client.mjs (README.md): exactly one JSON line of observations on stdout
// and exit 0; {"ok":false,"error":{...}} and exit 1 on an unexpected failure; 2 for bad
// arguments. The caller asserts on the values.
//
//   node examples.mjs <scenario> [--encoding json|cbor|bare] [--key K] [--timeout SECONDS]
//                     [--delay 3000]                  (reminder-sleep only: the reminder's delay)
//
// Env: RIVET_ENDPOINT (required), RIVET_NAMESPACE (default "default"), RIVET_POOL ("default").
import {
    actorGeneration,
    delay,
    expectThrow,
    getActor,
    jsonSafe,
    note,
    recordConn,
    runMain,
    waitForActor,
    waitForSleep,
    within,
} from "./helpers.mjs";

const SCENARIOS = {
    counter,
    "counter-error": counterError,
    "chat-room": chatRoom,
    reminder,
    "reminder-sleep": reminderSleep,
    "rate-limiter": rateLimiter,
    "big-numbers": bigNumbers,
};

// The payloads of event `name` on `conn`, in arrival order (first argument of each), with the
// time since `origin()` at which each arrived.
function collect(conn, name, origin = () => 0) {
    const seen = [];
    const waiters = [];
    conn.on(name, (value) => {
        seen.push({ value: jsonSafe(value), atMs: Date.now() - origin() });
        for (const w of [...waiters]) w();
    });
    return {
        seen,
        values: () => seen.map((s) => s.value),
        // Resolves once `n` events have arrived.
        atLeast(n) {
            if (seen.length >= n) return Promise.resolve();
            return new Promise((res) => {
                const check = () => {
                    if (seen.length >= n) {
                        waiters.splice(waiters.indexOf(check), 1);
                        res();
                    }
                };
                waiters.push(check);
            });
        },
    };
}

// --- counter ----------------------------------------------------------------------------------

// increment over HTTP and over a connection; the connection (subscribed to "newCount") sees
// every new count, and the event of its own increment before the reply. A create input sets
// the first count.
async function counter({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const conn = h.connect();
    const log = [];
    const rec = recordConn(conn, log, ["newCount"]);
    try {
        // The subscription goes out before the first action on the socket: after this round
        // trip it is in place.
        const initial = await conn.getCount();
        log.length = 0;
        const httpOutputs = [await h.increment(1), await h.increment(2)];
        const connReply = await conn.increment(4);
        log.push(`reply:${connReply}`);
        // Frames on one socket arrive in the order the actor sent them; this bound only matters
        // if the events never come.
        const allEvents = await within(
            10_000,
            rec.until((l) => l.filter((x) => x.startsWith("event:")).length >= 3),
        );
        const count = await h.getCount();
        const withInput = await client.counter.create([`${key}-input`], { input: { start: 5 } });
        const countWithInput = await withInput.getCount();
        const afterInput = await withInput.increment(1);
        return {
            initial,
            httpOutputs,
            connReply,
            allEvents,
            log: [...log],
            count,
            countWithInput,
            afterInput,
        };
    } finally {
        await within(5_000, conn.dispose());
    }
}

// fail() over HTTP and over a connection: the user error's group, code, message, metadata and
// actor reach the client; the connection survives it.
async function counterError({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const actorId = await h.resolve();
    const http = await expectThrow(() => h.fail());
    const conn = h.connect();
    try {
        const ws = await expectThrow(() => conn.fail());
        const afterOnConn = await conn.increment(1);
        const countAfter = await h.getCount();
        return { actorId, http, conn: ws, afterOnConn, countAfter };
    } finally {
        await within(5_000, conn.dispose());
    }
}

// --- chatRoom ---------------------------------------------------------------------------------

// Two connections subscribed to "newMessage"; messages sent from A, from B and over HTTP reach
// both, in order; the history keeps that order and the replies are the stored messages.
async function chatRoom({ client, key }) {
    const h = client.chatRoom.getOrCreate([key]);
    // The actor exists before the two connections look it up: engine 2.3.19 can create two
    // actors for one key when two getOrCreate calls for a new key arrive together (seen here:
    // "actor started" twice for the room's key, each connection on its own room).
    await h.resolve();
    const a = h.connect();
    const b = h.connect();
    try {
        const onA = collect(a, "newMessage");
        const onB = collect(b, "newMessage");
        const initialA = await a.getHistory();
        const initialB = await b.getHistory();
        const clientBefore = Date.now();
        const sent = [
            await a.sendMessage("ann", "hello"),
            await b.sendMessage("bob", "hi ann"),
            await h.sendMessage("cat", "over http"),
        ];
        const clientAfter = Date.now();
        // Round trips on both sockets, then a bounded wait in case an event is missing.
        const historyViaA = await a.getHistory();
        const historyViaB = await b.getHistory();
        const bothGotAll = await within(10_000, Promise.all([onA.atLeast(3), onB.atLeast(3)]));
        const history = await h.getHistory();
        return {
            initialA,
            initialB,
            clientBefore,
            clientAfter,
            sent,
            eventsA: onA.values(),
            eventsB: onB.values(),
            bothGotAll,
            history,
            historyViaA,
            historyViaB,
        };
    } finally {
        await within(5_000, Promise.all([a.dispose(), b.dispose()]));
    }
}

// --- reminder ---------------------------------------------------------------------------------

// Two reminders scheduled out of order fire in due order; a subscribed connection receives
// "reminder" for each and getFired() lists them. A negative delay is a user error.
async function reminder({ client, key }) {
    const h = client.reminder.getOrCreate([key]);
    const conn = h.connect();
    let origin = 0;
    const onConn = collect(conn, "reminder", () => origin);
    try {
        const initial = await conn.getFired();
        origin = Date.now();
        const scheduled = [await conn.remindIn(900, "later"), await conn.remindIn(300, "sooner")];
        const scheduledAfterMs = Date.now() - origin;
        const bothArrived = await within(20_000, onConn.atLeast(2));
        const fired = await h.getFired();
        const negative = await expectThrow(() => h.remindIn(-1, "never"));
        return {
            initial,
            scheduled,
            scheduledAfterMs,
            bothArrived,
            events: onConn.seen,
            fired,
            negative,
        };
    } finally {
        await within(5_000, conn.dispose());
    }
}

// A reminder set before the actor sleeps fires after it: remindIn(delay), goToSleep(), wait for
// the engine to report sleep_ts, then — without any request to the actor, only engine-API polls —
// wait for the engine to wake it (sleep_ts cleared: its alarm), and only then read getFired().
async function reminderSleep({ client, key, delay: delayMs }) {
    const h = client.reminder.getOrCreate([key]);
    const initial = await h.getFired();
    const actorId = await h.resolve();
    const actorBefore = await getActor(actorId);
    const generationBefore = await actorGeneration(h);
    const text = `after-sleep-${Math.random().toString(36).slice(2, 8)}`;
    const origin = Date.now();
    const scheduled = await h.remindIn(delayMs, text);
    const sleepReply = await h.goToSleep();
    const sleep = await waitForSleep(actorId, 30_000);
    const sleepObservedAtMs = Date.now() - origin;
    note(`sleep observed: ${sleep.observed} at +${sleepObservedAtMs} ms`);
    let wake = { observed: false, actor: sleep.actor };
    if (sleep.observed) {
        // Bounded: the reminder's delay plus 30 s for the engine to act on the alarm.
        wake = await waitForActor(
            actorId,
            delayMs + 30_000,
            (actor) => actor !== null && actor.sleep_ts == null,
        );
    }
    const wakeObservedAtMs = Date.now() - origin;
    note(`wake observed: ${wake.observed} at +${wakeObservedAtMs} ms`);
    // The scheduled fire runs right after the wake (this request may queue behind it); bounded.
    let fired = await h.getFired();
    const pollDeadline = Date.now() + 10_000;
    while (!fired.includes(text) && Date.now() < pollDeadline) {
        await delay(100);
        fired = await h.getFired();
    }
    const firedSeenAtMs = Date.now() - origin;
    const actorAfter = await getActor(actorId);
    return {
        actorId,
        delayMs,
        text,
        initial,
        scheduled,
        sleepReply,
        sleepObserved: sleep.observed,
        sleepObservedAtMs,
        sleepTs: sleep.actor?.sleep_ts ?? null,
        wakeObserved: wake.observed,
        wakeObservedAtMs,
        fired,
        firedSeenAtMs,
        connectableTsChanged: actorBefore?.connectable_ts !== actorAfter?.connectable_ts,
        sleepTsAfter: actorAfter?.sleep_ts ?? null,
        generationBefore,
        generationAfter: await actorGeneration(h),
    };
}

// --- rateLimiter ------------------------------------------------------------------------------

// Six checks of one key in one window (three over HTTP, three over a connection): five allowed
// with remaining 4..0, the sixth refused with remaining 0; every resetAt is the window's end.
// Another key has its own window.
async function rateLimiter({ client, key }) {
    const h = client.rateLimiter.getOrCreate([key]);
    const conn = h.connect();
    try {
        await conn.check("warm-up");
        const clientBefore = Date.now();
        const results = [];
        for (let i = 0; i < 3; i++) results.push(await h.check("alice"));
        for (let i = 0; i < 3; i++) results.push(await conn.check("alice"));
        const clientAfter = Date.now();
        const other = await h.check("bob");
        return { clientBefore, clientAfter, results, other };
    } finally {
        await within(5_000, conn.dispose());
    }
}

// --- numbers beyond 32 bits ---------------------------------------------------------------------

// A JavaScript number that is an integer beyond 32 bits (a millisecond timestamp) travels as a
// CBOR float64 from the official client, and must come back a number, not a BigInt, as it does
// from a TypeScript actor: counter.increment with such amounts (HTTP and a connection), and the
// rate limiter's resetAt. Types are reported before anything is converted.
async function bigNumbers({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const conn = h.connect();
    try {
        const first = await h.increment(2 ** 32);
        const second = await conn.increment(1796346349679 - 2 ** 32);
        const limiter = await client.rateLimiter.getOrCreate([key]).check("alice");
        return {
            first: jsonSafe(first),
            firstType: typeof first,
            second: jsonSafe(second),
            secondType: typeof second,
            resetAtType: typeof limiter.resetAt,
        };
    } finally {
        await within(5_000, conn.dispose());
    }
}

// --- main -------------------------------------------------------------------------------------

await runMain(SCENARIOS, { numeric: { delay: 3000 }, keyPrefix: "examples" });

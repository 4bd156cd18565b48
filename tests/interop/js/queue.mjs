// Drives the official TypeScript client's queue API (rivetkit 2.3.19, `handle.send(name, body,
// {wait, timeout})`, POST /queue/{name}) against a host serving the "queueWorker" actor of
// tests/interop/queue_test.cpp on the engine at $RIVET_ENDPOINT. Same conventions as client.mjs
// (README.md): one JSON line of observations on stdout, exit 0; {"ok":false,...} and exit 1 on an
// unexpected failure. The caller asserts on the values.
//
//   node queue.mjs <scenario> [--encoding json|cbor|bare] [--key K] [--timeout SECONDS]
//
// queueWorker: its run handler receives "jobs" messages (completable), records the number in
// `processed` and completes with number * 2; "parked" messages are left for takeParked() (try_next
// until empty, FIFO); goToSleep() sleeps the actor; max queue message size 1024 bytes.
import {
    actorGeneration,
    delay,
    endpoint,
    engineApi,
    expectThrow,
    namespace,
    note,
    poolName,
    runMain,
    waitForSleep,
} from "./helpers.mjs";

const SCENARIOS = {
    "queue-send": queueSend,
    "queue-sleep": queueSleep,
};

// send without wait, send with wait answered by the run handler's complete(), a wait nobody
// completes timing out, and an oversized message refused.
async function queueSend({ client, key }) {
    const h = client.queueWorker.getOrCreate([key]);
    const plain = await h.send("jobs", 1);
    const waited = await h.send("jobs", 5, { wait: true, timeout: 10_000 });
    const started = Date.now();
    const timedOut = await h.send("parked", "nobody", { wait: true, timeout: 300 });
    const timedOutAfterMs = Date.now() - started;
    const tooLarge = await expectThrow(() => h.send("jobs", "x".repeat(2000)));
    let processed = await h.processed();
    const deadline = Date.now() + 10_000;
    while (processed.length < 2 && Date.now() < deadline) {
        await delay(50);
        processed = await h.processed();
    }
    const inspectorQueue = await inspectorGet(key, await h.resolve(), "/inspector/queue?limit=5");
    const parked = await h.takeParked();
    const metrics = await actorMetrics(key);
    return {
        plain: plain ?? null,
        waited,
        timedOut,
        timedOutAfterMs,
        tooLarge,
        processed,
        parked,
        inspectorQueue,
        metrics,
    };
}

function gatewayUrl(key, path) {
    const [route, search] = path.split("?");
    const query = new URLSearchParams(search ?? "");
    for (const [k, v] of Object.entries({
        "rvt-namespace": namespace,
        "rvt-method": "getOrCreate",
        "rvt-runner": poolName,
        "rvt-key": key,
        "rvt-crash-policy": "sleep",
    }))
        query.set(k, v);
    return `${endpoint}/gateway/queueWorker${route}?${query}`;
}

// GET an inspector route with the token the actor keeps in KV [3] (read through the engine
// API) and, to check the 401, without it.
async function inspectorGet(key, actorId, path) {
    const kv = await engineApi("GET", `/actors/${actorId}/kv/keys/${encodeURIComponent("Aw==")}`);
    const token = Buffer.from(kv.body?.value ?? "", "base64").toString("utf8");
    const denied = await fetch(gatewayUrl(key, path));
    await denied.arrayBuffer();
    const res = await fetch(gatewayUrl(key, path), { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    let body = text;
    try {
        body = JSON.parse(text);
    } catch {}
    return { deniedStatus: denied.status, status: res.status, body };
}

// GET /metrics on the actor through the engine's gateway (the framework route, not a raw
// request): the status, content type, and the samples labelled actor_name="queueWorker".
async function actorMetrics(key) {
    const res = await fetch(gatewayUrl(key, "/metrics"));
    const text = await res.text();
    const samples = {};
    for (const line of text.split("\n")) {
        if (!line.includes('actor_name="queueWorker"')) continue;
        const space = line.lastIndexOf(" ");
        samples[line.slice(0, space)] = Number(line.slice(space + 1));
    }
    return { status: res.status, contentType: res.headers.get("content-type"), samples };
}

// Messages nobody receives survive the actor sleeping: three sends, sleep (observed through the
// engine API), then takeParked() wakes a new generation that reads them in order.
async function queueSleep({ client, key }) {
    const h = client.queueWorker.getOrCreate([key]);
    const actorId = await h.resolve();
    const generationBefore = await actorGeneration(h);
    for (const body of ["a", { b: 2 }, ["c"]]) await h.send("parked", body);
    await h.goToSleep();
    const sleep = await waitForSleep(actorId, 30_000);
    note(`sleep observed: ${sleep.observed}`);
    const parked = await h.takeParked();
    const again = await h.takeParked();
    return {
        sleepObserved: sleep.observed,
        generationBefore,
        generationAfter: await actorGeneration(h),
        parked,
        again,
    };
}

await runMain(SCENARIOS, { keyPrefix: "queue" });

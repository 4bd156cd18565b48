// One half of a hand-over between runtimes (tests/interop/two_runtimes_test.cpp): the official
// client (rivetkit 2.3.19) writes to, or reads from, the `vault` actor on whichever host serves the
// pool now — the TypeScript host (ts_host.mjs) or rivetkit-cpp. Same conventions as client.mjs
// (README.md): one JSON line of observations on stdout.
//
//   node two_runtimes.mjs write --key K --encoding E --round N [--remindMs MS]
//   node two_runtimes.mjs read  --key K --encoding E --reminders N
//
// write: count += 5, user KV greeting = "hello-N", queue message {n: N} left waiting, a row
// "note-N" in the actor's own table, and an action scheduled `remindMs` ahead (it fires after the
// hand-over, on the other host). read: what the actor holds, its waiting queue messages (taken),
// and the reminders fired, polled until `reminders` have (a scheduled action runs on its own).
// Both report the inspector token as the dashboard reads it (engine actor-KV key [3]).
import { delay, engineApi, note, runMain } from "./helpers.mjs";

async function inspectorToken(actorId) {
    const r = await engineApi("GET", `/actors/${actorId}/kv/keys/${encodeURIComponent("Aw==")}`);
    if (r.status !== 200) return null;
    return Buffer.from(r.body.value ?? "", "base64").toString("utf8");
}

async function write({ client, key, round, remindMs }) {
    const h = client.vault.getOrCreate([key]);
    const count = await h.increment(5);
    await h.kvPut("greeting", `hello-${round}`);
    await h.enqueue({ n: round });
    await h.note(`note-${round}`);
    await h.remindIn(remindMs);
    const actorId = await h.resolve();
    note(`wrote round ${round} to ${actorId}`);
    return { actorId, count, token: await inspectorToken(actorId) };
}

async function read({ client, key, reminders }) {
    const h = client.vault.getOrCreate([key]);
    const actorId = await h.resolve();
    const count = await h.getCount();
    const greeting = await h.kvGet("greeting");
    const jobs = await h.takeJobs();
    const notes = await h.notes();
    let reminded = await h.getReminded();
    const deadline = Date.now() + 60_000;
    while (reminded < reminders && Date.now() < deadline) {
        await delay(200);
        reminded = await h.getReminded();
    }
    return { actorId, count, greeting, jobs, notes, reminded, token: await inspectorToken(actorId) };
}

await runMain({ write, read }, { numeric: { round: 1, remindMs: 4000, reminders: 0 } });

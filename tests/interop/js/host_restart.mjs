// A hibernatable connection of the official TypeScript client survives its host *process*:
// the client connects to the example "counter" served by a rivetkit-host process, increments,
// prints {"ready":true} on stdout and waits for SIGUSR2. Meanwhile tests/interop/host_test.cpp
// drains that host (SIGTERM: the actor sleeps with the connection saved), starts a new host
// process and signals. The same connection then increments again: the engine wakes the actor on
// the new process, which restores the connection from its persisted hibernation record, so the
// reply, the event and the connection id arrive without a reconnect.
//
//   node host_restart.mjs conn-survives-restart [--encoding json|cbor|bare] [--timeout S]
import {
    actorGeneration,
    note,
    recordConn,
    runMain,
    within,
    writeResultLine,
} from "./helpers.mjs";

const SCENARIOS = { "conn-survives-restart": connSurvivesRestart };

function signalled(name) {
    return new Promise((res) => process.once(name, res));
}

async function connSurvivesRestart({ client, key }) {
    const go = signalled("SIGUSR2");
    const h = client.counter.getOrCreate([key]);
    const conn = h.connect();
    const log = [];
    const statuses = [];
    conn.onStatusChange((s) => {
        statuses.push(s);
        note(`connection status ${s} at ${new Date().toISOString()}`);
    });
    const rec = recordConn(conn, log, ["newCount"]);
    const first = await conn.increment(1);
    await within(10_000, rec.until((l) => l.includes(`event:${first}`)));
    const connIdBefore = conn.connId ?? null;
    const generationBefore = await actorGeneration(h);
    note(`first reply ${first}, conn ${connIdBefore}; waiting for the host restart`);
    writeResultLine(`${JSON.stringify({ ready: true })}\n`);
    await go;
    note(`restart signalled at ${new Date().toISOString()}; incrementing on the same connection`);
    const second = await conn.increment(1);
    await within(10_000, rec.until((l) => l.includes(`event:${second}`)));
    return {
        first,
        second,
        log: [...log],
        statuses: [...statuses],
        connIdBefore,
        sameConnId: connIdBefore === (conn.connId ?? null),
        opens: log.filter((l) => l === "open").length,
        closed: log.includes("close"),
        generationBefore,
        generationAfter: await actorGeneration(h),
        count: await h.getCount(),
    };
}

await runMain(SCENARIOS, { keyPrefix: "host-restart" });

// What the scenario scripts (client.mjs, examples.mjs) share: the result-line convention, the
// command line, bounded waits, the engine API, and connection recorders.
//
// Importing this module redirects process.stdout to stderr (rivetkit logs to stdout); the one
// result line goes out through `writeResultLine`. Progress notes are prefixed with the script's
// file name.
import path from "node:path";

import { importPackage } from "./deps.mjs";

export const writeResultLine = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr);

export const endpoint = process.env.RIVET_ENDPOINT;
export const namespace = process.env.RIVET_NAMESPACE || "default";
export const poolName = process.env.RIVET_POOL || "default";

const scriptName = path.basename(process.argv[1] ?? "scenario.mjs");

export function jsonSafe(value) {
    return JSON.parse(
        JSON.stringify(value, (_k, v) => {
            if (typeof v === "bigint") return Number(v);
            if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString("base64") };
            return v;
        }) ?? "null",
    );
}

// The fields of a thrown ActorError (RivetError) that a host controls.
export function describeError(e) {
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

export async function expectThrow(fn) {
    try {
        const value = await fn();
        return { threw: false, value: jsonSafe(value) };
    } catch (e) {
        return { threw: true, error: describeError(e) };
    }
}

// Progress lines on stderr: they show where a scenario stalled when the caller reports a timeout.
const scenarioStart = Date.now();
export function note(message) {
    process.stderr.write(`${scriptName} +${Date.now() - scenarioStart}ms: ${message}\n`);
}

// Settles within `ms` or reports that it did not: {settled, value?, error?}.
export async function outcomeWithin(ms, promise) {
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
export async function within(ms, promise) {
    return (await outcomeWithin(ms, promise)).settled;
}

export const delay = (ms) => new Promise((res) => setTimeout(res, ms));

export async function engineApi(method, path) {
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

export async function getActor(actorId) {
    const r = await engineApi("GET", `/actors?actor_ids=${encodeURIComponent(actorId)}`);
    if (r.status !== 200) throw new Error(`GET /actors: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.actors?.[0] ?? null;
}

// Polls the engine (every 100 ms, at most `boundMs`) until `predicate(actor)` holds; an
// engine-API poll, which neither wakes nor touches the actor: there is no push.
export async function waitForActor(actorId, boundMs, predicate) {
    const deadline = Date.now() + boundMs;
    const started = Date.now();
    for (;;) {
        const actor = await getActor(actorId);
        if (predicate(actor)) return { observed: true, afterMs: Date.now() - started, actor };
        if (Date.now() >= deadline) return { observed: false, afterMs: Date.now() - started, actor };
        await delay(100);
    }
}

// Polls the engine until the actor reports sleep_ts.
export async function waitForSleep(actorId, boundMs) {
    return waitForActor(actorId, boundMs, (actor) => actor?.sleep_ts != null);
}

// The actor generation from the x-rivet-actor-generation header of a raw request (the host
// adds it to every per-actor HTTP response, errors included); null if the host did not answer.
export async function actorGeneration(handle) {
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
export function recordConn(conn, log, events) {
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

// --- main -------------------------------------------------------------------------------------

// `<scenario> [--encoding json|cbor|bare] [--key K] [--timeout S]` plus the numeric options in
// `numeric` ({name: default}, given as --name N).
function parseArgs(argv, scenarios, numeric) {
    const opts = {
        scenario: argv[0],
        encoding: "bare",
        key: undefined,
        timeout: 150,
        ...numeric,
    };
    for (let i = 1; i < argv.length; i++) {
        const flag = argv[i];
        const value = argv[++i];
        if (value === undefined) throw new Error(`missing value for ${flag}`);
        const name = flag.startsWith("--") ? flag.slice(2) : null;
        if (flag === "--encoding") opts.encoding = value;
        else if (flag === "--key") opts.key = value;
        else if (flag === "--timeout") opts.timeout = Number(value);
        else if (name !== null && Object.hasOwn(numeric, name)) opts[name] = Number(value);
        else throw new Error(`unknown option ${flag}`);
    }
    if (!Object.hasOwn(scenarios, opts.scenario ?? "")) {
        throw new Error(
            `unknown scenario ${JSON.stringify(opts.scenario)}; one of: ${Object.keys(scenarios).join(", ")}`,
        );
    }
    if (!["json", "cbor", "bare"].includes(opts.encoding)) {
        throw new Error(`unknown encoding ${opts.encoding}`);
    }
    return opts;
}

function finish(line, code) {
    writeResultLine(`${JSON.stringify(line)}\n`, () => process.exit(code));
}

// Runs the scenario named on the command line with a fresh client and prints its one result
// line: {"ok":true,scenario,encoding,key,...result} (exit 0), {"ok":false,...,error} (exit 1), or
// exit 2 for bad arguments. `--timeout` is a watchdog for the whole scenario.
export async function runMain(scenarios, { numeric = {}, keyPrefix = "interop" } = {}) {
    let opts;
    try {
        opts = parseArgs(process.argv.slice(2), scenarios, numeric);
        if (!endpoint) throw new Error("RIVET_ENDPOINT is required");
    } catch (e) {
        finish({ ok: false, error: { message: e.message } }, 2);
        return;
    }
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
        opts.key ??
        `${keyPrefix}-${opts.scenario}-${opts.encoding}-${Math.random().toString(36).slice(2, 10)}`;
    let client;
    try {
        const { createClient } = await importPackage("rivetkit", "./client");
        client = createClient({ endpoint, namespace, poolName, encoding: opts.encoding });
        const result = await scenarios[opts.scenario]({ ...opts, client, key });
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

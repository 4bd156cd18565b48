// The inspector WebSocket (/inspector/connect) of a host serving the "counter" actor, driven with
// the official TypeScript inspector codecs of rivetkit 2.3.19 through the engine's gateway.
//
// inspector-ws: an older inspector's framing (no protocol_version on the URL): client frames are
// encoded by src/common/bare/generated/inspector/v4.ts (transpiled, behind the u16 little-endian
// version 4), server frames are decoded with the embedded version
// (dist/browser/inspector/client.js: TO_CLIENT_VERSIONED.deserializeWithEmbeddedVersion, which
// upgrades them to its current version).
//
// inspector-v6: what the 2.3.19 inspector UI does for a runtime of 2.3.4 or later (upstream
// frontend actor-inspector-context.tsx: buildInspectorWebSocketUrl, serverMessage,
// createMessageHandler): `?protocol_version=CURRENT_VERSION` on the URL, then every frame is
// TO_SERVER_VERSIONED.serialize(message, CURRENT_VERSION) and TO_CLIENT_VERSIONED.deserialize(
// bytes, CURRENT_VERSION), with no version in the frames. The actor (key from --key) is expected to
// have one scheduled event, which the scenario lists, deletes and lists again.
//
// Same conventions as client.mjs (README.md): one JSON line of observations on stdout, exit 0;
// {"ok":false,...} and exit 1 on a failure. The C++ test (tests/interop/inspector_test.cpp)
// asserts on the values.
//
// inspector-db: the database tab of the "ledger" actor (SQLite) as the 2.3.19 inspector reads it:
// Init's isDatabaseEnabled, DatabaseSchemaRequest / DatabaseTableRowsRequest on the negotiated v6
// socket (their payloads are CBOR, decoded with cbor-x), and the HTTP routes
// /inspector/database/{schema,rows,execute} with the bearer token.
//
//   node inspector.mjs inspector-ws|inspector-v6|inspector-db [--key K] [--timeout SECONDS]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { importPackage, nodeModules, packageUrl } from "./deps.mjs";
import { endpoint, engineApi, namespace, note, poolName, runMain } from "./helpers.mjs";

const SCENARIOS = { "inspector-ws": inspectorWs, "inspector-v6": inspectorV6, "inspector-db": inspectorDb };

const { decode: cborDecode, encode: cborEncode } = await importPackage("cbor-x");
const WebSocket = (await importPackage("ws")).default;
const versioned = await import(
    pathToFileURL(path.join(nodeModules, "rivetkit/dist/browser/inspector/client.js")).href
);
const v4 = await loadGeneratedCodec("inspector/v4");

// rivetkit ships the per-version codecs as .ts only: transpile one into a scratch directory, with
// its @rivetkit/bare-ts import pointed at the installed package.
async function loadGeneratedCodec(rel) {
    const ts = (await import(pathToFileURL(path.join(nodeModules, "typescript/lib/typescript.js")).href))
        .default;
    const src = fs.readFileSync(
        path.join(nodeModules, "rivetkit/src/common/bare/generated", rel + ".ts"),
        "utf8",
    );
    const js = ts
        .transpileModule(src, {
            compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
        })
        .outputText.replaceAll('"@rivetkit/bare-ts"', JSON.stringify(packageUrl("@rivetkit/bare-ts")));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivetkit-inspector-"));
    const file = path.join(dir, "codec.mjs");
    fs.writeFileSync(file, js);
    try {
        return await import(pathToFileURL(file).href);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

function clientFrame(tag, val) {
    const body = v4.encodeToServer({ body: { tag, val } });
    const out = new Uint8Array(2 + body.length);
    new DataView(out.buffer).setUint16(0, 4, true);
    out.set(body, 2);
    return out;
}

const cbor = (value) => {
    const b = cborEncode(value);
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
};
const fromCbor = (buf) => (buf == null ? null : cborDecode(new Uint8Array(buf)));
const num = (x) => (typeof x === "bigint" ? Number(x) : x);

function gatewayQuery(key) {
    return new URLSearchParams({
        "rvt-namespace": namespace,
        "rvt-method": "getOrCreate",
        "rvt-runner": poolName,
        "rvt-key": key,
        "rvt-crash-policy": "sleep",
    });
}

function inspectorUrl(key, protocolVersion = null, actor = "counter") {
    const query = gatewayQuery(key);
    if (protocolVersion != null) query.set("protocol_version", String(protocolVersion));
    return `${endpoint.replace(/^http/, "ws")}/gateway/${actor}/inspector/connect?${query}`;
}

// One inspector socket: decoded server frames queue up until a test step asks for a tag.
class InspectorSocket {
    // negotiated: the protocol version given on the URL (frames carry none); else legacy framing.
    constructor(url, protocols, { headers = {}, negotiated = null } = {}) {
        this.negotiated = negotiated;
        this.frameVersions = new Set();
        this.messages = [];
        this.waiters = [];
        this.skipped = [];
        this.ws = new WebSocket(url, protocols, { headers });
        this.ws.binaryType = "arraybuffer";
        this.closed = new Promise((resolve) => {
            this.ws.on("close", (code, reason) => {
                resolve({ code, reason: reason.toString() });
                this.#wake();
            });
        });
        this.ws.on("message", (data) => {
            const bytes = new Uint8Array(data);
            if (this.negotiated != null) {
                this.messages.push(versioned.TO_CLIENT_VERSIONED.deserialize(bytes, this.negotiated).body);
            } else {
                this.frameVersions.add(new DataView(bytes.buffer, bytes.byteOffset).getUint16(0, true));
                this.messages.push(versioned.TO_CLIENT_VERSIONED.deserializeWithEmbeddedVersion(bytes).body);
            }
            this.#wake();
        });
        this.ws.on("error", (e) => note(`inspector socket error: ${e.message}`));
    }
    #wake() {
        for (const w of this.waiters.splice(0)) w();
    }
    send(tag, val) {
        if (this.negotiated != null) {
            this.ws.send(versioned.TO_SERVER_VERSIONED.serialize({ body: { tag, val } }, this.negotiated));
        } else {
            this.ws.send(clientFrame(tag, val));
        }
    }
    sendRaw(bytes) {
        this.ws.send(bytes);
    }
    // The next message with `tag`; others are recorded as skipped.
    async next(tag, boundMs = 15_000) {
        const deadline = Date.now() + boundMs;
        for (;;) {
            while (this.messages.length > 0) {
                const m = this.messages.shift();
                if (m.tag === tag) return m.val;
                this.skipped.push(m.tag);
            }
            if (this.ws.readyState === WebSocket.CLOSED) throw new Error(`socket closed waiting for ${tag}`);
            const left = deadline - Date.now();
            if (left <= 0) throw new Error(`no ${tag} within ${boundMs} ms (skipped ${this.skipped})`);
            await new Promise((resolve) => {
                const timer = setTimeout(resolve, left);
                this.waiters.push(() => {
                    clearTimeout(timer);
                    resolve();
                });
            });
        }
    }
    close() {
        this.ws.close();
    }
}

async function inspectorToken(actorId) {
    const kv = await engineApi("GET", `/actors/${actorId}/kv/keys/${encodeURIComponent("Aw==")}`);
    return Buffer.from(kv.body?.value ?? "", "base64").toString("utf8");
}

async function inspectorWs({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    await h.increment(5);
    const actorId = await h.resolve();
    const token = await inspectorToken(actorId);

    const refused = new InspectorSocket(inspectorUrl(key), ["rivet", "rivet_inspector_token.wrong"]);
    const denied = await refused.closed;
    note(`refused: ${JSON.stringify(denied)}`);

    const s = new InspectorSocket(inspectorUrl(key), ["rivet", `rivet_inspector_token.${token}`]);
    const init = await s.next("Init");

    s.send("StateRequest", { id: 1n });
    const state = await s.next("StateResponse");
    s.send("RpcsListRequest", { id: 2n });
    const rpcs = await s.next("RpcsListResponse");
    s.send("ConnectionsRequest", { id: 3n });
    const conns = await s.next("ConnectionsResponse");
    s.send("QueueRequest", { id: 4n, limit: 10n });
    const queue = await s.next("QueueResponse");
    s.send("TraceQueryRequest", { id: 5n, startMs: 0n, endMs: 1n, limit: 1n });
    const trace = await s.next("TraceQueryResponse");

    s.sendRaw(new Uint8Array([4, 0, 0x7f]));
    const badFrame = await s.next("Error");
    s.send("StateRequest", { id: 6n });
    const afterBad = await s.next("StateResponse");

    // The answer, then the push once the patch is saved to [1].
    s.send("PatchStateRequest", { state: cbor({ count: 42 }) });
    // A push from before the patch (the increment's debounced overlay) may still be in flight:
    // skip pushes that do not show the patched value yet.
    let patched = null;
    for (let i = 0; i < 5 && patched == null; i++) {
        const update = await s.next("StateUpdated");
        if (fromCbor(update.state)?.count === 42) patched = update;
    }
    let savedPush = null;
    for (let i = 0; i < 5 && savedPush?.count !== 42; i++) {
        savedPush = fromCbor((await s.next("StateUpdated")).state);
    }

    // An action through the inspector (a transient connection): the reply, then pushes.
    s.send("ActionRequest", { id: 8n, name: "increment", args: cbor([1]) });
    const action = await s.next("ActionResponse");
    const connectionsPushed = await s.next("ConnectionsUpdated");
    let pushedState = null;
    for (let i = 0; i < 10; i++) {
        const update = fromCbor((await s.next("StateUpdated")).state);
        if (update?.count === 6) {
            pushedState = update;
            break;
        }
    }
    s.close();
    await s.closed;

    return {
        denied,
        init: {
            state: fromCbor(init.state),
            isStateEnabled: init.isStateEnabled,
            rpcs: init.rpcs,
            connections: init.connections.length,
            queueSize: num(init.queueSize),
            isDatabaseEnabled: init.isDatabaseEnabled,
            isWorkflowEnabled: init.isWorkflowEnabled,
            // Filled by the client's v4→v6 upgrade of our frame.
            tabConfig: init.tabConfig ?? null,
            schedules: init.schedules ?? null,
        },
        state: { rid: num(state.rid), state: fromCbor(state.state), isStateEnabled: state.isStateEnabled },
        rpcs: { rid: num(rpcs.rid), rpcs: rpcs.rpcs },
        connections: { rid: num(conns.rid), count: conns.connections.length },
        queue: {
            rid: num(queue.rid),
            size: num(queue.status.size),
            maxSize: num(queue.status.maxSize),
            truncated: queue.status.truncated,
        },
        trace: { rid: num(trace.rid), payloadBytes: trace.payload.byteLength },
        badFrame: badFrame.message,
        afterBad: { rid: num(afterBad.rid), state: fromCbor(afterBad.state) },
        patched: patched ? fromCbor(patched.state) : null,
        savedPush,
        action: { rid: num(action.rid), output: fromCbor(action.output) },
        connectionsPushed: connectionsPushed.connections.length,
        pushedState,
        // The embedded versions of the server's frames.
        serverFrameVersions: [...s.frameVersions],
    };
}

const scheduleJson = (x) => ({
    id: x.id,
    kind: x.kind,
    action: x.action,
    args: fromCbor(x.args),
    nextRunAt: num(x.nextRunAt),
});

async function inspectorV6({ client, key }) {
    const h = client.counter.getOrCreate([key]);
    const actorId = await h.resolve();
    const token = await inspectorToken(actorId);
    // The inspector UI picks its framing from the runtime version /metadata reports: 2.3.4 or
    // later negotiates on the URL (upstream frontend MIN_RIVETKIT_VERSION_INSPECTOR_NEGOTIATION).
    const metadata = await (await fetch(`${endpoint}/gateway/counter/metadata?${gatewayQuery(key)}`)).json();
    const version = versioned.CURRENT_VERSION;

    const s = new InspectorSocket(inspectorUrl(key, version), ["rivet", `rivet_inspector_token.${token}`], {
        negotiated: version,
    });
    const init = await s.next("Init");
    s.send("StateRequest", { id: 1n });
    const state = await s.next("StateResponse");
    s.send("SchedulesRequest", { id: 2n });
    const listed = await s.next("SchedulesResponse");
    const first = listed.schedules[0];
    s.send("ScheduleHistoryRequest", { id: 3n, scheduleId: first?.id ?? "none", limit: 10n });
    const history = await s.next("ScheduleHistoryResponse");
    s.send("ScheduleDeleteRequest", { id: 4n, scheduleId: first?.id ?? "none", kind: first?.kind ?? "at" });
    const deleted = await s.next("ScheduleDeleteResponse");
    s.send("SchedulesRequest", { id: 5n });
    const after = await s.next("SchedulesResponse");
    s.send("ActionRequest", { id: 6n, name: "getCount", args: cbor([]) });
    const action = await s.next("ActionResponse");
    s.close();
    await s.closed;

    const refused = new InspectorSocket(inspectorUrl(key, version + 1), ["rivet", `rivet_inspector_token.${token}`], {
        negotiated: version,
    });
    const tooNew = await refused.closed;

    return {
        metadataVersion: metadata.version,
        version,
        init: {
            state: fromCbor(init.state),
            rpcs: init.rpcs,
            tabConfig: init.tabConfig,
            schedules: init.schedules.map(scheduleJson),
        },
        state: { rid: num(state.rid), state: fromCbor(state.state) },
        listed: { rid: num(listed.rid), schedules: listed.schedules.map(scheduleJson) },
        sameIdsAsInit: listed.schedules.map((x) => x.id).join() === init.schedules.map((x) => x.id).join(),
        history: { rid: num(history.rid), matches: history.scheduleId === first?.id, count: history.history.length },
        deleted: { rid: num(deleted.rid), deleted: deleted.deleted },
        after: { rid: num(after.rid), count: after.schedules.length },
        action: { rid: num(action.rid), output: fromCbor(action.output) },
        tooNew,
        skipped: s.skipped,
    };
}

async function inspectorDb({ client, key }) {
    const h = client.ledger.getOrCreate([key]);
    await h.add("alpha");
    await h.add("beta");
    const actorId = await h.resolve();
    const token = await inspectorToken(actorId);
    const version = versioned.CURRENT_VERSION;
    const s = new InspectorSocket(inspectorUrl(key, version, "ledger"), ["rivet", `rivet_inspector_token.${token}`], {
        negotiated: version,
    });
    const init = await s.next("Init");
    s.send("DatabaseSchemaRequest", { id: 1n });
    const schema = await s.next("DatabaseSchemaResponse");
    s.send("DatabaseTableRowsRequest", { id: 2n, table: "entries", limit: 10n, offset: 1n });
    const rows = await s.next("DatabaseTableRowsResponse");
    s.send("DatabaseTableRowsRequest", { id: 3n, table: "no_such_table", limit: 10n, offset: 0n });
    const missing = await s.next("Error");
    s.close();
    await s.closed;

    const base = `${endpoint}/gateway/ledger/inspector/database`;
    const headers = { authorization: `Bearer ${token}` };
    const query = gatewayQuery(key);
    const httpSchema = await (await fetch(`${base}/schema?${query}`, { headers })).json();
    const rowsQuery = new URLSearchParams(query);
    rowsQuery.set("table", "entries");
    rowsQuery.set("limit", "1");
    const httpRows = await (await fetch(`${base}/rows?${rowsQuery}`, { headers })).json();
    const execute = await fetch(`${base}/execute?${query}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT count(*) AS n, max(text) AS last FROM entries WHERE id >= ?", args: [1] }),
    });
    const executed = await execute.json();
    const named = await (
        await fetch(`${base}/execute?${query}`, {
            method: "POST",
            headers: { ...headers, "content-type": "application/json" },
            body: JSON.stringify({ sql: "SELECT text FROM entries WHERE id = :id", properties: { id: 2 } }),
        })
    ).json();
    const both = await fetch(`${base}/execute?${query}`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ sql: "SELECT 1", args: [1], properties: { a: 1 } }),
    });
    const bothBody = await both.json();
    const unauthorized = (await fetch(`${base}/schema?${query}`)).status;

    const decoded = fromCbor(schema.schema);
    return {
        isDatabaseEnabled: init.isDatabaseEnabled,
        schemaRid: num(schema.rid),
        tables: decoded.tables.map((t) => ({
            table: t.table,
            columns: t.columns.map((c) => ({ name: c.name, type: c.type, pk: num(c.pk) })),
            foreignKeys: t.foreignKeys,
            records: num(t.records),
        })),
        rows: { rid: num(rows.rid), rows: fromCbor(rows.result).map((r) => ({ id: num(r.id), text: r.text, pad: r.pad })) },
        missingTable: missing.message,
        httpSchemaTables: httpSchema.schema.tables.map((t) => t.table.name),
        httpRows: httpRows.rows,
        executeStatus: execute.status,
        executed: executed.rows,
        named: named.rows,
        both: { status: both.status, code: bothBody.code },
        unauthorized,
    };
}

await runMain(SCENARIOS, { keyPrefix: "inspector" });

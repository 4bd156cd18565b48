// Writes the BARE known-answer vectors in this directory by encoding messages with upstream's own
// TypeScript codecs (npm packages pinned in scripts/deps.sh):
//   envoy_v8.json  ← @rivetkit/engine-envoy-protocol 2.3.19
//   client.json    ← rivetkit 2.3.19 src/common/bare/generated/client-protocol/v1..v4.ts
//   persist.json   ← rivetkit 2.3.19 src/common/bare/actor-persist/v1..v4.ts
// rivetkit ships those codecs as .ts only, so they are transpiled (typescript) into a scratch
// directory under .deps/npm, where @rivetkit/bare-ts resolves.
//
// Run once after changing a message below, then commit the JSON:
//   bash scripts/deps.sh && node tests/bare/vectors/generate.mjs

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const nm = process.env.RIVETKIT_NODE_MODULES ?? path.join(root, ".deps/npm/node_modules");
const scratch = path.join(nm, "..", ".bare-vectors");

const load = (p) => import(pathToFileURL(p).href);
const ts = (await load(path.join(nm, "typescript/lib/typescript.js"))).default;
const envoy = await load(path.join(nm, "@rivetkit/engine-envoy-protocol/dist/index.js"));

async function loadTs(rel) {
    const src = fs.readFileSync(path.join(nm, "rivetkit/src/common/bare", rel + ".ts"), "utf8");
    const out = ts.transpileModule(src, {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    const dest = path.join(scratch, rel + ".mjs");
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, out.outputText);
    return load(dest);
}

const client = {};
const persist = {};
for (const v of [1, 2, 3, 4]) {
    client[v] = await loadTs(`generated/client-protocol/v${v}`);
    persist[v] = await loadTs(`actor-persist/v${v}`);
}

// ---- value helpers -------------------------------------------------------------------------

const bytes = (...b) => new Uint8Array(b).buffer;
const text = (s) => new TextEncoder().encode(s).buffer;
const hex = (u8) => Buffer.from(u8).toString("hex");
const some = (x) => x;
const none = null;

function jsonValue(x) {
    return JSON.parse(
        JSON.stringify(x, (_k, v) => {
            if (typeof v === "bigint") return v.toString();
            if (v instanceof ArrayBuffer) return { hex: hex(new Uint8Array(v)) };
            if (v instanceof Map) return [...v.entries()];
            if (v instanceof Uint32Array) return [...v];
            return v;
        }),
    );
}

function writeFile(name, source, vectors) {
    const doc = { generated_by: "tests/bare/vectors/generate.mjs", source, vectors };
    fs.writeFileSync(path.join(here, name), JSON.stringify(doc, null, 1) + "\n");
    console.log(`${name}: ${vectors.length} vectors`);
}

// ---- envoy protocol v8 ---------------------------------------------------------------------

const gw = bytes(0xde, 0xad, 0xbe, 0xef);
const rq = bytes(0x01, 0x02, 0x03, 0x04);
const msgId = { gatewayId: gw, requestId: rq, messageIndex: 513 };
const checkpoint = { actorId: "actor-abc", generation: 3, index: 42n };
const kvMeta = { version: bytes(9, 9), updateTs: 1700000000123n };
const abort = { kind: "HandlerError", detail: "boom" };
const headers = new Map([
    ["content-type", "application/json"],
    ["x-rivet-encoding", "bare"],
]);
const sqlErr = { group: "sqlite", code: "busy", message: "database is locked" };
const config = {
    name: "counter",
    key: "k1/k2",
    createTs: 1700000000000n,
    input: bytes(0xa1, 0x61, 0x78, 0x01),
};
const start = {
    config,
    hibernatingRequests: [{ gatewayId: gw, requestId: rq }],
    preloadedKv: {
        entries: [{ key: bytes(1), value: bytes(4, 0, 1), metadata: kvMeta }],
        requestedGetKeys: [bytes(1), bytes(6)],
        requestedPrefixes: [bytes(2)],
    },
};
const row = [
    { tag: "SqliteValueNull", val: null },
    { tag: "SqliteValueInteger", val: { value: -7n } },
    { tag: "SqliteValueFloat", val: { value: bytes(0, 0, 0, 0, 0, 0, 0xf8, 0x3f) } },
    { tag: "SqliteValueText", val: { value: "héllo" } },
    { tag: "SqliteValueBlob", val: { value: bytes(0xff, 0x00) } },
];
const execResult = { columns: ["a", "b"], rows: [row, []], changes: 2n, lastInsertRowId: 99n };
const dirty = [{ pgno: 1, bytes: bytes(1, 2, 3) }, { pgno: 7, bytes: bytes() }];

const toRivetTunnel = (tag, val) => ({
    tag: "ToRivetTunnelMessage",
    val: { messageId: msgId, messageKind: { tag, val } },
});
const toEnvoyTunnel = (tag, val) => ({
    tag: "ToEnvoyTunnelMessage",
    val: { messageId: msgId, messageKind: { tag, val } },
});
const kvReq = (tag, val) => ({ tag: "ToRivetKvRequest", val: { actorId: "actor-abc", requestId: 77, data: { tag, val } } });
const kvRes = (tag, val) => ({ tag: "ToEnvoyKvResponse", val: { requestId: 77, data: { tag, val } } });

const toRivet = {
    "Metadata": { tag: "ToRivetMetadata", val: { prepopulateActorNames: new Map([["counter", { metadata: '{"icon":"x"}' }]]), metadata: '{"version":"1"}' } },
    "MetadataEmpty": { tag: "ToRivetMetadata", val: { prepopulateActorNames: none, metadata: none } },
    "Events": {
        tag: "ToRivetEvents",
        val: [
            { checkpoint, inner: { tag: "EventActorIntent", val: { intent: { tag: "ActorIntentSleep", val: null } } } },
            { checkpoint, inner: { tag: "EventActorIntent", val: { intent: { tag: "ActorIntentStop", val: null } } } },
            { checkpoint, inner: { tag: "EventActorStateUpdate", val: { state: { tag: "ActorStateRunning", val: null } } } },
            { checkpoint, inner: { tag: "EventActorStateUpdate", val: { state: { tag: "ActorStateStopped", val: { code: "Error", message: "crashed" } } } } },
            { checkpoint, inner: { tag: "EventActorSetAlarm", val: { alarmTs: 1700000005000n } } },
            { checkpoint, inner: { tag: "EventActorSetAlarm", val: { alarmTs: none } } },
        ],
    },
    "AckCommands": { tag: "ToRivetAckCommands", val: { lastCommandCheckpoints: [checkpoint, { actorId: "b", generation: 0, index: -1n }] } },
    "Stopping": { tag: "ToRivetStopping", val: null },
    "Pong": { tag: "ToRivetPong", val: { ts: 1700000000999n } },
    "KvGet": kvReq("KvGetRequest", { keys: [bytes(1), bytes(4, 0x61)] }),
    "KvListAll": kvReq("KvListRequest", { query: { tag: "KvListAllQuery", val: null }, reverse: none, limit: none }),
    "KvListRange": kvReq("KvListRequest", { query: { tag: "KvListRangeQuery", val: { start: bytes(4), end: bytes(5), exclusive: true } }, reverse: true, limit: 100n }),
    "KvListPrefix": kvReq("KvListRequest", { query: { tag: "KvListPrefixQuery", val: { key: bytes(2) } }, reverse: false, limit: none }),
    "KvPut": kvReq("KvPutRequest", { keys: [bytes(1)], values: [bytes(4, 0, 1, 2)] }),
    "KvDelete": kvReq("KvDeleteRequest", { keys: [bytes(2, 0x63)] }),
    "KvDeleteRange": kvReq("KvDeleteRangeRequest", { start: bytes(4), end: bytes(5) }),
    "KvDrop": kvReq("KvDropRequest", null),
    "TunnelResponseStart": toRivetTunnel("ToRivetResponseStart", { status: 200, headers, body: bytes(0x7b, 0x7d), stream: false }),
    "TunnelResponseChunk": toRivetTunnel("ToRivetResponseChunk", { body: text("chunk"), finish: true }),
    "TunnelResponseAbort": toRivetTunnel("ToRivetResponseAbort", { reason: abort }),
    "TunnelRequestBodyWindowUpdate": toRivetTunnel("ToRivetRequestBodyWindowUpdate", { consumedBytes: 65536n }),
    "TunnelRequestBodyCancel": toRivetTunnel("ToRivetRequestBodyCancel", null),
    "TunnelWebSocketOpen": toRivetTunnel("ToRivetWebSocketOpen", { canHibernate: true }),
    "TunnelWebSocketMessage": toRivetTunnel("ToRivetWebSocketMessage", { data: bytes(4, 0, 1), binary: true }),
    "TunnelWebSocketMessageAck": toRivetTunnel("ToRivetWebSocketMessageAck", { index: 65535 }),
    "TunnelWebSocketClose": toRivetTunnel("ToRivetWebSocketClose", { code: 1000, reason: "bye", hibernate: false }),
    "SqliteGetPages": { tag: "ToRivetSqliteGetPagesRequest", val: { requestId: 1, data: { actorId: "a", pgnos: [1, 2, 4294967295], expectedGeneration: 5n, expectedHeadTxid: none } } },
    "SqliteCommit": { tag: "ToRivetSqliteCommitRequest", val: { requestId: 2, data: { actorId: "a", dirtyPages: dirty, dbSizePages: 8, nowMs: 1700000000000n, expectedGeneration: none, expectedHeadTxid: 10n } } },
    "SqliteCommitStageBegin": { tag: "ToRivetSqliteCommitStageBeginRequest", val: { requestId: 3, data: { actorId: "a", expectedGeneration: 1n, expectedHeadTxid: 2n } } },
    "SqliteCommitStageSegment": { tag: "ToRivetSqliteCommitStageSegmentRequest", val: { requestId: 4, data: { actorId: "a", expectedGeneration: none, txid: 11n, firstPgno: 1, dirtyPages: dirty } } },
    "SqliteCommitFinalize": { tag: "ToRivetSqliteCommitFinalizeRequest", val: { requestId: 5, data: { actorId: "a", expectedGeneration: 1n, txid: 11n, newDbSizePages: 9, nowMs: -1n, segmentFirstPgnos: new Uint32Array([1, 300, 70000]) } } },
    "SqliteExec": { tag: "ToRivetSqliteExecRequest", val: { requestId: 6, data: { namespaceId: "ns", actorId: "a", generation: 3n, sql: "SELECT 1" } } },
    "SqliteExecute": { tag: "ToRivetSqliteExecuteRequest", val: { requestId: 7, data: { namespaceId: "ns", actorId: "a", generation: 3n, sql: "INSERT INTO t VALUES (?,?,?,?,?)", params: row } } },
    "SqliteExecuteNoParams": { tag: "ToRivetSqliteExecuteRequest", val: { requestId: 8, data: { namespaceId: "ns", actorId: "a", generation: 3n, sql: "SELECT 2", params: none } } },
    "SqliteExecuteBatch": { tag: "ToRivetSqliteExecuteBatchRequest", val: { requestId: 9, data: { namespaceId: "ns", actorId: "a", generation: 3n, statements: [{ sql: "BEGIN", params: none }, { sql: "SELECT ?", params: [row[1]] }] } } },
};

const toEnvoy = {
    "Init": { tag: "ToEnvoyInit", val: { metadata: { envoyLostThreshold: 15000n, actorStopThreshold: 30000n, maxResponsePayloadSize: 20971520n } } },
    "CommandsStart": { tag: "ToEnvoyCommands", val: [{ checkpoint, inner: { tag: "CommandStartActor", val: start } }] },
    "CommandsStartMinimal": { tag: "ToEnvoyCommands", val: [{ checkpoint, inner: { tag: "CommandStartActor", val: { config: { name: "c", key: none, createTs: 0n, input: none }, hibernatingRequests: [], preloadedKv: none } } }] },
    "CommandsStop": {
        tag: "ToEnvoyCommands",
        val: ["SleepIntent", "StopIntent", "Destroy", "GoingAway", "Lost"].map((reason) => ({ checkpoint, inner: { tag: "CommandStopActor", val: { reason } } })),
    },
    "AckEvents": { tag: "ToEnvoyAckEvents", val: { lastEventCheckpoints: [checkpoint] } },
    "KvError": kvRes("KvErrorResponse", { message: "too large" }),
    "KvGet": kvRes("KvGetResponse", { keys: [bytes(1)], values: [bytes(4, 0)], metadata: [kvMeta] }),
    "KvList": kvRes("KvListResponse", { keys: [bytes(2, 0x61), bytes(2, 0x62)], values: [bytes(), bytes(1)], metadata: [kvMeta, kvMeta] }),
    "KvPut": kvRes("KvPutResponse", null),
    "KvDelete": kvRes("KvDeleteResponse", null),
    "KvDrop": kvRes("KvDropResponse", null),
    "TunnelRequestStart": toEnvoyTunnel("ToEnvoyRequestStart", { actorId: "actor-abc", actorGeneration: 3, method: "POST", path: "/action/increment", headers, body: bytes(4, 0, 1, 0x80), stream: false, responseStream: true }),
    "TunnelRequestChunk": toEnvoyTunnel("ToEnvoyRequestChunk", { body: text("part"), finish: false }),
    "TunnelRequestAbort": toEnvoyTunnel("ToEnvoyRequestAbort", { actorId: "actor-abc", actorGeneration: none, reason: { kind: "Cancelled", detail: none } }),
    "TunnelRequestBodyCancel": toEnvoyTunnel("ToEnvoyRequestBodyCancel", null),
    "TunnelResponseBodyWindowUpdate": toEnvoyTunnel("ToEnvoyResponseBodyWindowUpdate", { consumedBytes: 1024n }),
    "TunnelWebSocketOpen": toEnvoyTunnel("ToEnvoyWebSocketOpen", { actorId: "actor-abc", actorGeneration: 1, path: "/connect", headers: new Map([["sec-websocket-protocol", "rivet,rivet_encoding.bare"]]) }),
    "TunnelWebSocketMessage": toEnvoyTunnel("ToEnvoyWebSocketMessage", { data: text("hi"), binary: false }),
    "TunnelWebSocketClose": toEnvoyTunnel("ToEnvoyWebSocketClose", { code: none, reason: none }),
    "Ping": { tag: "ToEnvoyPing", val: { ts: 1700000000500n } },
    "SqliteGetPagesOk": { tag: "ToEnvoySqliteGetPagesResponse", val: { requestId: 1, data: { tag: "SqliteGetPagesOk", val: { pages: [{ pgno: 1, bytes: bytes(5) }, { pgno: 2, bytes: none }], headTxid: 4n } } } },
    "SqliteGetPagesErr": { tag: "ToEnvoySqliteGetPagesResponse", val: { requestId: 1, data: { tag: "SqliteErrorResponse", val: sqlErr } } },
    "SqliteCommit": { tag: "ToEnvoySqliteCommitResponse", val: { requestId: 2, data: { tag: "SqliteCommitOk", val: { headTxid: none } } } },
    "SqliteCommitStageBegin": { tag: "ToEnvoySqliteCommitStageBeginResponse", val: { requestId: 3, data: { tag: "SqliteCommitStageBeginOk", val: { txid: 12n } } } },
    "SqliteCommitStageSegment": { tag: "ToEnvoySqliteCommitStageSegmentResponse", val: { requestId: 4, data: { tag: "SqliteCommitStageSegmentOk", val: { stagedBytes: 8192n } } } },
    "SqliteCommitFinalize": { tag: "ToEnvoySqliteCommitFinalizeResponse", val: { requestId: 5, data: { tag: "SqliteCommitFinalizeOk", val: { headTxid: 12n } } } },
    "SqliteExec": { tag: "ToEnvoySqliteExecResponse", val: { requestId: 6, data: { tag: "SqliteExecOk", val: { result: { columns: ["x"], rows: [row] } } } } },
    "SqliteExecute": { tag: "ToEnvoySqliteExecuteResponse", val: { requestId: 7, data: { tag: "SqliteExecuteOk", val: { result: execResult } } } },
    "SqliteExecuteBatch": { tag: "ToEnvoySqliteExecuteBatchResponse", val: { requestId: 9, data: { tag: "SqliteExecuteBatchOk", val: { results: [execResult, { columns: [], rows: [], changes: 0n, lastInsertRowId: none }] } } } },
    "SqliteExecuteBatchErr": { tag: "ToEnvoySqliteExecuteBatchResponse", val: { requestId: 9, data: { tag: "SqliteErrorResponse", val: sqlErr } } },
};

const envoyVectors = [];
// Upstream's decoder must accept what its encoder wrote; this catches a mistyped field above.
const checked = (decode, encoded) => {
    decode(encoded);
    return hex(encoded);
};
const addEnvoy = (type, name, value, enc) => {
    const h = checked(envoy[`decode${type}`], enc(value));
    envoyVectors.push({ name: `${type}.${name}`, type, hex: h, value: jsonValue(value) });
};
for (const [name, v] of Object.entries(toRivet)) addEnvoy("ToRivet", name, v, envoy.encodeToRivet);
for (const [name, v] of Object.entries(toEnvoy)) addEnvoy("ToEnvoy", name, v, envoy.encodeToEnvoy);
addEnvoy("ToEnvoyConn", "Ping", { tag: "ToEnvoyConnPing", val: { gatewayId: gw, requestId: rq, ts: 5n } }, envoy.encodeToEnvoyConn);
addEnvoy("ToEnvoyConn", "Close", { tag: "ToEnvoyConnClose", val: null }, envoy.encodeToEnvoyConn);
addEnvoy("ToEnvoyConn", "Commands", toEnvoy.CommandsStop, envoy.encodeToEnvoyConn);
addEnvoy("ToGateway", "Pong", { tag: "ToGatewayPong", val: { requestId: rq, ts: 6n } }, envoy.encodeToGateway);
addEnvoy("ToGateway", "Tunnel", { tag: "ToRivetTunnelMessage", val: toRivet.TunnelWebSocketOpen.val }, envoy.encodeToGateway);
addEnvoy("ToOutbound", "ActorStart", { tag: "ToOutboundActorStart", val: { namespaceId: "ns", poolName: "default", checkpoint, actorConfig: config } }, envoy.encodeToOutbound);
addEnvoy("ActorCommandKeyData", "Stop", { tag: "CommandStopActor", val: { reason: "Destroy" } }, envoy.encodeActorCommandKeyData);
writeFile("envoy_v8.json", "@rivetkit/engine-envoy-protocol@2.3.19", envoyVectors);

// ---- client protocol v1..v4 ----------------------------------------------------------------

const clientVectors = [];
const addClient = (version, type, name, value) => {
    const codec = client[version];
    const h = checked(codec[`decode${type}`], codec[`encode${type}`](value));
    clientVectors.push({ name: `v${version}.${type}.${name}`, version, type, hex: h, value: jsonValue(value) });
};
const cborArgs = bytes(0x82, 0x01, 0x61, 0x78); // [1, "x"]
const specifier = { actorId: "actor-abc", generation: 2n, key: "k" };
const errV3 = { group: "actor", code: "action_not_found", message: "Action not found", metadata: bytes(0xa0), actionId: 5n };
addClient(1, "ToClient", "Init", { body: { tag: "Init", val: { actorId: "a1", connectionId: "c1", connectionToken: "tok" } } });
addClient(1, "ToServer", "ActionRequest", { body: { tag: "ActionRequest", val: { id: 1n, name: "increment", args: cborArgs } } });
addClient(2, "ToClient", "Init", { body: { tag: "Init", val: { actorId: "a1", connectionId: "c1" } } });
addClient(3, "ToClient", "Error", { body: { tag: "Error", val: errV3 } });
addClient(3, "HttpQueueSendRequest", "Full", { body: cborArgs, name: "jobs", wait: true, timeout: 5000n });
addClient(4, "ToClient", "Init", { body: { tag: "Init", val: { actorId: "actor-abc", connectionId: "conn-1" } } });
addClient(4, "ToClient", "Error", { body: { tag: "Error", val: { ...errV3, actor: specifier } } });
addClient(4, "ToClient", "ErrorMinimal", { body: { tag: "Error", val: { group: "core", code: "internal_error", message: "An internal error occurred", metadata: none, actionId: none, actor: { actorId: "a", generation: 0n, key: none } } } });
addClient(4, "ToClient", "ActionResponse", { body: { tag: "ActionResponse", val: { id: 300n, output: bytes(0x05) } } });
addClient(4, "ToClient", "Event", { body: { tag: "Event", val: { name: "newCount", args: bytes(0x81, 0x05) } } });
addClient(4, "ToServer", "ActionRequest", { body: { tag: "ActionRequest", val: { id: 0n, name: "increment", args: cborArgs } } });
addClient(4, "ToServer", "Subscribe", { body: { tag: "SubscriptionRequest", val: { eventName: "newCount", subscribe: true } } });
addClient(4, "ToServer", "Unsubscribe", { body: { tag: "SubscriptionRequest", val: { eventName: "newCount", subscribe: false } } });
addClient(4, "HttpActionRequest", "EmptyArgs", { args: bytes(0x80) });
addClient(4, "HttpActionResponse", "Output", { output: bytes(0x18, 0x2a) });
addClient(4, "HttpQueueSendRequest", "Minimal", { body: bytes(0xf6), name: none, wait: none, timeout: none });
addClient(4, "HttpQueueSendResponse", "Completed", { status: "completed", response: bytes(0x01) });
addClient(4, "HttpQueueSendResponse", "TimedOut", { status: "timedOut", response: none });
addClient(4, "HttpResponseError", "WithActor", { group: "actor", code: "not_found", message: "Actor not found", metadata: none, actor: specifier });
addClient(4, "HttpResponseError", "NoActor", { group: "user", code: "oops", message: "custom", metadata: bytes(0xa1, 0x61, 0x61, 0x01), actor: none });
addClient(4, "HttpResolveResponse", "Id", { actorId: "actor-abc" });
writeFile("client.json", "rivetkit@2.3.19 src/common/bare/generated/client-protocol", clientVectors);

// ---- actor persistence v1..v4 --------------------------------------------------------------

const persistVectors = [];
const addPersist = (version, type, name, value) => {
    const codec = persist[version];
    const h = checked(codec[`decode${type}`], codec[`encode${type}`](value));
    persistVectors.push({ name: `v${version}.${type}.${name}`, version, type, hex: h, value: jsonValue(value) });
};
const oldConn = { id: "c1", token: "t", parameters: bytes(0xf6), state: bytes(0xa0), subscriptions: [{ eventName: "e" }] };
const oldEvent = (ts) => ({ eventId: "ev-1", timestamp: ts, kind: { tag: "GenericPersistedScheduleEvent", val: { action: "tick", args: bytes(0x80) } } });
addPersist(1, "PersistedActor", "Full", { input: bytes(0xa0), hasInitialized: true, state: bytes(0x01), connections: [{ ...oldConn, lastSeen: 1700000000000n }], scheduledEvents: [oldEvent(1700000001000n)] });
addPersist(2, "PersistedActor", "Full", { input: none, hasInitialized: false, state: bytes(), connections: [{ ...oldConn, lastSeen: -5n, hibernatableRequestId: bytes(1, 2, 3, 4) }], scheduledEvents: [oldEvent(-1n)], hibernatableWebSockets: [{ requestId: bytes(1, 2, 3, 4), lastSeenTimestamp: 7n, msgIndex: -1n }] });
const scheduled = [
    { eventId: "ev-a", timestamp: 1700000005000n, action: "remind", args: bytes(0x81, 0x63, 0x61, 0x62, 0x63) },
    { eventId: "ev-b", timestamp: 1700000009000n, action: "tick", args: none },
];
const actor = { input: bytes(0xa1, 0x61, 0x78, 0x01), hasInitialized: true, state: bytes(0xa1, 0x65, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x05), scheduledEvents: scheduled };
const conn = {
    id: "conn-1", parameters: bytes(0xa1, 0x64, 0x75, 0x73, 0x65, 0x72, 0x62, 0x70, 0x31), state: bytes(0xf6),
    subscriptions: [{ eventName: "newCount" }, { eventName: "other" }],
    gatewayId: gw, requestId: rq, serverMessageIndex: 12, clientMessageIndex: 65535,
    requestPath: "/connect", requestHeaders: headers,
};
addPersist(3, "Actor", "Scheduled", actor);
addPersist(3, "Conn", "WithHeaders", conn);
addPersist(4, "Actor", "Scheduled", actor);
addPersist(4, "Actor", "Fresh", { input: none, hasInitialized: false, state: bytes(), scheduledEvents: [] });
addPersist(4, "Conn", "WithHeaders", conn);
addPersist(4, "Conn", "NoHeaders", { ...conn, subscriptions: [], requestHeaders: new Map() });
addPersist(4, "QueueMetadata", "Some", { nextId: 18446744073709551615n, size: 3 });
addPersist(4, "QueueMessage", "Full", { name: "jobs", body: bytes(0x01), createdAt: 1700000000000n, failureCount: 2, availableAt: 1700000001000n, inFlight: true, inFlightAt: 1700000000500n });
addPersist(4, "QueueMessage", "Minimal", { name: "jobs", body: bytes(0xf6), createdAt: 0n, failureCount: none, availableAt: none, inFlight: none, inFlightAt: none });
writeFile("persist.json", "rivetkit@2.3.19 src/common/bare/actor-persist", persistVectors);

fs.rmSync(scratch, { recursive: true, force: true });

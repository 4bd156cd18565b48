// Writes inspector.json: inspector protocol frames encoded by the official TypeScript codecs of
// npm rivetkit 2.3.19 (src/common/bare/generated/inspector/v1..v6.ts, transpiled as generate.mjs
// does), each behind vbare's u16 little-endian embedded version (a socket negotiated with
// ?protocol_version=N carries the same bytes without those two). Client frames are written in
// every protocol version that has the request (v1–v6); server frames in v4, v5 and v6, the v6
// message taken down as the shipped client.browser.ts converters (v6ToClientToV5,
// v5ToClientToV4) do. The C++ test (tests/core/inspector/protocol_test.cpp) builds the same
// messages by name and checks decode (client frames) and byte-exact encode (server frames).
//
// Not vbare's serializeWithEmbeddedVersion on the shipped TO_SERVER_VERSIONED handler: for a
// target older than the latest it applies the down-converters from index version-1 onwards (for
// v4: v3→v2 and v2→v1 too), so it throws or mislabels; the per-version encoders are exact. At the
// latest version (what the 2.3.19 inspector sends: CURRENT_VERSION = 6) the handler applies no
// converter, and the script checks its v6 frames equal the handler's.
//
// Run once after changing a message below, then commit the JSON:
//   bash scripts/deps.sh && node tests/bare/vectors/generate_inspector.mjs

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
const nm = process.env.RIVETKIT_NODE_MODULES ?? path.join(root, ".deps/npm/node_modules");
const scratch = path.join(nm, "..", ".bare-vectors");
const load = (p) => import(pathToFileURL(p).href);
const ts = (await load(path.join(nm, "typescript/lib/typescript.js"))).default;

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

const inspector = {};
for (const v of [1, 2, 3, 4, 5, 6]) inspector[v] = await loadTs(`generated/inspector/v${v}`);
const shipped = await load(path.join(nm, "rivetkit/dist/browser/inspector/client.js"));
if (shipped.CURRENT_VERSION !== 6) throw new Error(`CURRENT_VERSION is ${shipped.CURRENT_VERSION}`);

function framed(version, payload) {
    const out = new Uint8Array(2 + payload.length);
    new DataView(out.buffer).setUint16(0, version, true);
    out.set(payload, 2);
    return out;
}

const bytes = (...b) => new Uint8Array(b).buffer;
const hex = (u8) => Buffer.from(u8).toString("hex");

function jsonValue(x) {
    return JSON.parse(
        JSON.stringify(x, (_k, v) => {
            if (typeof v === "bigint") return v.toString();
            if (v instanceof ArrayBuffer) return { hex: hex(new Uint8Array(v)) };
            return v;
        }),
    );
}

// CBOR {"count": 5} and [3].
const countState = bytes(0xa1, 0x65, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x05);
const argsThree = bytes(0x81, 0x03);

const requests = [
    ["PatchStateRequest", { state: countState }, [1, 2, 3, 4, 5, 6]],
    ["StateRequest", { id: 7n }, [1, 2, 3, 4, 5, 6]],
    ["ConnectionsRequest", { id: 8n }, [1, 2, 3, 4, 5, 6]],
    ["ActionRequest", { id: 9n, name: "increment", args: argsThree }, [1, 2, 3, 4, 5, 6]],
    ["RpcsListRequest", { id: 10n }, [1, 2, 3, 4, 5, 6]],
    ["TraceQueryRequest", { id: 11n, startMs: 1000n, endMs: 2000n, limit: 50n }, [2, 3, 4, 5, 6]],
    ["QueueRequest", { id: 12n, limit: 500n }, [2, 3, 4, 5, 6]],
    ["WorkflowHistoryRequest", { id: 13n }, [2, 3, 4, 5, 6]],
    ["WorkflowReplayRequest", { id: 14n, entryId: "e1" }, [4, 5, 6]],
    ["DatabaseSchemaRequest", { id: 15n }, [3, 4, 5, 6]],
    ["DatabaseTableRowsRequest", { id: 16n, table: "t", limit: 10n, offset: 20n }, [3, 4, 5, 6]],
    ["SchedulesRequest", { id: 17n }, [6]],
    ["ScheduleHistoryRequest", { id: 18n, scheduleId: "s1", limit: 5n }, [6]],
    ["ScheduleDeleteRequest", { id: 19n, scheduleId: "s1", kind: "at" }, [6]],
];

const conn = { id: "c1", details: bytes(0xa0) };
const schedule = {
    id: "s1",
    name: null,
    kind: "at",
    action: "tick",
    args: argsThree,
    nextRunAt: 1700000005000n,
    lastRunAt: null,
    expression: null,
    timezone: null,
    intervalMs: null,
    maxHistory: null,
};
const responses = [
    [
        "Init",
        {
            connections: [conn],
            state: countState,
            isStateEnabled: true,
            rpcs: ["increment", "getCount"],
            isDatabaseEnabled: false,
            queueSize: 3n,
            workflowHistory: null,
            isWorkflowEnabled: true,
            tabConfig: [],
            schedules: [schedule],
        },
    ],
    ["StateUpdated", { state: countState }],
    ["StateResponse", { rid: 7n, state: null, isStateEnabled: false }],
    ["ConnectionsResponse", { rid: 8n, connections: [conn] }],
    ["ConnectionsUpdated", { connections: [] }],
    ["ActionResponse", { rid: 9n, output: bytes(0x04) }],
    ["RpcsListResponse", { rid: 10n, rpcs: ["increment"] }],
    ["TraceQueryResponse", { rid: 11n, payload: bytes() }],
    [
        "QueueResponse",
        {
            rid: 12n,
            status: {
                size: 2n,
                maxSize: 1000n,
                messages: [{ id: 1n, name: "jobs", createdAtMs: 1700000000000n }],
                truncated: true,
            },
        },
    ],
    ["QueueUpdated", { queueSize: 2n }],
    ["WorkflowHistoryResponse", { rid: 13n, history: null, isWorkflowEnabled: true }],
    ["WorkflowReplayResponse", { rid: 14n, history: bytes(0x01, 0x02), isWorkflowEnabled: true }],
    ["Error", { message: "boom" }],
    ["SchedulesUpdated", { schedules: [schedule] }],
    ["SchedulesResponse", { rid: 17n, schedules: [] }],
    ["ScheduleHistoryResponse", { rid: 18n, scheduleId: "s1", history: [] }],
    ["ScheduleDeleteResponse", { rid: 19n, scheduleId: "s1", deleted: true }],
];

// client.browser.ts's v6ToClientToV5 and v5ToClientToV4, on the tag/val shape.
function downgrade(tag, val, version) {
    if (version >= 6) return { tag, val };
    if (tag.startsWith("Schedule")) return { tag: "Error", val: { message: "inspector.schedules_dropped" } };
    if (tag !== "Init") return { tag, val };
    const { schedules: _s, tabConfig, ...v4Init } = val;
    return { tag, val: version === 5 ? { ...v4Init, tabConfig } : v4Init };
}

const vectors = [];
for (const [tag, val, versions] of requests) {
    for (const v of versions) {
        const frame = framed(v, inspector[v].encodeToServer({ body: { tag, val } }));
        if (v === 6) {
            const viaHandler = shipped.TO_SERVER_VERSIONED.serializeWithEmbeddedVersion({ body: { tag, val } }, 6);
            if (hex(viaHandler) !== hex(frame)) throw new Error(`TO_SERVER_VERSIONED differs for ${tag}`);
        }
        vectors.push({ name: `v${v}.ToServer.${tag}`, version: v, type: "ToServer", hex: hex(frame), value: jsonValue({ tag, val }) });
    }
}
for (const [tag, val] of responses) {
    for (const v of [4, 5, 6]) {
        const body = downgrade(tag, val, v);
        const frame = framed(v, inspector[v].encodeToClient({ body }));
        if (v === 6) {
            const viaHandler = shipped.TO_CLIENT_VERSIONED.serializeWithEmbeddedVersion({ body }, 6);
            if (hex(viaHandler) !== hex(frame)) throw new Error(`TO_CLIENT_VERSIONED differs for ${tag}`);
        }
        vectors.push({ name: `v${v}.ToClient.${tag}`, version: v, type: "ToClient", hex: hex(frame), value: jsonValue(body) });
    }
}

const out = {
    generated_by: "tests/bare/vectors/generate_inspector.mjs",
    source: "rivetkit@2.3.19 src/common/bare/generated/inspector/v1..v6.ts, u16 LE version prefix",
    vectors,
};
fs.writeFileSync(path.join(here, "inspector.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${vectors.length} vectors`);

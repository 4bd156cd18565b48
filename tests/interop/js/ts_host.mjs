// Upstream's own TypeScript actor host (rivetkit 2.3.19, NAPI rivetkit-core) serving the `counter`
// contract that the C++ test actor implements too. It registers as an envoy in pool $RIVET_POOL
// (default "default") of the engine at $RIVET_ENDPOINT and prints "ready" on stdout once the
// engine has accepted it. The pool must already exist (PUT /runner-configs/<pool>).
//
//   RIVET_ENDPOINT=http://127.0.0.1:PORT node tests/interop/js/ts_host.mjs
import { importPackage } from "./deps.mjs";

if (!process.env.RIVET_ENDPOINT) {
    console.error("ts_host: RIVET_ENDPOINT is required");
    process.exit(2);
}

const { actor, setup, UserError } = await importPackage("rivetkit");
const { db } = await importPackage("rivetkit", "./db");

export const counter = actor({
    createState: (_c, input) => ({
        count: typeof input?.start === "number" ? input.start : 0,
        input: input ?? null,
    }),
    actions: {
        increment: (c, amount) => {
            c.state.count += amount;
            c.broadcast("newCount", c.state.count);
            return c.state.count;
        },
        getCount: (c) => c.state.count,
        getInput: (c) => c.state.input,
        fail: () => {
            throw new UserError("counter failed on purpose", {
                code: "deliberate_failure",
                metadata: { reason: "test" },
            });
        },
        goToSleep: (c) => {
            c.sleep();
            return null;
        },
        broadcastMany: (c, n) => {
            for (let i = 0; i < n; i++) c.broadcast("tick", i);
            return n;
        },
    },
});

// The memory and peer benchmarks' never-sleeping actor (bench/memory/memory_host.cpp is its C++
// twin): every actor a benchmark creates stays awake while it reads the host's RSS.
export const resident = actor({
    createState: () => ({ touches: 0 }),
    actions: {
        touch: (c, by) => {
            c.state.touches += by;
            c.broadcast("touched", c.state.touches);
            return c.state.touches;
        },
    },
    options: { noSleep: true },
});

// The actor both runtimes serve in tests/interop/two_runtimes_test.cpp (the C++ twin is defined
// there): state, user KV, queue, a scheduled action and a user table in the actor's database.
export const vault = actor({
    createState: () => ({ count: 0, reminded: 0 }),
    db: db({
        onMigrate: async (raw) => {
            await raw.execute(
                "CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)",
            );
        },
    }),
    actions: {
        increment: (c, n) => (c.state.count += n),
        getCount: (c) => c.state.count,
        kvPut: async (c, key, value) => {
            await c.kv.put(key, value);
            return null;
        },
        kvGet: async (c, key) => (await c.kv.get(key)) ?? null,
        enqueue: async (c, body) => {
            await c.queue.send("jobs", body);
            return null;
        },
        takeJobs: async (c) => {
            const messages = await c.queue.tryNextBatch({ names: ["jobs"], count: 100 });
            return messages.map((m) => m.body);
        },
        remindIn: (c, ms) => {
            c.schedule.after(ms, "remind");
            return null;
        },
        remind: (c) => {
            c.state.reminded += 1;
            return c.state.reminded;
        },
        getReminded: (c) => c.state.reminded,
        note: async (c, text) => {
            await c.db.execute("INSERT INTO notes (text) VALUES (?)", text);
            return null;
        },
        notes: async (c) => {
            const rows = await c.db.execute("SELECT text FROM notes ORDER BY id");
            return rows.map((r) => r.text);
        },
        goToSleep: (c) => {
            c.sleep();
            return null;
        },
        // Every table of the actor's database (internal ones included) as rows, a blob as an array
        // of its bytes;
        // used to make the storage vectors (tests/core/actor/vectors/generate_ts_storage.sh).
        dumpDb: async (c) => {
            const master = await c.db.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
            );
            const tables = {};
            for (const t of master.filter((m) => m.type === "table")) {
                const rows = await c.db.execute(`SELECT * FROM "${t.name}"`);
                tables[t.name] = rows.map((row) =>
                    Object.fromEntries(
                        Object.entries(row).map(([k, v]) => [
                            k,
                            v instanceof Uint8Array || v instanceof ArrayBuffer
                                ? Array.from(new Uint8Array(v))
                                : typeof v === "bigint"
                                  ? Number(v)
                                  : v,
                        ]),
                    ),
                );
            }
            return { master, tables };
        },
    },
});

const registry = setup({
    use: { counter, resident, vault },
    // An endpoint on 127.0.0.1 would otherwise make rivetkit start its local "Services" host.
    startServices: false,
    noWelcome: true,
});

await registry.startAndWait();
console.log("ready");

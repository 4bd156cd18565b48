// Prints the peer benchmark's result files side by side, with C++/TS ratios, and — given the run
// of rivetkit-host with one io thread — how each measure scales with the host's threads.
//   node report.mjs ts.json[,ts2.json...] cpp.json[,cpp2.json...] [cpp-1-thread.json]
// Several files for a host (rounds) are merged into each measure's median.
import fs from "node:fs";
import os from "node:os";

const median = (values) => {
    const v = values.filter((x) => typeof x === "number" && !Number.isNaN(x)).sort((a, b) => a - b);
    if (!v.length) return values[0];
    return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const load = (list) => {
    const runs = list.split(",").map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
    if (runs.length === 1) return { ...runs[0], rounds: 1 };
    const results = runs[0].results.map((first) => {
        const all = runs.map((r) => r.results.find((x) => x.name === first.name)).filter(Boolean);
        const merged = { ...first };
        for (const [k, v] of Object.entries(first))
            if (typeof v === "number") merged[k] = median(all.map((x) => x[k]));
        return merged;
    });
    return { ...runs[0], results, rounds: runs.length };
};
const [ts, cpp, one] = process.argv.slice(2).map(load);
const byName = new Map(cpp.results.map((r) => [r.name, r]));
const oneByName = new Map((one?.results ?? []).map((r) => [r.name, r]));
const fmt = (v, digits = 1) =>
    v === null || v === undefined || Number.isNaN(v) ? "–" : v.toLocaleString("en-US", { maximumFractionDigits: digits });
const ratio = (c, t) => (c === null || t === null || !t ? "–" : (c / t).toFixed(2));

const rows = [];
for (const t of ts.results) {
    const c = byName.get(t.name);
    if (!c) continue;
    const o = oneByName.get(t.name);
    rows.push([t.name, "ops/s", fmt(t.ops_per_s), fmt(c.ops_per_s), ratio(c.ops_per_s, t.ops_per_s),
        ...(one ? [o ? fmt(o.ops_per_s) : "–", o ? ratio(c.ops_per_s, o.ops_per_s) : "–"] : [])]);
    rows.push(["", "p50 / p99 ms", `${fmt(t.p50_ms, 2)} / ${fmt(t.p99_ms, 2)}`, `${fmt(c.p50_ms, 2)} / ${fmt(c.p99_ms, 2)}`,
        `${ratio(c.p50_ms, t.p50_ms)} / ${ratio(c.p99_ms, t.p99_ms)}`]);
    rows.push(["", "engine CPU ms/op", fmt(t.engine_cpu_ms_per_op, 3), fmt(c.engine_cpu_ms_per_op, 3),
        ratio(c.engine_cpu_ms_per_op, t.engine_cpu_ms_per_op)]);
    rows.push(["", "host CPU ms/op", fmt(t.host_cpu_ms_per_op, 3), fmt(c.host_cpu_ms_per_op, 3),
        ratio(c.host_cpu_ms_per_op, t.host_cpu_ms_per_op)]);
    if (t.host_sent_kb_per_op !== undefined && c.host_sent_kb_per_op !== undefined) {
        const pair = (kb, segs) => (r) => `${fmt(r[kb], 2)} (${fmt(r[segs], 2)})`;
        const pairRatio = (kb, segs) => `${ratio(c[kb], t[kb])} (${ratio(c[segs], t[segs])})`;
        const sent = pair("host_sent_kb_per_op", "host_segs_out_per_op");
        const received = pair("host_received_kb_per_op", "host_segs_in_per_op");
        rows.push(["", "host → engine KB/op (segments/op)", sent(t), sent(c), pairRatio("host_sent_kb_per_op", "host_segs_out_per_op")]);
        rows.push(["", "engine → host KB/op (segments/op)", received(t), received(c),
            pairRatio("host_received_kb_per_op", "host_segs_in_per_op")]);
        rows.push(["", "engine storage writes KB/op", fmt(t.engine_disk_kb_per_op, 2), fmt(c.engine_disk_kb_per_op, 2),
            ratio(c.engine_disk_kb_per_op, t.engine_disk_kb_per_op)]);
    }
    if (typeof t.engine_transactions_per_op === "number" && typeof c.engine_transactions_per_op === "number") {
        rows.push(["", "engine DB transactions/op", fmt(t.engine_transactions_per_op, 2), fmt(c.engine_transactions_per_op, 2),
            ratio(c.engine_transactions_per_op, t.engine_transactions_per_op)]);
        rows.push(["", "engine workflow signals/op", fmt(t.engine_signals_per_op, 3), fmt(c.engine_signals_per_op, 3),
            ratio(c.engine_signals_per_op, t.engine_signals_per_op)]);
    }
    if (t.host_rss_kb_per_actor !== undefined)
        rows.push(["", "host RSS KB/actor", fmt(t.host_rss_kb_per_actor), fmt(c.host_rss_kb_per_actor),
            ratio(c.host_rss_kb_per_actor, t.host_rss_kb_per_actor)]);
    if (t.host_reconnected || c.host_reconnected)
        rows.push(["", "engine closed a host connection (traffic rows unknown)", t.host_reconnected ? "yes" : "no",
            c.host_reconnected ? "yes" : "no", ""]);
    if (c.host_heap_kb_per_actor !== undefined)
        rows.push(["", "host heap in use KB/actor (malloc)", "–", fmt(c.host_heap_kb_per_actor), ""]);
    if (t.create_retries !== undefined)
        rows.push(["", "creates retried (engine timeouts)", fmt(t.create_retries), fmt(c.create_retries), ""]);
}
const threads = os.cpus().length; // rivetkit-host's default: one io thread per core
const header = ["scenario", "measure", "TS host", `rivetkit-host (${threads} threads)`, "C++ / TS",
    ...(one ? ["rivetkit-host (1 thread)", `${threads} threads / 1`] : [])];
for (const r of rows) while (r.length < header.length) r.push("");
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => "---").join("|")}|`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
const rounds = ts.rounds > 1 ? `; medians of ${ts.rounds} alternating rounds per host` : "";
console.log(`\n(${ts.quick ? "quick" : "full"} run${rounds}; CPU from /proc/<pid>/stat at 10 ms resolution)`);

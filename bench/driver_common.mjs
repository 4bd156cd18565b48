// What the benchmark drivers (bench/peer, bench/memory) share: their `--key value` arguments and
// a process's CPU time and RSS from /proc.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

// The arguments as { key: value | true }; exits with a usage error when one of `required` is missing.
export function driverArgs(required) {
    const args = Object.fromEntries(
        process.argv
            .slice(2)
            .join(" ")
            .split("--")
            .filter(Boolean)
            .map((a) => {
                const [k, ...v] = a.trim().split(" ");
                return [k, v.join(" ") || true];
            }),
    );
    for (const need of required) {
        if (!args[need]) {
            console.error(`driver: --${need} is required`);
            process.exit(2);
        }
    }
    return args;
}

const TICK_MS = 10; // USER_HZ = 100 on Linux

// User + system CPU time of a process (all threads), in ms.
// A process's CPU so far, user and system apart (utime, stime), in milliseconds.
export function cpuSplitMs(pid) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { user: Number(fields[11]) * TICK_MS, sys: Number(fields[12]) * TICK_MS };
}

export function cpuMs(pid) {
    const { user, sys } = cpuSplitMs(pid);
    return user + sys;
}

export function rssKb(pid) {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
}

// The bytes a process made the kernel write to storage (/proc/<pid>/io), less what it truncated or
// deleted before the write reached the disk; 0 when unreadable.
export function diskWriteBytes(pid) {
    const io = { write_bytes: 0, cancelled_write_bytes: 0 };
    try {
        for (const line of fs.readFileSync(`/proc/${pid}/io`, "utf8").split("\n")) {
            const [k, v] = line.split(": ");
            if (k in io) io[k] = Number(v);
        }
    } catch {}
    return io.write_bytes - io.cancelled_write_bytes;
}

// What a process's established TCP connections carried (the kernel's counters, `ss -ti`): bytes
// and data segments each way, summed, and the connections (`conns`, local and peer address). A
// host talks to nothing but the engine. Only connections open at both readings count correctly:
// one that closes or reconnects in between drops out (see tcpDelta).
export function tcpStats(pid) {
    const t = { bytes_sent: 0, bytes_received: 0, data_segs_out: 0, data_segs_in: 0, conns: [] };
    let out = "";
    try {
        out = execFileSync("ss", ["-tinpH", "state", "established"], { encoding: "utf8" });
    } catch {
        return t;
    }
    // Each connection: its line (with users:((…,pid=N,…))), then an indented line of counters.
    let mine = false;
    for (const line of out.split("\n")) {
        if (/^\S/.test(line)) {
            mine = line.includes(`pid=${pid},`);
            if (mine) t.conns.push(line.split(/\s+/).slice(2, 4).join(" "));
        } else if (mine)
            for (const k of Object.keys(t)) {
                const m = new RegExp(`\\b${k}:(\\d+)`).exec(line);
                if (m) t[k] += Number(m[1]);
            }
    }
    return t;
}

// What the connections carried between two tcpStats readings, or null when a connection of the
// first is gone by the second (the engine closed it and the host reconnected): the counters'
// difference then does not cover what was sent.
export function tcpDelta(before, after) {
    if (!before.conns.every((c) => after.conns.includes(c))) return null;
    const d = {};
    for (const k of ["bytes_sent", "bytes_received", "data_segs_out", "data_segs_in"]) d[k] = after[k] - before[k];
    return d;
}

// The malloc heap in use of a host with the memory host's heap probe (MEMORY_HOST_HEAP_FILE,
// bench/memory/memory_host.cpp): asks it for a fresh reading (SIGUSR1 to the pid the file names)
// and waits up to 2 s for it, in bytes. null without a probe or when no reading came.
export async function heapBytes(file) {
    const read = () => {
        try {
            const [pid, sequence, bytes] = fs.readFileSync(file, "utf8").trim().split(" ").map(Number);
            return { pid, sequence, bytes };
        } catch {
            return null;
        }
    };
    const before = file ? read() : null;
    if (!before) return null;
    process.kill(before.pid, "SIGUSR1");
    for (let waited = 0; waited < 2000; waited += 10) {
        await new Promise((ok) => setTimeout(ok, 10));
        const now = read();
        if (now && now.sequence > before.sequence) return now.bytes;
    }
    return null;
}

// The engine's own count of its work (its Prometheus metrics at `url`, engine_metrics_url in
// scripts/engine.sh): database transactions (`rivet_udb_transaction_total`, every name) and
// workflow signals sent (`rivet_gasoline_signal_send_duration_count`). Unlike its CPU time, these
// do not drift between runs, so they rank what two hosts cost the engine. null when unreadable.
export async function engineWork(url) {
    if (!url) return null;
    let text;
    try {
        const res = await fetch(url);
        if (!res.ok) return null;
        text = await res.text();
    } catch {
        return null;
    }
    const work = { transactions: 0, signals: 0, by_name: {} };
    for (const line of text.split("\n")) {
        const value = () => Number(line.slice(line.lastIndexOf(" ") + 1));
        if (line.startsWith("rivet_udb_transaction_total{")) {
            const name = /name="([^"]*)"/.exec(line)?.[1] ?? "?";
            work.by_name[name] = (work.by_name[name] ?? 0) + value();
            work.transactions += value();
        } else if (line.startsWith("rivet_gasoline_signal_send_duration_count{")) work.signals += value();
    }
    return work;
}

// The transactions of each name between two engineWork readings, per `ops`, largest first
// (names with none left out).
export function transactionsByName(before, after, ops) {
    if (!before || !after) return null;
    return Object.fromEntries(
        Object.entries(after.by_name)
            .map(([name, n]) => [name, (n - (before.by_name[name] ?? 0)) / ops])
            .filter(([, n]) => n > 0)
            .sort((a, b) => b[1] - a[1]),
    );
}

// How long a process has been running, in seconds (/proc/<pid>/stat's start time against
// /proc/uptime).
export function processAgeS(pid) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const startTicks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    const uptime = Number(fs.readFileSync("/proc/uptime", "utf8").split(" ")[0]);
    return uptime - startTicks / (1000 / TICK_MS);
}

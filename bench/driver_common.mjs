// What the benchmark drivers (bench/peer, bench/memory) share: their `--key value` arguments and
// a process's CPU time and RSS from /proc.
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
export function cpuMs(pid) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime + stime
}

export function rssKb(pid) {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
}

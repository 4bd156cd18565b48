// The checker's own test: a clean history passes, and each broken promise, written into a small
// made-up history or final state, is reported under its name (so a run reporting 0 violations
// means the checker looked). Prints {"ok":true} last; exit 1 with the failures otherwise.
//
//   node check_test.mjs
import { check } from "./check.mjs";

const failures = [];
const expect = (cond, what) => {
    if (!cond) failures.push(what);
};

// One client's acknowledged operations seq 1..n on one actor, answered by one instance.
function acked(kind, actor, n, { client = "c", gen = 1, nonce = "a", t = 1000, extra = {} } = {}) {
    return Array.from({ length: n }, (_, i) => ({
        client,
        kind,
        actor,
        key: "k",
        seq: i + 1,
        attempt: 1,
        t0: t + i * 10,
        t1: t + i * 10 + 5,
        ok: true,
        res: { gen, nonce, applied: true, last: i + 1 },
        ...extra,
    }));
}
const track = (last, more = {}) => ({ last, gaps: [], dups: [], repeats: 0, above: [], ...more });
const finalsOf = (tracks) => ({ gen: 1, tracks });
const promisesOf = (r) => r.violations.map((v) => v.promise).sort();

function clean() {
    const history = [
        ...acked("add", "chaosCounter", 3),
        ...acked("fast", "chaosCounter", 3, { client: "f" }),
        ...acked("say", "chaosChat", 3),
        ...acked("queue", "chaosQueue", 3),
        ...acked("plan", "chaosSchedule", 3),
    ];
    const finals = {
        "chaosCounter/k": finalsOf({ "add:c": track(3), "fast:f": track(3) }),
        "chaosChat/k": finalsOf({ "say:c": track(3) }),
        "chaosQueue/k": finalsOf({ "queue:c": track(3, { repeats: 1 }) }),
        "chaosSchedule/k": finalsOf({ "plan:c": track(3), "fire:c": track(1, { above: [3, 2] }) }),
    };
    return { history, finals, faults: [] };
}

{
    const r = check(clean());
    expect(r.violations.length === 0, `a clean history reports ${JSON.stringify(r.violations)}`);
    expect(r.notes.queueRedeliveries === 1, "a queue redelivery is counted, not reported");
    expect(r.checked["durable-write"] === 9, `durable-write checked ${r.checked["durable-write"]}`);
}
{
    const c = clean();
    c.finals["chaosCounter/k"].tracks["add:c"] = track(2);
    expect(promisesOf(check(c)).join() === "durable-write", "an acknowledged add beyond last");
}
{
    const c = clean();
    c.finals["chaosChat/k"].tracks["say:c"] = track(3, { gaps: [[2, 2]] });
    expect(promisesOf(check(c)).join() === "durable-write", "an acknowledged say inside a gap");
}
{
    const c = clean();
    c.finals["chaosChat/k"].tracks["say:c"] = track(3, { dups: [2] });
    expect(promisesOf(check(c)).join() === "once-in-order", "a say delivered twice");
}
{
    const c = clean();
    c.finals["chaosQueue/k"].tracks["queue:c"] = track(1);
    expect(
        promisesOf(check(c)).join() === "queue-delivery,queue-delivery",
        "two acknowledged queue sends never received",
    );
}
{
    const c = clean();
    c.finals["chaosSchedule/k"].tracks["fire:c"] = track(1, { above: [3] });
    expect(promisesOf(check(c)).join() === "schedule-once", "a plan that never fired");
    c.finals["chaosSchedule/k"].tracks["fire:c"] = track(3, { dups: [2] });
    expect(promisesOf(check(c)).join() === "schedule-once", "a fire that ran twice");
}
{
    const c = clean();
    c.finals["chaosCounter/k"].tracks["fast:f"] = track(1);
    expect(promisesOf(check(c)).join() === "bounded-loss,bounded-loss", "fast adds lost, no crash");
    const lastAck = c.history.filter((l) => l.kind === "fast").at(-1).t1;
    c.faults = [{ kind: "host-kill", target: "host0", t0: lastAck + 500, t1: lastAck + 900 }];
    expect(check(c).violations.length === 0, "fast adds lost to a kill -9 within the interval");
    c.faults = [{ kind: "host-kill", target: "host0", t0: lastAck + 60_000, t1: lastAck + 60_500 }];
    expect(promisesOf(check(c)).length === 2, "a crash a minute later does not excuse the loss");
    c.faults = [{ kind: "host-term", target: "host0", t0: lastAck + 500, t1: lastAck + 900 }];
    expect(promisesOf(check(c)).length === 2, "a graceful stop does not excuse a loss");
    c.faults = [{ kind: "engine-pause", target: "engine", t0: lastAck + 50, t1: lastAck + 18_000 }];
    expect(check(c).violations.length === 0, "fast adds lost to an engine paused within the interval");
    c.faults = [{ kind: "slow-reader", target: "engine", t0: lastAck + 50, t1: lastAck + 900 }];
    expect(promisesOf(check(c)).length === 2, "a slow reader does not excuse a loss");
}
{
    const c = clean();
    c.history.push(...acked("add", "chaosCounter", 1, { client: "d", nonce: "b", t: 2000 }));
    c.finals["chaosCounter/k"].tracks["add:d"] = track(1);
    expect(promisesOf(check(c)).join() === "single-instance", "one generation, two instances");
}
{
    const c = clean();
    c.history.push(...acked("add", "chaosCounter", 1, { client: "d", gen: 2, nonce: "b", t: 2000 }));
    c.history.push(...acked("add", "chaosCounter", 1, { client: "e", gen: 1, nonce: "a", t: 3000 }));
    c.finals["chaosCounter/k"].tracks["add:d"] = track(1);
    c.finals["chaosCounter/k"].tracks["add:e"] = track(1);
    expect(
        promisesOf(check(c)).join() === "single-instance",
        "an older generation answering after a newer one",
    );
}
{
    const c = clean();
    c.finals["chaosChat/k"] = { error: "no answer in time" };
    expect(promisesOf(check(c)).join() === "durable-write", "an unreadable final state");
}

const ok = failures.length === 0;
for (const f of failures) process.stderr.write(`check_test: FAILED ${f}\n`);
process.stdout.write(JSON.stringify({ ok, failures }) + "\n");
process.exit(ok ? 0 : 1);

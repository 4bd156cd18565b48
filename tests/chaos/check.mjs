// The chaos runner's checker: compares what the clients were told (the history, one JSON line per
// operation) with what the actors kept (their final states, read after the faults stopped) and
// the fault log, and reports every broken promise with the operations involved.
//
// History line: {client, kind, actor, key, seq, attempt, t0, t1, ok, res?, err?}; kinds add, fast,
// say, queue, plan (see chaos_host.cpp). A client sends seq n + 1 only after seq n was
// acknowledged, so every sequence number below a stream's highest acknowledged one was
// acknowledged too.
//
// Promises checked:
//   durable-write      an acknowledged add (reply after durable), say or plan, and a queue send,
//                      is in the actor's final state (not beyond `last`, not inside a gap)
//   bounded-loss       an acknowledged addFast is kept unless a crash came within one save
//                      interval (+ slack) after the acknowledgement: a host's kill -9 or pause
//                      past the engine's ping timeout, or the engine's own kill -9 or pause (the
//                      actors' storage and placement are the engine's: it takes the actors away,
//                      and what their hosts had not yet saved goes with them)
//   single-instance    one generation is answered by one instance (nonce), and no reply comes
//                      from an older generation after a newer one answered
//   once-in-order      no first attempt of a say arrives already applied (a duplicate delivery)
//   schedule-once      every acknowledged plan fired, none fired twice
//   queue-delivery     every acknowledged send was received (redeliveries counted, allowed)

const DURABLE_STREAM = { add: "add", say: "say", queue: "queue", plan: "plan" };
const CRASH_FAULTS = new Set(["host-kill", "host-pause-long", "engine-restart", "engine-pause"]);

function streamKey(line) {
    return `${line.actor}/${line.key}/${line.client}/${line.kind}`;
}

function inGap(track, seq) {
    return (track.gaps ?? []).some(([from, to]) => seq >= from && seq <= to);
}

function kept(track, seq) {
    if (track === undefined) return false;
    return (seq <= track.last && !inGap(track, seq)) || (track.above ?? []).includes(seq);
}

function brief(op) {
    if (!op) return null;
    const { client, kind, actor, key, seq, attempt, t0, t1, ok, res, err } = op;
    return { client, kind, actor, key, seq, attempt, t0, t1, ok, res, err };
}

// history: array of lines; finals: {"<actor>/<key>": state | {error}}; faults: [{kind, t0, t1}]
export function check({ history, finals, faults, saveIntervalMs = 1000, slackMs = 3000 }) {
    const violations = [];
    const ops = {};
    const streams = new Map();
    for (const line of history) {
        const o = (ops[line.kind] ??= { sent: 0, acked: 0, failed: 0 });
        o.sent += 1;
        if (line.ok) o.acked += 1;
        else o.failed += 1;
        const k = streamKey(line);
        if (!streams.has(k)) streams.set(k, []);
        streams.get(k).push(line);
    }

    const crashes = faults.filter((f) => CRASH_FAULTS.has(f.kind));
    const crashedWithin = (from, to) => crashes.some((f) => f.t0 <= to && (f.t1 ?? f.t0) >= from);

    const checked = {
        "durable-write": 0,
        "bounded-loss": 0,
        "single-instance": 0,
        "once-in-order": 0,
        "schedule-once": 0,
        "queue-delivery": 0,
    };
    const notes = { fastLossesAllowed: 0, queueRedeliveries: 0, retriedAlreadyApplied: 0 };

    for (const [, lines] of streams) {
        const { actor, key, client, kind } = lines[0];
        const final = finals[`${actor}/${key}`];
        if (!final || final.error) {
            violations.push({
                promise: "durable-write",
                what: `the final state of ${actor}/${key} could not be read`,
                detail: final?.error ?? "missing",
            });
            continue;
        }
        const tracks = final.tracks ?? {};
        const track = tracks[`${kind}:${client}`];
        const acked = lines.filter((l) => l.ok);
        for (const op of acked) {
            if (kind === "fast") {
                checked["bounded-loss"] += 1;
                if (kept(track, op.seq)) continue;
                if (crashedWithin(op.t0, op.t1 + saveIntervalMs + slackMs)) {
                    notes.fastLossesAllowed += 1;
                    continue;
                }
                violations.push({
                    promise: "bounded-loss",
                    what: `acknowledged addFast ${client}#${op.seq} on ${actor}/${key} is gone and nothing crashed within a save interval of it`,
                    op: brief(op),
                    track: track ?? null,
                });
                continue;
            }
            if (DURABLE_STREAM[kind] === undefined) continue;
            checked[kind === "queue" ? "queue-delivery" : "durable-write"] += 1;
            if (!kept(track, op.seq)) {
                violations.push({
                    promise: kind === "queue" ? "queue-delivery" : "durable-write",
                    what: `acknowledged ${kind} ${client}#${op.seq} on ${actor}/${key} is not in the final state`,
                    op: brief(op),
                    track: track ?? null,
                });
            }
            if (kind === "plan") {
                checked["schedule-once"] += 1;
                const fired = tracks[`fire:${client}`];
                if (!kept(fired, op.seq)) {
                    violations.push({
                        promise: "schedule-once",
                        what: `acknowledged plan ${client}#${op.seq} on ${actor}/${key} never fired`,
                        op: brief(op),
                        track: fired ?? null,
                    });
                }
            }
            if (kind === "say" && op.attempt > 1 && op.res && op.res.applied === false)
                notes.retriedAlreadyApplied += 1;
        }
        if (kind === "say" && track) {
            checked["once-in-order"] += acked.length;
            for (const seq of track.dups ?? []) {
                violations.push({
                    promise: "once-in-order",
                    what: `say ${client}#${seq} on ${actor}/${key} was delivered again on its first attempt`,
                    ops: lines.filter((l) => l.seq === seq).map(brief),
                });
            }
        }
        if (kind === "plan") {
            const fired = tracks[`fire:${client}`];
            for (const seq of fired?.dups ?? []) {
                violations.push({
                    promise: "schedule-once",
                    what: `scheduled fire ${client}#${seq} on ${actor}/${key} ran twice`,
                    ops: lines.filter((l) => l.seq === seq).map(brief),
                });
            }
        }
        if (kind === "queue" && track) notes.queueRedeliveries += track.repeats ?? 0;
    }

    // single-instance, per actor, over every reply that names its generation and instance.
    const byActor = new Map();
    for (const line of history) {
        if (!line.ok || !line.res || typeof line.res !== "object" || line.res.nonce === undefined)
            continue;
        const k = `${line.actor}/${line.key}`;
        if (!byActor.has(k)) byActor.set(k, []);
        byActor.get(k).push(line);
    }
    for (const [actorKey, replies] of byActor) {
        checked["single-instance"] += replies.length;
        const nonceOf = new Map();
        for (const r of replies) {
            const seen = nonceOf.get(r.res.gen);
            if (seen === undefined) nonceOf.set(r.res.gen, r);
            else if (seen.res.nonce !== r.res.nonce) {
                violations.push({
                    promise: "single-instance",
                    what: `${actorKey} generation ${r.res.gen} answered from two instances`,
                    ops: [brief(seen), brief(r)],
                });
                nonceOf.set(r.res.gen, r);
            }
        }
        // A reply received before another request was sent bounds that request's generation.
        const bySent = [...replies].sort((a, b) => a.t0 - b.t0);
        const byReceived = [...replies].sort((a, b) => a.t1 - b.t1);
        let i = 0;
        let newest = null;
        for (const r of bySent) {
            while (i < byReceived.length && byReceived[i].t1 < r.t0) {
                if (!newest || byReceived[i].res.gen > newest.res.gen) newest = byReceived[i];
                i += 1;
            }
            if (newest && r.res.gen < newest.res.gen) {
                violations.push({
                    promise: "single-instance",
                    what: `${actorKey} answered from generation ${r.res.gen} after generation ${newest.res.gen} had answered`,
                    ops: [brief(newest), brief(r)],
                });
            }
        }
    }

    return { ops, checked, notes, violations };
}

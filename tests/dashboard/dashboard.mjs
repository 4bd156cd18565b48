// The engine's dashboard (/ui/) inspecting actors of a C++ host, in headless Chromium (Debian's
// chromium, driven by puppeteer-core). tests/dashboard/dashboard_test.cpp starts the engine and a
// rivetkit::Registry serving the example actors, then runs this:
//
//   node dashboard.mjs --endpoint http://127.0.0.1:PORT --artifacts DIR
//
// It prints one JSON line: {ok, steps: {...}, failures: [...]} and keeps a screenshot per step in
// DIR. A request to the engine that fails or answers >= 400, an uncaught page error or an error
// logged by the page counts as a failure; requests to outside hosts (analytics, error reporting:
// offline here) are ignored.
import fs from "node:fs";
import path from "node:path";
import { importPackage } from "../interop/js/deps.mjs";

const args = Object.fromEntries(
    process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const endpoint = args.endpoint ?? process.env.RIVET_ENDPOINT;
const artifacts = args.artifacts ?? "dashboard-artifacts";
const chromium = process.env.RIVET_CHROMIUM_BIN ?? "/usr/bin/chromium";
fs.mkdirSync(artifacts, { recursive: true });
const origin = new URL(endpoint).origin;

const steps = {};
const failures = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function action(name, key, act, argsList) {
    const url = `${endpoint}/gateway/${name}/action/${act}?rvt-namespace=default&rvt-method=getOrCreate&rvt-runner=default&rvt-key=${key}`;
    const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ args: argsList }),
    });
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${name}.${act}: ${res.status} ${JSON.stringify(body)}`);
    return { actorId: res.headers.get("x-rivet-actor"), output: body.output };
}

const { default: puppeteer } = await importPackage("puppeteer-core");
const { createClient } = await importPackage("rivetkit", "./client");
const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
});
let conn;
try {
    const counter = await action("counter", "dash", "increment", [4]);
    const ledger = await action("ledger", "dash", "add", ["first entry"]);
    const reminder = await action("reminder", "dash", "remindIn", [600_000, "later"]);

    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });
    const local = (url) => url.startsWith(origin);
    page.on("pageerror", (e) => failures.push(`page error: ${e.message}`));
    page.on("console", (m) => {
        if (m.type() !== "error") return;
        const loc = m.location()?.url ?? "";
        // A failed load of an outside host is reported twice: as a failed request and here.
        if (/ERR_NAME_NOT_RESOLVED|ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED/.test(m.text()) && !local(loc)) return;
        failures.push(`console error: ${m.text().slice(0, 300)} (${loc})`);
    });
    page.on("requestfailed", (r) => {
        const why = r.failure()?.errorText ?? "";
        // Aborted: the page cancelled it (navigation, a tab switched away); not a failure.
        if (local(r.url()) && why !== "net::ERR_ABORTED") failures.push(`request failed: ${r.url()} ${why}`);
    });
    page.on("response", (r) => {
        if (local(r.url()) && r.status() >= 400) failures.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });

    const inspector = () => page.frames().find((f) => f.url().includes("/inspector/ui/"));
    const frameText = async () => (await inspector()?.evaluate(() => document.body.innerText)) ?? "";
    // Polls the inspector frame's text until `predicate` holds; false after `ms`.
    async function until(predicate, ms = 20_000) {
        const deadline = Date.now() + ms;
        while (Date.now() < deadline) {
            const text = await frameText().catch(() => "");
            if (predicate(text)) return true;
            await sleep(200);
        }
        return false;
    }
    // The actor page renders its tabs after its data arrives (seconds on a loaded machine): wait
    // for them (DOM mutations, not a timer) before reading or clicking one.
    const tabsRendered = (name) =>
        page
            .waitForFunction(
                (wanted) =>
                    [...document.querySelectorAll('[role="tab"]')].some(
                        (e) => wanted === null || e.textContent.trim() === wanted,
                    ),
                { polling: "mutation", timeout: 20_000 },
                name,
            )
            .then(() => true, () => false);
    // Clicks the tab until it is the selected one: a click that lands while the actor's view is
    // still rendering can be lost (a failed CI run's screenshot showed State still selected after
    // the Schedules click).
    async function tab(name, ms = 20_000) {
        await tabsRendered(name);
        const deadline = Date.now() + ms;
        while (Date.now() < deadline) {
            for (const h of await page.$$('[role="tab"]')) {
                const [text, selected] = await h.evaluate((e) =>
                    [e.textContent.trim(), e.getAttribute("aria-selected")]);
                if (text !== name) continue;
                if (selected === "true") return true;
                await h.click();
                break;
            }
            await sleep(300);
        }
        return false;
    }
    const shot = (name) => page.screenshot({ path: path.join(artifacts, `${name}.png`) });
    const open = async (name, actorId) => {
        const q = encodeURIComponent(JSON.stringify([name]));
        await page.goto(`${endpoint}/ui/ns/default?n=${q}&actorId=${actorId}`, { waitUntil: "networkidle2", timeout: 30_000 });
    };
    const tabs = async () => {
        // Every tab of the page at once: wait for the last one (Metadata) to be there.
        await tabsRendered("Metadata");
        return page.$$eval('[role="tab"]', (els) => els.map((e) => e.textContent.trim()));
    };

    // counter: its tabs, its state live.
    await open("counter", counter.actorId);
    const count = (n) => (t) => new RegExp(`"count":\\s*${n}\\b`).test(t);
    steps.stateShown = await until(count(counter.output));
    steps.counterTabs = await tabs();
    await shot("counter-state");

    // An action from a client: the open State tab follows.
    const next = await action("counter", "dash", "increment", [1]);
    steps.stateFollowsClientAction = await until(count(next.output));

    // An edit from the UI: type the new state and save it; the actor has it.
    const editor = await inspector().$('[role="textbox"]');
    await editor.click();
    await page.keyboard.down("Control");
    await page.keyboard.press("a");
    await page.keyboard.up("Control");
    await page.keyboard.type('{"count": 40}');
    const buttons = await inspector().$$("button");
    let saved = false;
    for (const b of buttons) {
        // The save button is the first enabled one once the editor holds a change.
        if (await b.evaluate((e) => !e.disabled)) {
            await b.click();
            saved = true;
            break;
        }
    }
    await sleep(500);
    steps.stateEditSaved = saved;
    steps.stateAfterUiEdit = (await action("counter", "dash", "getCount", [])).output;
    await shot("counter-state-edited");

    // A connection from the official client shows on the Connections tab.
    const client = createClient({ endpoint, namespace: "default", runnerName: "default" });
    conn = client.counter.getOrCreate(["dash"]).connect();
    await conn.getCount();
    steps.connectionsTab = await tab("Connections");
    steps.connectionShown = await until((t) => /\b1 connection/.test(t));
    await shot("counter-connections");

    steps.queueTab = await tab("Queue");
    steps.queueShown = await until((t) => /Queue size 0/.test(t));
    await shot("counter-queue");

    steps.consoleTab = await tab("Console");
    steps.consoleListsActions = await until((t) => t.includes("actor.increment("));
    await shot("counter-console");

    steps.metadataTab = await tab("Metadata");
    await sleep(1000);
    await shot("counter-metadata");

    // The counter's own database: the internal tables its state lives in, as on the TS host.
    steps.counterDatabaseTab = await tab("Database");
    steps.counterDatabaseShown = await until(
        (t) => t.includes("_rivet_actor") && t.includes("has_initialized"),
    );
    await shot("counter-database");

    // reminder: its scheduled event.
    await open("reminder", reminder.actorId);
    steps.schedulesTab = await tab("Schedules");
    steps.scheduleShown = await until((t) => /\bfire\b/.test(t));
    await shot("reminder-schedules");

    // ledger: its database, with the row added.
    await open("ledger", ledger.actorId);
    steps.ledgerTabs = await tabs();
    steps.databaseTab = await tab("Database");
    steps.databaseShown = await until((t) => t.includes("entries") && t.includes("first entry"));
    await shot("ledger-database");
} catch (e) {
    failures.push(`script: ${e?.stack ?? e}`);
} finally {
    await conn?.dispose().catch(() => {});
    await browser.close();
}
// A run with a failed step keeps its screenshots apart (the next run overwrites the others).
if (failures.length > 0 || Object.values(steps).includes(false)) {
    const kept = path.join(artifacts, `failed-${new Date().toISOString().replace(/[:.]/g, "-")}`);
    fs.mkdirSync(kept, { recursive: true });
    for (const f of fs.readdirSync(artifacts).filter((f) => f.endsWith(".png")))
        fs.copyFileSync(path.join(artifacts, f), path.join(kept, f));
}
console.log(JSON.stringify({ ok: failures.length === 0, steps, failures }));
process.exit(0);

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

const registry = setup({
    use: { counter },
    // An endpoint on 127.0.0.1 would otherwise make rivetkit start its local "Services" host.
    startServices: false,
    noWelcome: true,
});

await registry.startAndWait();
console.log("ready");

// The defects upstream's driver test suite found in rivetkit-cpp (tests/driver/README.md), as
// official-client scenarios against rivetkit-driver-host: CI cannot reach upstream's repository,
// so each finding keeps a regression check here. Same conventions as client.mjs: one JSON line of
// observations on stdout; the caller (tests/driver/driver_host_test.cpp) asserts on the values.
//
//   RIVET_ENDPOINT=... RIVET_NAMESPACE=... RIVET_POOL=... node driver_findings.mjs findings \
//       [--encoding json|cbor|bare]
import { delay, endpoint, expectThrow, runMain } from "./helpers.mjs";

const SCENARIOS = { findings };

async function findings({ client, key }) {
    // action-features: typed parameters are the action's schema (actor/validation_error).
    const nested = client.nestedActionActor.getOrCreate([`${key}-nested`]);
    const added = await nested.calculator.add(2);
    const invalid = await expectThrow(() =>
        nested.action({ name: "calculator.add", args: ["invalid"] }),
    );

    // conn-error-serialization: a public error of the actor's own group reaches the client.
    const failing = client.connErrorSerializationActor
        .getOrCreate([`${key}-conn-error`], { params: { shouldThrow: true } })
        .connect();
    const connError = await expectThrow(() => failing.getValue());
    await failing.dispose();

    // lifecycle-hooks: onStateChange may not mutate the state.
    const reentrant = client.stateChangeReentrantMutationActor.getOrCreate([`${key}-reentrant`]);
    await reentrant.setValue(5);
    const reentrantResult = await reentrant.getResult();

    // request-access: the preflight hooks see the connecting request.
    const tracked = client.requestAccessActor
        .getOrCreate([`${key}-request`], { params: { trackRequest: true } })
        .connect();
    await tracked.ping();
    const requestInfo = await tracked.getRequestInfo();
    await tracked.dispose();

    // actor-conn-state: events the actor sends a connection in onConnect reach listeners
    // registered right after connect() (they used to be sent before the socket was open).
    const greeted = client.connStateActor
        .getOrCreate([`${key}-conn-state`], { params: { username: "connect-event-user" } })
        .connect();
    const onConnectEvents = [];
    greeted.on("connectedFromOnConnect", (e) => onConnectEvents.push(["direct", e]));
    greeted.on("connectedFromOnConnectConns", (e) => onConnectEvents.push(["fromConns", e]));
    const greetedState = await greeted.getConnectionState();
    for (let i = 0; i < 50 && onConnectEvents.length < 2; i++) await delay(100);
    await greeted.dispose();

    // gateway-query-url: in test mode the inspector token is "token".
    const counter = client.counter.getOrCreate([`${key}-counter`]);
    await counter.increment(5);
    const gatewayUrl = await counter.getGatewayUrl();
    const url = new URL(gatewayUrl);
    url.pathname = `${url.pathname.replace(/\/$/, "")}/inspector/state`;
    const inspector = await fetch(url, { headers: { Authorization: "Bearer token" } });
    const inspectorBody = await inspector.json().catch(() => null);

    return {
        endpoint,
        added,
        invalid,
        connError,
        reentrantResult,
        requestInfo,
        greetedConnId: greetedState.id,
        onConnectEvents,
        inspector: { status: inspector.status, body: inspectorBody },
    };
}

runMain(SCENARIOS, { keyPrefix: "driver" });

#pragma once
// The fixture actors of upstream's driver test suite (rivetkit-typescript/packages/rivetkit/
// fixtures/driver-test-suite/*.ts), written with the typed C++ API under upstream's actor names,
// action names, state shapes, options and errors, so that the suite's tests can run against
// rivetkit-driver-host. Each group registers the actors of one or more fixture files.
//
// States and vars are rivetkit::Json where the fixture's shape is a loose JavaScript object: the
// stored state is then byte for byte the map the TypeScript fixture keeps.

#include "rivetkit/registry.hpp"

namespace rivetkit::driver {

// counter.ts, lifecycle.ts, conn-params.ts, action-inputs.ts, kv.ts, metadata.ts, vars.ts
void use_basic_fixtures(Registry& registry);
// action-timeout.ts, action-types.ts, large-payloads.ts, error-handling.ts
void use_action_fixtures(Registry& registry);
// lifecycle-hooks.ts, actor-onstatechange.ts, conn-error-serialization.ts
void use_hook_fixtures(Registry& registry);
// raw-http.ts, raw-http-request-properties.ts, request-access.ts
void use_http_fixtures(Registry& registry);
// conn-state.ts, conn-preflight-visibility.ts, scheduled.ts
void use_conn_fixtures(Registry& registry);
// queue.ts, scheduled-db.ts
void use_queue_fixtures(Registry& registry);
// sleep.ts
void use_sleep_fixtures(Registry& registry);
// start-stop-race.ts, run.ts, destroy.ts
void use_lifecycle_fixtures(Registry& registry);
// raw-websocket.ts
void use_raw_ws_fixtures(Registry& registry);
// hibernation.ts, file-system-hibernation-cleanup.ts
void use_hibernation_fixtures(Registry& registry);
// access-control.ts, stateless.ts, state-zod-coercion.ts, save-state.ts
void use_access_fixtures(Registry& registry);
// actor-db-raw.ts (dbActorRaw), db-pragma-migration.ts, db-init-order.ts, db-stress.ts,
// db-lifecycle.ts
void use_db_fixtures(Registry& registry);
// sleep-db.ts
void use_sleep_db_fixtures(Registry& registry);

}  // namespace rivetkit::driver

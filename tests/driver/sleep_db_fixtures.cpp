// sleep-db.ts: actors that use their SQLite database around sleep (onSleep/onWake writes,
// waitUntil, keepAwake, scheduled work, raw sockets and connections closing during sleep).

#include "db_support.hpp"
#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

void use_sleep_db_fixtures(Registry& registry) {
    (void)registry;
}

}  // namespace rivetkit::driver

#pragma once
// Reconnect backoff as upstream: 1 s × 2^attempt capped at 30 s, plus 0–25 % jitter. The attempt
// counter restarts after a connection that lived at least `stable_after`.

#include <chrono>
#include <cstdint>

namespace rivetkit::envoy {

struct BackoffOptions {
    std::chrono::milliseconds initial{1000};
    std::chrono::milliseconds max{30'000};
    double multiplier = 2.0;
    bool jitter = true;
    std::chrono::milliseconds stable_after{60'000};
    // While the envoy still holds actors (the lost threshold has not passed since the connection
    // dropped), attempts come at least this often: reconnecting within the threshold keeps every
    // actor, missing it stops them all (and an engine that restarted meanwhile takes minutes to
    // place them again). rivetkit-cpp's, not upstream's.
    std::chrono::milliseconds holding_actors_max{1000};
};

// `jitter_unit` in [0, 1) scales the 0–25 % jitter (the caller owns the random source).
std::chrono::milliseconds backoff_delay(std::uint32_t attempt, double jitter_unit,
                                        const BackoffOptions& options = {});

}  // namespace rivetkit::envoy

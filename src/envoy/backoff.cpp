#include "envoy/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace rivetkit::envoy {

std::chrono::milliseconds backoff_delay(std::uint32_t attempt, double jitter_unit,
                                        const BackoffOptions& options) {
    // Past ~2^20 the cap has long been reached; bounding the exponent keeps pow finite.
    double exponent = static_cast<double>(std::min<std::uint32_t>(attempt, 40));
    double delay =
        static_cast<double>(options.initial.count()) * std::pow(options.multiplier, exponent);
    delay = std::min(delay, static_cast<double>(options.max.count()));
    if (options.jitter)
        delay *= 1.0 + 0.25 * std::clamp(jitter_unit, 0.0, 1.0);
    return std::chrono::milliseconds(static_cast<std::int64_t>(delay));
}

}  // namespace rivetkit::envoy

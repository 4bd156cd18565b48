#pragma once
// rateLimiter: a fixed-window limiter per key.
//
//   state {windows: {key: {count, windowStart}}}
//   check(key) → {allowed, remaining, resetAt}: at most kRateLimit calls per key in each
//                kRateWindowMs window; resetAt is when the key's window ends (ms since epoch)

#include <cstdint>
#include <map>
#include <string>

#include "rivetkit/actor.hpp"

namespace rivetkit::examples {

inline constexpr std::int64_t kRateLimit = 5;
inline constexpr std::int64_t kRateWindowMs = 60'000;

struct RateWindow {
    std::int64_t count = 0;
    std::int64_t windowStart = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RateWindow, count, windowStart)

struct RateLimiterState {
    std::map<std::string, RateWindow> windows;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RateLimiterState, windows)

struct RateCheck {
    bool allowed = false;
    std::int64_t remaining = 0;
    std::int64_t resetAt = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RateCheck, allowed, remaining, resetAt)

Actor<RateLimiterState> rate_limiter_actor();

}  // namespace rivetkit::examples

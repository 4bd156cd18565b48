#include "rate_limiter/rate_limiter.hpp"

namespace rivetkit::examples {

Actor<RateLimiterState> rate_limiter_actor() {
    using Action = ActionContext<RateLimiterState>;
    return Actor<RateLimiterState>().action("check", [](Action& c, std::string key) {
        const std::int64_t now = c.now_ms();
        RateWindow& window = c.state().windows[key];
        if (window.count == 0 || now >= window.windowStart + kRateWindowMs)
            window = RateWindow{0, now};
        RateCheck result;
        result.allowed = window.count < kRateLimit;
        if (result.allowed)
            ++window.count;
        result.remaining = kRateLimit - window.count;
        result.resetAt = window.windowStart + kRateWindowMs;
        return result;
    });
}

}  // namespace rivetkit::examples

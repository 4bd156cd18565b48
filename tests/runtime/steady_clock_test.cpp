// The real clock, briefly: ordering and cancellation only; never assertions on speed.
#include "runtime/steady_clock.hpp"

#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "runtime/spawn.hpp"

namespace rt = rivetkit::rt;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

asio::awaitable<void> sleep_then_log(rt::Clock& clock, rt::Clock::duration d, std::string name,
                                     std::vector<std::string>& log) {
    co_await clock.sleep_for(d);
    log.push_back(name);
}

}  // namespace

TEST(SteadyClock, SleepsFireInDeadlineOrder) {
    asio::io_context io;
    rt::SteadyClock clock(io.get_executor());
    std::vector<std::string> log;
    auto late = rt::spawn(io.get_executor(), sleep_then_log(clock, 20ms, "late", log));
    auto early = rt::spawn(io.get_executor(), sleep_then_log(clock, 2ms, "early", log));
    auto start = clock.now();
    io.run();
    EXPECT_EQ(log, (std::vector<std::string>{"early", "late"}));
    EXPECT_GE(clock.now() - start, 20ms);
    EXPECT_GT(clock.wall_now_ms(), 1'600'000'000'000);
}

TEST(SteadyClock, AbortedSleepDoesNotKeepTheContextRunning) {
    asio::io_context io;
    rt::SteadyClock clock(io.get_executor());
    std::vector<std::string> log;
    auto forever = rt::spawn(io.get_executor(), sleep_then_log(clock, 1h, "never", log));
    auto quick = rt::spawn(io.get_executor(), sleep_then_log(clock, 1ms, "quick", log));
    io.run_one();  // start both
    io.run_one();
    forever.abort();
    io.run();  // returns once the aborted task unwinds and the quick one finishes
    EXPECT_EQ(log, std::vector<std::string>{"quick"});
    EXPECT_TRUE(forever.is_finished());
}

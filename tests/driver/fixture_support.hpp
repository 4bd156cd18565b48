#pragma once
// What the fixture files share: JSON-state actor aliases, JavaScript-like arithmetic on JSON
// numbers, JSON object access with defaults, delays and calls to other actors.

#include <chrono>
#include <cstdint>
#include <string>

#include "core/actor/context.hpp"
#include "rivetkit/client.hpp"
#include "rivetkit/rivetkit.hpp"

namespace rivetkit::driver {

using namespace std::chrono_literals;

// Fixture actors keep JavaScript-shaped state and vars as JSON.
using Ctx = ActorContext<Json, Json>;
using Act = ActionContext<Json, Json>;
using JsonActor = Actor<Json, Json>;
using Task = boost::asio::awaitable<Json>;
using Void = boost::asio::awaitable<void>;

// a + b as JavaScript adds numbers: integers stay integers, otherwise a double.
inline Json add(const Json& a, const Json& b) {
    if (a.is_number_integer() && b.is_number_integer())
        return a.get<std::int64_t>() + b.get<std::int64_t>();
    const double x = a.is_number() ? a.get<double>() : 0.0;
    const double y = b.is_number() ? b.get<double>() : 0.0;
    return x + y;
}

// `value?.field` truthiness for a params object (null, absent, false, 0 and "" are false).
inline bool truthy_field(const Json& object, const char* field) {
    if (!object.is_object())
        return false;
    auto it = object.find(field);
    if (it == object.end() || it->is_null())
        return false;
    if (it->is_boolean())
        return it->get<bool>();
    if (it->is_number())
        return it->get<double>() != 0.0;
    if (it->is_string())
        return !it->get<std::string>().empty();
    return true;
}

// object.field += 1 (a missing field counts from 0).
inline void bump(Json& object, const char* field) {
    object[field] = add(object.value(field, Json(0)), 1);
}

// {field: state.field, ...} for the listed fields (absent ones null).
inline Json pick(const Json& state, std::initializer_list<const char*> fields) {
    Json out = Json::object();
    for (const char* f : fields)
        out[f] = state.value(f, Json());
    return out;
}

// sleep.ts's RAW_WS_HANDLER_SLEEP_TIMEOUT / RAW_WS_HANDLER_DELAY (sleep-db.ts uses them too).
inline constexpr auto kRawWsHandlerSleepTimeout = 100ms;
inline constexpr auto kRawWsHandlerDelay = 250ms;

// Options with only upstream's sleepTimeout set.
inline ActorOptions sleep_options(std::chrono::milliseconds timeout) {
    ActorOptions options;
    options.sleep_timeout = timeout;
    return options;
}

// `object.field ?? fallback` for a string field.
inline std::string string_field(const Json& object, const char* field, std::string fallback) {
    if (object.is_object()) {
        auto it = object.find(field);
        if (it != object.end() && it->is_string())
            return it->get<std::string>();
    }
    return fallback;
}

// JavaScript's `await new Promise(r => setTimeout(r, ms))`: a delay the actor's abort signal does
// not cut short (ActorContext::sleep_for returns early once the actor starts stopping).
template <typename Context>
boost::asio::awaitable<void> plain_delay(const Context& c, std::chrono::milliseconds ms) {
    co_await c.core_context().clock().sleep_for(ms);
}

// `c.client().<name>.getOrCreate(key).<action>(...args)` through the engine.
inline boost::asio::awaitable<Json> call_actor(std::string name, std::vector<std::string> key,
                                               std::string action, Json args) {
    std::unique_ptr<client::Client> peers = co_await client::actor_client();
    client::ActorHandle handle = peers->get_or_create(std::move(name), std::move(key));
    Result<Json> out = co_await handle.action_async(std::move(action), std::move(args));
    if (!out.ok())
        throw ErrorException(std::move(out).error());
    co_return std::move(out).value();
}

inline std::string join_key(const std::vector<std::string>& key) {
    std::string out;
    for (std::size_t i = 0; i < key.size(); ++i)
        out += (i == 0 ? "" : "/") + key[i];
    return out;
}

}  // namespace rivetkit::driver

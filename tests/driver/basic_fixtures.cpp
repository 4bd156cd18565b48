// counter.ts, lifecycle.ts, conn-params.ts, action-inputs.ts, kv.ts, metadata.ts, vars.ts

#include <random>
#include <utility>

#include "core/actor/kv.hpp"
#include "fixture_support.hpp"
#include "fixtures.hpp"

namespace rivetkit::driver {

namespace {

JsonActor counter() {
    return JsonActor()
        .state(Json{{"count", 0}})
        .action("increment",
                [](Act& c, Json x) {
                    c.state()["count"] = add(c.state()["count"], x);
                    c.broadcast("newCount", c.state()["count"]);
                    return c.state()["count"];
                })
        .action("setCount",
                [](Act& c, Json x) {
                    c.state()["count"] = x;
                    c.broadcast("newCount", x);
                    return c.state()["count"];
                })
        .action("getCount", [](Act& c) { return std::as_const(c).state()["count"]; })
        .action("getKey", [](Act& c) { return Json(c.key()); });
}

JsonActor counter_with_lifecycle() {
    return JsonActor()
        .state(Json{{"count", 0}, {"events", Json::array()}})
        .create_conn_state([](Ctx& c, Json) {
            return Json{{"joinTime", c.now_ms()}};
        })
        .on_wake([](Ctx& c) { c.state()["events"].push_back("onWake"); })
        .on_before_connect([](Ctx& c, Json params) {
            if (truthy_field(params, "trackLifecycle"))
                c.state()["events"].push_back("onBeforeConnect");
        })
        .on_connect([](Ctx& c, Conn& conn) {
            if (truthy_field(conn.params(), "trackLifecycle"))
                c.state()["events"].push_back("onConnect");
        })
        .on_disconnect([](Ctx& c, Conn& conn) {
            if (truthy_field(conn.params(), "trackLifecycle"))
                c.state()["events"].push_back("onDisconnect");
        })
        .action("getEvents", [](Act& c) { return std::as_const(c).state()["events"]; })
        .action("increment", [](Act& c, Json x) {
            c.state()["count"] = add(c.state()["count"], x);
            return c.state()["count"];
        });
}

JsonActor counter_with_params() {
    return JsonActor()
        .state(Json{{"count", 0}, {"initializers", Json::array()}})
        .create_conn_state([](Ctx&, Json params) {
            std::string name = string_field(params, "name", "");
            return Json{{"name", name.empty() ? "anonymous" : name}};
        })
        .on_connect([](Ctx& c, Conn& conn) {
            c.state()["initializers"].push_back(conn.state_json()["name"]);
        })
        .action("increment",
                [](Act& c, Json x) {
                    c.state()["count"] = add(c.state()["count"], x);
                    Json by = c.conn() ? c.conn()->state_json().value("name", Json()) : Json();
                    c.broadcast("newCount", Json{{"count", c.state()["count"]}, {"by", by}});
                    return c.state()["count"];
                })
        .action("getInitializers", [](Act& c) { return std::as_const(c).state()["initializers"]; });
}

// State from the creation input; absent fields stand for JavaScript's undefined.
JsonActor input_actor() {
    return JsonActor()
        .create_state([](const Json& input) {
            Json state = Json::object();
            if (!input.is_null())
                state["initialInput"] = input;
            return state;
        })
        .on_create([](Ctx& c, const Json& input) {
            if (!input.is_null())
                c.state()["onCreateInput"] = input;
        })
        .action("getInputs", [](Act& c) {
            const Json& s = std::as_const(c).state();
            Json out = Json::object();
            if (s.contains("initialInput"))
                out["initialInput"] = s["initialInput"];
            if (s.contains("onCreateInput"))
                out["onCreateInput"] = s["onCreateInput"];
            return out;
        });
}

std::string text_of(const Bytes& b) {
    return std::string(b.begin(), b.end());
}

core::ListOpts list_options(const Json& options) {
    core::ListOpts opts;
    if (options.is_object()) {
        opts.reverse = options.value("reverse", false);
        if (options.contains("limit") && options["limit"].is_number())
            opts.limit = options["limit"].get<std::uint32_t>();
    }
    return opts;
}

Json text_entries(const std::vector<core::KvEntry>& entries) {
    Json out = Json::array();
    for (const auto& [k, v] : entries)
        out.push_back(Json{{"key", text_of(k)}, {"value", text_of(v)}});
    return out;
}

// upstream's c.kv with text keys and values (UTF-8), and an ArrayBuffer round trip.
JsonActor kv_actor() {
    return JsonActor()
        .action("putText",
                [](Act& c, std::string key, std::string value) -> Task {
                    (co_await c.kv().put(to_bytes(key), to_bytes(value))).value();
                    co_return true;
                })
        .action("getText",
                [](Act& c, std::string key) -> Task {
                    auto value = (co_await c.kv().get(to_bytes(key))).value();
                    co_return value ? Json(text_of(*value)) : Json(nullptr);
                })
        .action("listText",
                [](Act& c, std::string prefix) -> Task {
                    auto entries = (co_await c.kv().list_prefix(to_bytes(prefix))).value();
                    co_return text_entries(entries);
                })
        .action(
            "listTextRange",
            [](Act& c, std::string start, std::string end, std::optional<Json> options) -> Task {
                auto entries = (co_await c.kv().list_range(to_bytes(start), to_bytes(end),
                                                           list_options(options.value_or(Json()))))
                                   .value();
                co_return text_entries(entries);
            })
        .action("deleteTextRange",
                [](Act& c, std::string start, std::string end) -> Task {
                    (co_await c.kv().delete_range(to_bytes(start), to_bytes(end))).value();
                    co_return true;
                })
        .action("roundtripArrayBuffer",
                [](Act& c, std::string key, std::vector<std::uint8_t> values) -> Task {
                    (co_await c.kv().put(to_bytes(key), values)).value();
                    auto back = (co_await c.kv().get(to_bytes(key))).value();
                    if (!back)
                        co_return Json(nullptr);
                    co_return Json(*back);
                });
}

JsonActor metadata_actor() {
    return JsonActor()
        .state(Json{{"lastMetadata", nullptr},
                    {"actorName", ""},
                    {"storedTags", Json::object()},
                    {"storedRegion", nullptr}})
        .on_wake([](Ctx& c) { c.state()["actorName"] = c.name(); })
        .action("setupTestTags",
                [](Act& c, Json tags) {
                    c.state()["storedTags"] = tags;
                    return tags;
                })
        .action("setupTestRegion",
                [](Act& c, Json region) {
                    c.state()["storedRegion"] = region;
                    return region;
                })
        .action("getMetadata",
                [](Act& c) {
                    Json metadata{{"name", c.name()},
                                  {"tags", c.state()["storedTags"]},
                                  {"region", c.state()["storedRegion"]}};
                    c.state()["lastMetadata"] = metadata;
                    return metadata;
                })
        .action("getActorName", [](Act& c) { return c.name(); })
        .action("getTag",
                [](Act& c, std::string key) {
                    const Json& tags = std::as_const(c).state()["storedTags"];
                    auto it = tags.find(key);
                    if (it == tags.end() || (it->is_string() && it->get<std::string>().empty()))
                        return Json(nullptr);
                    return *it;
                })
        .action("getTags", [](Act& c) { return std::as_const(c).state()["storedTags"]; })
        .action("getRegion", [](Act& c) { return std::as_const(c).state()["storedRegion"]; })
        .action("getStoredActorName", [](Act& c) { return std::as_const(c).state()["actorName"]; })
        .action("getLastMetadata", [](Act& c) { return std::as_const(c).state()["lastMetadata"]; });
}

// vars.ts: five actors with state {value: 0}, conn state {hello: "world"} and their vars.
JsonActor vars_base() {
    return JsonActor()
        .state(Json{{"value", 0}})
        .create_conn_state([](Ctx&) {
            return Json{{"hello", "world"}};
        })
        .action("getVars", [](Act& c) { return c.vars(); });
}

double random_unit() {
    thread_local std::mt19937_64 engine{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

void use_vars_actors(Registry& registry) {
    registry.use("staticVarActor", vars_base()
                                       .create_vars([] {
                                           return Json{{"counter", 42}, {"name", "test-actor"}};
                                       })
                                       .action("getName", [](Act& c) { return c.vars()["name"]; }));
    registry.use(
        "nestedVarActor",
        vars_base()
            .create_vars([] {
                return Json{
                    {"counter", 42},
                    {"nested",
                     {{"value", "original"}, {"array", {1, 2, 3}}, {"obj", {{"key", "value"}}}}}};
            })
            .action("modifyNested", [](Act& c) {
                Json& nested = c.vars()["nested"];
                nested["value"] = "modified";
                nested["array"].push_back(4);
                nested["obj"]["key"] = "new-value";
                return c.vars();
            }));
    registry.use("dynamicVarActor", vars_base().create_vars([] {
        return Json{
            {"random", random_unit()},
            {"computed", "Actor-" + std::to_string(static_cast<int>(random_unit() * 1000))}};
    }));
    registry.use("uniqueVarActor", vars_base().create_vars([] {
        return Json{{"id", static_cast<std::int64_t>(random_unit() * 1000000)}};
    }));
    // The TypeScript host's driver context has no isTest flag either.
    registry.use("driverCtxActor", vars_base().create_vars([] {
        return Json{{"hasDriverCtx", false}};
    }));
}

}  // namespace

void use_basic_fixtures(Registry& registry) {
    registry.use("counter", counter());
    registry.use("counterWithLifecycle", counter_with_lifecycle());
    registry.use("counterWithParams", counter_with_params());
    registry.use("inputActor", input_actor());
    registry.use("kvActor", kv_actor());
    registry.use("metadataActor", metadata_actor());
    use_vars_actors(registry);
}

}  // namespace rivetkit::driver

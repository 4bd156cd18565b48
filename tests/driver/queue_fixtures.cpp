// queue.ts, scheduled-db.ts

#include <utility>

#include "fixture_support.hpp"
#include "fixtures.hpp"
#include "rivetkit/client.hpp"
#include "rivetkit/sqlite.hpp"

namespace rivetkit::driver {

namespace {

Json message_json(const QueueMessage& m) {
    return Json{{"name", m.name}, {"body", m.body}};
}

Json messages_json(const std::vector<QueueMessage>& messages) {
    Json out = Json::array();
    for (const auto& m : messages)
        out.push_back(message_json(m));
    return out;
}

std::vector<std::string> names_of(const Json& names) {
    std::vector<std::string> out;
    if (names.is_array())
        for (const auto& n : names)
            if (n.is_string())
                out.push_back(n.get<std::string>());
    return out;
}

std::optional<std::chrono::milliseconds> timeout_of(const Json& options) {
    if (options.is_object() && options.contains("timeout") && options["timeout"].is_number())
        return std::chrono::milliseconds(options["timeout"].get<std::int64_t>());
    return std::nullopt;
}

std::uint32_t count_of(const Json& options) {
    if (options.is_object() && options.contains("count") && options["count"].is_number())
        return options["count"].get<std::uint32_t>();
    return 1;
}

// A receive's options from the fixture's arguments: names, then {count?, timeout?}.
QueueReceiveOptions receive_options(const Json& names, const Json& options) {
    QueueReceiveOptions opts;
    opts.names = names_of(names);
    opts.count = count_of(options);
    opts.timeout = timeout_of(options);
    return opts;
}

Json error_json(const ErrorException& e) {
    return Json{{"group", e.error().group()}, {"code", e.error().code()}};
}

// Destroys the actor after `delay`, as the fixture's setTimeout(() => c.destroy(), 10).
void destroy_after(Act& c, std::chrono::milliseconds delay) {
    Ctx later = c;
    c.wait_until([](Ctx self, std::chrono::milliseconds d) -> boost::asio::awaitable<void> {
        co_await self.sleep_for(d);
        self.destroy();
    }(later, delay));
}

rt::CancellationToken aborted_token() {
    rt::CancellationToken token;
    token.cancel();
    return token;
}

JsonActor queue_actor() {
    JsonActor actor;
    for (const char* name : {"greeting", "self", "a", "b", "c", "one", "two", "missing", "abort",
                             "tasks", "timeout", "nowait", "twice"})
        actor.queue(name);
    return actor
        .state(Json::object())
        .action("receiveOne",
                [](Act& c, std::string name, std::optional<Json> options) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    opts.timeout = timeout_of(options.value_or(Json()));
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    co_return m ? message_json(*m) : Json(nullptr);
                })
        .action("receiveMany",
                [](Act& c, Json names, std::optional<Json> options) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts = receive_options(names, options.value_or(Json()));
                    std::vector<QueueMessage> got = co_await queue.next_batch(std::move(opts));
                    co_return messages_json(got);
                })
        .action("receiveRequest",
                [](Act& c, Json request) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts =
                        receive_options(request.value("names", Json()), request);
                    std::vector<QueueMessage> got = co_await queue.next_batch(std::move(opts));
                    co_return messages_json(got);
                })
        .action("tryReceiveMany",
                [](Act& c, Json request) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts =
                        receive_options(request.value("names", Json()), request);
                    std::vector<QueueMessage> got = co_await queue.try_next_batch(std::move(opts));
                    co_return messages_json(got);
                })
        .action("receiveWithIterator",
                [](Act& c, std::string name) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    co_return m ? message_json(*m) : Json(nullptr);
                })
        .action("receiveWithAsyncIterator",
                [](Act& c) -> Task {
                    Queue queue = c.queue();
                    std::optional<QueueMessage> m = co_await queue.next();
                    co_return m ? message_json(*m) : Json(nullptr);
                })
        // The fixture goes through its client to its own id; the message lands in the same
        // queue by the actor's own send (the C++ client has no queue send yet).
        .action("sendToSelf",
                [](Act& c, std::string name, Json body) -> Task {
                    std::unique_ptr<client::Client> peers = co_await client::actor_client();
                    client::ActorHandle self = peers->get_for_id("queueActor", c.actor_id());
                    Result<client::QueueSendResult> sent =
                        co_await self.send_async(std::move(name), std::move(body));
                    if (!sent.ok())
                        throw ErrorException(std::move(sent).error());
                    co_return true;
                })
        .action("waitForAbort",
                [](Act& c) -> Task {
                    destroy_after(c, 10ms);
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {"abort"};
                    opts.timeout = 10s;
                    co_await queue.next(std::move(opts));
                    co_return true;
                })
        .action("waitForSignalAbort",
                [](Act& c) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {"abort"};
                    opts.timeout = 10s;
                    opts.signal = aborted_token();
                    try {
                        co_await queue.next(std::move(opts));
                    } catch (const ErrorException& e) {
                        co_return error_json(e);
                    }
                    co_return Json{{"ok", false}};
                })
        .action("waitForActorAbortWithSignal",
                [](Act& c) -> Task {
                    destroy_after(c, 10ms);
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {"abort"};
                    opts.timeout = 10s;
                    opts.signal = rt::CancellationToken();
                    try {
                        co_await queue.next(std::move(opts));
                    } catch (const ErrorException& e) {
                        co_return error_json(e);
                    }
                    co_return Json{{"ok", false}};
                })
        .action("iterWithSignalAbort",
                [](Act& c) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {"abort"};
                    opts.signal = aborted_token();
                    try {
                        co_await queue.next(std::move(opts));
                    } catch (const ErrorException& e) {
                        if (e.error().is("actor", "aborted"))
                            co_return Json{{"ok", true}};
                        throw;
                    }
                    co_return Json{{"ok", false}};
                })
        .action("receiveAndComplete",
                [](Act& c, std::string name) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    opts.completable = true;
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    if (!m)
                        co_return nullptr;
                    Json reply{{"echo", m->body}};
                    co_await m->complete(std::move(reply));
                    co_return message_json(*m);
                })
        .action("receiveWithoutComplete",
                [](Act& c, std::string name) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    opts.completable = true;
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    co_return m ? message_json(*m) : Json(nullptr);
                })
        .action("receiveManualThenNextWithoutComplete",
                [](Act& c, std::string name) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    opts.completable = true;
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    if (!m)
                        co_return Json{{"ok", false}, {"reason", "no_message"}};
                    QueueReceiveOptions again;
                    again.names = {name};
                    again.timeout = 0ms;
                    try {
                        co_await queue.next(std::move(again));
                    } catch (const ErrorException& e) {
                        c.destroy();
                        co_return error_json(e);
                    }
                    c.destroy();
                    co_return Json{{"ok", false}, {"reason", "next_succeeded"}};
                })
        .action("receiveAndCompleteTwice",
                [](Act& c, std::string name) -> Task {
                    Queue queue = c.queue();
                    QueueReceiveOptions opts;
                    opts.names = {name};
                    opts.completable = true;
                    std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                    if (!m)
                        co_return nullptr;
                    Json ok{{"ok", true}};
                    co_await m->complete(ok);
                    try {
                        co_await m->complete(ok);
                    } catch (const ErrorException& e) {
                        co_return error_json(e);
                    }
                    co_return Json{{"ok", false}};
                })
        .action("receiveWithoutCompleteMethod", [](Act& c, std::string name) -> Task {
            Queue queue = c.queue();
            QueueReceiveOptions opts;
            opts.names = {name};
            opts.completable = true;
            std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
            co_return Json{{"hasComplete", m.has_value() && m->completable()}};
        });
}

JsonActor queue_limited_actor() {
    ActorOptions options;
    options.max_queue_size = 1;
    options.max_queue_message_size = 64;
    return JsonActor().state(Json::object()).options(options).queue("message").queue("oversize");
}

std::vector<std::string> many_queue_names() {
    std::vector<std::string> names;
    for (int i = 0; i < 32; ++i)
        names.push_back("cmd." + std::to_string(i));
    return names;
}

JsonActor many_queue_child_actor() {
    JsonActor actor;
    for (const std::string& name : many_queue_names())
        actor.queue(name);
    return actor
        .create_state([](const Json& label) {
            return Json{{"label", label}, {"started", false}, {"processed", Json::array()}};
        })
        .run([](Ctx& c) -> boost::asio::awaitable<void> {
            c.state()["started"] = true;
            Queue queue = c.queue();
            for (;;) {
                QueueReceiveOptions opts;
                opts.names = many_queue_names();
                opts.completable = true;
                std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                if (!m)
                    break;
                c.state()["processed"].push_back(m->name);
                Json reply{{"ok", true}, {"index", m->body.value("index", Json())}};
                co_await m->complete(std::move(reply));
            }
        })
        .action("ping",
                [](Act& c) {
                    return Json{{"label", std::as_const(c).state()["label"]}, {"pong", true}};
                })
        .action("getSnapshot", [](Act& c) { return std::as_const(c).state(); });
}

boost::asio::awaitable<void> spawn_child(std::string key) {
    std::unique_ptr<client::Client> peers = co_await client::actor_client();
    client::GetOrCreateOptions options;
    options.input = key;
    client::ActorHandle child =
        peers->get_or_create("manyQueueChildActor", {key}, std::move(options));
    Result<std::string> id = co_await child.resolve_async();
    if (!id.ok())
        throw ErrorException(std::move(id).error());
}

JsonActor many_queue_action_parent_actor() {
    return JsonActor()
        .state(Json{{"spawned", Json::array()}})
        .action("spawnChild",
                [](Act& c, std::string key) -> Task {
                    co_await spawn_child(key);
                    c.state()["spawned"].push_back(key);
                    co_return Json{{"key", key}};
                })
        .action("getSpawned", [](Act& c) { return std::as_const(c).state()["spawned"]; });
}

JsonActor many_queue_run_parent_actor() {
    return JsonActor()
        .queue("spawn")
        .state(Json{{"spawned", Json::array()}})
        .action("queueSpawn",
                [](Act& c, std::string key) -> Task {
                    Queue queue = c.queue();
                    Json body{{"key", key}};
                    co_await queue.enqueue_and_wait("spawn", std::move(body), 10s);
                    co_return Json{{"queued", true}};
                })
        .action("getSpawned", [](Act& c) { return std::as_const(c).state()["spawned"]; })
        .run([](Ctx& c) -> boost::asio::awaitable<void> {
            Queue queue = c.queue();
            for (;;) {
                QueueReceiveOptions opts;
                opts.names = {"spawn"};
                opts.completable = true;
                std::optional<QueueMessage> m = co_await queue.next(std::move(opts));
                if (!m)
                    break;
                const std::string key = m->body.value("key", std::string());
                co_await spawn_child(key);
                c.state()["spawned"].push_back(key);
                Json reply{{"ok", true}};
                co_await m->complete(std::move(reply));
            }
        });
}

JsonActor scheduled_db_actor() {
    ActorOptions options;
    options.database = true;
    return JsonActor()
        .state(Json{{"scheduledCount", 0}})
        .options(options)
        .on_wake([](Ctx& c) -> boost::asio::awaitable<void> {
            std::shared_ptr<Database> db = co_await c.db();
            auto made = co_await db->exec(
                "CREATE TABLE IF NOT EXISTS scheduled_log (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "action TEXT NOT NULL, created_at INTEGER NOT NULL)");
            if (!made.ok())
                throw ErrorException(std::move(made).error());
        })
        .action("scheduleDbWrite",
                [](Act& c, std::int64_t delay_ms) {
                    c.schedule_after(std::chrono::milliseconds(delay_ms), "onScheduledDbWrite");
                })
        .action("onScheduledDbWrite",
                [](Act& c) -> Task {
                    c.state()["scheduledCount"] = add(c.state()["scheduledCount"], 1);
                    std::shared_ptr<Database> db = co_await c.db();
                    std::vector<SqlValue> params;
                    params.emplace_back(c.now_ms());
                    auto inserted = co_await db->run(
                        "INSERT INTO scheduled_log (action, created_at) VALUES ('scheduled', ?)",
                        std::move(params));
                    if (!inserted.ok())
                        throw ErrorException(std::move(inserted).error());
                    co_return nullptr;
                })
        .action("getLogCount",
                [](Act& c) -> Task {
                    std::shared_ptr<Database> db = co_await c.db();
                    auto rows = co_await db->query("SELECT COUNT(*) as count FROM scheduled_log");
                    if (!rows.ok())
                        throw ErrorException(std::move(rows).error());
                    co_return sql_rows_to_json(*rows)[0]["count"];
                })
        .action("getScheduledCount",
                [](Act& c) { return std::as_const(c).state()["scheduledCount"]; });
}

}  // namespace

void use_queue_fixtures(Registry& registry) {
    registry.use("queueActor", queue_actor());
    registry.use("queueLimitedActor", queue_limited_actor());
    registry.use("manyQueueChildActor", many_queue_child_actor());
    registry.use("manyQueueActionParentActor", many_queue_action_parent_actor());
    registry.use("manyQueueRunParentActor", many_queue_run_parent_actor());
    registry.use("scheduledDb", scheduled_db_actor());
}

}  // namespace rivetkit::driver

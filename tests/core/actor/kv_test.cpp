#include "core/actor/kv.hpp"

#include <gtest/gtest.h>

#include "base/log.hpp"
#include "core/actor/keys.hpp"
#include "core/actor/preload.hpp"
#include "runtime/test_runtime.hpp"

namespace rivetkit::core {
namespace {

namespace asio = boost::asio;

template <typename T>
T run(asio::awaitable<T> task) {
    rt::TestRuntime runtime;
    return runtime.block_on(std::move(task));
}

Bytes b(std::string_view s) {
    return to_bytes(s);
}

TEST(KvTest, in_memory_backend_supports_basic_crud_and_listing) {
    auto backend = std::make_shared<InMemoryKv>();
    Kv kv(backend, "actor-kv");

    ASSERT_TRUE(run(kv.batch_put({{b("alpha"), b("1")}})).ok());
    ASSERT_TRUE(run(kv.batch_put({{b("beta"), b("2")}})).ok());

    auto values = run(kv.batch_get({b("alpha"), b("beta")}));
    ASSERT_TRUE(values.ok());
    EXPECT_EQ(*values, (std::vector<std::optional<Bytes>>{b("1"), b("2")}));

    auto prefix = run(kv.list_prefix(b("a")));
    ASSERT_TRUE(prefix.ok());
    EXPECT_EQ(*prefix, (std::vector<KvEntry>{{b("alpha"), b("1")}}));

    auto range = run(kv.list_range(b("alpha"), b("gamma"), ListOpts{true, 1}));
    ASSERT_TRUE(range.ok());
    EXPECT_EQ(*range, (std::vector<KvEntry>{{b("beta"), b("2")}}));

    ASSERT_TRUE(run(kv.delete_range(b("alpha"), b("beta"))).ok());
    ASSERT_TRUE(run(kv.batch_delete({b("beta")})).ok());

    auto remaining = run(kv.batch_get({b("alpha"), b("beta")}));
    ASSERT_TRUE(remaining.ok());
    EXPECT_EQ(*remaining, (std::vector<std::optional<Bytes>>{std::nullopt, std::nullopt}));
    EXPECT_EQ(backend->batch_get_call_count(), 2u);
    EXPECT_EQ(backend->batch_delete_call_count(), 1u);
}

TEST(KvTest, apply_batch_deletes_then_puts_and_records_the_call) {
    auto backend = std::make_shared<InMemoryKv>();
    Kv kv(backend, "actor-kv");
    backend->insert(b("k"), b("old"));
    ASSERT_TRUE(run(kv.apply_batch({{b("k"), b("new")}}, {b("k")})).ok());
    EXPECT_EQ(backend->peek(b("k")), b("new"));
    EXPECT_EQ(backend->apply_batch_call_count(), 1u);
    ASSERT_TRUE(backend->last_apply_batch().has_value());
    EXPECT_EQ(backend->last_apply_batch()->deletes, std::vector<Bytes>{b("k")});
}

TEST(KvTest, range_operations_with_empty_or_inverted_bounds_do_nothing) {
    auto backend = std::make_shared<InMemoryKv>();
    Kv kv(backend, "actor-kv");
    backend->insert(b("m"), b("1"));
    ASSERT_TRUE(run(kv.delete_range(b("z"), b("a"))).ok());
    EXPECT_TRUE(backend->peek(b("m")).has_value());
    auto listed = run(kv.list_range(b("z"), b("a")));
    ASSERT_TRUE(listed.ok());
    EXPECT_TRUE(listed->empty());
}

TEST(KvTest, unconfigured_kv_fails_with_not_configured) {
    Kv kv;
    auto r = run(kv.get(b("x")));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.error().is("actor", "not_configured"));
}

TEST(KvTest, calls_are_logged_with_actor_id) {
    log::Capture capture;
    Kv kv(std::make_shared<InMemoryKv>(), "actor-logged");
    ASSERT_TRUE(run(kv.put(b("a"), b("b"))).ok());
    auto records = capture.find("kv call completed");
    ASSERT_EQ(records.size(), 1u);
    EXPECT_TRUE(records[0].has_field("actor_id", "actor-logged"));
    EXPECT_TRUE(records[0].has_field("operation", "batch_put"));
    EXPECT_TRUE(records[0].has_field("outcome", "ok"));
}

TEST(KeysTest, layout_matches_upstream) {
    EXPECT_EQ(keys::connection_key("c1"), (Bytes{2, 'c', '1'}));
    EXPECT_EQ(keys::queue_message_key(0x0102030405060708ull),
              (Bytes{5, 1, 2, 1, 2, 3, 4, 5, 6, 7, 8}));
    EXPECT_EQ(keys::decode_queue_message_key(keys::queue_message_key(42)), 42u);
    EXPECT_FALSE(keys::decode_queue_message_key(Bytes{5, 1, 2, 0}).has_value());
    EXPECT_FALSE(keys::decode_queue_message_key(Bytes{5, 1, 3, 0, 0, 0, 0, 0, 0, 0, 1}));
    // Queue keys sort in id order.
    EXPECT_LT(keys::queue_message_key(255), keys::queue_message_key(256));
}

TEST(PreloadedKvTest, key_lookup_is_tri_state) {
    PreloadedKv preload({{Bytes{1}, b("actor")}}, {Bytes{1}, Bytes{6}}, {Bytes{2}});
    auto present = preload.key_entry(Bytes{1});
    ASSERT_TRUE(present.has_value());
    EXPECT_EQ(*present, b("actor"));
    auto absent = preload.key_entry(Bytes{6});
    ASSERT_TRUE(absent.has_value());
    EXPECT_FALSE(absent->has_value());
    EXPECT_FALSE(preload.key_entry(Bytes{3}).has_value());
}

TEST(PreloadedKvTest, prefix_lookup_only_for_requested_prefix) {
    PreloadedKv preload({{Bytes{2, 'a'}, b("x")}, {Bytes{4, 'a'}, b("y")}}, {}, {Bytes{2}});
    auto conns = preload.prefix_entries(Bytes{2});
    ASSERT_TRUE(conns.has_value());
    EXPECT_EQ(conns->size(), 1u);
    EXPECT_FALSE(preload.prefix_entries(Bytes{4}).has_value());
}

}  // namespace
}  // namespace rivetkit::core

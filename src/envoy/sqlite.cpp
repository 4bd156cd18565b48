// SQLite page requests (get_pages, commit, and the staged commit's begin/segment/finalize): one u32 id space per envoy process, one pending entry
// per request until its response, timeout (on the envoy's clock) or the envoy's end — the same
// life as a KV request. Requests made while disconnected, and requests in flight when a
// connection drops, are (re)sent after the next ToEnvoyInit. A re-sent get_pages is harmless; a
// re-sent commit that the engine had already applied fails its head-txid fence instead of being
// applied twice, so the database never moves past what its writer saw (the page store then reads
// the pages back to learn that its commit did land: EnvoyPageStore::commit_was_applied).

#include <utility>

#include "base/log.hpp"
#include "envoy/state.hpp"
#include "runtime/timeout.hpp"

namespace rivetkit::envoy::detail {

namespace asio = boost::asio;

namespace {

void set_request_id(proto::ToRivet& message, std::uint32_t id) {
    std::visit(
        [id](auto& request) {
            if constexpr (requires { request.request_id; })
                request.request_id = id;
        },
        message.value);
}

}  // namespace

void handle_sqlite_response(EnvoyState& st, std::uint32_t request_id, SqliteResponse response) {
    auto it = st.sqlite_pending.find(request_id);
    if (it == st.sqlite_pending.end()) {
        log::warn("sqlite response for unknown request ignored",
                  {{"request_id", static_cast<unsigned>(request_id)}});
        return;
    }
    auto pending = std::move(it->second);
    st.sqlite_pending.erase(it);
    pending.reply.send(Result<SqliteResponse>(std::move(response)));
}

void resend_pending_sqlite(EnvoyState& st) {
    for (const auto& [id, pending] : st.sqlite_pending)
        st.outbox.push_back(pending.frame);
}

void fail_pending_sqlite(EnvoyState& st, const Error& error) {
    auto pending = std::move(st.sqlite_pending);
    st.sqlite_pending.clear();
    for (auto& [id, p] : pending)
        p.reply.send(Result<SqliteResponse>(error));
}

asio::awaitable<Result<SqliteResponse>> sqlite_request(std::shared_ptr<EnvoyState> st,
                                                       std::string actor_id,
                                                       proto::ToRivet message) {
    if (st->stopped || (st->shutting_down && !st->connected))
        co_return envoy_error("shutdown", "envoy is shut down");
    std::uint32_t id = st->next_sqlite_request_id++;
    set_request_id(message, id);
    auto [tx, rx] = rt::oneshot<Result<SqliteResponse>>();
    Bytes frame = st->encode(message);
    if (st->connected) {
        st->outbox.push_back(frame);
        st->outbox_ready.notify_one();
    }
    st->sqlite_pending.emplace(id, PendingSqlite{actor_id, std::move(tx), std::move(frame)});

    std::optional<std::optional<Result<SqliteResponse>>> reply =
        co_await rt::recv_timeout(st->clock, st->config.sqlite_request_timeout, rx);
    if (!reply) {
        st->sqlite_pending.erase(id);
        log::warn("sqlite request timed out",
                  {{"actor_id", actor_id}, {"request_id", static_cast<unsigned>(id)}});
        co_return Error("sqlite", "timeout", "sqlite request timed out");
    }
    if (!*reply)
        co_return envoy_error("shutdown", "envoy is shut down");
    co_return std::move(**reply);
}

}  // namespace rivetkit::envoy::detail

namespace rivetkit::envoy {

namespace asio = boost::asio;
namespace proto = rivetkit::proto::envoy_v8;

namespace {

Error engine_sqlite_error(const proto::SqliteErrorResponse& e) {
    return Error(e.group, e.code, e.message);
}

Error unexpected_sqlite_response(const char* what) {
    return Error("sqlite", "unexpected_response",
                 std::string("unexpected response to a sqlite ") + what + " request");
}

}  // namespace

asio::awaitable<Result<SqliteGetPagesResult>> EnvoyHandle::sqlite_get_pages(
    std::string actor_id, std::vector<std::uint32_t> pgnos, SqliteFence fence) const {
    auto st = state_;
    proto::SqliteGetPagesRequest data{actor_id, std::move(pgnos), fence.generation,
                                      fence.head_txid};
    proto::ToRivet message{proto::ToRivetSqliteGetPagesRequest{0, std::move(data)}};
    auto op = detail::sqlite_request(st, std::move(actor_id), std::move(message));
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    auto* response = std::get_if<proto::SqliteGetPagesResponse>(&*r);
    if (response == nullptr)
        co_return unexpected_sqlite_response("get_pages");
    if (auto* e = response->get_if<proto::SqliteErrorResponse>())
        co_return engine_sqlite_error(*e);
    auto& ok = std::get<proto::SqliteGetPagesOk>(response->value);
    SqliteGetPagesResult out;
    out.head_txid = ok.head_txid;
    out.pages.reserve(ok.pages.size());
    for (auto& page : ok.pages)
        out.pages.push_back(SqlitePage{page.pgno, std::move(page.bytes)});
    co_return out;
}

asio::awaitable<Result<std::optional<std::uint64_t>>> EnvoyHandle::sqlite_commit(
    std::string actor_id, SqliteCommit commit, SqliteFence fence) const {
    auto st = state_;
    proto::SqliteCommitRequest data;
    data.actor_id = actor_id;
    data.dirty_pages.reserve(commit.dirty_pages.size());
    for (auto& page : commit.dirty_pages)
        data.dirty_pages.push_back(proto::SqliteDirtyPage{page.pgno, std::move(page.bytes)});
    data.db_size_pages = commit.db_size_pages;
    data.now_ms = commit.now_ms;
    data.expected_generation = fence.generation;
    data.expected_head_txid = fence.head_txid;
    proto::ToRivet message{proto::ToRivetSqliteCommitRequest{0, std::move(data)}};
    auto op = detail::sqlite_request(st, std::move(actor_id), std::move(message));
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    auto* response = std::get_if<proto::SqliteCommitResponse>(&*r);
    if (response == nullptr)
        co_return unexpected_sqlite_response("commit");
    if (auto* e = response->get_if<proto::SqliteErrorResponse>())
        co_return engine_sqlite_error(*e);
    co_return std::get<proto::SqliteCommitOk>(response->value).head_txid;
}

namespace {

// Sends one request and unpacks the Ok alternative of the response union `Response`.
template <typename Response, typename Ok>
asio::awaitable<Result<Ok>> staged_request(std::shared_ptr<detail::EnvoyState> st,
                                           std::string actor_id, proto::ToRivet message,
                                           const char* what) {
    auto op = detail::sqlite_request(std::move(st), std::move(actor_id), std::move(message));
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    auto* response = std::get_if<Response>(&*r);
    if (response == nullptr)
        co_return unexpected_sqlite_response(what);
    if (auto* e = response->template get_if<proto::SqliteErrorResponse>())
        co_return engine_sqlite_error(*e);
    co_return std::move(std::get<Ok>(response->value));
}

}  // namespace

asio::awaitable<Result<std::uint64_t>> EnvoyHandle::sqlite_commit_stage_begin(
    std::string actor_id, SqliteFence fence) const {
    proto::SqliteCommitStageBeginRequest data{actor_id, fence.generation, fence.head_txid};
    proto::ToRivet message{proto::ToRivetSqliteCommitStageBeginRequest{0, std::move(data)}};
    auto op = staged_request<proto::SqliteCommitStageBeginResponse, proto::SqliteCommitStageBeginOk>(
        state_, std::move(actor_id), std::move(message), "commit stage begin");
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    co_return r->txid;
}

asio::awaitable<Result<std::uint64_t>> EnvoyHandle::sqlite_commit_stage_segment(
    std::string actor_id, std::uint32_t generation, std::uint64_t txid, std::uint32_t first_pgno,
    std::vector<SqliteDirtyPage> pages) const {
    proto::SqliteCommitStageSegmentRequest data;
    data.actor_id = actor_id;
    data.expected_generation = generation;
    data.txid = txid;
    data.first_pgno = first_pgno;
    data.dirty_pages.reserve(pages.size());
    for (auto& page : pages)
        data.dirty_pages.push_back(proto::SqliteDirtyPage{page.pgno, std::move(page.bytes)});
    proto::ToRivet message{proto::ToRivetSqliteCommitStageSegmentRequest{0, std::move(data)}};
    auto op =
        staged_request<proto::SqliteCommitStageSegmentResponse, proto::SqliteCommitStageSegmentOk>(
            state_, std::move(actor_id), std::move(message), "commit stage segment");
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    co_return r->staged_bytes;
}

asio::awaitable<Result<std::optional<std::uint64_t>>> EnvoyHandle::sqlite_commit_finalize(
    std::string actor_id, std::uint32_t generation, std::uint64_t txid,
    std::uint32_t db_size_pages, std::int64_t now_ms,
    std::vector<std::uint32_t> segment_first_pgnos) const {
    proto::SqliteCommitFinalizeRequest data;
    data.actor_id = actor_id;
    data.expected_generation = generation;
    data.txid = txid;
    data.new_db_size_pages = db_size_pages;
    data.now_ms = now_ms;
    data.segment_first_pgnos = std::move(segment_first_pgnos);
    proto::ToRivet message{proto::ToRivetSqliteCommitFinalizeRequest{0, std::move(data)}};
    auto op = staged_request<proto::SqliteCommitFinalizeResponse, proto::SqliteCommitFinalizeOk>(
        state_, std::move(actor_id), std::move(message), "commit finalize");
    auto r = co_await std::move(op);
    if (!r.ok())
        co_return std::move(r).error();
    co_return r->head_txid;
}

}  // namespace rivetkit::envoy

// The untyped half of a running typed actor (InstanceCore), Conn and Request.

#include <algorithm>

#include "base/ascii.hpp"
#include "base/log.hpp"
#include "core/actor/context.hpp"
#include "runtime/select.hpp"
#include "rivetkit/context.hpp"
#include "rivetkit/detail/callable.hpp"
#include "rivetkit/raw.hpp"

namespace rivetkit {

Json Conn::params() const {
    auto decoded = from_cbor(handle_.params());
    if (!decoded.ok())
        throw ErrorException(
            errors::actor_validation_error("connection params", decoded.error().message()));
    return std::move(decoded).value();
}

Json Conn::state_json() const {
    const Bytes bytes = handle_.state();
    if (bytes.empty())
        return nullptr;
    auto decoded = from_cbor(bytes);
    if (!decoded.ok())
        throw ErrorException(
            errors::actor_invalid_request("connection state: " + decoded.error().message()));
    return std::move(decoded).value();
}

namespace detail {

InstanceCore::InstanceCore() = default;
InstanceCore::~InstanceCore() = default;

void InstanceCore::bind(const core::ActorContext& ctx) {
    ctx_ = std::make_unique<core::ActorContext>(ctx);
    seen_patches_ = ctx_->state_patches();
}

bool InstanceCore::adopt_patched_state() {
    const std::uint64_t patches = ctx_->state_patches();
    if (patches == seen_patches_)
        return false;
    seen_patches_ = patches;
    Bytes patched = ctx_->state();
    Status loaded;
    if (auto value = from_cbor(patched); !value.ok()) {
        loaded = value.error();
    } else {
        try {
            load_state(*value);
        } catch (const std::exception& e) {
            loaded = errors::actor_invalid_request(std::string("state patch: ") + e.what());
        }
    }
    if (!loaded.ok()) {
        log::warn("inspector state patch does not fit the actor's state; keeping the current state",
                  {{"actor_id", ctx_->actor_id()}, {"error", loaded.error().to_string()}});
        dirty_ = true;
        ctx_->request_save({});
        return false;
    }
    touched = false;
    set_saved_state(encode_state());
    ++version_;
    if (encoded_ != patched) {
        // The state type normalised the patch (defaults filled in, unknown fields dropped).
        dirty_ = true;
        ctx_->request_save({});
    }
    return true;
}

void InstanceCore::settle(bool request_save) {
    if (!std::exchange(touched, false))
        return;
    if (const std::optional<bool> changed = state_changed()) {
        if (!*changed)
            return;
        stale_ = true;
    } else {
        Bytes current = encode_state();
        if (current == encoded_)
            return;
        encoded_ = std::move(current);
    }
    dirty_ = true;
    ++version_;
    if (request_save)
        ctx_->request_save({});
}

const Bytes& InstanceCore::sync_state(bool request_save) {
    settle(request_save);
    if (std::exchange(stale_, false))
        encoded_ = encode_state();
    return encoded_;
}

const std::string& InstanceCore::actor_id() const {
    return ctx_->actor_id();
}
const std::string& InstanceCore::name() const {
    return ctx_->name();
}
const std::vector<std::string>& InstanceCore::key() const {
    return ctx_->key();
}
std::int64_t InstanceCore::now_ms() const {
    return ctx_->clock().wall_now_ms();
}
void InstanceCore::broadcast(std::string_view event, const Bytes& args) const {
    ctx_->broadcast(event, args);
}
void InstanceCore::schedule_at(std::int64_t timestamp_ms, std::string action, Bytes args) const {
    ctx_->at(timestamp_ms, std::move(action), std::move(args)).value();
}
void InstanceCore::schedule_after(std::chrono::milliseconds delay, std::string action,
                                  Bytes args) const {
    ctx_->after(delay, std::move(action), std::move(args)).value();
}
void InstanceCore::sleep() const {
    ctx_->sleep().value();
}
void InstanceCore::destroy() const {
    ctx_->destroy().value();
}
const core::Kv& InstanceCore::kv() const {
    return ctx_->user_kv();
}
std::vector<Conn> InstanceCore::conns() const {
    std::vector<Conn> out;
    for (auto& handle : ctx_->conns())
        out.emplace_back(std::move(handle));
    return out;
}

boost::asio::awaitable<std::shared_ptr<Database>> InstanceCore::db() const {
    if (database_disabled)
        throw ErrorException(errors::actor_database_not_configured());
    core::ActorContext ctx = *ctx_;
    auto opened = co_await ctx.db();
    co_return std::move(opened).value();
}

boost::asio::awaitable<void> InstanceCore::save_state(SaveStateOptions options) {
    sync_state(false);
    core::ActorContext ctx = *ctx_;
    if (starting || !ctx.started()) {
        // While the start hooks run core waits for them and serves no save tick, nor outside the
        // started phases (on_destroy): a requested save would wait forever. Written here.
        std::vector<core::StateDelta> deltas;
        ctx.seal_consumed_schedule();
        if (take_dirty())
            deltas.push_back(core::StateDelta::actor_state(encoded_));
        const bool carried = !deltas.empty();
        Status saved = co_await ctx.save_state(std::move(deltas));
        if (!saved.ok() && carried)
            dirty_ = true;  // the next save writes it
        saved.value();
        co_return;
    }
    // The save below asks the runtime for the state, which answers with the dirty encoding.
    core::RequestSaveOpts opts{options.immediate, std::nullopt};
    if (options.max_wait)
        opts.max_wait_ms = static_cast<std::uint32_t>(
            std::clamp<std::chrono::milliseconds::rep>(options.max_wait->count(), 0, UINT32_MAX));
    Status saved = co_await ctx_->request_save_and_wait(opts);
    saved.value();
}

std::shared_ptr<void> InstanceCore::keep_awake_guard() const {
    return std::make_shared<core::WorkRegion>(ctx_->keep_awake_region());
}

bool InstanceCore::wait_until(boost::asio::awaitable<void> work) const {
    return ctx_->wait_until(std::move(work));
}

const rt::CancellationToken& InstanceCore::abort_signal() const {
    return ctx_->actor_abort_signal();
}

boost::asio::awaitable<bool> InstanceCore::sleep_for(std::chrono::milliseconds delay) {
    // Changes made so far are saved like a handler's (debounced).
    settle(true);
    core::ActorContext ctx = *ctx_;
    const rt::CancellationToken& abort = ctx.actor_abort_signal();
    if (abort.is_cancelled())
        co_return false;
    const auto deadline = ctx.clock().now() + delay;
    const std::size_t arm = co_await rt::select(abort, rt::deadline(ctx.clock(), deadline));
    co_return arm == 1;
}

}  // namespace detail
}  // namespace rivetkit

namespace rivetkit {

std::optional<std::string> Request::header(std::string_view wanted) const {
    for (const auto& [name, value] : headers) {
        if (ascii_iequals(name, wanted))
            return value;
    }
    return std::nullopt;
}

}  // namespace rivetkit

#include "core/actor/context.hpp"

#include "base/log.hpp"
#include "core/actor/internal_storage.hpp"

namespace rivetkit::core {

std::string_view lifecycle_state_name(LifecycleState state) noexcept {
    switch (state) {
        case LifecycleState::Loading:
            return "Loading";
        case LifecycleState::Started:
            return "Started";
        case LifecycleState::SleepGrace:
            return "SleepGrace";
        case LifecycleState::SleepFinalize:
            return "SleepFinalize";
        case LifecycleState::DestroyGrace:
            return "DestroyGrace";
        case LifecycleState::Destroying:
            return "Destroying";
        case LifecycleState::Terminated:
            return "Terminated";
    }
    return "Unknown";
}

std::string_view lifecycle_event_label(const LifecycleEvent& event) noexcept {
    switch (event.kind) {
        case LifecycleEvent::Kind::SaveRequested:
            return "save_requested";
        case LifecycleEvent::Kind::InspectorSerializeRequested:
            return "inspector_serialize_requested";
        case LifecycleEvent::Kind::InspectorAttachmentsChanged:
            return "inspector_attachments_changed";
        case LifecycleEvent::Kind::SleepTick:
            return "sleep_tick";
    }
    return "unknown";
}

std::string_view can_sleep_name(CanSleep value) noexcept {
    switch (value) {
        case CanSleep::Yes:
            return "Yes";
        case CanSleep::NotReady:
            return "NotReady";
        case CanSleep::NoSleep:
            return "NoSleep";
        case CanSleep::ActiveHttpRequests:
            return "ActiveHttpRequests";
        case CanSleep::ActiveKeepAwake:
            return "ActiveKeepAwake";
        case CanSleep::ActiveInternalKeepAwake:
            return "ActiveInternalKeepAwake";
        case CanSleep::ActiveRunHandler:
            return "ActiveRunHandler";
        case CanSleep::ActiveDisconnectCallbacks:
            return "ActiveDisconnectCallbacks";
        case CanSleep::ActiveConnections:
            return "ActiveConnections";
        case CanSleep::ActiveWebSocketCallbacks:
            return "ActiveWebSocketCallbacks";
    }
    return "Unknown";
}

ActorContext::ActorContext(boost::asio::any_io_executor executor, rt::Clock& clock,
                           SharedString actor_id, std::string name, std::vector<std::string> key,
                           std::string region, Kv kv)
    : p_(std::make_shared<ActorContextInner>()) {
    p_->actor_id = std::move(actor_id);
    p_->name = std::move(name);
    p_->key = std::move(key);
    p_->region = std::move(region);
    p_->executor = std::move(executor);
    p_->clock = &clock;
    p_->kv = std::move(kv);
}

const Kv& ActorContext::user_kv() const {
    if (!p_->user_kv) {
        p_->user_kv = std::make_unique<Kv>();
        if (p_->kv.configured())
            *p_->user_kv = Kv(std::make_shared<UserKv>(p_->kv.shared_backend()), p_->actor_id);
        if (p_->metrics)
            p_->user_kv->set_metrics(p_->metrics);
    }
    return *p_->user_kv;
}

std::optional<ActorContext> WeakActorContext::upgrade() const {
    auto strong = p_.lock();
    if (!strong)
        return std::nullopt;
    return ActorContext(std::move(strong));
}

std::optional<ActorSpecifier> specifier_of(const ActorContextInner& s) {
    if (!s.generation)
        return std::nullopt;
    std::string key;
    for (const auto& part : s.key) {
        if (!key.empty())
            key += '/';
        key += part;
    }
    return ActorSpecifier{s.actor_id, *s.generation, std::move(key)};
}

std::optional<ActorSpecifier> ActorContext::specifier() const {
    return specifier_of(*p_);
}

void ActorContext::configure_lifecycle_events(std::optional<rt::Sender<LifecycleEvent>> tx) const {
    p_->lifecycle_events = std::move(tx);
}

void ActorContext::configure_actor_events(std::optional<rt::Sender<ActorEvent>> tx) const {
    p_->actor_events = std::move(tx);
}

void ActorContext::configure_envoy(std::shared_ptr<EnvoyLink> envoy,
                                   std::optional<std::uint32_t> generation) const {
    p_->envoy = std::move(envoy);
    p_->generation = generation;
}

Status ActorContext::try_send_actor_event(ActorEvent event, std::string_view operation) const {
    if (!p_->actor_events)
        return errors::actor_not_configured("actor event inbox");
    const std::string_view kind = event_kind(event);
    if (!p_->actor_events->send(std::move(event)))
        return errors::actor_not_ready();
    log::debug("actor event enqueued",
               {{"actor_id", p_->actor_id}, {"operation", operation}, {"event", kind}});
    return {};
}

void ActorContext::send_lifecycle_event(LifecycleEvent event) const {
    if (p_->lifecycle_events)
        p_->lifecycle_events->send(event);
}

// Every sleep input change lands here. The task drains the flag at the top of its loop and on
// the notify arm, so one notify per burst of changes is enough.
void ActorContextInner::signal_activity() {
    work_changed.notify_waiters();
    if (activity_dirty)
        return;
    activity_dirty = true;
    activity.notify_one();
}

void ActorContext::signal_activity() const {
    p_->signal_activity();
}

bool ActorContext::take_activity_dirty() const {
    return std::exchange(p_->activity_dirty, false);
}

void ActorContext::set_started(bool started) const {
    if (p_->started == started)
        return;
    p_->started = started;
    signal_activity();
}

void ActorContext::renew_actor_abort_token() const {
    if (p_->abort_token.is_cancelled())
        p_->abort_token = rt::CancellationToken();
}

WorkRegion::WorkRegion(std::shared_ptr<ActorContextInner> inner, RegionKind kind)
    : inner_(std::move(inner)), kind_(kind) {
    switch (kind_) {
        case RegionKind::KeepAwake:
            ++inner_->keep_awake;
            break;
        case RegionKind::InternalKeepAwake:
            ++inner_->internal_keep_awake;
            break;
        case RegionKind::WebSocketCallback:
            ++inner_->websocket_callbacks;
            break;
        case RegionKind::DisconnectCallback:
            ++inner_->pending_disconnects;
            break;
        case RegionKind::CoreHook:
            ++inner_->core_hooks;
            break;
        case RegionKind::RunHandler:
            ++inner_->run_handlers;
            break;
    }
    ActorContext(inner_).signal_activity();
}

WorkRegion::WorkRegion(WorkRegion&& other) noexcept
    : inner_(std::move(other.inner_)), kind_(other.kind_) {}

WorkRegion& WorkRegion::operator=(WorkRegion&& other) noexcept {
    if (this != &other) {
        release();
        inner_ = std::move(other.inner_);
        kind_ = other.kind_;
    }
    return *this;
}

WorkRegion::~WorkRegion() {
    release();
}

void WorkRegion::release() noexcept {
    if (!inner_)
        return;
    auto inner = std::move(inner_);
    inner_.reset();
    switch (kind_) {
        case RegionKind::KeepAwake:
            --inner->keep_awake;
            break;
        case RegionKind::InternalKeepAwake:
            --inner->internal_keep_awake;
            break;
        case RegionKind::WebSocketCallback:
            --inner->websocket_callbacks;
            break;
        case RegionKind::DisconnectCallback:
            --inner->pending_disconnects;
            break;
        case RegionKind::CoreHook:
            --inner->core_hooks;
            break;
        case RegionKind::RunHandler:
            --inner->run_handlers;
            break;
    }
    ActorContext(std::move(inner)).signal_activity();
}

// MARK: tracked replies (in-flight actions)
// A reply slot holds an internal keep-awake for as long as its action is in flight, like a
// WorkRegion, so the counter changes stay in this file.

namespace {

void unlink_tracked_reply(ActorContextInner& s, detail::TrackedReply* slot) {
    if (slot->prev != nullptr)
        slot->prev->next = slot->next;
    else
        s.tracked_replies = slot->next;
    if (slot->next != nullptr)
        slot->next->prev = slot->prev;
    slot->prev = slot->next = nullptr;
    slot->owner = nullptr;
    --s.tracked_reply_count;
    --s.internal_keep_awake;
}

}  // namespace

// Lets go of every in-flight reply: at a grace deadline the callers are dropped (they observe
// a dropped reply, as when an aborted task held them); when the actor state itself goes away
// the slots keep their callers, so a late answer still arrives.
void detail::release_tracked_replies(ActorContextInner& s, bool drop_callers) {
    if (s.tracked_replies == nullptr)
        return;
    while (auto* slot = s.tracked_replies) {
        unlink_tracked_reply(s, slot);
        if (drop_callers) {
            auto dropped = std::move(slot->caller);  // the caller observes a dropped reply
        }
    }
    s.signal_activity();
}

ActorContextInner::~ActorContextInner() {
    while (auto* slot = tracked_replies)
        unlink_tracked_reply(*this, slot);
}

bool detail::complete_tracked_reply(TrackedReply* slot, Result<Bytes> result) {
    std::unique_ptr<TrackedReply> owned(slot);
    ActorContextInner* s = slot->owner;
    if (s == nullptr)
        return slot->caller.send(std::move(result));
    if (!result.ok()) {
        if (auto spec = specifier_of(*s)) {
            Error error = std::move(result).error();
            error.with_actor(*spec);
            result = Result<Bytes>(std::move(error));
        }
    }
    unlink_tracked_reply(*s, slot);
    // Before the answer: a caller answered in place (an actor-connect action) may let go of the
    // last reference to the actor's state.
    s->signal_activity();
    return slot->caller.send(std::move(result));
}

Reply<Bytes> ActorContext::track_reply(ActionCaller caller) const {
    auto& s = *p_;
    if (s.teardown_started) {
        log::warn("shutdown task spawned after teardown; aborting immediately",
                  {{"actor_id", s.actor_id}, {"kind", "action"}});
        // The caller is dropped here; the runtime still gets a reply, answered into nothing.
        return Reply<Bytes>::make().first;
    }
    auto* slot = new detail::TrackedReply{std::move(caller), p_.get(), nullptr, s.tracked_replies};
    if (s.tracked_replies != nullptr)
        s.tracked_replies->prev = slot;
    s.tracked_replies = slot;
    ++s.tracked_reply_count;
    ++s.internal_keep_awake;
    s.signal_activity();
    return Reply<Bytes>(slot);
}

}  // namespace rivetkit::core

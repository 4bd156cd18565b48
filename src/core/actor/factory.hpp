#pragma once
// ActorFactory: the actor's config plus the entry point core starts for each generation.

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/actor/config.hpp"
#include "core/actor/context.hpp"
#include "core/actor/messages.hpp"
#include "runtime/spawn.hpp"

namespace rivetkit::core {

// Everything the user runtime receives when a generation starts.
struct ActorStart {
    ActorContext ctx;
    std::optional<Bytes> input;
    // Current state for a non-new actor.
    std::optional<Bytes> snapshot;
    // Restored, still-live hibernatable connections with their state bytes.
    std::vector<std::pair<ConnHandle, Bytes>> hibernated;
    ActorEvents events;
    // Manual-startup factories only: answer once the runtime's preamble ran; Start waits for it.
    std::optional<rt::OneshotSender<Status>> startup_ready;
    // For a runtime that serves its events without a coroutine of its own once started: its
    // entry may hand its completion to that work (rt::spawn_handing_off) and return; the run
    // handle then completes when the work finishes (at the end of the event stream).
    std::optional<rt::Handoff<Status>> handoff;
};

using ActorEntry = std::function<boost::asio::awaitable<Status>(ActorStart)>;

class ActorFactory {
  public:
    ActorFactory(ActorConfig config, ActorEntry entry)
        : config_(std::make_shared<const ActorConfig>(std::move(config))),
          entry_(std::move(entry)) {}

    static ActorFactory with_manual_startup_ready(ActorConfig config, ActorEntry entry) {
        ActorFactory f(std::move(config), std::move(entry));
        f.manual_startup_ready_ = true;
        return f;
    }

    const ActorConfig& config() const noexcept { return *config_; }
    // The config itself, for every actor of this type to share.
    const std::shared_ptr<const ActorConfig>& shared_config() const noexcept { return config_; }
    bool manual_startup_ready() const noexcept { return manual_startup_ready_; }
    boost::asio::awaitable<Status> start(ActorStart start) const {
        return entry_(std::move(start));
    }

  private:
    std::shared_ptr<const ActorConfig> config_;
    ActorEntry entry_;
    bool manual_startup_ready_ = false;
};

}  // namespace rivetkit::core

#pragma once
// The state an inspector is shown: the runtime's current state (asked with SerializeState
// {Inspector}, which leaves a pending save alone), else the last saved bytes when the runtime has
// nothing newer or cannot answer.

#include <boost/asio/awaitable.hpp>

#include "base/bytes.hpp"
#include "core/actor/context.hpp"

namespace rivetkit::core::inspector {

boost::asio::awaitable<Bytes> current_state(ActorContext ctx);

}  // namespace rivetkit::core::inspector

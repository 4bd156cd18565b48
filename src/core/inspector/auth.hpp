#pragma once
// Inspector authentication (upstream's InspectorAuth): a request is authorised by the token the
// actor keeps in KV key [3] (or, in tests, $_RIVET_TEST_INSPECTOR_TOKEN), compared in constant
// time. A missing or empty candidate, a missing stored token or a KV failure all refuse.

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "core/actor/context.hpp"

namespace rivetkit::core::inspector {

// inspector/unauthorized.
Error unauthorized();

boost::asio::awaitable<Status> verify_token(ActorContext ctx, std::optional<std::string> candidate);

// Time depends on the lengths only, never on where the contents differ.
bool constant_time_equal(BytesView a, BytesView b) noexcept;

}  // namespace rivetkit::core::inspector

#pragma once
// Errors raised deliberately by actor code. Thrown from an action or hook (or returned as the
// Error of a Result<T>), a UserError reaches the client as group "user" with its code, message
// and metadata; any other exception reaches it as the masked core/internal_error.
//
//   throw rivetkit::UserError("deliberate_failure", "counter failed on purpose",
//                             {{"reason", "test"}});
//
// A PublicError has a group of the actor's choosing and is shown to the client like a UserError
// (upstream's `new ActorError(group, code, message, { public: true })`); HTTP replies carry
// `http_status` (default 400).

#include <string>
#include <utility>

#include "base/error.hpp"
#include "rivetkit/value.hpp"

namespace rivetkit {

class UserError : public ErrorException {
  public:
    UserError(std::string code, std::string message, const Json& metadata = nullptr)
        : ErrorException(errors::user(
              code, message, metadata.is_null() ? std::nullopt : std::optional(metadata.dump()))) {}
};

class PublicError : public ErrorException {
  public:
    PublicError(std::string group, std::string code, std::string message,
                const Json& metadata = nullptr, unsigned http_status = 400)
        : ErrorException(Error(std::move(group), std::move(code), std::move(message),
                               metadata.is_null() ? std::nullopt
                                                  : std::optional(metadata.dump()))
                             .make_public(http_status)) {}
};

// Upstream's forbiddenError(): auth/forbidden "Forbidden", shown to the client, HTTP 403. Thrown
// from on_before_connect it refuses the connection; an event's or queue's access check that
// returns false answers it too.
class Forbidden : public ErrorException {
  public:
    Forbidden() : ErrorException(errors::auth_forbidden()) {}
};

}  // namespace rivetkit

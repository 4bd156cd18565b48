#pragma once
// Errors raised deliberately by actor code. Thrown from an action or hook (or returned as the
// Error of a Result<T>), a UserError reaches the client as group "user" with its code, message
// and metadata; any other exception reaches it as the masked core/internal_error.
//
//   throw rivetkit::UserError("deliberate_failure", "counter failed on purpose",
//                             {{"reason", "test"}});

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

}  // namespace rivetkit

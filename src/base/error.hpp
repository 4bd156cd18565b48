#pragma once
// Structured errors: group, code, message, optional JSON metadata, optional actor specifier.
//
// Errors travel as values (`Result<T>`) through replies and channels and are never flattened to
// strings on the way; `to_string()` is for logs and contains "code: message" as upstream's Display.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rivetkit {

// Identifies the actor generation an error came from; attached only once a generation is known.
struct ActorSpecifier {
    std::string actor_id;
    std::uint32_t generation = 0;
    std::string key;
};

// Held by pointer: an Error is 8 bytes, so a Status or Result<T> costs a coroutine frame or a
// task almost nothing until it fails (the fields used to be ~220 bytes inline in every frame,
// reply and join slot that may hold one). Copies are deep; a moved-from Error reads as empty.
class Error {
  public:
    Error(std::string group, std::string code, std::string message,
          std::optional<std::string> metadata_json = std::nullopt);
    Error(const Error& other);
    Error& operator=(const Error& other);
    Error(Error&&) noexcept = default;
    Error& operator=(Error&&) noexcept = default;
    ~Error();

    const std::string& group() const noexcept { return fields().group; }
    const std::string& code() const noexcept { return fields().code; }
    const std::string& message() const noexcept { return fields().message; }
    // Metadata as JSON text, if any.
    const std::optional<std::string>& metadata() const noexcept { return fields().metadata; }
    const std::optional<ActorSpecifier>& actor() const noexcept { return fields().actor; }

    bool is(std::string_view group, std::string_view code) const noexcept {
        return fields().group == group && fields().code == code;
    }

    Error& with_actor(ActorSpecifier actor) &;
    Error&& with_actor(ActorSpecifier actor) &&;

    // Marks an error of any group as meant for the client (upstream's `public: true`): it is not
    // masked, and an HTTP reply carries `http_status` (upstream's default for public errors, 400).
    Error& make_public(unsigned http_status = 400) &;
    Error&& make_public(unsigned http_status = 400) &&;
    // Set by make_public.
    const std::optional<unsigned>& public_status() const noexcept {
        return fields().public_status;
    }

    // "group/code" as used in logs and close reasons ("group.code" is built by the protocol layer).
    std::string id() const;
    // "code: message", prefixed by "actor <id> generation <g> key <k>: " when a specifier is set.
    std::string to_string() const;

    friend bool operator==(const Error& a, const Error& b) {
        const Fields& x = a.fields();
        const Fields& y = b.fields();
        return x.group == y.group && x.code == y.code && x.message == y.message &&
               x.metadata == y.metadata;
    }

  private:
    struct Fields {
        std::string group;
        std::string code;
        std::string message;
        std::optional<std::string> metadata;
        std::optional<ActorSpecifier> actor;
        std::optional<unsigned> public_status;
    };
    const Fields& fields() const noexcept { return f_ ? *f_ : empty(); }
    Fields& mutable_fields();
    static const Fields& empty() noexcept;

    std::unique_ptr<Fields> f_;
};

// Carries an Error through code that reports failures by throwing (user handlers, coroutines).
class ErrorException : public std::exception {
  public:
    explicit ErrorException(Error error);
    const Error& error() const noexcept { return error_; }
    const char* what() const noexcept override { return what_.c_str(); }

  private:
    Error error_;
    std::string what_;
};

// Turns any exception into a structured error: an ErrorException keeps its error; anything else
// becomes core/internal_error with the original text in metadata.
Error error_from_exception(std::exception_ptr ep);

// HTTP status for an error that crosses the public boundary, per upstream's table; 500 otherwise.
int public_http_status(const Error& error) noexcept;
// Whether group/message/metadata may be shown to a client (otherwise masked to the internal
// default).
bool is_public(const Error& error) noexcept;
// The client-facing form: itself when public (or when RIVET_EXPOSE_ERRORS=1), else the masked
// core/internal_error.
Error to_public(const Error& error);

namespace errors {
// actor/*
Error actor_starting();
Error actor_not_ready();
Error actor_stopping();
Error actor_destroying();
Error actor_shutdown_timeout();
Error actor_dropped_reply();
// A per-actor limit: `what` is connections, subscriptions or scheduled_events.
Error actor_too_many(std::string_view what, std::uint32_t limit);
Error actor_overloaded(std::string_view channel, std::uint64_t capacity,
                       std::string_view operation);
Error actor_not_configured(std::string_view component);
Error actor_not_found(std::string_view actor_id);
Error actor_not_registered(std::string_view name);
Error actor_missing_input();
Error actor_invalid_operation(std::string_view detail);
Error actor_panicked(std::string_view operation);
Error actor_aborted();
Error actor_action_timed_out();
Error actor_action_not_found(std::string_view name);
Error actor_method_not_allowed();
Error actor_invalid_request(std::string_view detail);
Error actor_state_mutation_reentrant();
// A stateless actor's state was asked for (upstream's StateNotEnabled; public).
Error actor_state_not_enabled();
// db() of an actor that declared it has no database (options.database = false; public).
Error actor_database_not_configured();
// auth/forbidden, "Forbidden", HTTP 403 (upstream's forbiddenError(); public).
Error auth_forbidden();
// A value that does not match what the actor declared (a typed action's parameters, typed
// connection params): "Invalid <target>", metadata {"issues":[{"message", "path"}]} as upstream's
// schema validation reports it. `index`: the position of the offending argument, if one.
Error actor_validation_error(std::string_view target, std::string_view issue,
                             std::optional<std::size_t> index = std::nullopt);
// core/*
Error internal_error(std::string_view detail = {});
// message/*
Error message_incoming_too_long();
Error message_outgoing_too_long();
// inspector/*
Error inspector_unauthorized();
// protocol/*
Error protocol_invalid_persisted_data(std::string_view detail);
Error protocol_invalid_http_request(std::string_view detail);
Error protocol_invalid_http_response(std::string_view detail);
Error protocol_invalid_actor_connect_request(std::string_view detail);
Error protocol_unsupported_encoding(std::string_view encoding);
// user/* — errors raised deliberately by actor code
Error user(std::string_view code, std::string_view message,
           std::optional<std::string> metadata_json = std::nullopt);
}  // namespace errors

}  // namespace rivetkit

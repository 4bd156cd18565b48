#pragma once
// A BARE decode failure: what was wrong, where in the input, and which field was being read.
//
// The path is built while the generated decoders unwind, so the happy path pays nothing for it.

#include <cstddef>
#include <string>

#include "base/error.hpp"

namespace rivetkit::bare {

struct DecodeError {
    // Human-readable cause, e.g. "invalid UTF-8 in str" or "unknown union tag 17".
    std::string reason;
    // Byte offset into the whole payload (including any version prefix) where the bad value starts.
    std::size_t offset = 0;
    // Dotted field path from the root type, e.g.
    // "ToEnvoy.ToEnvoyCommands[0].inner.CommandStartActor".
    std::string path;

    // "<path>: <reason> at byte <offset>".
    std::string to_string() const;
    // protocol/invalid_bare with {reason, offset, path} as metadata.
    Error to_error() const;

    friend bool operator==(const DecodeError&, const DecodeError&) = default;
};

}  // namespace rivetkit::bare

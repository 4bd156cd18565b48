#include "bare/decode_error.hpp"

#include <fmt/format.h>

namespace rivetkit::bare {
namespace {

// Reasons and paths are produced by this library, but a str's bad bytes never reach them; escaping
// still keeps the metadata valid JSON whatever a future reason contains.
std::string json_quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
                } else {
                    out += c;
                }
        }
    }
    out += '"';
    return out;
}

}  // namespace

std::string DecodeError::to_string() const {
    if (path.empty())
        return fmt::format("{} at byte {}", reason, offset);
    return fmt::format("{}: {} at byte {}", path, reason, offset);
}

Error DecodeError::to_error() const {
    return Error("protocol", "invalid_bare", "Invalid BARE payload: " + to_string(),
                 fmt::format(R"({{"reason":{},"offset":{},"path":{}}})", json_quote(reason), offset,
                             json_quote(path)));
}

}  // namespace rivetkit::bare

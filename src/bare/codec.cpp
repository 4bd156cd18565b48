#include "bare/codec.hpp"

#include <fmt/format.h>

namespace rivetkit::bare {

std::string fmt_trailing(std::size_t remaining) {
    return fmt::format("{} trailing byte(s) after the message", remaining);
}

DecodeError unsupported_version(std::uint16_t got, std::uint16_t expected) {
    return DecodeError{fmt::format("unsupported schema version {} (expected {})", got, expected), 0,
                       ""};
}

std::optional<DecodeError> split_versioned(std::span<const std::uint8_t> payload,
                                           VersionedView& out) {
    if (payload.size() < kVersionPrefixSize) {
        return DecodeError{
            fmt::format("payload of {} byte(s) is shorter than the 2-byte version prefix",
                        payload.size()),
            0, ""};
    }
    out.version = static_cast<std::uint16_t>(payload[0] | (payload[1] << 8));
    out.body = payload.subspan(kVersionPrefixSize);
    return std::nullopt;
}

Result<VersionedView> split_versioned(std::span<const std::uint8_t> payload) {
    VersionedView view;
    if (auto err = split_versioned(payload, view))
        return err->to_error();
    return view;
}

}  // namespace rivetkit::bare

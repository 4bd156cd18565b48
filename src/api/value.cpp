// Values between C++ and CBOR (to_cbor, from_cbor, cbor_args), and an action's arguments:
// the plain-CBOR reader of the fast path, the JSON path's args and its argument errors.

#include "rivetkit/value.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <string>

#include "base/cbor.hpp"
#include "base/error.hpp"
#include "core/registry/encoding.hpp"
#include "rivetkit/detail/callable.hpp"

namespace rivetkit {
namespace {

// Whether a value decoded by nlohmann differs from its client compat form.
bool needs_compat_form(const Json& v) {
    switch (v.type()) {
        case Json::value_t::binary:
            return true;
        case Json::value_t::number_float:
            // An integral float is a JS integer (see core::registry::js_integer).
            return core::registry::js_integer(v.get<double>()).has_value();
        case Json::value_t::array:
            if (v.size() == 2 && v[0].is_string()) {
                const auto& first = v[0].get_ref<const std::string&>();
                if (!first.empty() && first[0] == '$')
                    return true;
            }
            for (const auto& item : v) {
                if (needs_compat_form(item))
                    return true;
            }
            return false;
        case Json::value_t::object:
            for (const auto& item : v) {
                if (needs_compat_form(item))
                    return true;
            }
            return false;
        default:
            return false;
    }
}

// Whether `v` is an integer a JavaScript CBOR encoder would write as a float64.
bool is_js_float_integer(const Json& v) {
    if (v.is_number_unsigned())
        return v.get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX) &&
               core::registry::js_writes_as_float(static_cast<std::int64_t>(v.get<std::uint64_t>()));
    return v.is_number_integer() && core::registry::js_writes_as_float(v.get<std::int64_t>());
}

bool has_js_float_integer(const Json& v) {
    if (!v.is_structured())
        return is_js_float_integer(v);
    for (const auto& item : v) {
        if (has_js_float_integer(item))
            return true;
    }
    return false;
}

void write_js_float_integers(Json& v) {
    if (is_js_float_integer(v)) {
        v = v.get<double>();
    } else if (v.is_structured()) {
        for (auto& item : v)
            write_js_float_integers(item);
    }
}

}  // namespace

// Integers beyond 32 bits and within ±(2^53 - 1) go out as floats, as a TypeScript actor's
// numbers do: the official client (cbor-x) reads an 8-byte CBOR integer as a BigInt. Larger ones
// stay integers (BigInt there, as a TypeScript BigInt would be). Values without such integers (the
// common case) are written without a copy.
Bytes to_cbor(const Json& value) {
    Bytes out;
    out.reserve(64);  // most values are small: one allocation instead of a doubling series
    if (has_js_float_integer(value)) {
        Json js = value;
        write_js_float_integers(js);
        write_cbor(js, out);
    } else {
        write_cbor(value, out);
    }
    return out;
}

namespace detail {

void cbor_array_head(Bytes& out, std::size_t n) {
    write_cbor_head(4, n, out);
}
void cbor_scalar(Bytes& out, std::int64_t v) {
    if (core::registry::js_writes_as_float(v))
        write_cbor(Json(static_cast<double>(v)), out);
    else
        write_cbor(Json(v), out);
}
void cbor_scalar(Bytes& out, std::uint64_t v) {
    if (v <= static_cast<std::uint64_t>(INT64_MAX))
        cbor_scalar(out, static_cast<std::int64_t>(v));
    else
        write_cbor(Json(v), out);
}
void cbor_scalar(Bytes& out, double v) {
    write_cbor(Json(v), out);
}
void cbor_scalar(Bytes& out, bool v) {
    out.push_back(v ? 0xf5 : 0xf4);
}
void cbor_scalar(Bytes& out, std::string_view v) {
    write_cbor_head(3, v.size(), out);
    append(out, v);
}

std::string describe_json_error(const char* what) {
    std::string_view text(what);
    if (!text.empty() && text.front() == '[') {
        if (auto close = text.find("] "); close != std::string_view::npos)
            text.remove_prefix(close + 2);
    }
    return std::string(text);
}

Error invalid_args(std::string_view action, std::string_view detail) {
    return errors::actor_validation_error(fmt::format("action `{}` arguments", action), detail);
}

Error invalid_argument(std::string_view action, std::size_t index, std::string_view detail) {
    return errors::actor_validation_error(fmt::format("action `{}` arguments", action),
                                          fmt::format("argument {}: {}", index, detail), index);
}

Error invalid_arity(std::string_view action, std::size_t expected_min, std::size_t expected_max,
                    std::size_t got) {
    if (expected_min == expected_max)
        return invalid_args(action, fmt::format("expected {} argument{}, got {}", expected_max,
                                                expected_max == 1 ? "" : "s", got));
    return invalid_args(action, fmt::format("expected {} to {} arguments, got {}", expected_min,
                                            expected_max, got));
}

Result<Json> action_args(BytesView cbor) {
    auto args = from_cbor(cbor);
    if (!args.ok())
        return errors::actor_invalid_request("args: " + args.error().message());
    if (args->is_null())
        return Json::array();
    return std::move(args).value();
}

bool PlainCbor::head(std::uint8_t& major, std::uint64_t& argument) noexcept {
    if (pos_ >= in_.size())
        return false;
    const std::uint8_t first = in_[pos_++];
    major = static_cast<std::uint8_t>(first >> 5);
    const auto info = static_cast<std::uint8_t>(first & 31);
    if (major == 7) {
        // Simple values and floats keep their info in `argument`, a float's bits unread.
        argument = info;
        return true;
    }
    return read_cbor_argument(in_, pos_, info, argument);
}

bool PlainCbor::array(std::size_t& n) noexcept {
    std::uint8_t major = 0;
    std::uint64_t count = 0;
    if (!head(major, count) || major != 4 || count > in_.size() - pos_)
        return false;
    n = static_cast<std::size_t>(count);
    return true;
}

bool PlainCbor::null() noexcept {
    if (pos_ >= in_.size() || in_[pos_] != 0xf6)
        return false;
    ++pos_;
    return true;
}

bool PlainCbor::read(bool& v) noexcept {
    if (pos_ >= in_.size() || (in_[pos_] != 0xf4 && in_[pos_] != 0xf5))
        return false;
    v = in_[pos_++] == 0xf5;
    return true;
}

bool PlainCbor::read(std::int64_t& v) noexcept {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major > 1 || n > static_cast<std::uint64_t>(INT64_MAX))
        return false;
    v = major == 0 ? static_cast<std::int64_t>(n) : -1 - static_cast<std::int64_t>(n);
    return true;
}

bool PlainCbor::read(std::uint64_t& v) noexcept {
    std::uint8_t major = 0;
    return head(major, v) && major == 0;
}

bool PlainCbor::read(double& v) noexcept {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n))
        return false;
    if (major == 0) {
        v = static_cast<double>(n);
        return true;
    }
    if (major == 1) {
        if (n > static_cast<std::uint64_t>(INT64_MAX))
            return false;
        v = static_cast<double>(-1 - static_cast<std::int64_t>(n));
        return true;
    }
    std::uint64_t bits = 0;
    if (major != 7 || n < 25 || n > 27 ||
        !read_cbor_argument(in_, pos_, static_cast<std::uint8_t>(n), bits))
        return false;
    v = cbor_float_value(static_cast<std::uint8_t>(n), bits);
    return !core::registry::js_integer(v).has_value();
}

bool PlainCbor::read(std::string& v) {
    std::uint8_t major = 0;
    std::uint64_t n = 0;
    if (!head(major, n) || major != 3 || n > in_.size() - pos_)
        return false;
    v.assign(as_chars(in_.subspan(pos_, static_cast<std::size_t>(n))));
    pos_ += static_cast<std::size_t>(n);
    return true;
}

}  // namespace detail

Result<Json> from_cbor(BytesView cbor) {
    if (cbor.empty())
        return Json(nullptr);
    // What has a plain JSON value (no tags, bytes, undefined, integral floats or "$"-arrays) is
    // returned as read; the rest goes through the client's JSON compat form.
    CborReadNotes notes;
    auto fast = read_cbor(cbor, &notes);
    if (fast && !notes.any() && !needs_compat_form(*fast))
        return std::move(*fast);
    auto text = core::registry::cbor_to_json_text(cbor);
    if (!text.ok())
        return std::move(text).error();
    Json parsed = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded())
        return errors::internal_error("compat JSON of a CBOR value did not parse");
    return parsed;
}

}  // namespace rivetkit

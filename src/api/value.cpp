#include "rivetkit/value.hpp"

#include <cstdint>

#include "base/cbor.hpp"
#include "core/registry/encoding.hpp"

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

#include "rivetkit/value.hpp"

#include "core/registry/encoding.hpp"

namespace rivetkit {
namespace {

// Whether a value decoded by nlohmann differs from its client compat form.
bool needs_compat_form(const Json& v) {
    switch (v.type()) {
        case Json::value_t::binary:
            return true;
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

}  // namespace

Bytes to_cbor(const Json& value) {
    Bytes out;
    Json::to_cbor(value, out);
    return out;
}

Result<Json> from_cbor(BytesView cbor) {
    if (cbor.empty())
        return Json(nullptr);
    // Fast path: nlohmann's reader fails on any tag or undefined, and the compat walk catches
    // the rest, so whatever it accepts here is already in the compat form.
    Json fast = Json::from_cbor(cbor.begin(), cbor.end(), /*strict=*/true,
                                /*allow_exceptions=*/false);
    if (!fast.is_discarded() && !needs_compat_form(fast))
        return fast;
    auto text = core::registry::cbor_to_json_text(cbor);
    if (!text.ok())
        return std::move(text).error();
    Json parsed = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded())
        return errors::internal_error("compat JSON of a CBOR value did not parse");
    return parsed;
}

}  // namespace rivetkit

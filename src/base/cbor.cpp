#include "base/cbor.hpp"

#include <nlohmann/json.hpp>

namespace rivetkit {

nlohmann::json parse_cbor_or_discarded(BytesView cbor) {
    try {
        return nlohmann::json::from_cbor(cbor.begin(), cbor.end(), /*strict=*/true,
                                         /*allow_exceptions=*/false);
    } catch (const nlohmann::json::exception&) {
        return nlohmann::json(nlohmann::json::value_t::discarded);
    }
}

}  // namespace rivetkit

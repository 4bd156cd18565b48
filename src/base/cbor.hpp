#pragma once
// nlohmann::json's CBOR reader made total, for bytes from outside (clients, the inspector,
// persisted rows): with allow_exceptions=false the reader still throws when an array or map
// header announces more elements than a vector can hold (out_of_range 408, found by fuzzing the
// storage rows). This returns a discarded value for that as for any other malformed input.

#include <nlohmann/json_fwd.hpp>

#include "base/bytes.hpp"

namespace rivetkit {

// Strict (the whole input is one value); discarded when it is not valid CBOR.
nlohmann::json parse_cbor_or_discarded(BytesView cbor);

}  // namespace rivetkit

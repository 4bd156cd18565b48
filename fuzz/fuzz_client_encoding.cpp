// Arbitrary bytes through every client-protocol decoder a host runs on untrusted input: HTTP
// action and queue bodies and actor-connect frames in json, cbor and bare, conn params JSON, and
// the CBOR → JSON bridge, and our CBOR reader's two walks against each other. The first byte picks
// the decoder; anything decoded is re-encoded.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/cbor.hpp"
#include "core/registry/encoding.hpp"
#include "core/registry/routes.hpp"

using namespace rivetkit::core::registry;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const std::uint8_t selector = data[0];
    const rivetkit::BytesView body(data + 1, size - 1);
    const std::string_view text(reinterpret_cast<const char*>(body.data()), body.size());
    const auto encoding = static_cast<Encoding>(selector % 3);
    switch ((selector / 3) % 6) {
        case 0:
            if (auto args = decode_http_action_args(encoding, body); args.ok())
                (void)encode_http_action_output(Encoding::Json, *args);
            break;
        case 1:
            (void)decode_http_queue_request(encoding, body);
            break;
        case 2:
            if (auto frame = decode_to_server(encoding, body); frame.ok()) {
                if (auto* a = std::get_if<ActionRequestFrame>(&*frame))
                    (void)encode_action_response(encoding, a->id, a->args);
            }
            break;
        case 3:
            if (auto cbor = json_text_to_cbor(text); cbor.ok())
                (void)cbor_to_json_text(*cbor);
            break;
        case 4:
            // The checking walk and the building one accept exactly the same inputs.
            if (rivetkit::cbor_well_formed(body) != rivetkit::read_cbor(body).has_value())
                __builtin_trap();
            (void)cbor_to_json_text(body);
            (void)encode_event(Encoding::Json, "e", body);
            break;
        case 5:
            (void)classify_http_path(text);
            (void)percent_decode(text);
            (void)bearer_token(text);
            break;
    }
    return 0;
}

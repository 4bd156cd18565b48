// Arbitrary bytes as an action's CBOR args array through the typed runtime's fast path
// (detail::decode_plain_args over PlainCbor) and through the JSON path it stands in for (from_cbor,
// then decode_args). The first byte picks the parameter types. The fast path must never read past
// its input, and whatever it accepts the JSON path must decode to the same values, bit for bit.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>

#include "rivetkit/detail/callable.hpp"

namespace {

using namespace rivetkit;

template <typename T>
bool same(const T& a, const T& b) {
    if constexpr (std::is_same_v<T, double>)
        return std::memcmp(&a, &b, sizeof a) == 0;
    else if constexpr (detail::IsOptional<T>::value)
        return a.has_value() == b.has_value() && (!a || same(*a, *b));
    else
        return a == b;
}

template <typename Tuple>
void check(BytesView cbor) {
    Tuple fast{};
    if (!detail::decode_plain_args(cbor, fast))
        return;
    Result<Json> json = detail::action_args(cbor);
    if (!json.ok())
        __builtin_trap();
    Result<Tuple> slow = detail::decode_args<Tuple>("fuzz", *json);
    if (!slow.ok())
        __builtin_trap();
    const bool equal = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (same(std::get<I>(fast), std::get<I>(*slow)) && ...);
    }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
    if (!equal)
        __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const BytesView args(data + 1, size - 1);
    switch (data[0] % 6) {
        case 0:
            check<std::tuple<std::int64_t>>(args);
            break;
        case 1:
            check<std::tuple<int, std::optional<std::string>>>(args);
            break;
        case 2:
            check<std::tuple<std::string, bool, double>>(args);
            break;
        case 3:
            check<std::tuple<std::uint16_t, std::optional<std::int64_t>, std::optional<double>>>(args);
            break;
        case 4:
            check<std::tuple<std::string, std::optional<std::string>>>(args);
            break;
        case 5:
            check<std::tuple<short, unsigned long long, std::optional<bool>>>(args);
            break;
    }
    return 0;
}

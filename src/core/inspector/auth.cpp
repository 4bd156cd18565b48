#include "core/inspector/auth.hpp"

#include <cstdlib>
#include <string_view>

#include "core/actor/keys.hpp"

namespace rivetkit::core::inspector {

namespace {

std::optional<std::string> test_token_override() {
    const char* value = std::getenv("_RIVET_TEST_INSPECTOR_TOKEN");
    if (value == nullptr || *value == '\0')
        return std::nullopt;
    return std::string(value);
}

BytesView view_of(std::string_view s) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

Error unauthorized() {
    return Error("inspector", "unauthorized", "Inspector request requires a valid bearer token");
}

bool constant_time_equal(BytesView a, BytesView b) noexcept {
    if (a.size() != b.size())
        return false;
    std::uint8_t diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff = static_cast<std::uint8_t>(diff | (a[i] ^ b[i]));
    return diff == 0;
}

boost::asio::awaitable<Status> verify_token(ActorContext ctx,
                                            std::optional<std::string> candidate) {
    if (!candidate || candidate->empty())
        co_return unauthorized();
    if (auto configured = test_token_override()) {
        if (constant_time_equal(view_of(*candidate), view_of(*configured)))
            co_return Status{};
        co_return unauthorized();
    }
    Bytes key = keys::to_bytes(keys::kInspectorToken);
    auto stored = co_await ctx.kv().get(std::move(key));
    if (!stored.ok() || !stored.value())
        co_return unauthorized();
    if (!constant_time_equal(view_of(*candidate), *stored.value()))
        co_return unauthorized();
    co_return Status{};
}

}  // namespace rivetkit::core::inspector

// Inspector protocol framing and the v1–v3 → v4 request upgrade.

#include "core/inspector/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <variant>

#include "bare/codec.hpp"
#include "proto/inspector_v1.hpp"
#include "proto/inspector_v2.hpp"
#include "proto/inspector_v3.hpp"

namespace rivetkit::core::inspector {

namespace {

Error invalid_request(std::string message) {
    return Error("inspector", "invalid_request", std::move(message));
}

// Request structs keep their names and fields from version to version, so each older request
// maps onto the v4 struct of the same name. v1's events requests have no successor.
template <typename Request>
Result<wire::ToServerBody> upgrade(Request&& req) {
    using R = std::remove_cvref_t<Request>;
    constexpr std::string_view name = bare_type_name(static_cast<const R*>(nullptr));
    wire::ToServerBody out;
    if constexpr (name == "PatchStateRequest") {
        out.value = wire::PatchStateRequest{std::move(req.state)};
    } else if constexpr (name == "StateRequest") {
        out.value = wire::StateRequest{req.id};
    } else if constexpr (name == "ConnectionsRequest") {
        out.value = wire::ConnectionsRequest{req.id};
    } else if constexpr (name == "ActionRequest") {
        out.value = wire::ActionRequest{req.id, std::move(req.name), std::move(req.args)};
    } else if constexpr (name == "RpcsListRequest") {
        out.value = wire::RpcsListRequest{req.id};
    } else if constexpr (name == "TraceQueryRequest") {
        out.value = wire::TraceQueryRequest{req.id, req.start_ms, req.end_ms, req.limit};
    } else if constexpr (name == "QueueRequest") {
        out.value = wire::QueueRequest{req.id, req.limit};
    } else if constexpr (name == "WorkflowHistoryRequest") {
        out.value = wire::WorkflowHistoryRequest{req.id};
    } else if constexpr (name == "DatabaseSchemaRequest") {
        out.value = wire::DatabaseSchemaRequest{req.id};
    } else if constexpr (name == "DatabaseTableRowsRequest") {
        out.value =
            wire::DatabaseTableRowsRequest{req.id, std::move(req.table), req.limit, req.offset};
    } else {
        static_assert(name == "EventsRequest" || name == "ClearEventsRequest",
                      "an inspector request without a v4 mapping");
        return invalid_request("cannot convert inspector v1 events requests to v2");
    }
    return out;
}

template <typename ToServer>
Result<wire::ToServerBody> decode_and_upgrade(BytesView body) {
    ToServer message{};
    if (auto err = bare::decode_into(body, message, bare::kVersionPrefixSize))
        return invalid_request(err->to_error().message());
    return std::visit([](auto&& req) { return upgrade(std::move(req)); },
                      std::move(message.body.value));
}

}  // namespace

Result<wire::ToServerBody> decode_client_message(BytesView payload) {
    bare::VersionedView view;
    if (auto err = bare::split_versioned(payload, view))
        return invalid_request(err->to_error().message());
    switch (view.version) {
        case 1:
            return decode_and_upgrade<proto::inspector_v1::ToServer>(view.body);
        case 2:
            return decode_and_upgrade<proto::inspector_v2::ToServer>(view.body);
        case 3:
            return decode_and_upgrade<proto::inspector_v3::ToServer>(view.body);
        case 4: {
            wire::ToServer message{};
            if (auto err = bare::decode_into(view.body, message, bare::kVersionPrefixSize))
                return invalid_request(err->to_error().message());
            return std::move(message.body);
        }
        default:
            return invalid_request(
                fmt::format("invalid inspector protocol version for ToServer: {}", view.version));
    }
}

Bytes encode_server_message(const wire::ToClientBody& body) {
    bare::Writer w;
    w.write_u16(kProtocolVersion);
    encode(w, body);
    return w.take();
}

std::uint32_t clamp_queue_limit(std::uint64_t limit) noexcept {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(limit, kMaxQueueStatusLimit));
}

std::string_view message_kind(const wire::ToServerBody& body) noexcept {
    return std::visit(
        [](const auto& v) {
            return bare_type_name(static_cast<const std::remove_cvref_t<decltype(v)>*>(nullptr));
        },
        body.value);
}

std::string_view message_kind(const wire::ToClientBody& body) noexcept {
    return std::visit(
        [](const auto& v) {
            return bare_type_name(static_cast<const std::remove_cvref_t<decltype(v)>*>(nullptr));
        },
        body.value);
}

}  // namespace rivetkit::core::inspector

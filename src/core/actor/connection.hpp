#pragma once
// Connections: a cheap, copyable handle on one client connection.
//
// Hibernatable connections (websockets the engine keeps open while the actor sleeps) carry
// HibernatableConnectionMetadata and are persisted under [2] + conn id; their state changes are
// queued on the owning context and written on the next save tick, never inline.

#include <array>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/bytes.hpp"
#include "base/result.hpp"
#include "core/actor/persist.hpp"

namespace rivetkit::core {

struct ActorContextInner;

using GatewayId = std::array<std::uint8_t, 4>;
using RequestId = std::array<std::uint8_t, 4>;

// Both ids must be exactly 4 bytes (actor/invalid_request otherwise).
Result<std::array<std::uint8_t, 4>> hibernatable_id_from_slice(std::string_view field,
                                                               BytesView bytes);

struct HibernatableConnectionMetadata {
    GatewayId gateway_id{};
    RequestId request_id{};
    std::uint16_t server_message_index = 0;
    std::uint16_t client_message_index = 0;
    std::string request_path;
    std::map<std::string, std::string> request_headers;
};

// Called with the disconnect reason; resolves when the connection is gone.
using DisconnectHandler =
    std::function<boost::asio::awaitable<Status>(std::optional<std::string> reason)>;

class ConnHandle {
  public:
    ConnHandle(std::string id, Bytes params, Bytes state, bool is_hibernatable);

    const std::string& id() const noexcept;
    const Bytes& params() const noexcept;
    Bytes state() const;
    bool is_hibernatable() const noexcept;
    // Hibernatable: marks the connection dirty, queues a hibernation save and requests a save.
    // Otherwise the state lives in memory only.
    void set_state(Bytes state) const;
    // Boot-time replace without queuing a save.
    void set_state_initial(Bytes state) const;

    std::optional<HibernatableConnectionMetadata> hibernation() const;
    void configure_hibernation(std::optional<HibernatableConnectionMetadata> meta) const;
    void set_server_message_index(std::uint16_t index) const;
    // The server message index of this connection's last successfully written record: what the
    // gateway may be told (acked) without losing a message the actor has not handled durably.
    std::optional<std::uint16_t> saved_server_message_index() const;
    void mark_server_message_index_saved(std::uint16_t index) const;

    // The frames one event was already encoded into for other connections, by a key the sender
    // chooses (its wire encoding): a broadcast encodes an event once per encoding, not once per
    // connection. Null when the event goes to one connection only.
    class EventFrames {
      public:
        const Bytes* find(int key) const noexcept {
            for (const auto& [k, frame] : frames_)
                if (k == key)
                    return &frame;
            return nullptr;
        }
        const Bytes& add(int key, Bytes frame) {
            return frames_.emplace_back(key, std::move(frame)).second;
        }

      private:
        std::vector<std::pair<int, Bytes>> frames_;
    };
    // Where this connection's events go (the actor-connect socket); HTTP connections have none.
    // `args` is the CBOR array the client spreads into its listener.
    using EventSender =
        std::function<Status(std::string_view name, const Bytes& args, EventFrames* shared)>;
    void configure_event_sender(std::optional<EventSender> sender) const;
    bool has_event_sender() const noexcept;
    // actor/not_configured when the connection cannot receive events.
    Status try_send(std::string_view name, const Bytes& args, EventFrames* shared = nullptr) const;
    // try_send, logging a failure instead of returning it.
    void send(std::string_view name, const Bytes& args, EventFrames* shared = nullptr) const;

    bool subscribe(std::string event_name) const;
    bool is_subscribed(std::string_view event_name) const;
    bool unsubscribe(std::string_view event_name) const;
    std::vector<std::string> subscriptions() const;
    std::size_t subscription_count() const;
    void clear_subscriptions() const;

    void configure_disconnect_handler(std::optional<DisconnectHandler> handler) const;
    void configure_transport_disconnect_handler(std::optional<DisconnectHandler> handler) const;
    // The managed handler (removes the connection from its actor); error if none is configured.
    Result<DisconnectHandler> managed_disconnect_handler() const;
    // Transport handler first, then the managed handler.
    boost::asio::awaitable<Status> disconnect(std::optional<std::string> reason) const;
    // Only the transport side (used by ActorContext::disconnect_conn).
    boost::asio::awaitable<Status> disconnect_transport_only() const;

    // The full persisted record, from the live handle; error without hibernation metadata.
    Result<PersistedConnection> to_persisted() const;
    static ConnHandle from_persisted(const PersistedConnection& persisted);

    // The context that owns this connection (set by add_conn); weak so a connection held by user
    // code never keeps an actor alive.
    void attach(std::weak_ptr<ActorContextInner> ctx) const;

    friend bool operator==(const ConnHandle& a, const ConnHandle& b) { return a.p_ == b.p_; }
    friend class ActorContext;  // counts subscriptions per event (add_conn, remove_conn)

  private:
    struct Inner;
    std::shared_ptr<Inner> p_;
};

}  // namespace rivetkit::core

#pragma once
// What the envoy asks of the layer above it (the actor core): start and stop actors, serve
// tunneled HTTP and WebSockets. All calls arrive on the envoy's io thread; none may block it.

#include <boost/asio/awaitable.hpp>
#include <memory>

#include "base/result.hpp"
#include "envoy/handle.hpp"
#include "envoy/types.hpp"

namespace rivetkit::envoy {

// Receives one tunneled WebSocket's traffic, in order. Calls are synchronous and must not block;
// forward to a channel for real work.
class WebSocketListener {
  public:
    virtual ~WebSocketListener() = default;
    virtual void on_message(WebSocketMessage message) = 0;
    // The client or the gateway closed the socket. The listener is dropped afterwards.
    virtual void on_close(CloseFrame frame) = 0;
    // The actor stopped while the socket stays open at the gateway; the listener is dropped and
    // a new one is asked for (WebSocketOpen::restoring) when the actor wakes. Called before the
    // socket counts as hibernating: an ack sent from here still reaches the gateway.
    virtual void on_hibernate() {}
    // True: this listener acks hibernatable messages itself (WebSocketSender::ack) once it has
    // made them durable; the envoy then never acks on delivery.
    virtual bool acks_messages() const { return false; }
};

class EnvoyCallbacks {
  public:
    virtual ~EnvoyCallbacks() = default;

    virtual void on_connect(EnvoyHandle /*handle*/) {}
    virtual void on_disconnect(EnvoyHandle /*handle*/) {}
    // The engine's first ping on a connection. The engine pings only once it has committed the
    // connection's registration (the pool's load-balancer index and protocol version) and purged
    // its cached pool config; ToEnvoyInit goes out before that commit.
    virtual void on_registered(EnvoyHandle /*handle*/) {}
    // A connection attempt failed before the handshake (resolve, TCP, TLS verification, HTTP
    // upgrade, timeout); the envoy retries with backoff.
    virtual void on_connect_failed(EnvoyHandle /*handle*/, const Error& /*error*/) {}

    // Ok: the actor is reported Running. An error: Stopped{Error, message}.
    virtual boost::asio::awaitable<Status> on_actor_start(EnvoyHandle handle, ActorStart start) = 0;
    // The stop is complete when the task finishes; then Stopped is reported (Ok, or Error when
    // the stop failed or the reason is `lost`).
    virtual boost::asio::awaitable<Status> on_actor_stop(EnvoyHandle handle, ActorStop stop) = 0;

    virtual boost::asio::awaitable<HttpResponse> fetch(EnvoyHandle handle, HttpRequest request) = 0;
    // For requests whose body the gateway streams (the streaming gateway, with a body): true =
    // `fetch` is called as soon as the head arrives, with the body in HttpRequest::body_stream
    // (credit returned as the handler reads it); false = the body is collected first and `fetch`
    // sees it whole in HttpRequest::body. `head` has no body yet.
    virtual bool stream_request_body(const HttpRequest& /*head*/) { return false; }

    // Accept by returning a listener; an error rejects the socket (closed 1011 with the error id).
    virtual boost::asio::awaitable<Result<std::shared_ptr<WebSocketListener>>> websocket(
        EnvoyHandle handle, WebSocketOpen open, WebSocketSender sender) = 0;
    // Whether this socket may outlive a sleep of its actor.
    virtual bool can_hibernate(const WebSocketOpen& /*open*/) { return false; }

    // The envoy has stopped for good (shutdown or eviction).
    virtual void on_shutdown() {}
};

}  // namespace rivetkit::envoy

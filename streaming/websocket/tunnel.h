#pragma once
// The SPDY-over-WebSocket tunnel (subprotocol "SPDY/3.1+portforward.k8s.io"):
// SPDY frames travel inside binary messages whose boundaries mean nothing, so the
// messages are read as one byte stream. A text message fails the connection, as the
// client-go side does.
#include <memory>

#include "streaming/byte_stream.h"
#include "streaming/websocket/channel_session.h"

namespace streaming::websocket {

// `ws` has completed its handshake.
std::unique_ptr<ByteStream> MakeTunnelStream(std::unique_ptr<WebSocket> ws);

}  // namespace streaming::websocket

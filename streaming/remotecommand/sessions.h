#pragma once
// Exec and attach over an upgraded connection: SPDY (the client opens one stream per
// channel; the process starts once all the request calls for exist) or a WebSocket
// channel protocol (channels exist from the handshake on).
#include <memory>

#include "streaming/byte_stream.h"
#include "streaming/remotecommand/protocol.h"
#include "streaming/session_env.h"
#include "streaming/websocket/channel_session.h"

namespace streaming::remotecommand {

// `request` is an ExecRequest or AttachRequest; `version` was negotiated.
void ServeSpdy(const SessionEnv& env, std::unique_ptr<ByteStream> connection, Request request, Version version);
void ServeWebSocket(const SessionEnv& env, std::unique_ptr<websocket::WebSocket> ws, websocket::Subprotocol protocol,
                    Request request);

}  // namespace streaming::remotecommand

#pragma once
// Port-forward over an upgraded connection. SPDY ("portforward.k8s.io", also inside
// the WebSocket tunnel): the client opens an error and a data stream per forwarded
// connection, paired by their "requestid" header, naming the port in "port"; one
// session carries any number of ports and connections. WebSocket channel protocol:
// the request's ports are channels 2i (data) and 2i+1 (error), one connection each.
#include <memory>

#include "streaming/byte_stream.h"
#include "streaming/session_env.h"
#include "streaming/websocket/channel_session.h"

namespace streaming::portforward {

void ServeSpdy(const SessionEnv& env, std::unique_ptr<ByteStream> connection, PortForwardRequest request);
void ServeWebSocket(const SessionEnv& env, std::unique_ptr<websocket::WebSocket> ws, websocket::Subprotocol protocol,
                    PortForwardRequest request);

}  // namespace streaming::portforward

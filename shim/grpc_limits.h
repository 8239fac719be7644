#pragma once
// Limits of the CRI gRPC server, shared by main.cc and the tests that run the services
// in-process, so that both refuse the same requests and drop the same clients.
#include <grpc/grpc.h>
#include <grpcpp/server_builder.h>

#include "absl/time/time.h"

namespace shim {

// The kubelet's CRI client sends and accepts up to 16 MiB (its maxMsgSize): the same
// bound here accepts everything it may send (gRPC's default, 4 MiB, would not) and
// keeps one request from holding more memory. A larger request fails
// RESOURCE_EXHAUSTED before any handler runs; the server goes on serving.
inline constexpr int kMaxGrpcMessageBytes = 16 << 20;

// Calls one connection may have open. The kubelet multiplexes all of its calls on one
// connection and has a few hundred in flight at most (110 pods); a client that opens
// more waits in its own transport for a stream to end. This bounds what a client that
// plays by HTTP/2's rules (it acknowledges the setting) holds in the server.
inline constexpr int kMaxStreamsPerConnection = 1024;

struct ConnectionLimits {
  // Every connection is pinged after this long, with or without calls, and closed when
  // no acknowledgement comes within `keepalive_timeout`: a client that stopped reading
  // (hung, or never reading) no longer holds its calls' memory and its socket. Any
  // gRPC client answers pings from its transport, whatever its application does.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(20);
};

inline void ApplyGrpcLimits(grpc::ServerBuilder& builder, const ConnectionLimits& limits = {}) {
  builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(limits.keepalive_time)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(limits.keepalive_timeout)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Pings go out while the server has no data to send (a client that does not read
  // lets none go out).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
}

}  // namespace shim

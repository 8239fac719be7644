#pragma once
// Limits of the CRI gRPC server, shared by main.cc and the tests that run the services
// in-process, so that both refuse the same requests.
#include <grpcpp/server_builder.h>

namespace shim {

// The kubelet's CRI client sends and accepts up to 16 MiB (its maxMsgSize): the same
// bound here accepts everything it may send (gRPC's default, 4 MiB, would not) and
// keeps one request from holding more memory. A larger request fails
// RESOURCE_EXHAUSTED before any handler runs; the server goes on serving.
inline constexpr int kMaxGrpcMessageBytes = 16 << 20;

inline void ApplyGrpcLimits(grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
}

}  // namespace shim

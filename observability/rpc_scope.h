#pragma once
// Set up where a CRI call is dispatched, for the call's duration on its thread: log
// lines name the RPC and the pod/container its request names; the call is counted and
// timed; at --log-level=trace its Docker and CNI calls are recorded and logged (at
// debug level, as "trace: ...") as one block when it ends.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "common/log_context.h"
#include "observability/trace.h"

namespace observability {

// The pod a request names: its sandbox ID, or "namespace/name" for RunPodSandbox.
template <typename Req>
std::string PodOf(const Req& req) {
  if constexpr (requires { req.pod_sandbox_id(); }) {
    return req.pod_sandbox_id();
  } else if constexpr (requires { req.config().metadata().namespace_(); }) {
    return req.config().metadata().namespace_() + "/" + req.config().metadata().name();
  } else {
    return {};
  }
}

// The container a request names: its ID, or its name for CreateContainer.
template <typename Req>
std::string ContainerOf(const Req& req) {
  if constexpr (requires { req.container_id(); }) {
    return req.container_id();
  } else if constexpr (requires {
                         req.pod_sandbox_id();
                         req.config().metadata().attempt();
                       }) {
    return req.config().metadata().name();
  } else {
    return {};
  }
}

class RpcScope {
 public:
  template <typename Req>
  RpcScope(const char* method, const Req& req) : RpcScope(method, PodOf(req), ContainerOf(req)) {}
  RpcScope(const char* method, std::string pod, std::string container);
  RpcScope(const RpcScope&) = delete;
  RpcScope& operator=(const RpcScope&) = delete;

  // Counts the call under its gRPC status code (0 is OK) and, when tracing, logs the
  // calls it made.
  void Finish(int code, std::string_view message);

 private:
  const char* method_;
  std::chrono::steady_clock::time_point start_;
  common::ScopedLogContext log_;
  std::optional<CallTrace> trace_;
};

// "OK", "NOT_FOUND", ... as grpc-go and the kubelet's metrics spell gRPC codes.
std::string_view GrpcCodeName(int code);

}  // namespace observability

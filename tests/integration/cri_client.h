#pragma once
// A client of the dockershim binary under test: one channel to its CRI socket, both
// services' stubs, and the pod and container calls its tests make again and again.
// Each call has the client's deadline and returns the gRPC status, so that a test
// says ASSERT_TRUE(s.ok()) << s.error_message(); IDs come back through pointers, ""
// when the call failed.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/cri.h"
#include "tests/integration/env.h"

namespace testenv {

class CriClient {
  using Stub = runtime::v1::RuntimeService::Stub;

 public:
  CriClient(const std::string& socket_path, std::chrono::seconds call_timeout,
            const grpc::ChannelArguments& args = {})
      : channel_(grpc::CreateCustomChannel("unix://" + socket_path, grpc::InsecureChannelCredentials(), args)),
        runtime_(runtime::v1::RuntimeService::NewStub(channel_)),
        images_(runtime::v1::ImageService::NewStub(channel_)),
        call_timeout_(call_timeout) {}

  // For streams (EventWatch) and for stubs of other threads.
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  runtime::v1::RuntimeService::Stub& runtime() { return *runtime_; }
  runtime::v1::ImageService::Stub& images() { return *images_; }

  [[nodiscard]] grpc::Status RunPodSandbox(const runtime::v1::PodSandboxConfig& pod, std::string* pod_id) {
    runtime::v1::RunPodSandboxRequest req;
    *req.mutable_config() = pod;
    runtime::v1::RunPodSandboxResponse resp;
    grpc::Status s = Call(&Stub::RunPodSandbox, req, &resp);
    *pod_id = resp.pod_sandbox_id();
    return s;
  }

  [[nodiscard]] grpc::Status CreateContainer(const std::string& pod_id, const runtime::v1::PodSandboxConfig& pod,
                                             const runtime::v1::ContainerConfig& config, std::string* container_id) {
    runtime::v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod_id);
    *req.mutable_sandbox_config() = pod;
    *req.mutable_config() = config;
    runtime::v1::CreateContainerResponse resp;
    grpc::Status s = Call(&Stub::CreateContainer, req, &resp);
    *container_id = resp.container_id();
    return s;
  }

  [[nodiscard]] grpc::Status StartContainer(const std::string& id) { return ById(&Stub::StartContainer, id); }

  // `*container_id` is set once the container exists, whether or not it starts.
  [[nodiscard]] grpc::Status CreateAndStartContainer(const std::string& pod_id, const runtime::v1::PodSandboxConfig& pod,
                                                     const runtime::v1::ContainerConfig& config,
                                                     std::string* container_id) {
    if (grpc::Status s = CreateContainer(pod_id, pod, config, container_id); !s.ok()) return Named("CreateContainer", s);
    return Named("StartContainer", StartContainer(*container_id));
  }

  [[nodiscard]] grpc::Status StopContainer(const std::string& id, int64_t timeout_seconds) {
    runtime::v1::StopContainerRequest req;
    req.set_container_id(id);
    req.set_timeout(timeout_seconds);
    return Call(&Stub::StopContainer, req);
  }

  [[nodiscard]] grpc::Status RemoveContainer(const std::string& id) { return ById(&Stub::RemoveContainer, id); }
  [[nodiscard]] grpc::Status StopPodSandbox(const std::string& id) { return ById(&Stub::StopPodSandbox, id); }
  [[nodiscard]] grpc::Status RemovePodSandbox(const std::string& id) { return ById(&Stub::RemovePodSandbox, id); }

  // The kubelet's order of tearing down: each stops at the first call that fails.
  [[nodiscard]] grpc::Status StopAndRemoveContainer(const std::string& id, int64_t timeout_seconds) {
    if (grpc::Status s = StopContainer(id, timeout_seconds); !s.ok()) return Named("StopContainer", s);
    return Named("RemoveContainer", RemoveContainer(id));
  }
  [[nodiscard]] grpc::Status StopAndRemovePodSandbox(const std::string& id) {
    if (grpc::Status s = StopPodSandbox(id); !s.ok()) return Named("StopPodSandbox", s);
    return Named("RemovePodSandbox", RemovePodSandbox(id));
  }

 private:
  // One unary call with the client's deadline; the answer is dropped unless `resp` is given.
  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const Req& req,
                    Resp* resp = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + call_timeout_);
    Resp dropped;
    return (runtime_.get()->*method)(&ctx, req, resp ? resp : &dropped);
  }

  // A call whose request is the container's or the pod's ID alone.
  template <typename Req, typename Resp>
  grpc::Status ById(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), const std::string& id) {
    Req req;
    if constexpr (requires { req.set_container_id(id); }) {
      req.set_container_id(id);
    } else {
      req.set_pod_sandbox_id(id);
    }
    return Call(method, req);
  }

  // For the calls that make two RPCs: the message says which one failed.
  static grpc::Status Named(const char* rpc, const grpc::Status& s) {
    if (s.ok()) return s;
    return grpc::Status(s.error_code(), std::string(rpc) + ": " + s.error_message(), s.error_details());
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Stub> runtime_;
  std::unique_ptr<runtime::v1::ImageService::Stub> images_;
  std::chrono::seconds call_timeout_;
};

// The test busybox running `command`, with the Linux section the kubelet always sends.
inline runtime::v1::ContainerConfig BusyboxContainer(const std::string& name, const std::vector<std::string>& command) {
  runtime::v1::ContainerConfig config;
  config.mutable_metadata()->set_name(name);
  config.mutable_image()->set_image(BusyboxImage());
  for (const std::string& part : command) config.add_command(part);
  config.mutable_linux();
  return config;
}

}  // namespace testenv

#pragma once
// The gRPC face of CriService: every CRI v1 RPC is registered here, on gRPC's callback
// API. gRPC's threads only hand calls over: each call runs on a worker of its lane
// (shim/dispatch/), and its answer goes back from there. Statuses are converted to
// gRPC in one place.
#include <grpcpp/grpcpp.h>

#include "api/cri.h"
#include "shim/cri_service.h"
#include "shim/dispatch/dispatcher.h"

namespace shim::events {
class EventHub;
}

namespace shim {

// Bounds every call; PullImage is bounded by the pull progress deadline instead.
struct GrpcOptions {
  absl::Duration runtime_request_timeout = absl::Minutes(2);
};

grpc::Status ToGrpcStatus(const absl::Status& status);

// The shutdown (SIGTERM): calls still waiting for a worker are answered UNAVAILABLE
// (the kubelet tries them again), running ones get `grace` and are then cancelled.
// Returns once every call has answered and the workers are joined.
void StopServing(grpc::Server& server, dispatch::Dispatcher& dispatcher, absl::Duration grace);

namespace service_layers {

// `LayeredService<Base, A, B, C>::type` is A<B<C<Base>>>: gRPC's generated service, one
// method per layer.
template <class Base, template <class> class... Layers>
struct LayeredService {
  using type = Base;
};
template <class Base, template <class> class First, template <class> class... Rest>
struct LayeredService<Base, First, Rest...> {
  using type = First<typename LayeredService<Base, Rest...>::type>;
};

// Every RPC on gRPC's callback API; the relists, ListPodSandbox and ListContainers, on
// its raw one: an answer that every call shares until the node changes goes out as the
// bytes its first call serialized (CriService::ListAnswer). Spelled out rather than
// stacked on CallbackService, whose typed callback method a raw layer would hide (clang's
// -Woverloaded-virtual). A method left out does not compile: each one here is `override`.
using RS = v1::RuntimeService;
using Runtime = LayeredService<
    RS::Service, RS::WithCallbackMethod_Version, RS::WithCallbackMethod_RunPodSandbox,
    RS::WithCallbackMethod_StopPodSandbox, RS::WithCallbackMethod_RemovePodSandbox,
    RS::WithCallbackMethod_PodSandboxStatus, RS::WithRawCallbackMethod_ListPodSandbox,
    RS::WithCallbackMethod_StreamPodSandboxes, RS::WithCallbackMethod_CreateContainer,
    RS::WithCallbackMethod_StartContainer, RS::WithCallbackMethod_StopContainer,
    RS::WithCallbackMethod_RemoveContainer, RS::WithRawCallbackMethod_ListContainers,
    RS::WithCallbackMethod_StreamContainers, RS::WithCallbackMethod_ContainerStatus,
    RS::WithCallbackMethod_UpdateContainerResources, RS::WithCallbackMethod_ReopenContainerLog,
    RS::WithCallbackMethod_ExecSync, RS::WithCallbackMethod_Exec, RS::WithCallbackMethod_Attach,
    RS::WithCallbackMethod_PortForward, RS::WithCallbackMethod_ContainerStats,
    RS::WithCallbackMethod_ListContainerStats, RS::WithCallbackMethod_StreamContainerStats,
    RS::WithCallbackMethod_PodSandboxStats, RS::WithCallbackMethod_ListPodSandboxStats,
    RS::WithCallbackMethod_StreamPodSandboxStats, RS::WithCallbackMethod_UpdateRuntimeConfig,
    RS::WithCallbackMethod_Status, RS::WithCallbackMethod_CheckpointContainer,
    RS::WithCallbackMethod_GetContainerEvents, RS::WithCallbackMethod_ListMetricDescriptors,
    RS::WithCallbackMethod_ListPodSandboxMetrics, RS::WithCallbackMethod_StreamPodSandboxMetrics,
    RS::WithCallbackMethod_RuntimeConfig, RS::WithCallbackMethod_UpdatePodSandboxResources>::type;

}  // namespace service_layers

using RuntimeServiceBase = service_layers::Runtime;

// GetContainerEvents, endless, runs on no worker: its reactor writes what the hub
// pushes.
class RuntimeServiceImpl final : public RuntimeServiceBase {
 public:
  // `service` and `dispatcher` must outlive the server. Without `events`,
  // GetContainerEvents answers UNIMPLEMENTED.
  RuntimeServiceImpl(CriService& service, GrpcOptions options, dispatch::Dispatcher& dispatcher,
                     events::EventHub* events = nullptr)
      : service_(service), options_(options), dispatcher_(dispatcher), events_(events) {}

  grpc::ServerUnaryReactor* Version(grpc::CallbackServerContext* ctx, const v1::VersionRequest* req, v1::VersionResponse* resp) override;
  grpc::ServerUnaryReactor* RunPodSandbox(grpc::CallbackServerContext* ctx, const v1::RunPodSandboxRequest* req, v1::RunPodSandboxResponse* resp) override;
  grpc::ServerUnaryReactor* StopPodSandbox(grpc::CallbackServerContext* ctx, const v1::StopPodSandboxRequest* req, v1::StopPodSandboxResponse* resp) override;
  grpc::ServerUnaryReactor* RemovePodSandbox(grpc::CallbackServerContext* ctx, const v1::RemovePodSandboxRequest* req, v1::RemovePodSandboxResponse* resp) override;
  grpc::ServerUnaryReactor* PodSandboxStatus(grpc::CallbackServerContext* ctx, const v1::PodSandboxStatusRequest* req, v1::PodSandboxStatusResponse* resp) override;
  grpc::ServerUnaryReactor* ListPodSandbox(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req, grpc::ByteBuffer* resp) override;
  grpc::ServerWriteReactor<v1::StreamPodSandboxesResponse>* StreamPodSandboxes(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxesRequest* req) override;
  grpc::ServerUnaryReactor* CreateContainer(grpc::CallbackServerContext* ctx, const v1::CreateContainerRequest* req, v1::CreateContainerResponse* resp) override;
  grpc::ServerUnaryReactor* StartContainer(grpc::CallbackServerContext* ctx, const v1::StartContainerRequest* req, v1::StartContainerResponse* resp) override;
  grpc::ServerUnaryReactor* StopContainer(grpc::CallbackServerContext* ctx, const v1::StopContainerRequest* req, v1::StopContainerResponse* resp) override;
  grpc::ServerUnaryReactor* RemoveContainer(grpc::CallbackServerContext* ctx, const v1::RemoveContainerRequest* req, v1::RemoveContainerResponse* resp) override;
  grpc::ServerUnaryReactor* ListContainers(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req, grpc::ByteBuffer* resp) override;
  grpc::ServerWriteReactor<v1::StreamContainersResponse>* StreamContainers(grpc::CallbackServerContext* ctx, const v1::StreamContainersRequest* req) override;
  grpc::ServerUnaryReactor* ContainerStatus(grpc::CallbackServerContext* ctx, const v1::ContainerStatusRequest* req, v1::ContainerStatusResponse* resp) override;
  grpc::ServerUnaryReactor* UpdateContainerResources(grpc::CallbackServerContext* ctx, const v1::UpdateContainerResourcesRequest* req, v1::UpdateContainerResourcesResponse* resp) override;
  grpc::ServerUnaryReactor* ReopenContainerLog(grpc::CallbackServerContext* ctx, const v1::ReopenContainerLogRequest* req, v1::ReopenContainerLogResponse* resp) override;
  grpc::ServerUnaryReactor* ExecSync(grpc::CallbackServerContext* ctx, const v1::ExecSyncRequest* req, v1::ExecSyncResponse* resp) override;
  grpc::ServerUnaryReactor* Exec(grpc::CallbackServerContext* ctx, const v1::ExecRequest* req, v1::ExecResponse* resp) override;
  grpc::ServerUnaryReactor* Attach(grpc::CallbackServerContext* ctx, const v1::AttachRequest* req, v1::AttachResponse* resp) override;
  grpc::ServerUnaryReactor* PortForward(grpc::CallbackServerContext* ctx, const v1::PortForwardRequest* req, v1::PortForwardResponse* resp) override;
  grpc::ServerUnaryReactor* ContainerStats(grpc::CallbackServerContext* ctx, const v1::ContainerStatsRequest* req, v1::ContainerStatsResponse* resp) override;
  grpc::ServerUnaryReactor* ListContainerStats(grpc::CallbackServerContext* ctx, const v1::ListContainerStatsRequest* req, v1::ListContainerStatsResponse* resp) override;
  grpc::ServerWriteReactor<v1::StreamContainerStatsResponse>* StreamContainerStats(grpc::CallbackServerContext* ctx, const v1::StreamContainerStatsRequest* req) override;
  grpc::ServerUnaryReactor* PodSandboxStats(grpc::CallbackServerContext* ctx, const v1::PodSandboxStatsRequest* req, v1::PodSandboxStatsResponse* resp) override;
  grpc::ServerUnaryReactor* ListPodSandboxStats(grpc::CallbackServerContext* ctx, const v1::ListPodSandboxStatsRequest* req, v1::ListPodSandboxStatsResponse* resp) override;
  grpc::ServerWriteReactor<v1::StreamPodSandboxStatsResponse>* StreamPodSandboxStats(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxStatsRequest* req) override;
  grpc::ServerUnaryReactor* UpdateRuntimeConfig(grpc::CallbackServerContext* ctx, const v1::UpdateRuntimeConfigRequest* req, v1::UpdateRuntimeConfigResponse* resp) override;
  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* ctx, const v1::StatusRequest* req, v1::StatusResponse* resp) override;
  grpc::ServerUnaryReactor* CheckpointContainer(grpc::CallbackServerContext* ctx, const v1::CheckpointContainerRequest* req, v1::CheckpointContainerResponse* resp) override;
  grpc::ServerWriteReactor<v1::ContainerEventResponse>* GetContainerEvents(grpc::CallbackServerContext* ctx, const v1::GetEventsRequest* req) override;
  grpc::ServerUnaryReactor* ListMetricDescriptors(grpc::CallbackServerContext* ctx, const v1::ListMetricDescriptorsRequest* req, v1::ListMetricDescriptorsResponse* resp) override;
  grpc::ServerUnaryReactor* ListPodSandboxMetrics(grpc::CallbackServerContext* ctx, const v1::ListPodSandboxMetricsRequest* req, v1::ListPodSandboxMetricsResponse* resp) override;
  grpc::ServerWriteReactor<v1::StreamPodSandboxMetricsResponse>* StreamPodSandboxMetrics(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxMetricsRequest* req) override;
  grpc::ServerUnaryReactor* RuntimeConfig(grpc::CallbackServerContext* ctx, const v1::RuntimeConfigRequest* req, v1::RuntimeConfigResponse* resp) override;
  grpc::ServerUnaryReactor* UpdatePodSandboxResources(grpc::CallbackServerContext* ctx, const v1::UpdatePodSandboxResourcesRequest* req, v1::UpdatePodSandboxResourcesResponse* resp) override;

 private:
  CriService& service_;
  GrpcOptions options_;
  dispatch::Dispatcher& dispatcher_;
  events::EventHub* events_;
};

class ImageServiceImpl final : public v1::ImageService::CallbackService {
 public:
  ImageServiceImpl(CriService& service, GrpcOptions options, dispatch::Dispatcher& dispatcher)
      : service_(service), options_(options), dispatcher_(dispatcher) {}

  grpc::ServerUnaryReactor* ListImages(grpc::CallbackServerContext* ctx, const v1::ListImagesRequest* req, v1::ListImagesResponse* resp) override;
  grpc::ServerWriteReactor<v1::StreamImagesResponse>* StreamImages(grpc::CallbackServerContext* ctx, const v1::StreamImagesRequest* req) override;
  grpc::ServerUnaryReactor* ImageStatus(grpc::CallbackServerContext* ctx, const v1::ImageStatusRequest* req, v1::ImageStatusResponse* resp) override;
  grpc::ServerUnaryReactor* PullImage(grpc::CallbackServerContext* ctx, const v1::PullImageRequest* req, v1::PullImageResponse* resp) override;
  grpc::ServerUnaryReactor* RemoveImage(grpc::CallbackServerContext* ctx, const v1::RemoveImageRequest* req, v1::RemoveImageResponse* resp) override;
  grpc::ServerUnaryReactor* ImageFsInfo(grpc::CallbackServerContext* ctx, const v1::ImageFsInfoRequest* req, v1::ImageFsInfoResponse* resp) override;

 private:
  CriService& service_;
  GrpcOptions options_;
  dispatch::Dispatcher& dispatcher_;
};

}  // namespace shim

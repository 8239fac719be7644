#include "shim/grpc_services.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "observability/rpc_scope.h"
#include "shim/events/event_hub.h"

namespace shim {

namespace {

common::Context Bounded(grpc::ServerContext* ctx, const GrpcOptions& options) {
  common::Context c;
  c.deadline = std::min(absl::FromChrono(ctx->deadline()), absl::Now() + options.runtime_request_timeout);
  c.is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

// Only the caller's own deadline and cancellation apply (image pulls take long).
common::Context Unbounded(grpc::ServerContext* ctx, const GrpcOptions&) {
  common::Context c;
  c.deadline = absl::FromChrono(ctx->deadline());
  c.is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

template <typename Req, typename Out, typename Fn>
grpc::Status Handle(const char* name, const common::Context& c, const Req& req, Out* out, Fn&& fn) {
  observability::RpcScope scope(name, req);
  absl::Time start = absl::Now();
  grpc::Status status;
  if constexpr (std::is_same_v<decltype(fn(c, req)), absl::Status>) {
    status = ToGrpcStatus(fn(c, req));
  } else {
    auto result = fn(c, req);
    if (result.ok()) {
      *out = std::move(*result);
    } else {
      status = ToGrpcStatus(result.status());
    }
  }
  if (status.ok()) {
    LOG_DEBUG << name << " ok in " << absl::Now() - start;
  } else {
    LOG_DEBUG << name << " failed in " << absl::Now() - start << ": " << status.error_message();
  }
  scope.Finish(status.error_code(), status.error_message());
  return status;
}

// Server-streamed lists go out in batches that stay well below gRPC's 4 MiB message limit.
template <typename Batch, typename Items, typename Writer, typename Field>
absl::Status WriteBatches(const Items& items, Writer* writer, Field field) {
  constexpr int kBatch = 256;
  for (int i = 0; i < items.size(); i += kBatch) {
    Batch batch;
    for (int j = i; j < std::min(items.size(), i + kBatch); ++j) *field(batch)->Add() = items[j];
    if (!writer->Write(batch)) return absl::CancelledError("the client closed the stream");
  }
  return absl::OkStatus();
}

grpc::Status Unimplemented(const char* name) {
  return grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                      std::string(name) + " is not implemented by dockershim yet");
}

// One GetContainerEvents stream: writes its subscription's events one at a time, the
// next once the previous write completed, on gRPC's callback threads. The state is
// shared with the hub's wake-ups, which may come after the stream finished; gRPC runs
// no write completion inline, so writes start under the state's lock, while Finish
// (whose completion may run inline and delete the reactor) is called outside it.
class EventsReactor final : public grpc::ServerWriteReactor<v1::ContainerEventResponse> {
 public:
  explicit EventsReactor(events::EventHub& hub) : hub_(hub), state_(std::make_shared<State>()) {
    state_->reactor = this;
    std::weak_ptr<State> weak = state_;
    std::shared_ptr<events::Subscription> subscription = hub.Subscribe([weak] {
      if (auto state = weak.lock()) Pump(*state);
    });
    {
      std::lock_guard lock(state_->mu);
      state_->subscription = std::move(subscription);
    }
    // The client knows it is subscribed once the headers came.
    StartSendInitialMetadata();
    Pump(*state_);
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard lock(state_->mu);
      state_->writing = false;
      state_->current.reset();
      if (!ok) state_->broken = true;
    }
    Pump(*state_);
  }

  void OnCancel() override {
    {
      std::lock_guard lock(state_->mu);
      state_->broken = true;
    }
    Pump(*state_);
  }

  void OnDone() override {
    std::shared_ptr<events::Subscription> subscription;
    {
      std::lock_guard lock(state_->mu);
      subscription = state_->subscription;
    }
    hub_.Unsubscribe(subscription);
    delete this;
  }

 private:
  struct State {
    std::mutex mu;
    EventsReactor* reactor = nullptr;  // alive until OnDone, which follows Finish
    std::shared_ptr<events::Subscription> subscription;
    events::Event current;  // being written
    bool writing = false, broken = false, finished = false;
  };

  // Starts the next write, or finishes once the subscription ended or the client left.
  static void Pump(State& s) {
    grpc::Status finish;
    EventsReactor* reactor;
    {
      std::lock_guard lock(s.mu);
      if (s.finished || s.writing || !s.subscription) return;
      if (s.broken) {
        finish = grpc::Status(grpc::StatusCode::CANCELLED, "the client closed the stream");
      } else {
        events::Subscription::Next next = s.subscription->Pop();
        if (next.event) {
          s.current = std::move(next.event);
          s.writing = true;
          s.reactor->StartWrite(s.current.get());
          return;
        }
        if (!next.end) return;
        finish = ToGrpcStatus(*next.end);
      }
      s.finished = true;
      reactor = s.reactor;
    }
    reactor->Finish(finish);
  }

  events::EventHub& hub_;
  const std::shared_ptr<State> state_;
};

// A stream that ends at once with `status`.
class FinishedReactor final : public grpc::ServerWriteReactor<v1::ContainerEventResponse> {
 public:
  explicit FinishedReactor(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // Messages quote the request (IDs, names); one quoting a huge request must not exceed
  // what a client accepts as trailing metadata (8 KiB by default).
  constexpr std::size_t kMaxMessage = 4096;
  std::string message(status.message().substr(0, kMaxMessage));
  if (status.message().size() > kMaxMessage)
    absl::StrAppend(&message, "... (", status.message().size() - kMaxMessage, " more bytes)");
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::move(message));
}

grpc::Status RuntimeServiceImpl::Version(grpc::ServerContext* ctx, const v1::VersionRequest* req, v1::VersionResponse* resp) {
  return Handle("Version", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.Version(c, r); });
}

grpc::Status RuntimeServiceImpl::RunPodSandbox(grpc::ServerContext* ctx, const v1::RunPodSandboxRequest* req, v1::RunPodSandboxResponse* resp) {
  return Handle("RunPodSandbox", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.RunPodSandbox(c, r); });
}

grpc::Status RuntimeServiceImpl::StopPodSandbox(grpc::ServerContext* ctx, const v1::StopPodSandboxRequest* req, v1::StopPodSandboxResponse* resp) {
  return Handle("StopPodSandbox", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.StopPodSandbox(c, r); });
}

grpc::Status RuntimeServiceImpl::RemovePodSandbox(grpc::ServerContext* ctx, const v1::RemovePodSandboxRequest* req, v1::RemovePodSandboxResponse* resp) {
  return Handle("RemovePodSandbox", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.RemovePodSandbox(c, r); });
}

grpc::Status RuntimeServiceImpl::PodSandboxStatus(grpc::ServerContext* ctx, const v1::PodSandboxStatusRequest* req, v1::PodSandboxStatusResponse* resp) {
  return Handle("PodSandboxStatus", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.PodSandboxStatus(c, r); });
}

grpc::Status RuntimeServiceImpl::ListPodSandbox(grpc::ServerContext* ctx, const v1::ListPodSandboxRequest* req, v1::ListPodSandboxResponse* resp) {
  return Handle("ListPodSandbox", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListPodSandbox(c, r); });
}

grpc::Status RuntimeServiceImpl::StreamPodSandboxes(grpc::ServerContext* ctx, const v1::StreamPodSandboxesRequest* req, grpc::ServerWriter<v1::StreamPodSandboxesResponse>* writer) {
  return Handle("StreamPodSandboxes", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto& r) {
    v1::ListPodSandboxRequest list;
    *list.mutable_filter() = r.filter();
    auto listed = service_.ListPodSandbox(c, list);
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamPodSandboxesResponse>(listed->items(), writer,
                                                        [](v1::StreamPodSandboxesResponse& b) { return b.mutable_pod_sandboxes(); });
  });
}

grpc::Status RuntimeServiceImpl::CreateContainer(grpc::ServerContext* ctx, const v1::CreateContainerRequest* req, v1::CreateContainerResponse* resp) {
  return Handle("CreateContainer", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.CreateContainer(c, r); });
}

grpc::Status RuntimeServiceImpl::StartContainer(grpc::ServerContext* ctx, const v1::StartContainerRequest* req, v1::StartContainerResponse* resp) {
  return Handle("StartContainer", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.StartContainer(c, r); });
}

grpc::Status RuntimeServiceImpl::StopContainer(grpc::ServerContext* ctx, const v1::StopContainerRequest* req, v1::StopContainerResponse* resp) {
  return Handle("StopContainer", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.StopContainer(c, r); });
}

grpc::Status RuntimeServiceImpl::RemoveContainer(grpc::ServerContext* ctx, const v1::RemoveContainerRequest* req, v1::RemoveContainerResponse* resp) {
  return Handle("RemoveContainer", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.RemoveContainer(c, r); });
}

grpc::Status RuntimeServiceImpl::ListContainers(grpc::ServerContext* ctx, const v1::ListContainersRequest* req, v1::ListContainersResponse* resp) {
  return Handle("ListContainers", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListContainers(c, r); });
}

grpc::Status RuntimeServiceImpl::StreamContainers(grpc::ServerContext* ctx, const v1::StreamContainersRequest* req, grpc::ServerWriter<v1::StreamContainersResponse>* writer) {
  return Handle("StreamContainers", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto& r) {
    v1::ListContainersRequest list;
    *list.mutable_filter() = r.filter();
    auto listed = service_.ListContainers(c, list);
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamContainersResponse>(listed->containers(), writer,
                                                      [](v1::StreamContainersResponse& b) { return b.mutable_containers(); });
  });
}

grpc::Status RuntimeServiceImpl::ContainerStatus(grpc::ServerContext* ctx, const v1::ContainerStatusRequest* req, v1::ContainerStatusResponse* resp) {
  return Handle("ContainerStatus", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ContainerStatus(c, r); });
}

grpc::Status RuntimeServiceImpl::UpdateContainerResources(grpc::ServerContext* ctx, const v1::UpdateContainerResourcesRequest* req, v1::UpdateContainerResourcesResponse* resp) {
  return Handle("UpdateContainerResources", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.UpdateContainerResources(c, r); });
}

grpc::Status RuntimeServiceImpl::ReopenContainerLog(grpc::ServerContext* ctx, const v1::ReopenContainerLogRequest* req, v1::ReopenContainerLogResponse* resp) {
  return Handle("ReopenContainerLog", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ReopenContainerLog(c, r); });
}

grpc::Status RuntimeServiceImpl::ExecSync(grpc::ServerContext* ctx, const v1::ExecSyncRequest* req, v1::ExecSyncResponse* resp) {
  return Handle("ExecSync", Unbounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ExecSync(c, r); });
}

grpc::Status RuntimeServiceImpl::Exec(grpc::ServerContext* ctx, const v1::ExecRequest* req, v1::ExecResponse* resp) {
  return Handle("Exec", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.Exec(c, r); });
}

grpc::Status RuntimeServiceImpl::Attach(grpc::ServerContext* ctx, const v1::AttachRequest* req, v1::AttachResponse* resp) {
  return Handle("Attach", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.Attach(c, r); });
}

grpc::Status RuntimeServiceImpl::PortForward(grpc::ServerContext* ctx, const v1::PortForwardRequest* req, v1::PortForwardResponse* resp) {
  return Handle("PortForward", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.PortForward(c, r); });
}

grpc::Status RuntimeServiceImpl::ContainerStats(grpc::ServerContext* ctx, const v1::ContainerStatsRequest* req, v1::ContainerStatsResponse* resp) {
  return Handle("ContainerStats", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ContainerStats(c, r); });
}

grpc::Status RuntimeServiceImpl::ListContainerStats(grpc::ServerContext* ctx, const v1::ListContainerStatsRequest* req, v1::ListContainerStatsResponse* resp) {
  return Handle("ListContainerStats", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListContainerStats(c, r); });
}

grpc::Status RuntimeServiceImpl::StreamContainerStats(grpc::ServerContext* ctx, const v1::StreamContainerStatsRequest* req, grpc::ServerWriter<v1::StreamContainerStatsResponse>* writer) {
  return Handle("StreamContainerStats", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto& r) {
    v1::ListContainerStatsRequest list;
    *list.mutable_filter() = r.filter();
    auto listed = service_.ListContainerStats(c, list);
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamContainerStatsResponse>(listed->stats(), writer,
                                                          [](v1::StreamContainerStatsResponse& b) { return b.mutable_container_stats(); });
  });
}

grpc::Status RuntimeServiceImpl::PodSandboxStats(grpc::ServerContext* ctx, const v1::PodSandboxStatsRequest* req, v1::PodSandboxStatsResponse* resp) {
  return Handle("PodSandboxStats", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.PodSandboxStats(c, r); });
}

grpc::Status RuntimeServiceImpl::ListPodSandboxStats(grpc::ServerContext* ctx, const v1::ListPodSandboxStatsRequest* req, v1::ListPodSandboxStatsResponse* resp) {
  return Handle("ListPodSandboxStats", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListPodSandboxStats(c, r); });
}

grpc::Status RuntimeServiceImpl::StreamPodSandboxStats(grpc::ServerContext* ctx, const v1::StreamPodSandboxStatsRequest* req, grpc::ServerWriter<v1::StreamPodSandboxStatsResponse>* writer) {
  return Handle("StreamPodSandboxStats", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto& r) {
    v1::ListPodSandboxStatsRequest list;
    *list.mutable_filter() = r.filter();
    auto listed = service_.ListPodSandboxStats(c, list);
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamPodSandboxStatsResponse>(listed->stats(), writer,
                                                           [](v1::StreamPodSandboxStatsResponse& b) { return b.mutable_pod_sandbox_stats(); });
  });
}

grpc::Status RuntimeServiceImpl::UpdateRuntimeConfig(grpc::ServerContext* ctx, const v1::UpdateRuntimeConfigRequest* req, v1::UpdateRuntimeConfigResponse* resp) {
  return Handle("UpdateRuntimeConfig", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.UpdateRuntimeConfig(c, r); });
}

grpc::Status RuntimeServiceImpl::Status(grpc::ServerContext* ctx, const v1::StatusRequest* req, v1::StatusResponse* resp) {
  return Handle("Status", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.Status(c, r); });
}

grpc::Status RuntimeServiceImpl::CheckpointContainer(grpc::ServerContext* ctx, const v1::CheckpointContainerRequest* req, v1::CheckpointContainerResponse* resp) {
  // The request's own timeout bounds it, not --runtime-request-timeout.
  return Handle("CheckpointContainer", Unbounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.CheckpointContainer(c, r); });
}

grpc::ServerWriteReactor<v1::ContainerEventResponse>* RuntimeServiceImpl::GetContainerEvents(grpc::CallbackServerContext*, const v1::GetEventsRequest*) {
  if (!events_) return new FinishedReactor(Unimplemented("GetContainerEvents"));
  return new EventsReactor(*events_);
}


grpc::Status RuntimeServiceImpl::ListMetricDescriptors(grpc::ServerContext* ctx, const v1::ListMetricDescriptorsRequest* req, v1::ListMetricDescriptorsResponse* resp) {
  return Handle("ListMetricDescriptors", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListMetricDescriptors(c, r); });
}

grpc::Status RuntimeServiceImpl::ListPodSandboxMetrics(grpc::ServerContext* ctx, const v1::ListPodSandboxMetricsRequest* req, v1::ListPodSandboxMetricsResponse* resp) {
  return Handle("ListPodSandboxMetrics", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListPodSandboxMetrics(c, r); });
}

grpc::Status RuntimeServiceImpl::StreamPodSandboxMetrics(grpc::ServerContext* ctx, const v1::StreamPodSandboxMetricsRequest* req, grpc::ServerWriter<v1::StreamPodSandboxMetricsResponse>* writer) {
  return Handle("StreamPodSandboxMetrics", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto&) {
    auto listed = service_.ListPodSandboxMetrics(c, v1::ListPodSandboxMetricsRequest());
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamPodSandboxMetricsResponse>(listed->pod_metrics(), writer,
                                                             [](v1::StreamPodSandboxMetricsResponse& b) { return b.mutable_pod_sandbox_metrics(); });
  });
}

grpc::Status RuntimeServiceImpl::RuntimeConfig(grpc::ServerContext* ctx, const v1::RuntimeConfigRequest* req, v1::RuntimeConfigResponse* resp) {
  return Handle("RuntimeConfig", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.RuntimeConfig(c, r); });
}

grpc::Status RuntimeServiceImpl::UpdatePodSandboxResources(grpc::ServerContext* ctx, const v1::UpdatePodSandboxResourcesRequest* req, v1::UpdatePodSandboxResourcesResponse* resp) {
  return Handle("UpdatePodSandboxResources", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.UpdatePodSandboxResources(c, r); });
}

grpc::Status ImageServiceImpl::ListImages(grpc::ServerContext* ctx, const v1::ListImagesRequest* req, v1::ListImagesResponse* resp) {
  return Handle("ListImages", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ListImages(c, r); });
}

grpc::Status ImageServiceImpl::StreamImages(grpc::ServerContext* ctx, const v1::StreamImagesRequest* req, grpc::ServerWriter<v1::StreamImagesResponse>* writer) {
  return Handle("StreamImages", Bounded(ctx, options_), *req, writer, [&](const common::Context& c, const auto& r) {
    v1::ListImagesRequest list;
    *list.mutable_filter() = r.filter();
    auto listed = service_.ListImages(c, list);
    if (!listed.ok()) return listed.status();
    return WriteBatches<v1::StreamImagesResponse>(listed->images(), writer,
                                                  [](v1::StreamImagesResponse& b) { return b.mutable_images(); });
  });
}

grpc::Status ImageServiceImpl::ImageStatus(grpc::ServerContext* ctx, const v1::ImageStatusRequest* req, v1::ImageStatusResponse* resp) {
  return Handle("ImageStatus", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ImageStatus(c, r); });
}

grpc::Status ImageServiceImpl::PullImage(grpc::ServerContext* ctx, const v1::PullImageRequest* req, v1::PullImageResponse* resp) {
  return Handle("PullImage", Unbounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.PullImage(c, r); });
}

grpc::Status ImageServiceImpl::RemoveImage(grpc::ServerContext* ctx, const v1::RemoveImageRequest* req, v1::RemoveImageResponse* resp) {
  return Handle("RemoveImage", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.RemoveImage(c, r); });
}

grpc::Status ImageServiceImpl::ImageFsInfo(grpc::ServerContext* ctx, const v1::ImageFsInfoRequest* req, v1::ImageFsInfoResponse* resp) {
  return Handle("ImageFsInfo", Bounded(ctx, options_), *req, resp, [&](const common::Context& c, const auto& r) { return service_.ImageFsInfo(c, r); });
}

}  // namespace shim

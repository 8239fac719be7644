#include "shim/grpc_services.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/no_wait.h"
#include "common/status.h"
#include "observability/families.h"
#include "observability/rpc_scope.h"
#include "shim/events/event_hub.h"

namespace shim {

namespace {

common::Context Bounded(grpc::CallbackServerContext* ctx, const GrpcOptions& options) {
  common::Context c;
  c.deadline = std::min(absl::FromChrono(ctx->deadline()), absl::Now() + options.runtime_request_timeout);
  c.is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

// Only the caller's own deadline and cancellation apply (image pulls take long).
common::Context Unbounded(grpc::CallbackServerContext* ctx, const GrpcOptions&) {
  common::Context c;
  c.deadline = absl::FromChrono(ctx->deadline());
  c.is_cancelled = [ctx] { return ctx->IsCancelled(); };
  return c;
}

// Runs `fn`, its answer into *out. `without_waiting`: in a NoWaitScope, and nullopt
// (nothing counted, logged or put into *out) when it would have waited.
template <typename Req, typename Out, typename Fn>
std::optional<grpc::Status> Handle(const char* name, const common::Context& c, const Req& req, Out* out, Fn& fn,
                                   bool without_waiting) {
  std::optional<common::NoWaitScope> no_wait;
  if (without_waiting) no_wait.emplace();
  observability::RpcScope scope(name, req);
  absl::Time start = absl::Now();
  auto result = fn(c, req);
  if (no_wait && no_wait->wanted_to_wait()) return std::nullopt;
  grpc::Status status;
  if constexpr (std::is_same_v<decltype(result), absl::Status>) {
    status = ToGrpcStatus(result);
  } else if (result.ok()) {
    *out = std::move(*result);
  } else {
    status = ToGrpcStatus(result.status());
  }
  if (status.ok()) {
    LOG_DEBUG << name << " ok in " << absl::Now() - start;
  } else {
    LOG_DEBUG << name << " failed in " << absl::Now() - start << ": " << status.error_message();
  }
  scope.Finish(status.error_code(), status.error_message());
  return status;
}

// A call the dispatcher did not run: counted under its code like one that ran.
grpc::Status Refused(const char* name, const absl::Status& why) {
  grpc::Status status = ToGrpcStatus(why);
  observability::Metrics().cri_requests.With({name, observability::GrpcCodeName(status.error_code())}).Inc();
  LOG_DEBUG << name << " not run: " << why.message();
  return status;
}

// What every dispatched call has: its name, context and request, gRPC's cancellation
// reaching the dispatcher while it waits, and its answer tried at once where its method
// is (lanes.cc), made on a worker otherwise.
template <typename Req, typename Reactor>
class DispatchedCall : public Reactor, public dispatch::Call {
 public:
  DispatchedCall(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
                 grpc::CallbackServerContext* ctx, const Req* req)
      : dispatcher_(dispatcher),
        name_(name),
        lane_(dispatch::LaneOf(name).value()),
        tried_at_once_(dispatch::TriedAtOnce(name)),
        context_(std::move(context)),
        ctx_(ctx),
        req_(req) {}

  void Submit() { dispatcher_.Submit(lane_, *this); }

  bool AnsweredAtOnce() final { return tried_at_once_ && Answer(true); }
  void Run() final { Answer(false); }
  absl::Time deadline() const override { return context_.deadline; }
  bool cancelled() const override { return ctx_->IsCancelled(); }
  void Refuse(const absl::Status& why) override { this->Finish(Refused(name_, why)); }
  void OnCancel() override { dispatcher_.Withdraw(*this); }
  void OnDone() override { delete this; }
  // OnDone and OnCancel run on the gRPC thread that completes the call, as they do for
  // gRPC's own default reactor: both are short and never wait (Withdraw takes the
  // dispatcher's lock, held only to move a call). Otherwise gRPC hands each to its
  // executor thread: one more thread wake-up per call (a profile under a kubelet with 100
  // pods had 7% of the shim's CPU on that thread).
  bool InternalInlineable() override { return true; }

 protected:
  // Runs the call and answers it; false, having answered nothing, when `without_waiting`
  // and it would have waited.
  virtual bool Answer(bool without_waiting) = 0;

  dispatch::Dispatcher& dispatcher_;
  const char* const name_;
  const dispatch::Lane lane_;
  const bool tried_at_once_;
  const common::Context context_;
  grpc::CallbackServerContext* const ctx_;
  const Req* const req_;
};

// A unary call.
template <typename Req, typename Resp, typename Fn>
class UnaryCall final : public DispatchedCall<Req, grpc::ServerUnaryReactor> {
 public:
  UnaryCall(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
            grpc::CallbackServerContext* ctx, const Req* req, Resp* resp, Fn fn)
      : DispatchedCall<Req, grpc::ServerUnaryReactor>(dispatcher, name, std::move(context), ctx, req),
        resp_(resp),
        fn_(std::move(fn)) {}

 private:
  bool Answer(bool without_waiting) override {
    std::optional<grpc::Status> status = Handle(this->name_, this->context_, *this->req_, resp_, fn_, without_waiting);
    if (!status) return false;
    this->Finish(*status);
    return true;
  }

  Resp* const resp_;
  Fn fn_;
};

// A list whose answer may be shared (ListAnswer): parsed from and sent as raw bytes.
template <typename Req, typename Resp, typename Fn>
class ListCall final : public DispatchedCall<Req, grpc::ServerUnaryReactor> {
 public:
  ListCall(dispatch::Dispatcher& dispatcher, const char* name, common::Context context, grpc::CallbackServerContext* ctx,
           std::unique_ptr<const Req> req, grpc::ByteBuffer* resp, Fn fn)
      : DispatchedCall<Req, grpc::ServerUnaryReactor>(dispatcher, name, std::move(context), ctx, req.get()),
        owned_req_(std::move(req)),
        resp_(resp),
        fn_(std::move(fn)) {}

 private:
  bool Answer(bool without_waiting) override {
    ListAnswer<Resp> answer;
    std::optional<grpc::Status> status =
        Handle(this->name_, this->context_, *this->req_, &answer, fn_, without_waiting);
    if (!status) return false;
    if (status->ok()) *status = Send(answer);
    this->Finish(*status);
    return true;
  }

  grpc::Status Send(const ListAnswer<Resp>& answer) {
    if (!answer.wire) {
      bool own_buffer;
      return grpc::SerializationTraits<Resp>::Serialize(*answer.message, resp_, &own_buffer);
    }
    std::call_once(answer.wire->made, [&] { answer.wire->bytes = answer.message->SerializeAsString(); });
    // The slice lends the shared bytes, never written again, and holds them until gRPC
    // has sent them: no copy per call.
    auto* lender = new std::shared_ptr<const WireForm>(answer.wire);
    grpc::Slice bytes(const_cast<char*>((*lender)->bytes.data()), (*lender)->bytes.size(),
                      [](void* held) { delete static_cast<std::shared_ptr<const WireForm>*>(held); }, lender);
    *resp_ = grpc::ByteBuffer(&bytes, 1);
    return grpc::Status::OK;
  }

  const std::unique_ptr<const Req> owned_req_;
  grpc::ByteBuffer* const resp_;
  Fn fn_;
};

template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* List(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
                               grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* raw, grpc::ByteBuffer* resp,
                               Fn fn) {
  auto req = std::make_unique<Req>();
  grpc::ByteBuffer parsed(*raw);  // shares the bytes; Deserialize consumes its argument
  if (!grpc::SerializationTraits<Req>::Deserialize(&parsed, req.get()).ok()) {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(Refused(name, absl::InvalidArgumentError(absl::StrCat(name, ": the request is not a valid message"))));
    return reactor;
  }
  auto* call = new ListCall<Req, Resp, Fn>(dispatcher, name, std::move(context), ctx, std::move(req), resp, std::move(fn));
  call->Submit();
  return call;
}

template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* Unary(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
                                grpc::CallbackServerContext* ctx, const Req* req, Resp* resp, Fn fn) {
  auto* call = new UnaryCall<Req, Resp, Fn>(dispatcher, name, std::move(context), ctx, req, resp, std::move(fn));
  call->Submit();
  return call;
}

// A server-streamed list: the worker makes the list (the call's metrics and trace end
// there); its batches are written from gRPC's threads, each once the previous one
// went out, so that a client that does not read holds no worker.
template <typename Req, typename Batch, typename Fn>
class StreamCall final : public DispatchedCall<Req, grpc::ServerWriteReactor<Batch>> {
 public:
  StreamCall(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
             grpc::CallbackServerContext* ctx, const Req* req, Fn fn)
      : DispatchedCall<Req, grpc::ServerWriteReactor<Batch>>(dispatcher, name, std::move(context), ctx, req),
        fn_(std::move(fn)) {}

  void OnWriteDone(bool ok) override {
    if (!ok) {
      this->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client closed the stream"));
    } else if (++written_ < batches_.size()) {
      this->StartWrite(&batches_[written_]);
    } else {
      this->Finish(grpc::Status::OK);
    }
  }

 private:
  bool Answer(bool without_waiting) override {
    std::optional<grpc::Status> status =
        Handle(this->name_, this->context_, *this->req_, &batches_, fn_, without_waiting);
    if (!status) return false;
    if (!status->ok() || batches_.empty()) {
      this->Finish(*status);
    } else {
      this->StartWrite(&batches_[0]);
    }
    return true;
  }

  Fn fn_;
  std::vector<Batch> batches_;
  std::size_t written_ = 0;
};

template <typename Batch, typename Req, typename Fn>
grpc::ServerWriteReactor<Batch>* Stream(dispatch::Dispatcher& dispatcher, const char* name, common::Context context,
                                        grpc::CallbackServerContext* ctx, const Req* req, Fn fn) {
  auto* call = new StreamCall<Req, Batch, Fn>(dispatcher, name, std::move(context), ctx, req, std::move(fn));
  call->Submit();
  return call;
}

// Server-streamed lists go out in batches that stay well below gRPC's 4 MiB message limit.
template <typename Batch, typename Items, typename Field>
std::vector<Batch> Batches(Items& items, Field field) {
  constexpr int kBatch = 256;
  std::vector<Batch> batches;
  for (int i = 0; i < items.size(); i += kBatch) {
    Batch& batch = batches.emplace_back();
    for (int j = i; j < std::min(items.size(), i + kBatch); ++j) field(batch)->Add(std::move(items[j]));
  }
  return batches;
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

void StopServing(grpc::Server& server, dispatch::Dispatcher& dispatcher, absl::Duration grace) {
  dispatcher.Stop();
  server.Shutdown(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(grace));
  server.Wait();
  dispatcher.Join();
}

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

grpc::ServerUnaryReactor* RuntimeServiceImpl::Version(grpc::CallbackServerContext* ctx, const v1::VersionRequest* req, v1::VersionResponse* resp) {
  return Unary(dispatcher_, "Version", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.Version(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::RunPodSandbox(grpc::CallbackServerContext* ctx, const v1::RunPodSandboxRequest* req, v1::RunPodSandboxResponse* resp) {
  return Unary(dispatcher_, "RunPodSandbox", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.RunPodSandbox(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::StopPodSandbox(grpc::CallbackServerContext* ctx, const v1::StopPodSandboxRequest* req, v1::StopPodSandboxResponse* resp) {
  return Unary(dispatcher_, "StopPodSandbox", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.StopPodSandbox(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::RemovePodSandbox(grpc::CallbackServerContext* ctx, const v1::RemovePodSandboxRequest* req, v1::RemovePodSandboxResponse* resp) {
  return Unary(dispatcher_, "RemovePodSandbox", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.RemovePodSandbox(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::PodSandboxStatus(grpc::CallbackServerContext* ctx, const v1::PodSandboxStatusRequest* req, v1::PodSandboxStatusResponse* resp) {
  return Unary(dispatcher_, "PodSandboxStatus", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.PodSandboxStatus(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ListPodSandbox(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req, grpc::ByteBuffer* resp) {
  return List<v1::ListPodSandboxRequest, v1::ListPodSandboxResponse>(dispatcher_, "ListPodSandbox", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.SharedListPodSandbox(c, r); });
}

grpc::ServerWriteReactor<v1::StreamPodSandboxesResponse>* RuntimeServiceImpl::StreamPodSandboxes(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxesRequest* req) {
  return Stream<v1::StreamPodSandboxesResponse>(dispatcher_, "StreamPodSandboxes", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto& r) -> absl::StatusOr<std::vector<v1::StreamPodSandboxesResponse>> {
    v1::ListPodSandboxRequest list;
    *list.mutable_filter() = r.filter();
    ASSIGN_OR_RETURN(auto listed, service_.ListPodSandbox(c, list));
    return Batches<v1::StreamPodSandboxesResponse>(*listed.mutable_items(), [](v1::StreamPodSandboxesResponse& b) { return b.mutable_pod_sandboxes(); });
  });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::CreateContainer(grpc::CallbackServerContext* ctx, const v1::CreateContainerRequest* req, v1::CreateContainerResponse* resp) {
  return Unary(dispatcher_, "CreateContainer", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.CreateContainer(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::StartContainer(grpc::CallbackServerContext* ctx, const v1::StartContainerRequest* req, v1::StartContainerResponse* resp) {
  return Unary(dispatcher_, "StartContainer", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.StartContainer(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::StopContainer(grpc::CallbackServerContext* ctx, const v1::StopContainerRequest* req, v1::StopContainerResponse* resp) {
  return Unary(dispatcher_, "StopContainer", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.StopContainer(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::RemoveContainer(grpc::CallbackServerContext* ctx, const v1::RemoveContainerRequest* req, v1::RemoveContainerResponse* resp) {
  return Unary(dispatcher_, "RemoveContainer", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.RemoveContainer(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ListContainers(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req, grpc::ByteBuffer* resp) {
  return List<v1::ListContainersRequest, v1::ListContainersResponse>(dispatcher_, "ListContainers", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.SharedListContainers(c, r); });
}

grpc::ServerWriteReactor<v1::StreamContainersResponse>* RuntimeServiceImpl::StreamContainers(grpc::CallbackServerContext* ctx, const v1::StreamContainersRequest* req) {
  return Stream<v1::StreamContainersResponse>(dispatcher_, "StreamContainers", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto& r) -> absl::StatusOr<std::vector<v1::StreamContainersResponse>> {
    v1::ListContainersRequest list;
    *list.mutable_filter() = r.filter();
    ASSIGN_OR_RETURN(auto listed, service_.ListContainers(c, list));
    return Batches<v1::StreamContainersResponse>(*listed.mutable_containers(), [](v1::StreamContainersResponse& b) { return b.mutable_containers(); });
  });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ContainerStatus(grpc::CallbackServerContext* ctx, const v1::ContainerStatusRequest* req, v1::ContainerStatusResponse* resp) {
  return Unary(dispatcher_, "ContainerStatus", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ContainerStatus(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::UpdateContainerResources(grpc::CallbackServerContext* ctx, const v1::UpdateContainerResourcesRequest* req, v1::UpdateContainerResourcesResponse* resp) {
  return Unary(dispatcher_, "UpdateContainerResources", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.UpdateContainerResources(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ReopenContainerLog(grpc::CallbackServerContext* ctx, const v1::ReopenContainerLogRequest* req, v1::ReopenContainerLogResponse* resp) {
  return Unary(dispatcher_, "ReopenContainerLog", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ReopenContainerLog(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ExecSync(grpc::CallbackServerContext* ctx, const v1::ExecSyncRequest* req, v1::ExecSyncResponse* resp) {
  return Unary(dispatcher_, "ExecSync", Unbounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ExecSync(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::Exec(grpc::CallbackServerContext* ctx, const v1::ExecRequest* req, v1::ExecResponse* resp) {
  return Unary(dispatcher_, "Exec", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.Exec(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::Attach(grpc::CallbackServerContext* ctx, const v1::AttachRequest* req, v1::AttachResponse* resp) {
  return Unary(dispatcher_, "Attach", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.Attach(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::PortForward(grpc::CallbackServerContext* ctx, const v1::PortForwardRequest* req, v1::PortForwardResponse* resp) {
  return Unary(dispatcher_, "PortForward", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.PortForward(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ContainerStats(grpc::CallbackServerContext* ctx, const v1::ContainerStatsRequest* req, v1::ContainerStatsResponse* resp) {
  return Unary(dispatcher_, "ContainerStats", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ContainerStats(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ListContainerStats(grpc::CallbackServerContext* ctx, const v1::ListContainerStatsRequest* req, v1::ListContainerStatsResponse* resp) {
  return Unary(dispatcher_, "ListContainerStats", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ListContainerStats(c, r); });
}

grpc::ServerWriteReactor<v1::StreamContainerStatsResponse>* RuntimeServiceImpl::StreamContainerStats(grpc::CallbackServerContext* ctx, const v1::StreamContainerStatsRequest* req) {
  return Stream<v1::StreamContainerStatsResponse>(dispatcher_, "StreamContainerStats", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto& r) -> absl::StatusOr<std::vector<v1::StreamContainerStatsResponse>> {
    v1::ListContainerStatsRequest list;
    *list.mutable_filter() = r.filter();
    ASSIGN_OR_RETURN(auto listed, service_.ListContainerStats(c, list));
    return Batches<v1::StreamContainerStatsResponse>(*listed.mutable_stats(), [](v1::StreamContainerStatsResponse& b) { return b.mutable_container_stats(); });
  });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::PodSandboxStats(grpc::CallbackServerContext* ctx, const v1::PodSandboxStatsRequest* req, v1::PodSandboxStatsResponse* resp) {
  return Unary(dispatcher_, "PodSandboxStats", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.PodSandboxStats(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ListPodSandboxStats(grpc::CallbackServerContext* ctx, const v1::ListPodSandboxStatsRequest* req, v1::ListPodSandboxStatsResponse* resp) {
  return Unary(dispatcher_, "ListPodSandboxStats", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ListPodSandboxStats(c, r); });
}

grpc::ServerWriteReactor<v1::StreamPodSandboxStatsResponse>* RuntimeServiceImpl::StreamPodSandboxStats(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxStatsRequest* req) {
  return Stream<v1::StreamPodSandboxStatsResponse>(dispatcher_, "StreamPodSandboxStats", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto& r) -> absl::StatusOr<std::vector<v1::StreamPodSandboxStatsResponse>> {
    v1::ListPodSandboxStatsRequest list;
    *list.mutable_filter() = r.filter();
    ASSIGN_OR_RETURN(auto listed, service_.ListPodSandboxStats(c, list));
    return Batches<v1::StreamPodSandboxStatsResponse>(*listed.mutable_stats(), [](v1::StreamPodSandboxStatsResponse& b) { return b.mutable_pod_sandbox_stats(); });
  });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::UpdateRuntimeConfig(grpc::CallbackServerContext* ctx, const v1::UpdateRuntimeConfigRequest* req, v1::UpdateRuntimeConfigResponse* resp) {
  return Unary(dispatcher_, "UpdateRuntimeConfig", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.UpdateRuntimeConfig(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::Status(grpc::CallbackServerContext* ctx, const v1::StatusRequest* req, v1::StatusResponse* resp) {
  return Unary(dispatcher_, "Status", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.Status(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::CheckpointContainer(grpc::CallbackServerContext* ctx, const v1::CheckpointContainerRequest* req, v1::CheckpointContainerResponse* resp) {
  // The request's own timeout bounds it, not --runtime-request-timeout.
  return Unary(dispatcher_, "CheckpointContainer", Unbounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.CheckpointContainer(c, r); });
}

grpc::ServerWriteReactor<v1::ContainerEventResponse>* RuntimeServiceImpl::GetContainerEvents(grpc::CallbackServerContext*, const v1::GetEventsRequest*) {
  if (!events_) return new FinishedReactor(Unimplemented("GetContainerEvents"));
  return new EventsReactor(*events_);
}


grpc::ServerUnaryReactor* RuntimeServiceImpl::ListMetricDescriptors(grpc::CallbackServerContext* ctx, const v1::ListMetricDescriptorsRequest* req, v1::ListMetricDescriptorsResponse* resp) {
  return Unary(dispatcher_, "ListMetricDescriptors", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ListMetricDescriptors(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::ListPodSandboxMetrics(grpc::CallbackServerContext* ctx, const v1::ListPodSandboxMetricsRequest* req, v1::ListPodSandboxMetricsResponse* resp) {
  return Unary(dispatcher_, "ListPodSandboxMetrics", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ListPodSandboxMetrics(c, r); });
}

grpc::ServerWriteReactor<v1::StreamPodSandboxMetricsResponse>* RuntimeServiceImpl::StreamPodSandboxMetrics(grpc::CallbackServerContext* ctx, const v1::StreamPodSandboxMetricsRequest* req) {
  return Stream<v1::StreamPodSandboxMetricsResponse>(dispatcher_, "StreamPodSandboxMetrics", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto&) -> absl::StatusOr<std::vector<v1::StreamPodSandboxMetricsResponse>> {
    ASSIGN_OR_RETURN(auto listed, service_.ListPodSandboxMetrics(c, v1::ListPodSandboxMetricsRequest()));
    return Batches<v1::StreamPodSandboxMetricsResponse>(*listed.mutable_pod_metrics(), [](v1::StreamPodSandboxMetricsResponse& b) { return b.mutable_pod_sandbox_metrics(); });
  });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::RuntimeConfig(grpc::CallbackServerContext* ctx, const v1::RuntimeConfigRequest* req, v1::RuntimeConfigResponse* resp) {
  return Unary(dispatcher_, "RuntimeConfig", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.RuntimeConfig(c, r); });
}

grpc::ServerUnaryReactor* RuntimeServiceImpl::UpdatePodSandboxResources(grpc::CallbackServerContext* ctx, const v1::UpdatePodSandboxResourcesRequest* req, v1::UpdatePodSandboxResourcesResponse* resp) {
  return Unary(dispatcher_, "UpdatePodSandboxResources", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.UpdatePodSandboxResources(c, r); });
}

grpc::ServerUnaryReactor* ImageServiceImpl::ListImages(grpc::CallbackServerContext* ctx, const v1::ListImagesRequest* req, v1::ListImagesResponse* resp) {
  return Unary(dispatcher_, "ListImages", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ListImages(c, r); });
}

grpc::ServerWriteReactor<v1::StreamImagesResponse>* ImageServiceImpl::StreamImages(grpc::CallbackServerContext* ctx, const v1::StreamImagesRequest* req) {
  return Stream<v1::StreamImagesResponse>(dispatcher_, "StreamImages", Bounded(ctx, options_), ctx, req,
                [this](const common::Context& c, const auto& r) -> absl::StatusOr<std::vector<v1::StreamImagesResponse>> {
    v1::ListImagesRequest list;
    *list.mutable_filter() = r.filter();
    ASSIGN_OR_RETURN(auto listed, service_.ListImages(c, list));
    return Batches<v1::StreamImagesResponse>(*listed.mutable_images(), [](v1::StreamImagesResponse& b) { return b.mutable_images(); });
  });
}

grpc::ServerUnaryReactor* ImageServiceImpl::ImageStatus(grpc::CallbackServerContext* ctx, const v1::ImageStatusRequest* req, v1::ImageStatusResponse* resp) {
  return Unary(dispatcher_, "ImageStatus", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ImageStatus(c, r); });
}

grpc::ServerUnaryReactor* ImageServiceImpl::PullImage(grpc::CallbackServerContext* ctx, const v1::PullImageRequest* req, v1::PullImageResponse* resp) {
  return Unary(dispatcher_, "PullImage", Unbounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.PullImage(c, r); });
}

grpc::ServerUnaryReactor* ImageServiceImpl::RemoveImage(grpc::CallbackServerContext* ctx, const v1::RemoveImageRequest* req, v1::RemoveImageResponse* resp) {
  return Unary(dispatcher_, "RemoveImage", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.RemoveImage(c, r); });
}

grpc::ServerUnaryReactor* ImageServiceImpl::ImageFsInfo(grpc::CallbackServerContext* ctx, const v1::ImageFsInfoRequest* req, v1::ImageFsInfoResponse* resp) {
  return Unary(dispatcher_, "ImageFsInfo", Bounded(ctx, options_), ctx, req, resp,
               [this](const common::Context& c, const auto& r) { return service_.ImageFsInfo(c, r); });
}

}  // namespace shim

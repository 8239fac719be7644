#include "shim/migrate/cri_snapshot.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "api/cri.h"

namespace shim::migrate {

namespace v1 = runtime::v1;

namespace {

std::unique_ptr<grpc::ClientContext> Deadline(absl::Time deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(deadline));
  ctx->set_wait_for_ready(true);  // a runtime that is starting is waited for, to the deadline
  return ctx;
}

absl::Status Failed(const std::string& socket_path, const char* call, const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(call, " on ", socket_path, ": ", s.error_message()));
}

}  // namespace

absl::StatusOr<Snapshot> TakeSnapshot(const std::string& socket_path, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto channel = grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials());
  auto stub = v1::RuntimeService::NewStub(channel);
  Snapshot snapshot;

  v1::ListPodSandboxResponse pods;
  if (grpc::Status s = stub->ListPodSandbox(Deadline(deadline).get(), v1::ListPodSandboxRequest(), &pods); !s.ok())
    return Failed(socket_path, "ListPodSandbox", s);
  // Each status call gets a moment of its own even when the wait for the runtime took most of the time.
  const absl::Time calls_deadline = std::max(deadline, absl::Now() + absl::Seconds(30));
  for (const v1::PodSandbox& pod : pods.items()) {
    PodRecord record;
    record.id = pod.id();
    record.name = pod.metadata().name();
    record.namespace_ = pod.metadata().namespace_();
    record.ready = pod.state() == v1::SANDBOX_READY;
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(pod.id());
    v1::PodSandboxStatusResponse status;
    grpc::Status s = stub->PodSandboxStatus(Deadline(calls_deadline).get(), req, &status);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) continue;  // removed meanwhile
    if (!s.ok()) return Failed(socket_path, "PodSandboxStatus", s);
    record.host_network =
        status.status().linux().namespaces().options().network() == v1::NamespaceMode::NODE;
    if (!status.status().network().ip().empty()) record.ips.push_back(status.status().network().ip());
    for (const v1::PodIP& ip : status.status().network().additional_ips()) record.ips.push_back(ip.ip());
    snapshot.pods.push_back(std::move(record));
  }

  v1::ListContainersResponse containers;
  if (grpc::Status s = stub->ListContainers(Deadline(calls_deadline).get(), v1::ListContainersRequest(), &containers);
      !s.ok())
    return Failed(socket_path, "ListContainers", s);
  for (const v1::Container& c : containers.containers())
    snapshot.containers.push_back({c.id(), c.pod_sandbox_id(), c.metadata().name(), v1::ContainerState_Name(c.state())});
  return snapshot;
}

}  // namespace shim::migrate

#include "containerdclient/containerd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "containerd/introspection.grpc.pb.h"
#include "containerd/snapshots.grpc.pb.h"

namespace containerdclient {
namespace {

namespace introspection = ::containerd::services::introspection::v1;
namespace snapshots = ::containerd::services::snapshots::v1;

// containerd's request header that names the namespace a call is about.
constexpr char kNamespaceHeader[] = "containerd-namespace";

class GrpcContainerdClient : public ContainerdClient {
 public:
  explicit GrpcContainerdClient(std::string address)
      : address_(std::move(address)),
        channel_(grpc::CreateChannel(absl::StrCat("unix:", address_), grpc::InsecureChannelCredentials())),
        introspection_(introspection::Introspection::NewStub(channel_)),
        snapshots_(snapshots::Snapshots::NewStub(channel_)) {}

  absl::StatusOr<std::string> PluginRoot(const common::Context& ctx, const std::string& type,
                                         const std::string& id) override {
    grpc::ClientContext call;
    const bool capped = Prepare(ctx, call);
    introspection::PluginsRequest req;
    introspection::PluginsResponse resp;
    grpc::Status status = introspection_->Plugins(&call, req, &resp);
    if (!status.ok()) return Error(status, capped, "list its plugins");
    for (const introspection::Plugin& plugin : resp.plugins()) {
      if (plugin.type() != type || plugin.id() != id) continue;
      if (plugin.has_init_err() && plugin.init_err().code() != 0) {
        return absl::FailedPreconditionError(absl::StrCat("containerd at ", address_, ": plugin ", type, ".", id,
                                                          " did not load: ", plugin.init_err().message()));
      }
      const auto root = plugin.exports().find("root");
      if (root == plugin.exports().end() || root->second.empty()) break;
      return root->second;
    }
    return absl::NotFoundError(
        absl::StrCat("containerd at ", address_, " has no plugin ", type, ".", id, " that says where its data is"));
  }

  absl::StatusOr<std::vector<Mount>> SnapshotMounts(const common::Context& ctx, const std::string& ns,
                                                    const std::string& snapshotter, const std::string& key) override {
    grpc::ClientContext call;
    const bool capped = Prepare(ctx, call);
    call.AddMetadata(kNamespaceHeader, ns);
    snapshots::MountsRequest req;
    req.set_snapshotter(snapshotter);
    req.set_key(key);
    snapshots::MountsResponse resp;
    grpc::Status status = snapshots_->Mounts(&call, req, &resp);
    if (!status.ok()) return Error(status, capped, absl::StrCat("read the mounts of snapshot ", key));
    std::vector<Mount> mounts;
    for (const snapshots::Mount& m : resp.mounts()) {
      mounts.push_back(Mount{m.type(), m.source(), {m.options().begin(), m.options().end()}});
    }
    return mounts;
  }

 private:
  // Sets the call's deadline: the caller's, or kCallTimeout from now when that comes
  // first (then true).
  static bool Prepare(const common::Context& ctx, grpc::ClientContext& call) {
    const absl::Time capped = absl::Now() + kCallTimeout;
    const bool cap_first = capped < ctx.deadline;
    call.set_deadline(absl::ToChronoTime(cap_first ? capped : ctx.deadline));
    return cap_first;
  }

  absl::Status Error(const grpc::Status& status, bool capped, const std::string& what) const {
    const std::string message = absl::StrCat("containerd at ", address_, ": cannot ", what, ": ", status.error_message());
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      if (!capped) return absl::DeadlineExceededError(message);
      return absl::UnavailableError(absl::StrCat("containerd at ", address_, " did not answer within ",
                                                 absl::FormatDuration(kCallTimeout), " (", what, ")"));
    }
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
  }

  const std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<introspection::Introspection::Stub> introspection_;
  std::unique_ptr<snapshots::Snapshots::Stub> snapshots_;
};

}  // namespace

std::unique_ptr<ContainerdClient> Connect(const std::string& address) {
  return std::make_unique<GrpcContainerdClient>(address);
}

std::string UpperDirOf(const std::vector<Mount>& mounts) {
  constexpr absl::string_view kUpper = "upperdir=";
  for (const Mount& m : mounts) {
    if (m.type != "overlay") continue;
    for (const std::string& option : m.options)
      if (absl::StartsWith(option, kUpper)) return option.substr(kUpper.size());
  }
  if (mounts.size() == 1 && mounts[0].type == "bind") {
    const auto& o = mounts[0].options;
    if (std::find(o.begin(), o.end(), "ro") == o.end()) return mounts[0].source;
  }
  return "";
}

}  // namespace containerdclient

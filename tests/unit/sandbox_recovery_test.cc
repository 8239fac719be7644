// What a shim starting on a root directory does with the sandboxes a crash left
// half-created (sandbox_recovery.cc), each half-state made as RunPodSandbox's steps
// would have left it, on the fake Docker client and a fake network that records
// its attachments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shim/checkpoint_store.h"
#include "shim/creation_markers.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using json = nlohmann::json;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";

// Keeps a record of its attachments, as the CNI cache does; remembers each TearDown.
class RecordingNetwork : public FakeNetwork {
 public:
  std::vector<network::RecordedAttachment> RecordedAttachments() const override {
    std::lock_guard lock(const_cast<std::mutex&>(mu_));
    std::vector<network::RecordedAttachment> out;
    for (const auto& [id, ip] : attached) out.push_back({"fakenet", id});
    return out;
  }
  absl::Status TearDown(const common::Context& ctx, const network::PodNetworkRequest& req,
                        const std::string& network_name) override {
    {
      std::lock_guard lock(mu_);
      teardowns.push_back(req);
    }
    return FakeNetwork::TearDown(ctx, req, network_name);
  }
  std::function<void(const network::PodNetworkRequest&)> on_setup;
  absl::StatusOr<network::PodNetworkStatus> SetUp(const common::Context& ctx,
                                                  const network::PodNetworkRequest& req) override {
    if (on_setup) on_setup(req);
    return FakeNetwork::SetUp(ctx, req);
  }
  std::vector<network::PodNetworkRequest> teardowns;
};

class SandboxRecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/sandbox_recovery_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.AddImage({kPause});
    store_ = std::make_unique<CheckpointStore>(root_);
    ASSERT_TRUE(store_->Init().ok());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A shim (re)starting on root_.
  std::unique_ptr<CriService> Start() {
    Options o;
    o.root_directory = root_;
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    auto s = std::make_unique<CriService>(o, docker_, network_);
    EXPECT_TRUE(s->Init().ok());
    return s;
  }
  // An infra container as RunPodSandbox creates it.
  std::string CreateInfra(const std::string& pod, bool start) {
    json body = {{"Image", kPause},
                 {"Labels",
                  {{kContainerTypeLabel, kContainerTypeSandbox},
                   {kContainerNameLabel, kSandboxContainerName},
                   {kPodNameLabel, pod},
                   {kPodNamespaceLabel, "default"},
                   {kPodUidLabel, "uid-" + pod}}}};
    auto id = docker_.CreateContainer(ctx_, "k8s_POD_" + pod + "_default_uid-" + pod + "_0", body);
    EXPECT_TRUE(id.ok()) << id.status();
    if (start) {
      EXPECT_TRUE(docker_.StartContainer(ctx_, *id).ok());
    }
    return id.value_or("");
  }
  // A pod of the default namespace as the kubelet asks RunPodSandbox for it.
  static v1::RunPodSandboxRequest RunRequest(const std::string& pod) {
    v1::RunPodSandboxRequest req;
    req.mutable_config()->mutable_metadata()->set_name(pod);
    req.mutable_config()->mutable_metadata()->set_namespace_("default");
    req.mutable_config()->mutable_metadata()->set_uid("uid-" + pod);
    req.mutable_config()->mutable_linux();
    return req;
  }
  // RunPodSandbox of pod "p" while dockerd goes away: the start fails, and so does the
  // rollback's remove. The infra container left behind.
  std::string RunWhileDockerGoesAway(CriService& service) {
    const absl::Status away = absl::UnavailableError("Cannot connect to the Docker daemon");
    docker_.FailOperation("StartContainer", away);
    docker_.FailOperation("RemoveContainer", away);
    EXPECT_FALSE(service.RunPodSandbox(ctx_, RunRequest("p")).ok());
    docker_.ClearFailures();
    EXPECT_EQ(docker_.Containers().size(), 1u);
    return docker_.Containers().empty() ? "" : docker_.Containers().begin()->first;
  }
  // The checkpoint RunPodSandbox writes before start (`pending`) or at the end.
  void WriteCheckpoint(const std::string& id, const std::string& pod, bool pending, const std::string& ip = "") {
    SandboxCheckpoint c;
    c.sandbox_id = id;
    c.name = pod;
    c.namespace_ = "default";
    c.uid = "uid-" + pod;
    c.network_plugin = "fake";
    c.pending = pending;
    if (!ip.empty()) {
      c.network_name = "fakenet";
      c.ip = ip;
    }
    ASSERT_TRUE(store_->Write(c).ok());
  }
  std::string Attach(const std::string& id) {
    network::PodNetworkRequest req;
    req.sandbox_id = id;
    auto status = network_.SetUp(ctx_, req);
    EXPECT_TRUE(status.ok());
    return status.ok() ? status->ip : "";
  }
  bool HasCheckpoint(const std::string& id) const { return std::filesystem::exists(root_ + "/sandbox/" + id); }
  bool HasContainer(const std::string& id) const { return docker_.Containers().count(id) > 0; }
  bool Attached(const std::string& id) {
    std::lock_guard lock(network_.mu_);
    return network_.attached.count(id) > 0;
  }
  std::vector<std::string> TornDown() {
    std::lock_guard lock(network_.mu_);
    std::vector<std::string> ids;
    for (const auto& r : network_.teardowns) ids.push_back(r.sandbox_id);
    return ids;
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(5));
  std::string root_;
  FakeDockerClient docker_;
  RecordingNetwork network_;
  std::unique_ptr<CheckpointStore> store_;  // as a shim before the crash wrote them
};

TEST_F(SandboxRecoveryTest, InfraContainerCreatedButNoCheckpointIsRemovedWhenThisShimMarkedIt) {
  const std::string id = CreateInfra("a", /*start=*/false);
  ASSERT_TRUE(CreationMarkers(root_).Mark("k8s_POD_a_default_uid-a_0").ok());
  ASSERT_TRUE(CreationMarkers(root_).Mark("k8s_POD_never-created_default_uid_0").ok());
  // Another shim's on the same Docker, between its create and its checkpoint.
  const std::string others = CreateInfra("b", /*start=*/false);
  Start();
  EXPECT_FALSE(HasContainer(id));
  EXPECT_FALSE(HasCheckpoint(id));
  EXPECT_TRUE(HasContainer(others));
  EXPECT_THAT(CreationMarkers(root_).List(), IsEmpty());
}

TEST_F(SandboxRecoveryTest, RunPodSandboxLeavesNoMarker) {
  auto service = Start();
  v1::RunPodSandboxRequest req = RunRequest("p");
  auto ran = service->RunPodSandbox(ctx_, req);
  ASSERT_TRUE(ran.ok()) << ran.status();
  docker_.FailOperation("StartContainer", absl::InternalError("runc failed"));
  req.mutable_config()->mutable_metadata()->set_name("q");
  ASSERT_FALSE(service->RunPodSandbox(ctx_, req).ok());
  EXPECT_THAT(CreationMarkers(root_).List(), IsEmpty());
}

// dockerd going away in the middle of RunPodSandbox (the soak's dockerd restarts): the
// start fails and so does the rollback's remove. The next start removes the container.
TEST_F(SandboxRecoveryTest, InfraContainerTheRollbackCouldNotRemoveIsRemovedAtTheNextStart) {
  auto service = Start();
  const std::string id = RunWhileDockerGoesAway(*service);
  ASSERT_TRUE(HasContainer(id));
  EXPECT_FALSE(HasCheckpoint(id));
  service.reset();
  Start();
  EXPECT_FALSE(HasContainer(id));
  EXPECT_THAT(CreationMarkers(root_).List(), IsEmpty());
}

// The kubelet's garbage collection removes that container first: its marker goes with it.
TEST_F(SandboxRecoveryTest, MarkerOfAContainerTheRollbackCouldNotRemoveGoesWithRemovePodSandbox) {
  auto service = Start();
  const std::string id = RunWhileDockerGoesAway(*service);
  ASSERT_THAT(CreationMarkers(root_).List(), ElementsAre("k8s_POD_p_default_uid-p_0"));
  v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(id);
  ASSERT_TRUE(service->RemovePodSandbox(ctx_, remove).ok());
  EXPECT_FALSE(HasContainer(id));
  EXPECT_THAT(CreationMarkers(root_).List(), IsEmpty());
}

TEST_F(SandboxRecoveryTest, PendingCheckpointWithUnstartedContainerGoesWithItsContainer) {
  const std::string id = CreateInfra("a", /*start=*/false);
  WriteCheckpoint(id, "a", /*pending=*/true);
  Start();
  EXPECT_FALSE(HasContainer(id));
  EXPECT_FALSE(HasCheckpoint(id));
  // CNI DEL even so: SetUp may have been under way.
  EXPECT_THAT(TornDown(), ElementsAre(id));
  EXPECT_EQ(network_.teardowns[0].netns_path, "");
}

TEST_F(SandboxRecoveryTest, RunningSandboxWhoseNetworkSetUpNeverFinishedIsTornDownInItsNamespace) {
  const std::string id = CreateInfra("a", /*start=*/true);
  WriteCheckpoint(id, "a", /*pending=*/true);
  Attach(id);  // the plugin had allocated an address, the last checkpoint write never came
  Start();
  EXPECT_FALSE(HasContainer(id));
  EXPECT_FALSE(HasCheckpoint(id));
  EXPECT_FALSE(Attached(id));
  ASSERT_THAT(TornDown(), ElementsAre(id));
  EXPECT_EQ(network_.teardowns[0].netns_path, "/proc/4242/ns/net");
  EXPECT_EQ(network_.teardowns[0].pod_name, "a");
  EXPECT_EQ(network_.teardowns[0].pod_uid, "uid-a");
}

TEST_F(SandboxRecoveryTest, PendingCheckpointWithoutContainerIsReleasedAndDeleted) {
  const std::string id = std::string(64, 'c');
  WriteCheckpoint(id, "a", /*pending=*/true);
  Attach(id);
  Start();
  EXPECT_FALSE(HasCheckpoint(id));
  EXPECT_FALSE(Attached(id));
  EXPECT_THAT(TornDown(), ElementsAre(id));
}

TEST_F(SandboxRecoveryTest, AttachmentOfASandboxThatVanishedIsReleasedOthersAreNot) {
  const std::string gone = std::string(64, 'd');
  Attach(gone);  // neither a container nor a checkpoint any more
  const std::string live = CreateInfra("live", /*start=*/true);
  WriteCheckpoint(live, "live", /*pending=*/false, Attach(live));
  const std::string container_gone = std::string(64, 'e');  // removed behind the shim's back
  WriteCheckpoint(container_gone, "kept", /*pending=*/false, Attach(container_gone));
  Start();
  EXPECT_FALSE(Attached(gone));
  EXPECT_THAT(TornDown(), ElementsAre(gone));
  EXPECT_TRUE(Attached(live));
  EXPECT_TRUE(HasContainer(live));
  EXPECT_TRUE(HasCheckpoint(live));
  // The kubelet still lists that pod; its Stop/Remove releases the network.
  EXPECT_TRUE(Attached(container_gone));
  EXPECT_TRUE(HasCheckpoint(container_gone));
}

TEST_F(SandboxRecoveryTest, CompleteSandboxesStoppedOrRunningAreLeftAlone) {
  const std::string running = CreateInfra("running", /*start=*/true);
  WriteCheckpoint(running, "running", /*pending=*/false, Attach(running));
  const std::string stopped = CreateInfra("stopped", /*start=*/true);
  WriteCheckpoint(stopped, "stopped", /*pending=*/false);
  ASSERT_TRUE(docker_.StopContainer(ctx_, stopped, {0}).ok());
  Start();
  EXPECT_TRUE(HasContainer(running));
  EXPECT_TRUE(HasContainer(stopped));
  EXPECT_TRUE(HasCheckpoint(running));
  EXPECT_TRUE(HasCheckpoint(stopped));
  EXPECT_THAT(TornDown(), IsEmpty());
}

TEST_F(SandboxRecoveryTest, RunPodSandboxKeepsItsCheckpointPendingUntilTheNetworkIsUp) {
  auto service = Start();
  bool pending_during_setup = false;
  network_.on_setup = [&](const network::PodNetworkRequest& req) {
    std::ifstream in(root_ + "/sandbox/" + req.sandbox_id);
    auto c = DecodeCheckpoint(std::string(std::istreambuf_iterator<char>(in), {}));
    pending_during_setup = c.ok() && c->pending;
  };
  v1::RunPodSandboxRequest req = RunRequest("p");
  auto ran = service->RunPodSandbox(ctx_, req);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_TRUE(pending_during_setup);
  CheckpointStore fresh(root_);
  auto c = fresh.Read(ran->pod_sandbox_id());
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->pending);
  EXPECT_FALSE(c->ip.empty());
  // A host-network pod, which has no network step, ends complete too.
  req.mutable_config()->mutable_metadata()->set_name("h");
  req.mutable_config()->mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(
      v1::NODE);
  auto host = service->RunPodSandbox(ctx_, req);
  ASSERT_TRUE(host.ok()) << host.status();
  auto hc = fresh.Read(host->pod_sandbox_id());
  ASSERT_TRUE(hc.ok());
  EXPECT_FALSE(hc->pending);
  // And a restart leaves both alone.
  service.reset();
  Start();
  EXPECT_TRUE(HasContainer(ran->pod_sandbox_id()));
  EXPECT_TRUE(HasContainer(host->pod_sandbox_id()));
  EXPECT_TRUE(Attached(ran->pod_sandbox_id()));
}

TEST_F(SandboxRecoveryTest, DockerDownAtStartLeavesEverythingForLater) {
  const std::string id = CreateInfra("a", /*start=*/false);
  WriteCheckpoint(id, "a", /*pending=*/true);
  docker_.FailOperation("ListContainers", absl::UnavailableError("Cannot connect to the Docker daemon"));
  Start();
  EXPECT_TRUE(HasContainer(id));
  EXPECT_TRUE(HasCheckpoint(id));
  docker_.ClearFailures();
  Start();
  EXPECT_FALSE(HasContainer(id));
  EXPECT_FALSE(HasCheckpoint(id));
}

TEST_F(SandboxRecoveryTest, CheckpointWriteInterruptedByACrashIsDeleted) {
  const std::string tmp = root_ + "/sandbox/" + std::string(64, 'a') + ".tmp";
  std::ofstream(tmp) << "{\"version\"";
  Start();
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

TEST_F(SandboxRecoveryTest, CorruptCheckpointsOlderThanAWeekAreDeleted) {
  const std::string dir = root_ + "/sandbox/";
  const std::string old_file = dir + std::string(64, 'a') + ".corrupt";
  const std::string recent = dir + std::string(64, 'b') + ".corrupt";
  std::ofstream(old_file) << "garbage";
  std::ofstream(recent) << "garbage";
  const auto eight_days_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(8 * 24);
  std::filesystem::last_write_time(old_file, eight_days_ago);
  std::filesystem::last_write_time(recent, std::filesystem::file_time_type::clock::now() - std::chrono::hours(6 * 24));
  // A checkpoint last written long ago and set aside now starts its week now.
  const std::string stale_id = std::string(64, 'f');
  std::ofstream(dir + stale_id) << "{not json";
  std::filesystem::last_write_time(dir + stale_id, eight_days_ago);
  Start();
  EXPECT_FALSE(std::filesystem::exists(old_file));
  EXPECT_TRUE(std::filesystem::exists(recent));
  EXPECT_TRUE(std::filesystem::exists(dir + stale_id + ".corrupt"));
  Start();
  EXPECT_TRUE(std::filesystem::exists(dir + stale_id + ".corrupt"));
}

}  // namespace
}  // namespace shim

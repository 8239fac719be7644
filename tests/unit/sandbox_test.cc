// Pod sandbox RPCs of CriService (RunPodSandbox, StopPodSandbox, RemovePodSandbox,
// PodSandboxStatus, ListPodSandbox) on the fake Docker client and fake network.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shim/checkpoint_store.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using json = nlohmann::json;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";

v1::PodSandboxConfig PodConfig(const std::string& name = "nginx", const std::string& ns = "default",
                               const std::string& uid = "uid-1", uint32_t attempt = 0) {
  v1::PodSandboxConfig config;
  auto* md = config.mutable_metadata();
  md->set_name(name);
  md->set_namespace_(ns);
  md->set_uid(uid);
  md->set_attempt(attempt);
  config.set_hostname(name + "-host");
  (*config.mutable_labels())["app"] = name;
  (*config.mutable_labels())[kPodNameLabel] = name;
  (*config.mutable_labels())[kPodNamespaceLabel] = ns;
  (*config.mutable_labels())[kPodUidLabel] = uid;
  (*config.mutable_annotations())["note"] = "hello";
  auto* pm = config.add_port_mappings();
  pm->set_protocol(v1::TCP);
  pm->set_container_port(80);
  pm->set_host_port(8080);
  config.mutable_linux()->set_cgroup_parent("/kubepods/pod" + uid);
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::POD);
  return config;
}

// FakeNetwork with hooks, and the last TearDown request.
class HookedNetwork : public FakeNetwork {
 public:
  absl::StatusOr<network::PodNetworkStatus> SetUp(const common::Context& ctx,
                                                  const network::PodNetworkRequest& req) override {
    auto result = FakeNetwork::SetUp(ctx, req);
    if (result.ok() && after_setup) after_setup();
    return result;
  }
  absl::Status TearDown(const common::Context& ctx, const network::PodNetworkRequest& req,
                        const std::string& network_name) override {
    last_teardown = req;
    if (on_teardown) on_teardown(req);
    return FakeNetwork::TearDown(ctx, req, network_name);
  }
  std::function<void()> after_setup;
  std::function<void(const network::PodNetworkRequest&)> on_teardown;
  network::PodNetworkRequest last_teardown;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class SandboxServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/sandbox_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    service_ = MakeService();
    docker_.AddImage({kPause});
  }
  void TearDown() override {
    service_.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  // A service over root_, as a shim (re)started on this node would be.
  std::unique_ptr<CriService> MakeService(int oom_floor = -1000) {
    Options o;
    o.root_directory = root_;
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = oom_floor;
    auto s = std::make_unique<CriService>(o, docker_, network_);
    EXPECT_TRUE(s->Init().ok());
    return s;
  }

  absl::StatusOr<std::string> Run(const v1::PodSandboxConfig& config, const std::string& handler = "",
                                  CriService* service = nullptr) {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = config;
    req.set_runtime_handler(handler);
    auto resp = (service ? service : service_.get())->RunPodSandbox(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->pod_sandbox_id();
  }
  absl::Status Stop(const std::string& id, CriService* service = nullptr) {
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    return (service ? service : service_.get())->StopPodSandbox(ctx_, req).status();
  }
  absl::Status Remove(const std::string& id, CriService* service = nullptr) {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    return (service ? service : service_.get())->RemovePodSandbox(ctx_, req).status();
  }
  absl::StatusOr<v1::PodSandboxStatusResponse> Status(const std::string& id, bool verbose = false,
                                                      CriService* service = nullptr) {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(id);
    req.set_verbose(verbose);
    return (service ? service : service_.get())->PodSandboxStatus(ctx_, req);
  }
  absl::StatusOr<v1::ListPodSandboxResponse> List(const v1::PodSandboxFilter& filter = {}) {
    v1::ListPodSandboxRequest req;
    *req.mutable_filter() = filter;
    return service_->ListPodSandbox(ctx_, req);
  }

  std::string SandboxDir() const { return root_ + "/sandbox"; }
  std::string CheckpointPath(const std::string& id) const { return SandboxDir() + "/" + id; }
  bool HasCheckpoint(const std::string& id) const { return std::filesystem::exists(CheckpointPath(id)); }
  SandboxCheckpoint ReadCheckpoint(const std::string& id) const {
    auto c = DecodeCheckpoint(ReadFile(CheckpointPath(id)));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : SandboxCheckpoint();
  }
  std::vector<std::string> CheckpointFiles() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(SandboxDir()))
      names.push_back(e.path().filename().string());
    return names;
  }

  // A container of the pod (as CreateContainer would make it) in the fake.
  std::string AddAppContainer(const std::string& sandbox_id, const std::string& name, bool start) {
    json body = {{"Image", kPause},
                 {"Labels", {{kSandboxIdLabel, sandbox_id}, {kContainerTypeLabel, kContainerTypeContainer}}}};
    auto id = docker_.CreateContainer(ctx_, name, body);
    EXPECT_TRUE(id.ok()) << id.status();
    if (start) {
      EXPECT_TRUE(docker_.StartContainer(ctx_, *id).ok());
    }
    return id.value_or("");
  }

  const FakeDockerClient::FakeContainer& Container(const std::string& id) {
    containers_ = docker_.Containers();
    return containers_.at(id);
  }
  bool HasContainer(const std::string& id) const { return docker_.Containers().count(id) > 0; }
  int TearDownCount(const std::string& id) {
    std::lock_guard lock(network_.mu_);
    return static_cast<int>(std::count_if(network_.calls.begin(), network_.calls.end(), [&](const std::string& c) {
      return c.rfind("TearDown " + id, 0) == 0;
    }));
  }

  // Makes checkpoint writes fail: <root>/sandbox becomes a regular file.
  void BreakCheckpointDir() {
    std::filesystem::remove_all(SandboxDir());
    std::ofstream(SandboxDir()) << "not a directory";
  }
  void RepairCheckpointDir() {
    std::filesystem::remove(SandboxDir());
    std::filesystem::create_directory(SandboxDir());
  }

  // What a failed RunPodSandbox must leave behind: nothing.
  void ExpectNothingLeft() {
    EXPECT_THAT(docker_.Containers(), IsEmpty());
    EXPECT_THAT(CheckpointFiles(), IsEmpty());
    EXPECT_THAT(network_.attached, IsEmpty());
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(5));
  std::string root_;
  FakeDockerClient docker_;
  HookedNetwork network_;
  std::unique_ptr<CriService> service_;
  std::map<std::string, FakeDockerClient::FakeContainer> containers_;
};

// ---------------------------------------------------------------------------
// RunPodSandbox

TEST_F(SandboxServiceTest, RunCreatesStartsAndNetworksTheInfraContainer) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(docker_.CallCount("PullImage"), 0);  // the pause image is present

  auto all = docker_.Containers();
  ASSERT_EQ(all.size(), 1u);
  const auto& c = all.at(*id);
  EXPECT_EQ(c.inspect.name, "/k8s_POD_nginx_default_uid-1_0");
  EXPECT_EQ(c.inspect.config_image, kPause);
  EXPECT_EQ(c.inspect.labels.at(kContainerTypeLabel), kContainerTypeSandbox);
  EXPECT_EQ(c.inspect.labels.at("app"), "nginx");
  EXPECT_EQ(c.inspect.labels.at("annotation.note"), "hello");
  EXPECT_EQ(c.create_body["HostConfig"]["NetworkMode"], "none");
  EXPECT_EQ(c.create_body.value("Hostname", ""), "nginx-host");
  EXPECT_TRUE(c.inspect.state.running);
  EXPECT_EQ(docker_.CallCount("StartContainer"), 1);

  ASSERT_THAT(network_.calls, ElementsAre("SetUp " + *id));
  const network::PodNetworkRequest& net = network_.last_request;
  EXPECT_EQ(net.sandbox_id, *id);
  EXPECT_EQ(net.netns_path, "/proc/4242/ns/net");
  EXPECT_EQ(net.pod_name, "nginx");
  EXPECT_EQ(net.pod_namespace, "default");
  EXPECT_EQ(net.pod_uid, "uid-1");
  EXPECT_EQ(net.cgroup_parent, "/kubepods/poduid-1");
  ASSERT_EQ(net.port_mappings.size(), 1u);
  EXPECT_EQ(net.port_mappings[0].protocol, "tcp");
  EXPECT_EQ(net.port_mappings[0].container_port, 80);
  EXPECT_EQ(net.port_mappings[0].host_port, 8080);
  ASSERT_EQ(network_.attached.count(*id), 1u);
  const std::string ip = network_.attached.at(*id);
  EXPECT_THAT(ip, StartsWith("10.0.0."));

  ASSERT_TRUE(HasCheckpoint(*id));
  SandboxCheckpoint cp = ReadCheckpoint(*id);
  EXPECT_EQ(cp.sandbox_id, *id);
  EXPECT_EQ(cp.ip, ip);
  EXPECT_EQ(cp.network_name, "fakenet");
  EXPECT_EQ(cp.network_plugin, "fake");
  EXPECT_EQ(cp.netns_path, "/proc/4242/ns/net");
  EXPECT_FALSE(cp.host_network);
  EXPECT_FALSE(cp.network_torn_down);
  ASSERT_EQ(cp.port_mappings.size(), 1u);
  EXPECT_EQ(cp.port_mappings[0].host_port, 8080);
}

TEST_F(SandboxServiceTest, StatusOfRunningSandbox) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  auto resp = Status(*id, /*verbose=*/true);
  ASSERT_TRUE(resp.ok()) << resp.status();
  const v1::PodSandboxStatus& st = resp->status();
  EXPECT_EQ(st.id(), *id);
  EXPECT_EQ(st.state(), v1::SANDBOX_READY);
  EXPECT_EQ(st.network().ip(), network_.attached.at(*id));
  EXPECT_THAT(st.network().ip(), StartsWith("10.0.0."));
  EXPECT_EQ(st.metadata().name(), "nginx");
  EXPECT_EQ(st.metadata().namespace_(), "default");
  EXPECT_EQ(st.metadata().uid(), "uid-1");
  EXPECT_EQ(st.metadata().attempt(), 0u);
  EXPECT_GT(st.created_at(), 0);
  EXPECT_EQ(st.labels().at("app"), "nginx");
  EXPECT_EQ(st.labels().count(kContainerTypeLabel), 0u);
  EXPECT_EQ(st.labels().count("annotation.note"), 0u);
  EXPECT_EQ(st.annotations().at("note"), "hello");
  EXPECT_EQ(st.annotations().size(), 1u);
  EXPECT_EQ(st.linux().namespaces().options().network(), v1::POD);
  EXPECT_TRUE(st.runtime_handler().empty());
  ASSERT_TRUE(resp->info().contains("info"));
  json info = json::parse(resp->info().at("info"));
  EXPECT_EQ(info["cniNetwork"], "fakenet");
  EXPECT_EQ(info["netnsPath"], "/proc/4242/ns/net");
  EXPECT_EQ(info["networkMode"], "none");

  // A unique ID prefix works too, as with Docker.
  auto by_prefix = Status(id->substr(0, 12));
  ASSERT_TRUE(by_prefix.ok()) << by_prefix.status();
  EXPECT_EQ(by_prefix->status().id(), *id);
}

TEST_F(SandboxServiceTest, StatusOfUnknownOrNonSandboxIsNotFound) {
  EXPECT_EQ(Status("0123456789ab").status().code(), absl::StatusCode::kNotFound);
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  std::string app = AddAppContainer(*id, "k8s_app_nginx_default_uid-1_0", true);
  EXPECT_EQ(Status(app).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SandboxServiceTest, RunPullsAbsentPauseImageFirst) {
  docker_.RemoveImage(ctx_, kPause, true).IgnoreError();
  ASSERT_FALSE(docker_.HasImage(kPause));
  docker_.AddPullableImage(kPause);
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(docker_.CallCount("PullImage"), 1);
  EXPECT_TRUE(docker_.HasImage(kPause));
  auto calls = docker_.Calls();
  auto pull = std::find(calls.begin(), calls.end(), "PullImage");
  auto create = std::find(calls.begin(), calls.end(), "CreateContainer");
  EXPECT_LT(pull - calls.begin(), create - calls.begin());
  EXPECT_TRUE(docker_.Containers().at(*id).inspect.state.running);
}

TEST_F(SandboxServiceTest, PauseImagePullFailureCreatesNothing) {
  docker_.RemoveImage(ctx_, kPause, true).IgnoreError();
  ASSERT_FALSE(docker_.HasImage(kPause));  // and not pullable
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("pod infra image"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr(kPause));
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 0);
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenCreateFails) {
  docker_.FailOperation("CreateContainer", absl::InternalError("disk full"));
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("create pod infra container"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("disk full"));
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenStartFails) {
  docker_.FailOperation("StartContainer", absl::InternalError("runc: oci runtime error"));
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("start pod infra container"));
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 1);
  EXPECT_EQ(docker_.CallCount("RemoveContainer"), 1);
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenInspectAfterStartFails) {
  docker_.FailOperation("InspectContainer", absl::UnavailableError("connection reset"));
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("inspect pod infra container"));
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenInfraContainerExitsRightAfterStart) {
  docker_.ExitOnStart(true, "exec /pause: exec format error");
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("exited right after start"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("exec format error"));
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

// The kubelet's PLEG relists every second while RunPodSandbox runs. containerd lists a
// sandbox only once RunPodSandbox made it ready; a shim that lists it earlier shows the
// kubelet a NOTREADY sandbox (PLEG "ContainerDied" for it) and then a READY one whose
// status has no IP yet, as kubelet 1.36 logged on scripts/vm.sh's node.
TEST_F(SandboxServiceTest, ListLeavesOutASandboxUntilRunReturns) {
  auto first = Run(PodConfig("first"));
  ASSERT_TRUE(first.ok()) << first.status();
  std::optional<absl::StatusOr<v1::ListPodSandboxResponse>> during;
  network_.after_setup = [&] { during = List(); };
  auto second = Run(PodConfig("second"));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(during.has_value());
  ASSERT_TRUE(during->ok()) << during->status();
  ASSERT_EQ((*during)->items_size(), 1);
  EXPECT_EQ((*during)->items(0).id(), *first);

  auto after = List();
  ASSERT_TRUE(after.ok()) << after.status();
  std::set<std::string> ids;
  for (const auto& s : after->items()) {
    ids.insert(s.id());
    EXPECT_EQ(s.state(), v1::SANDBOX_READY);
  }
  EXPECT_EQ(ids, (std::set<std::string>{*first, *second}));
}

// A sandbox whose RunPodSandbox failed is not hidden from the next list by a leftover.
TEST_F(SandboxServiceTest, ListShowsSandboxesAgainAfterAFailedRun) {
  network_.setup_error = absl::InternalError("plugin bridge: no IP addresses available");
  ASSERT_FALSE(Run(PodConfig()).ok());
  network_.setup_error = absl::OkStatus();
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  auto listed = List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->items_size(), 1);
  EXPECT_EQ(listed->items(0).id(), *id);
}

TEST_F(SandboxServiceTest, RollbackWhenNetworkSetUpFails) {
  network_.setup_error = absl::InternalError("plugin bridge: no IP addresses available");
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("set up pod network"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("no IP addresses available"));
  EXPECT_EQ(docker_.CallCount("StartContainer"), 1);
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenFirstCheckpointWriteFails) {
  BreakCheckpointDir();
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("write pod sandbox checkpoint"));
  EXPECT_EQ(docker_.CallCount("StartContainer"), 0);
  EXPECT_THAT(network_.calls, IsEmpty());
  RepairCheckpointDir();
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RollbackWhenCheckpointWriteAfterNetworkSetUpFails) {
  network_.after_setup = [this] { BreakCheckpointDir(); };
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("write pod sandbox checkpoint"));
  // The network that was set up is torn down again, from the network it joined.
  ASSERT_EQ(network_.calls.size(), 2u);
  EXPECT_THAT(network_.calls[0], StartsWith("SetUp "));
  EXPECT_EQ(network_.calls[1], "TearDown " + network_.calls[0].substr(6) + " fakenet");
  RepairCheckpointDir();
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RunSucceedsAfterARolledBackAttempt) {
  network_.setup_error = absl::InternalError("transient");
  ASSERT_FALSE(Run(PodConfig()).ok());
  network_.setup_error = absl::OkStatus();
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(docker_.Containers().size(), 1u);
  EXPECT_THAT(CheckpointFiles(), ElementsAre(*id));
}

TEST_F(SandboxServiceTest, NetworkNotReadyFailsBeforeAnythingIsCreated) {
  network_.ready = absl::UnavailableError("no CNI configuration in /etc/cni/net.d");
  docker_.RemoveImage(ctx_, kPause, true).IgnoreError();
  docker_.AddPullableImage(kPause);
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("no CNI configuration"));
  EXPECT_EQ(docker_.CallCount("PullImage"), 0);
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 0);
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, PodUserNamespaceIsRefusedBeforeAnythingIsCreated) {
  v1::PodSandboxConfig config = PodConfig();
  auto* userns = config.mutable_linux()->mutable_security_context()->mutable_namespace_options()
                     ->mutable_userns_options();
  userns->set_mode(v1::POD);
  auto* uids = userns->add_uids();
  uids->set_host_id(65536);
  uids->set_length(65536);
  *userns->add_gids() = *uids;
  auto id = Run(config);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(id.status().message()),
              HasSubstr("Docker Engine has no per-pod user namespaces, only the daemon-wide userns-remap"));
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 0);
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();

  userns->set_mode(v1::NODE);  // hostUsers: true
  userns->clear_uids();
  userns->clear_gids();
  EXPECT_TRUE(Run(config).ok());
}

TEST_F(SandboxServiceTest, HostNetworkPodSkipsThePlugin) {
  network_.ready = absl::UnavailableError("no CNI configuration");  // irrelevant to host-network pods
  v1::PodSandboxConfig config = PodConfig();
  config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  auto id = Run(config);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_THAT(network_.calls, IsEmpty());
  const auto& c = Container(*id);
  EXPECT_TRUE(c.inspect.state.running);
  EXPECT_EQ(c.create_body["HostConfig"]["NetworkMode"], "host");
  EXPECT_FALSE(c.create_body.contains("Hostname"));  // Docker refuses it with network mode host
  EXPECT_TRUE(c.inspect.hostname.empty());
  ASSERT_TRUE(HasCheckpoint(*id));
  EXPECT_TRUE(ReadCheckpoint(*id).host_network);
  EXPECT_TRUE(ReadCheckpoint(*id).ip.empty());

  auto st = Status(*id);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status().state(), v1::SANDBOX_READY);
  EXPECT_EQ(st->status().linux().namespaces().options().network(), v1::NODE);
  EXPECT_TRUE(st->status().network().ip().empty());

  ASSERT_TRUE(Stop(*id).ok());
  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_THAT(network_.calls, IsEmpty());
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, OomScoreAdjIsClampedToTheHostFloor) {
  auto clamped = MakeService(/*oom_floor=*/0);
  auto id = Run(PodConfig(), "", clamped.get());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(Container(*id).create_body["HostConfig"]["OomScoreAdj"], 0);

  auto id2 = Run(PodConfig("web", "default", "uid-2"));  // service_ has floor -1000
  ASSERT_TRUE(id2.ok()) << id2.status();
  EXPECT_EQ(Container(*id2).create_body["HostConfig"]["OomScoreAdj"], -998);
}

TEST_F(SandboxServiceTest, RuntimeHandler) {
  docker_.info.runtimes = {"runc", "nvidia"};

  auto plain = Run(PodConfig("a", "default", "uid-a"), "");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(Container(*plain).create_body["HostConfig"].contains("Runtime"));

  auto gpu = Run(PodConfig("b", "default", "uid-b"), "nvidia");
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(Container(*gpu).create_body["HostConfig"]["Runtime"], "nvidia");
  auto st = Status(*gpu);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status().runtime_handler(), "nvidia");

  const size_t before = docker_.Containers().size();
  const int creates = docker_.CallCount("CreateContainer");
  auto bad = Run(PodConfig("c", "default", "uid-c"), "kata");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("kata"));
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("daemon.json"));
  EXPECT_EQ(docker_.Containers().size(), before);
  EXPECT_EQ(docker_.CallCount("CreateContainer"), creates);
  EXPECT_EQ(network_.calls.size(), 2u);  // the two pods above only
}

TEST_F(SandboxServiceTest, ConfigWithoutLinuxSectionGetsThePluginNetwork) {
  v1::PodSandboxConfig config = PodConfig();
  config.clear_linux();
  auto id = Run(config);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(Container(*id).create_body["HostConfig"]["NetworkMode"], "none");
  EXPECT_THAT(network_.calls, ElementsAre("SetUp " + *id));
  EXPECT_TRUE(network_.last_request.cgroup_parent.empty());
  auto st = Status(*id);
  ASSERT_TRUE(st.ok());
  EXPECT_THAT(st->status().network().ip(), StartsWith("10.0.0."));
}

TEST_F(SandboxServiceTest, RunRejectsARelativeLogDirectory) {
  v1::PodSandboxConfig config = PodConfig();
  config.set_log_directory("relative/../../path");
  const absl::Status status = Run(config).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("must be an absolute path"));
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 0);
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RunRejectsMissingConfigOrMetadata) {
  v1::RunPodSandboxRequest req;
  EXPECT_EQ(service_->RunPodSandbox(ctx_, req).status().code(), absl::StatusCode::kInvalidArgument);
  v1::PodSandboxConfig config = PodConfig();
  config.clear_metadata();
  EXPECT_EQ(Run(config).status().code(), absl::StatusCode::kInvalidArgument);
  config = PodConfig();
  config.mutable_metadata()->clear_uid();
  EXPECT_EQ(Run(config).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 0);
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, StaleStoppedContainerWithTheSameNameIsReplaced) {
  json body = {{"Image", kPause}, {"Labels", {{kContainerTypeLabel, kContainerTypeSandbox}}}};
  auto stale = docker_.CreateContainer(ctx_, "k8s_POD_nginx_default_uid-1_0", body);
  ASSERT_TRUE(stale.ok());
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_NE(*id, *stale);
  EXPECT_FALSE(HasContainer(*stale));
  EXPECT_TRUE(Container(*id).inspect.state.running);
  EXPECT_EQ(Container(*id).inspect.name, "/k8s_POD_nginx_default_uid-1_0");
  EXPECT_EQ(docker_.Containers().size(), 1u);
}

TEST_F(SandboxServiceTest, RunningContainerWithTheSameNameIsAlreadyExists) {
  json body = {{"Image", kPause}, {"Labels", {{kContainerTypeLabel, kContainerTypeSandbox}}}};
  auto running = docker_.CreateContainer(ctx_, "k8s_POD_nginx_default_uid-1_0", body);
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE(docker_.StartContainer(ctx_, *running).ok());
  auto id = Run(PodConfig());
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr(*running));
  EXPECT_TRUE(Container(*running).inspect.state.running);
  EXPECT_EQ(docker_.Containers().size(), 1u);
  EXPECT_EQ(docker_.CallCount("RemoveContainer"), 0);
  EXPECT_THAT(network_.calls, IsEmpty());
  EXPECT_THAT(CheckpointFiles(), IsEmpty());
}

// KNOWN BUG (reported to the lead; fails as of this writing): shim/sandbox_run.cc,
// the name-conflict branch of RunPodSandbox. When inspecting the conflicting
// container fails (here UNAVAILABLE), `stale.ok() && stale->state.running` is false,
// so the code force-removes the container by name without knowing its state: a
// transient inspect error kills a RUNNING pod's infra container, leaves its network
// attached and its checkpoint orphaned. It should return the inspect error instead.
TEST_F(SandboxServiceTest, NameConflictWithUninspectableContainerDoesNotRemoveIt) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  docker_.FailOperation("InspectContainer", absl::UnavailableError("connection reset by peer"));
  auto again = Run(PodConfig());
  EXPECT_FALSE(again.ok());
  docker_.ClearFailures();
  ASSERT_TRUE(HasContainer(*id)) << "the running sandbox was force-removed";
  EXPECT_TRUE(Container(*id).inspect.state.running);
  EXPECT_EQ(network_.attached.count(*id), 1u);
  EXPECT_TRUE(HasCheckpoint(*id));
}

// KNOWN BUG (reported to the lead; fails as of this writing): shim/sandbox_run.cc,
// the name-conflict branch of RunPodSandbox replaces a stale (non-running) sandbox
// container with a bare RemoveContainer: when that stale sandbox had been networked
// (it has a checkpoint with an IP), its network is never torn down (IP leaked in
// IPAM) and its checkpoint file stays forever. It should stop/tear down the stale
// sandbox (StopSandbox + checkpoints_.Remove) before removing it.
TEST_F(SandboxServiceTest, ReplacingAStaleNetworkedSandboxTearsDownItsNetwork) {
  auto old_id = Run(PodConfig());
  ASSERT_TRUE(old_id.ok()) << old_id.status();
  ASSERT_TRUE(docker_.StopContainer(ctx_, *old_id, {}).ok());  // the pause process died
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_FALSE(HasContainer(*old_id));
  EXPECT_EQ(network_.attached.count(*old_id), 0u) << "the stale sandbox's IP was leaked";
  EXPECT_FALSE(HasCheckpoint(*old_id)) << "the stale sandbox's checkpoint was left behind";
  EXPECT_EQ(network_.attached.count(*id), 1u);
}

// ---------------------------------------------------------------------------
// StopPodSandbox / RemovePodSandbox

TEST_F(SandboxServiceTest, StopStopsPodContainersTearsDownNetworkOnceAndStopsInfra) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  auto other = Run(PodConfig("other", "default", "uid-o"));
  ASSERT_TRUE(other.ok()) << other.status();
  std::string app1 = AddAppContainer(*id, "k8s_app_nginx_default_uid-1_0", true);
  std::string app2 = AddAppContainer(*id, "k8s_sidecar_nginx_default_uid-1_0", true);
  std::string created_only = AddAppContainer(*id, "k8s_init_nginx_default_uid-1_0", false);
  std::string foreign = AddAppContainer(*other, "k8s_app_other_default_uid-o_0", true);

  bool infra_running_at_teardown = false, apps_running_at_teardown = true;
  network_.on_teardown = [&](const network::PodNetworkRequest&) {
    auto all = docker_.Containers();
    infra_running_at_teardown = all.at(*id).inspect.state.running;
    apps_running_at_teardown = all.at(app1).inspect.state.running || all.at(app2).inspect.state.running;
  };
  ASSERT_TRUE(Stop(*id).ok());
  network_.on_teardown = nullptr;
  // Order: app containers, then the network (while the netns still exists), then the infra container.
  EXPECT_FALSE(apps_running_at_teardown);
  EXPECT_TRUE(infra_running_at_teardown);
  EXPECT_EQ(network_.last_teardown.netns_path, "/proc/4242/ns/net");
  EXPECT_EQ(network_.last_teardown.pod_name, "nginx");
  ASSERT_EQ(network_.last_teardown.port_mappings.size(), 1u);
  EXPECT_EQ(network_.last_teardown.port_mappings[0].host_port, 8080);
  EXPECT_FALSE(Container(app1).inspect.state.running);
  EXPECT_FALSE(Container(app2).inspect.state.running);
  EXPECT_EQ(Container(created_only).inspect.state.status, "created");
  EXPECT_TRUE(Container(foreign).inspect.state.running);
  EXPECT_TRUE(Container(*other).inspect.state.running);
  EXPECT_FALSE(Container(*id).inspect.state.running);
  EXPECT_EQ(TearDownCount(*id), 1);
  EXPECT_THAT(network_.calls, Contains("TearDown " + *id + " fakenet"));
  EXPECT_EQ(network_.attached.count(*id), 0u);
  EXPECT_EQ(network_.attached.count(*other), 1u);

  SandboxCheckpoint cp = ReadCheckpoint(*id);
  EXPECT_TRUE(cp.network_torn_down);
  EXPECT_TRUE(cp.ip.empty());

  auto st = Status(*id);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status().state(), v1::SANDBOX_NOTREADY);
  EXPECT_TRUE(st->status().network().ip().empty());

  // Idempotent, and the network is not torn down twice.
  ASSERT_TRUE(Stop(*id).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
}

TEST_F(SandboxServiceTest, StopKillsThePodsProcessesWithoutAGracePeriod) {
  // The kubelet stopped the app containers with their grace periods already; what is
  // left is force-terminated, so a container that ignores SIGTERM cannot hold the stop.
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  std::string app = AddAppContainer(*id, "k8s_app_nginx_default_uid-1_0", true);
  ASSERT_TRUE(Stop(*id).ok());
  std::vector<std::pair<std::string, int64_t>> stops;
  for (const auto& stop : docker_.Stops()) stops.emplace_back(stop.id, stop.timeout_seconds);
  EXPECT_THAT(stops, ElementsAre(std::pair<std::string, int64_t>(app, 0), std::pair<std::string, int64_t>(*id, 0)));
}

TEST_F(SandboxServiceTest, StopRetriesTheNetworkTeardownAfterAFailure) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  network_.teardown_error = absl::InternalError("plugin portmap: iptables locked");
  absl::Status s = Stop(*id);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("tear down network"));
  EXPECT_FALSE(ReadCheckpoint(*id).network_torn_down);
  network_.teardown_error = absl::OkStatus();
  ASSERT_TRUE(Stop(*id).ok());
  EXPECT_EQ(TearDownCount(*id), 2);
  EXPECT_THAT(network_.attached, IsEmpty());
  EXPECT_FALSE(Container(*id).inspect.state.running);
}

TEST_F(SandboxServiceTest, StopAndRemoveOfUnknownIdsSucceed) {
  EXPECT_TRUE(Stop("0123456789abcdef").ok());
  EXPECT_TRUE(Remove("0123456789abcdef").ok());
  EXPECT_THAT(network_.calls, IsEmpty());
}

TEST_F(SandboxServiceTest, StopOfAnAppContainerIdLeavesItAlone) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  std::string app = AddAppContainer(*id, "k8s_app_nginx_default_uid-1_0", true);
  EXPECT_TRUE(Stop(app).ok());
  EXPECT_TRUE(Remove(app).ok());
  EXPECT_TRUE(HasContainer(app));
  EXPECT_TRUE(Container(app).inspect.state.running);
  EXPECT_TRUE(Container(*id).inspect.state.running);
  EXPECT_EQ(TearDownCount(*id), 0);
}

TEST_F(SandboxServiceTest, EmptyIdsAreInvalidArgument) {
  EXPECT_EQ(Stop("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Remove("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Status("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(docker_.CallCount("InspectContainer"), 0);
}

TEST_F(SandboxServiceTest, RemoveRemovesPodContainersInfraAndCheckpoint) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  auto other = Run(PodConfig("other", "default", "uid-o"));
  ASSERT_TRUE(other.ok()) << other.status();
  std::string app1 = AddAppContainer(*id, "k8s_app_nginx_default_uid-1_0", true);
  std::string app2 = AddAppContainer(*id, "k8s_init_nginx_default_uid-1_0", false);
  std::string foreign = AddAppContainer(*other, "k8s_app_other_default_uid-o_0", true);

  // Without a Stop first: Remove stops what runs.
  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_FALSE(HasContainer(*id));
  EXPECT_FALSE(HasContainer(app1));
  EXPECT_FALSE(HasContainer(app2));
  EXPECT_TRUE(HasContainer(foreign));
  EXPECT_TRUE(HasContainer(*other));
  EXPECT_FALSE(HasCheckpoint(*id));
  EXPECT_TRUE(HasCheckpoint(*other));
  EXPECT_EQ(TearDownCount(*id), 1);
  EXPECT_EQ(network_.attached.count(*id), 0u);
  EXPECT_EQ(Status(*id).status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(Remove(*id).ok());  // idempotent
  ASSERT_TRUE(Stop(*id).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
}

TEST_F(SandboxServiceTest, StopThenRemove) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Stop(*id).ok());
  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
  ExpectNothingLeft();
}

// ---------------------------------------------------------------------------
// Shim restart and damaged state

TEST_F(SandboxServiceTest, RestartedShimStopsAndRemovesSandboxesFromTheCheckpoint) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string ip = network_.attached.at(*id);
  service_.reset();

  auto restarted = MakeService();
  auto st = Status(*id, false, restarted.get());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status().state(), v1::SANDBOX_READY);
  EXPECT_EQ(st->status().network().ip(), ip);

  ASSERT_TRUE(Stop(*id, restarted.get()).ok());
  EXPECT_THAT(network_.calls, Contains("TearDown " + *id + " fakenet"));
  EXPECT_EQ(TearDownCount(*id), 1);
  EXPECT_THAT(network_.attached, IsEmpty());
  ASSERT_TRUE(Remove(*id, restarted.get()).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, RestartedShimTearsDownNetworkOfAVanishedContainer) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  service_.reset();
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, *id, /*force=*/true).ok());  // e.g. docker rm -f

  auto restarted = MakeService();
  ASSERT_TRUE(Stop(*id, restarted.get()).ok());
  EXPECT_THAT(network_.calls, Contains("TearDown " + *id + " fakenet"));
  EXPECT_THAT(network_.attached, IsEmpty());
  ASSERT_TRUE(Remove(*id, restarted.get()).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
  ExpectNothingLeft();
}

TEST_F(SandboxServiceTest, ListShowsASandboxWhoseContainerVanishedAsNotReady) {
  auto id = Run(PodConfig("web", "prod", "uid-9"));
  ASSERT_TRUE(id.ok()) << id.status();
  auto kept = Run(PodConfig("db", "prod", "uid-10"));
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, *id, /*force=*/true).ok());  // e.g. docker rm -f

  auto all = List();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->items_size(), 2);
  const v1::PodSandbox& gone = all->items(0).id() == *id ? all->items(0) : all->items(1);
  EXPECT_EQ(gone.id(), *id);
  EXPECT_EQ(gone.state(), v1::SANDBOX_NOTREADY);
  EXPECT_EQ(gone.metadata().name(), "web");
  EXPECT_EQ(gone.metadata().namespace_(), "prod");
  EXPECT_EQ(gone.metadata().uid(), "uid-9");

  v1::PodSandboxFilter not_ready;
  not_ready.mutable_state()->set_state(v1::SANDBOX_NOTREADY);
  auto listed = List(not_ready);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items_size(), 1);
  EXPECT_EQ(listed->items(0).id(), *id);
  v1::PodSandboxFilter by_prefix;
  by_prefix.set_id(*id);  // the fake's IDs differ only in their last digit
  listed = List(by_prefix);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items_size(), 1);
  EXPECT_EQ(listed->items(0).id(), *id);
  // Checkpoints hold no labels: a selector cannot match them.
  v1::PodSandboxFilter selected;
  (*selected.mutable_label_selector())["app"] = "web";
  listed = List(selected);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->items_size(), 0);
  v1::PodSandboxFilter ready;
  ready.mutable_state()->set_state(v1::SANDBOX_READY);
  listed = List(ready);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items_size(), 1);
  EXPECT_EQ(listed->items(0).id(), *kept);

  // What the kubelet then does: stop (releases the network) and remove.
  ASSERT_TRUE(Stop(*id).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
  ASSERT_TRUE(Remove(*id).ok());
  all = List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->items_size(), 1);
  EXPECT_EQ(all->items(0).id(), *kept);
}

TEST_F(SandboxServiceTest, CorruptCheckpointDoesNotBlockStopOrRemove) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  service_.reset();
  {
    std::ofstream out(CheckpointPath(*id), std::ios::trunc);
    out << "{\"version\":\"dockershim/v1\",\"data\":{\"sandbox_id\":";  // truncated write
  }
  auto restarted = MakeService();

  auto st = Status(*id, true, restarted.get());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status().state(), v1::SANDBOX_READY);
  EXPECT_TRUE(st->status().network().ip().empty());

  ASSERT_TRUE(Stop(*id, restarted.get()).ok());
  // Torn down with the current configuration (no recorded network name).
  EXPECT_THAT(network_.calls, Contains("TearDown " + *id + " "));
  EXPECT_THAT(network_.attached, IsEmpty());
  EXPECT_FALSE(Container(*id).inspect.state.running);
  ASSERT_TRUE(Remove(*id, restarted.get()).ok());
  EXPECT_THAT(docker_.Containers(), IsEmpty());
  EXPECT_FALSE(HasCheckpoint(*id));
}

TEST_F(SandboxServiceTest, CorruptCheckpointTeardownUsesPodLabels) {
  auto id = Run(PodConfig());
  ASSERT_TRUE(id.ok()) << id.status();
  service_.reset();
  {
    std::ofstream out(CheckpointPath(*id), std::ios::trunc);
    out << "garbage";
  }
  auto restarted = MakeService();
  ASSERT_TRUE(Stop(*id, restarted.get()).ok());
  EXPECT_EQ(TearDownCount(*id), 1);
  EXPECT_THAT(network_.attached, IsEmpty());
  // Without a checkpoint, the pod's identity comes from kubelet's labels.
  EXPECT_EQ(network_.last_teardown.sandbox_id, *id);
  EXPECT_EQ(network_.last_teardown.pod_name, "nginx");
  EXPECT_EQ(network_.last_teardown.pod_namespace, "default");
  EXPECT_EQ(network_.last_teardown.pod_uid, "uid-1");
  EXPECT_EQ(network_.last_teardown.netns_path, "/proc/4242/ns/net");
  EXPECT_TRUE(network_.last_teardown.port_mappings.empty());  // were only in the checkpoint
}

// ---------------------------------------------------------------------------
// ListPodSandbox

class SandboxServiceListTest : public SandboxServiceTest {
 protected:
  void SetUp() override {
    SandboxServiceTest::SetUp();
    a_ = Run(PodConfig("a", "ns1", "uid-a")).value_or("");
    b_ = Run(PodConfig("b", "ns1", "uid-b")).value_or("");
    c_ = Run(PodConfig("c", "ns2", "uid-c")).value_or("");
    ASSERT_FALSE(a_.empty() || b_.empty() || c_.empty());
    ASSERT_TRUE(Stop(b_).ok());
    // Labelled as a sandbox, but not named like one (not created by a CRI shim).
    json body = {{"Image", kPause}, {"Labels", {{kContainerTypeLabel, kContainerTypeSandbox}, {"app", "a"}}}};
    auto bogus = docker_.CreateContainer(ctx_, "my-pause", body);
    ASSERT_TRUE(bogus.ok());
    bogus_ = *bogus;
    // An app container of pod a is no sandbox.
    app_ = AddAppContainer(a_, "k8s_app_a_ns1_uid-a_0", true);
  }
  static std::set<std::string> Ids(const v1::ListPodSandboxResponse& resp) {
    std::set<std::string> ids;
    for (const auto& item : resp.items()) ids.insert(item.id());
    return ids;
  }
  std::string a_, b_, c_, bogus_, app_;
};

TEST_F(SandboxServiceListTest, ListsAllSandboxesOnly) {
  auto resp = List();
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{a_, b_, c_}));
  for (const auto& item : resp->items()) {
    EXPECT_GT(item.created_at(), 0);
    EXPECT_EQ(item.labels().count(kContainerTypeLabel), 0u);
    EXPECT_EQ(item.annotations().at("note"), "hello");
    if (item.id() == a_) {
      EXPECT_EQ(item.metadata().name(), "a");
      EXPECT_EQ(item.metadata().namespace_(), "ns1");
      EXPECT_EQ(item.metadata().uid(), "uid-a");
      EXPECT_EQ(item.labels().at("app"), "a");
      EXPECT_EQ(item.state(), v1::SANDBOX_READY);
    }
    if (item.id() == b_) {
      EXPECT_EQ(item.state(), v1::SANDBOX_NOTREADY);
    }
  }
}

TEST_F(SandboxServiceListTest, FiltersByIdPrefix) {
  // The fake's IDs differ only in their last digits: a short prefix matches every
  // sandbox (but still not the bogus one nor the app container), a full ID one.
  v1::PodSandboxFilter filter;
  filter.set_id(a_.substr(0, 12));
  auto resp = List(filter);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{a_, b_, c_}));
  filter.set_id(c_);
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{c_}));
  filter.set_id("ffff");
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_THAT(resp->items(), IsEmpty());
  filter.set_id(app_);
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_THAT(resp->items(), IsEmpty());
}

TEST_F(SandboxServiceListTest, FiltersByState) {
  v1::PodSandboxFilter filter;
  filter.mutable_state()->set_state(v1::SANDBOX_READY);
  auto resp = List(filter);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{a_, c_}));
  filter.mutable_state()->set_state(v1::SANDBOX_NOTREADY);
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{b_}));
}

TEST_F(SandboxServiceListTest, FiltersByLabelSelector) {
  v1::PodSandboxFilter filter;
  (*filter.mutable_label_selector())["app"] = "a";
  auto resp = List(filter);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{a_}));  // not the bogus "my-pause"
  (*filter.mutable_label_selector())[kPodNamespaceLabel] = "ns2";
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_THAT(resp->items(), IsEmpty());
  filter.mutable_label_selector()->clear();
  (*filter.mutable_label_selector())[kPodNamespaceLabel] = "ns1";
  filter.mutable_state()->set_state(v1::SANDBOX_READY);
  resp = List(filter);
  ASSERT_TRUE(resp.ok());
  EXPECT_EQ(Ids(*resp), (std::set<std::string>{a_}));
}

}  // namespace
}  // namespace shim

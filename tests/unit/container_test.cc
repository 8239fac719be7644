// Container RPCs of CriService (CreateContainer, StartContainer, StopContainer,
// RemoveContainer, ContainerStatus, ListContainers, ExecSync) on the fake Docker client.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/oom/kernel_oom_log.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

class ContainerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/container_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.oom_kills = &oom_kills_;
    o.signal_process = [this](int pid, int signal) {
      signalled_.emplace_back(pid, signal);
      return 0;
    };
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});

    pod_.mutable_metadata()->set_name("web");
    pod_.mutable_metadata()->set_namespace_("prod");
    pod_.mutable_metadata()->set_uid("uid-7");
    pod_.set_log_directory(root_ + "/logs/prod_web_uid-7");
    pod_.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod_;
    auto sandbox = service_->RunPodSandbox(ctx_, run);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status();
    sandbox_id_ = sandbox->pod_sandbox_id();
  }
  void TearDown() override {
    service_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  v1::ContainerConfig Config(const std::string& name = "app") {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_metadata()->set_attempt(2);
    c.mutable_image()->set_image(kBusybox);
    c.add_command("sleep");
    c.add_args("600");
    c.set_log_path(name + "/2.log");
    (*c.mutable_labels())["tier"] = "front";
    (*c.mutable_annotations())["owner"] = "team-a";
    return c;
  }
  absl::StatusOr<std::string> Create(const v1::ContainerConfig& config, const std::string& sandbox = "") {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(sandbox.empty() ? sandbox_id_ : sandbox);
    *req.mutable_config() = config;
    *req.mutable_sandbox_config() = pod_;
    auto resp = service_->CreateContainer(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->container_id();
  }
  absl::Status Start(const std::string& id) {
    v1::StartContainerRequest req;
    req.set_container_id(id);
    return service_->StartContainer(ctx_, req).status();
  }
  absl::Status Stop(const std::string& id) {
    v1::StopContainerRequest req;
    req.set_container_id(id);
    req.set_timeout(3);
    return service_->StopContainer(ctx_, req).status();
  }
  absl::Status Remove(const std::string& id) {
    v1::RemoveContainerRequest req;
    req.set_container_id(id);
    return service_->RemoveContainer(ctx_, req).status();
  }
  absl::StatusOr<v1::ContainerStatus> Status(const std::string& id) {
    v1::ContainerStatusRequest req;
    req.set_container_id(id);
    auto resp = service_->ContainerStatus(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->status();
  }
  std::vector<std::string> ListIds(const v1::ContainerFilter& filter = {}) {
    v1::ListContainersRequest req;
    *req.mutable_filter() = filter;
    auto resp = service_->ListContainers(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    std::vector<std::string> ids;
    if (resp.ok()) {
      for (const auto& c : resp->containers()) ids.push_back(c.id());
    }
    return ids;
  }
  absl::StatusOr<v1::ExecSyncResponse> Exec(const std::string& id, std::vector<std::string> cmd, int64_t timeout = 0) {
    v1::ExecSyncRequest req;
    req.set_container_id(id);
    for (auto& c : cmd) req.add_cmd(c);
    req.set_timeout(timeout);
    return service_->ExecSync(ctx_, req);
  }
  std::string CriLogPath(const std::string& name = "app") { return pod_.log_directory() + "/" + name + "/2.log"; }
  size_t AppContainerCount() {
    size_t n = 0;
    for (const auto& [id, c] : docker_.Containers()) n += c.inspect.labels.count(kContainerTypeLabel) &&
                                                         c.inspect.labels.at(kContainerTypeLabel) == kContainerTypeContainer;
    return n;
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  FakeDockerClient docker_;
  FakeNetwork network_;
  std::string root_;
  std::unique_ptr<CriService> service_;
  v1::PodSandboxConfig pod_;
  std::string sandbox_id_;
  std::vector<std::pair<int, int>> signalled_;  // (pid, signal) sent to host processes
  struct FakeOomKills : oom::OomKills {
    bool Saw(const std::string& id) override {
      ++asked;
      return killed.contains(id);
    }
    std::set<std::string> killed;
    int asked = 0;
  } oom_kills_;
};

TEST_F(ContainerServiceTest, CreateNamesLabelsAndJoinsThePod) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  const FakeDockerClient::FakeContainer c = docker_.Containers().at(*id);
  EXPECT_EQ(c.inspect.name, "/k8s_app_web_prod_uid-7_2");
  EXPECT_EQ(c.inspect.labels.at(kContainerTypeLabel), kContainerTypeContainer);
  EXPECT_EQ(c.inspect.labels.at(kSandboxIdLabel), sandbox_id_);
  EXPECT_EQ(c.inspect.labels.at(kContainerLogPathLabel), CriLogPath());
  EXPECT_EQ(c.inspect.labels.at("tier"), "front");
  EXPECT_EQ(c.inspect.labels.at("annotation.owner"), "team-a");
  EXPECT_EQ(c.create_body["HostConfig"]["NetworkMode"], "container:" + sandbox_id_);
  EXPECT_EQ(c.create_body["Entrypoint"], nlohmann::json({"sleep"}));
  EXPECT_EQ(c.create_body["Cmd"], nlohmann::json({"600"}));
}

TEST_F(ContainerServiceTest, CreateTakesThePodNameFromTheSandboxWhenNoConfigIsSent) {
  v1::CreateContainerRequest req;
  req.set_pod_sandbox_id(sandbox_id_.substr(0, 12));
  *req.mutable_config() = Config();
  auto resp = service_->CreateContainer(ctx_, req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(docker_.Containers().at(resp->container_id()).inspect.name, "/k8s_app_web_prod_uid-7_2");
}

TEST_F(ContainerServiceTest, CreateRejectsBadInputAndCreatesNothing) {
  v1::ContainerConfig no_name = Config();
  no_name.mutable_metadata()->set_name("");
  EXPECT_EQ(Create(no_name).status().code(), absl::StatusCode::kInvalidArgument);
  v1::ContainerConfig no_image = Config();
  no_image.mutable_image()->set_image("");
  EXPECT_EQ(Create(no_image).status().code(), absl::StatusCode::kInvalidArgument);

  v1::ContainerConfig missing_image = Config();
  missing_image.mutable_image()->set_image("registry.example/absent:1");
  const absl::Status absent = Create(missing_image).status();
  EXPECT_EQ(absent.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(absent.message(), HasSubstr("registry.example/absent:1"));
  EXPECT_THAT(absent.message(), HasSubstr("pull it"));

  const absl::Status no_sandbox = Create(Config(), "0123456789ab-no-such-pod").status();
  EXPECT_EQ(no_sandbox.code(), absl::StatusCode::kNotFound);

  v1::ContainerConfig relative_mount = Config();
  relative_mount.add_mounts()->set_container_path("relative/path");
  relative_mount.mutable_mounts(0)->set_host_path("/tmp");
  EXPECT_EQ(Create(relative_mount).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(AppContainerCount(), 0u);
}

TEST_F(ContainerServiceTest, CreateMakesAMissingHostPathADirectory) {
  v1::ContainerConfig config = Config();
  auto* mount = config.add_mounts();
  mount->set_host_path(root_ + "/volumes/data");
  mount->set_container_path("/data");
  ASSERT_TRUE(Create(config).ok());
  EXPECT_TRUE(fs::is_directory(root_ + "/volumes/data"));
}

v1::ContainerConfig WithRecursiveReadOnlyMount(v1::ContainerConfig config, const std::string& host_path) {
  auto* mount = config.add_mounts();
  mount->set_host_path(host_path);
  mount->set_container_path("/data");
  mount->set_readonly(true);
  mount->set_recursive_read_only(true);
  return config;
}

TEST_F(ContainerServiceTest, CreateRefusesWhatAnOldEngineCannotDoAndCreatesNothing) {
  // The fake is Docker 20.10 (API 1.41) without CDI.
  const absl::Status rro = Create(WithRecursiveReadOnlyMount(Config(), root_ + "/volumes/data")).status();
  EXPECT_EQ(rro.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rro.message(), HasSubstr("mounts[0].recursive_read_only: Docker Engine 20.10.24 (API 1.41) cannot"));
  v1::ContainerConfig cdi = Config();
  cdi.add_cdi_devices()->set_name("nvidia.com/gpu=0");
  EXPECT_EQ(Create(cdi).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(AppContainerCount(), 0u);
  EXPECT_FALSE(fs::exists(root_ + "/volumes/data"));
}

TEST_F(ContainerServiceTest, CreateForcesRecursiveReadOnlyOnANewerEngine) {
  docker_.version.api_version = "1.51";
  auto id = Create(WithRecursiveReadOnlyMount(Config(), root_ + "/volumes/data"));
  ASSERT_TRUE(id.ok()) << id.status();
  const nlohmann::json mount = docker_.Containers().at(*id).create_body["HostConfig"]["Mounts"][0];
  EXPECT_EQ(mount["ReadOnly"], true);
  EXPECT_EQ(mount["BindOptions"]["ReadOnlyForceRecursive"], true);
  EXPECT_FALSE(mount["BindOptions"].contains("ReadOnlyNonRecursive"));
}

TEST_F(ContainerServiceTest, CreateTwiceWithTheSameNameIsAlreadyExists) {
  ASSERT_TRUE(Create(Config()).ok());
  const absl::Status again = Create(Config()).status();
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.message(), HasSubstr("k8s_app_web_prod_uid-7_2"));
  EXPECT_EQ(AppContainerCount(), 1u);
}

TEST_F(ContainerServiceTest, CreateFailureFromDockerIsReported) {
  docker_.FailOperation("CreateContainer", absl::InternalError("create container x: disk full"));
  const absl::Status failed = Create(Config()).status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.message(), HasSubstr("disk full"));
}

TEST_F(ContainerServiceTest, CreateMakesTheCriLogFileForTheKubelet) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(CriLogPath())));
  EXPECT_EQ(fs::file_size(CriLogPath()), 0u);
  // The kubelet removes log files itself.
  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_TRUE(fs::exists(CriLogPath()));
  EXPECT_EQ(AppContainerCount(), 0u);
}

TEST_F(ContainerServiceTest, CreateReplacesALinkToDockersLogWithAFile) {
  fs::create_directories(fs::path(CriLogPath()).parent_path());
  fs::create_symlink("/var/lib/docker/containers/x/x-json.log", CriLogPath());
  ASSERT_TRUE(Create(Config()).ok());
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(CriLogPath())));
}

TEST_F(ContainerServiceTest, CreateRefusesLogPathsOutsideThePodLogDirectory) {
  v1::ContainerConfig escaping = Config();
  escaping.set_log_path("../../../etc/cron.d/x");
  const absl::Status refused = Create(escaping).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("inside the pod's log directory"));
  v1::ContainerConfig absolute = Config();
  absolute.set_log_path("/etc/passwd");
  EXPECT_EQ(Create(absolute).status().code(), absl::StatusCode::kInvalidArgument);
  pod_.set_log_directory("relative/../../path");
  const absl::Status relative_dir = Create(Config()).status();
  EXPECT_EQ(relative_dir.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(relative_dir.message(), HasSubstr("absolute"));
  EXPECT_EQ(AppContainerCount(), 0u);
}

TEST_F(ContainerServiceTest, CreateUndoesTheContainerWhenItsLogCannotBeMade) {
  // The pod's log directory is a file: nothing can be created under it.
  fs::create_directories(fs::path(pod_.log_directory()).parent_path());
  std::ofstream(pod_.log_directory()) << "not a directory";
  const absl::Status failed = Create(Config()).status();
  EXPECT_EQ(failed.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(failed.message(), HasSubstr("cannot create the container log"));
  EXPECT_EQ(AppContainerCount(), 0u);
}

TEST_F(ContainerServiceTest, StartOfUnknownOrSandboxContainerIsNotFound) {
  EXPECT_EQ(Start("no-such-container").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Start(sandbox_id_).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Start("").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ContainerServiceTest, StartFailureIsReported) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  docker_.FailOperation("StartContainer",
                        absl::InternalError("start container: exec: \"sleep\": executable file not found in $PATH"));
  const absl::Status failed = Start(*id);
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(failed.message(), HasSubstr("executable file not found"));
}

TEST_F(ContainerServiceTest, StopAndRemoveAreIdempotent) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  EXPECT_TRUE(Stop(*id).ok());
  EXPECT_TRUE(Stop(*id).ok());
  EXPECT_TRUE(Remove(*id).ok());
  EXPECT_TRUE(Remove(*id).ok());
  EXPECT_TRUE(Stop(*id).ok());
}

TEST_F(ContainerServiceTest, RemovingAContainerDockerIsAlreadyRemovingWaitsForItToGo) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  // The kubelet's garbage collector and its pod worker remove one dead container at once.
  docker_.FailOperation("RemoveContainer", absl::FailedPreconditionError(absl::StrCat(
                                               "removal of container ", *id, " is already in progress")));
  std::thread other_removal([&] {
    absl::SleepFor(absl::Milliseconds(100));
    docker_.ClearFailures();
    absl::Status removed = docker_.RemoveContainer(ctx_, *id, true);
    EXPECT_TRUE(removed.ok() || absl::IsNotFound(removed)) << removed;
  });
  EXPECT_TRUE(Remove(*id).ok());
  other_removal.join();
  EXPECT_EQ(docker_.Containers().count(*id), 0u);
}

TEST_F(ContainerServiceTest, ARemovalInProgressThatNeverEndsIsReportedAtTheDeadline) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  docker_.FailOperation("RemoveContainer", absl::FailedPreconditionError(absl::StrCat(
                                               "removal of container ", *id, " is already in progress")));
  v1::RemoveContainerRequest req;
  req.set_container_id(*id);
  auto removed = service_->RemoveContainer(common::Context::WithTimeout(absl::Milliseconds(300)), req);
  EXPECT_EQ(removed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(removed.status().message(), HasSubstr("already in progress"));
  EXPECT_EQ(docker_.Containers().count(*id), 1u);
}

TEST_F(ContainerServiceTest, RemoveRefusesThePodInfraContainer) {
  const absl::Status refused = Remove(sandbox_id_);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("RemovePodSandbox"));
  EXPECT_EQ(docker_.Containers().count(sandbox_id_), 1u);
}

TEST_F(ContainerServiceTest, StatusFollowsTheLifecycle) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  auto created = Status(*id);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->state(), v1::CONTAINER_CREATED);
  EXPECT_EQ(created->metadata().name(), "app");
  EXPECT_EQ(created->metadata().attempt(), 2u);
  EXPECT_EQ(created->image().image(), kBusybox);
  EXPECT_EQ(created->log_path(), CriLogPath());
  EXPECT_EQ(created->labels().at("tier"), "front");
  EXPECT_EQ(created->annotations().at("owner"), "team-a");
  EXPECT_EQ(created->labels().count(kSandboxIdLabel), 0u);

  ASSERT_TRUE(Start(*id).ok());
  auto running = Status(*id);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->state(), v1::CONTAINER_RUNNING);
  EXPECT_GT(running->started_at(), 0);

  ASSERT_TRUE(Stop(*id).ok());
  auto exited = Status(*id);
  ASSERT_TRUE(exited.ok());
  EXPECT_EQ(exited->state(), v1::CONTAINER_EXITED);

  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_EQ(Status(*id).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ContainerServiceTest, StatusSaysOOMKilledWhenTheKernelKilledItThoughDockerDoesNot) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  const auto exit_137 = [](dockerclient::ContainerInspect& c) {
    c.state.running = false;
    c.state.status = "exited";
    c.state.exit_code = 137;
    c.state.oom_killed = false;  // containerd missed the cgroup's memory.events
    c.state.finished_at = "2026-12-04T07:00:00.5Z";
  };
  docker_.EditContainer(*id, exit_137);
  auto killed = Status(*id);
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_EQ(killed->reason(), "Error");  // killed by someone else
  EXPECT_EQ(oom_kills_.asked, 1);

  oom_kills_.killed.insert(*id);
  killed = Status(*id);
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_EQ(killed->reason(), "OOMKilled");
  EXPECT_EQ(killed->exit_code(), 137);
}

TEST_F(ContainerServiceTest, StatusOfARunningContainerDoesNotAskTheKernelLog) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  oom_kills_.killed.insert(*id);  // a child process was killed; the container runs on
  auto running = Status(*id);
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(oom_kills_.asked, 0);
}

TEST_F(ContainerServiceTest, StatusOfASandboxIsNotFound) {
  EXPECT_EQ(Status(sandbox_id_).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ContainerServiceTest, ListFiltersByPodStateLabelAndIdPrefix) {
  auto a = Create(Config("a"));
  auto b = Create(Config("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Start(*a).ok());
  v1::ContainerConfig other = Config("c");
  (*other.mutable_labels())["tier"] = "back";
  auto c = Create(other);
  ASSERT_TRUE(c.ok());

  EXPECT_THAT(ListIds(), UnorderedElementsAre(*a, *b, *c));  // never the infra container
  v1::ContainerFilter running;
  running.mutable_state()->set_state(v1::CONTAINER_RUNNING);
  EXPECT_THAT(ListIds(running), ElementsAre(*a));
  v1::ContainerFilter front;
  (*front.mutable_label_selector())["tier"] = "front";
  EXPECT_THAT(ListIds(front), UnorderedElementsAre(*a, *b));
  v1::ContainerFilter by_id;
  by_id.set_id(*c);
  EXPECT_THAT(ListIds(by_id), ElementsAre(*c));
  v1::ContainerFilter by_pod;
  by_pod.set_pod_sandbox_id(sandbox_id_.substr(0, 12));
  EXPECT_THAT(ListIds(by_pod), UnorderedElementsAre(*a, *b, *c));
  v1::ContainerFilter other_pod;
  other_pod.set_pod_sandbox_id("ffffffffffff");
  EXPECT_THAT(ListIds(other_pod), IsEmpty());
}

TEST_F(ContainerServiceTest, UpdateResourcesChangesLimitsAndStatusShowsThem) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  v1::UpdateContainerResourcesRequest req;
  req.set_container_id(*id);
  req.mutable_linux()->set_cpu_shares(512);
  req.mutable_linux()->set_cpu_quota(50000);
  req.mutable_linux()->set_cpu_period(100000);
  req.mutable_linux()->set_memory_limit_in_bytes(256 << 20);
  ASSERT_TRUE(service_->UpdateContainerResources(ctx_, req).ok());
  const nlohmann::json host = docker_.Containers().at(*id).create_body["HostConfig"];
  EXPECT_EQ(host["CpuShares"], 512);
  EXPECT_EQ(host["Memory"], 256 << 20);
  EXPECT_EQ(host["MemorySwap"], 256 << 20);  // no swap, as at create
  auto status = Status(*id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->resources().linux().cpu_shares(), 512);
  EXPECT_EQ(status->resources().linux().cpu_quota(), 50000);
  EXPECT_EQ(status->resources().linux().memory_limit_in_bytes(), 256 << 20);
}

TEST_F(ContainerServiceTest, UpdateResourcesRejectsBadInputAndUnknownContainers) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  v1::UpdateContainerResourcesRequest req;
  req.set_container_id(*id);
  req.mutable_linux()->set_memory_limit_in_bytes(-1);
  EXPECT_EQ(service_->UpdateContainerResources(ctx_, req).status().code(), absl::StatusCode::kInvalidArgument);
  req.mutable_linux()->set_memory_limit_in_bytes(1 << 20);
  req.set_container_id("no-such-container");
  EXPECT_EQ(service_->UpdateContainerResources(ctx_, req).status().code(), absl::StatusCode::kNotFound);
  req.set_container_id(sandbox_id_);  // the infra container is not a CRI container
  EXPECT_EQ(service_->UpdateContainerResources(ctx_, req).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(docker_.CallCount("UpdateContainer"), 0);
}

TEST_F(ContainerServiceTest, ExecSyncReturnsOutputAndExitCode) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  docker_.OnExec([](const std::string&, const std::vector<std::string>& cmd) {
    FakeDockerClient::ExecScript s;
    s.stdout_data = "ran " + cmd.back() + "\n";
    s.stderr_data = "warning\n";
    s.exit_code = 3;
    return s;
  });
  auto r = Exec(*id, {"sh", "-c", "hostname"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout(), "ran hostname\n");
  EXPECT_EQ(r->stderr(), "warning\n");
  EXPECT_EQ(r->exit_code(), 3);
}

TEST_F(ContainerServiceTest, ExecSyncPastItsTimeoutIsDeadlineExceeded) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  docker_.OnExec([](const std::string&, const std::vector<std::string>&) {
    FakeDockerClient::ExecScript s;
    s.hang = true;
    return s;
  });
  const absl::Time start = absl::Now();
  const absl::Status status = Exec(*id, {"sleep", "100"}, 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr("timed out after 1s"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // Docker cannot stop an exec; the shim kills the process by its host PID.
  ASSERT_EQ(signalled_.size(), 1u);
  EXPECT_GT(signalled_[0].first, 0);
  EXPECT_EQ(signalled_[0].second, SIGKILL);
}

TEST_F(ContainerServiceTest, ExecSyncCapsHugeOutput) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(Start(*id).ok());
  docker_.OnExec([](const std::string&, const std::vector<std::string>&) {
    FakeDockerClient::ExecScript s;
    s.stdout_data = std::string(17 << 20, 'o');
    s.stderr_data = "lost";
    return s;
  });
  auto r = Exec(*id, {"yes"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout().size() + r->stderr().size(), size_t{16} << 20);
}

TEST_F(ContainerServiceTest, ExecSyncRejectsBadRequestsClearly) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(Exec(*id, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Exec("", {"true"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Exec(*id, {"true"}, -1).status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status not_running = Exec(*id, {"true"}).status();
  EXPECT_EQ(not_running.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(not_running.message(), HasSubstr("not running"));
  EXPECT_EQ(Exec("no-such-container", {"true"}).status().code(), absl::StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------
// Image volumes

constexpr char kModels[] = "registry.example/models:v1";

class ImageVolumeServiceTest : public ContainerServiceTest {
 protected:
  void SetUp() override {
    ContainerServiceTest::SetUp();
    models_ = docker_.AddImage({kModels});
    docker_.SetImageFiles(models_, {{"weights/", ""}, {"weights/w.bin", "0123"}});
  }
  v1::ContainerConfig WithImageVolume(const std::string& sub_path) {
    v1::ContainerConfig c = Config();
    v1::Mount* m = c.add_mounts();
    m->set_container_path("/models");
    m->mutable_image()->set_image(kModels);
    m->set_image_sub_path(sub_path);
    m->set_readonly(true);
    return c;
  }
  std::string Tree() const { return root_ + "/state/image-volumes/" + models_.substr(7); }
  std::string models_;
};

TEST_F(ImageVolumeServiceTest, BeforeApi148BindsTheUnpackedTreeUntilTheLastUserIsRemoved) {
  auto first = Create(WithImageVolume("weights"));
  ASSERT_TRUE(first.ok()) << first.status();
  const FakeDockerClient::FakeContainer c = docker_.Containers().at(*first);
  EXPECT_EQ(c.create_body["HostConfig"]["Mounts"],
            nlohmann::json::array({{{"Type", "bind"},
                                    {"Source", Tree() + "/rootfs/weights"},
                                    {"Target", "/models"},
                                    {"ReadOnly", true}}}));
  EXPECT_EQ(c.create_body["Labels"][kImageVolumesLabel], models_);
  auto status = Status(*first);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_FALSE(status->labels().contains(kImageVolumesLabel));

  v1::ContainerConfig second_config = WithImageVolume("");
  second_config.mutable_metadata()->set_name("second");
  auto second = Create(second_config);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 1);

  ASSERT_TRUE(Remove(*first).ok());
  EXPECT_TRUE(fs::exists(Tree()));
  ASSERT_TRUE(Remove(*second).ok());
  EXPECT_FALSE(fs::exists(Tree()));
}

TEST_F(ImageVolumeServiceTest, RemovePodSandboxRemovesTheTreesItsContainersBound) {
  ASSERT_TRUE(Create(WithImageVolume("")).ok());
  ASSERT_TRUE(fs::exists(Tree()));
  v1::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(sandbox_id_);
  ASSERT_TRUE(service_->RemovePodSandbox(ctx_, req).ok());
  EXPECT_FALSE(fs::exists(Tree()));
}

TEST_F(ImageVolumeServiceTest, FromApi148DockerMountsTheImage) {
  docker_.version.api_version = "1.48";
  auto id = Create(WithImageVolume("weights"));
  ASSERT_TRUE(id.ok()) << id.status();
  const nlohmann::json body = docker_.Containers().at(*id).create_body;
  EXPECT_EQ(body["HostConfig"]["Mounts"], nlohmann::json::array({{{"Type", "image"},
                                                                  {"Source", models_},
                                                                  {"Target", "/models"},
                                                                  {"ReadOnly", true},
                                                                  {"ImageOptions", {{"Subpath", "weights"}}}}}));
  EXPECT_FALSE(body["Labels"].contains(kImageVolumesLabel));
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 0);
  EXPECT_FALSE(fs::exists(root_ + "/state/image-volumes"));
}

TEST_F(ImageVolumeServiceTest, FromApi148ASecondMountOfTheImageBindsItsTree) {
  docker_.version.api_version = "1.51";
  v1::ContainerConfig c = WithImageVolume("");
  v1::Mount* again = c.add_mounts();
  again->set_container_path("/weights");
  again->mutable_image()->set_image(kModels);
  again->set_image_sub_path("weights");
  auto id = Create(c);
  ASSERT_TRUE(id.ok()) << id.status();
  const nlohmann::json body = docker_.Containers().at(*id).create_body;
  ASSERT_EQ(body["HostConfig"]["Mounts"].size(), 2u);
  EXPECT_EQ(body["HostConfig"]["Mounts"][0]["Type"], "image");
  EXPECT_EQ(body["HostConfig"]["Mounts"][1], nlohmann::json({{"Type", "bind"},
                                                             {"Source", Tree() + "/rootfs/weights"},
                                                             {"Target", "/weights"},
                                                             {"ReadOnly", true}}));
  EXPECT_EQ(body["Labels"][kImageVolumesLabel], models_);
  ASSERT_TRUE(Remove(*id).ok());
  EXPECT_FALSE(fs::exists(Tree()));
}

TEST_F(ImageVolumeServiceTest, MissingImageIsNotFoundAndCreatesNothing) {
  v1::ContainerConfig c = WithImageVolume("");
  c.mutable_mounts(0)->mutable_image()->set_image("registry.example/absent:v9");
  for (const char* api : {"1.41", "1.48"}) {
    docker_.version.api_version = api;
    auto id = Create(c);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kNotFound) << id.status();
    EXPECT_THAT(std::string(id.status().message()), HasSubstr("\"registry.example/absent:v9\""));
    EXPECT_THAT(std::string(id.status().message()), HasSubstr("/models"));
  }
  EXPECT_EQ(docker_.Containers().size(), 1u);  // the sandbox
}

TEST_F(ImageVolumeServiceTest, BadSubPathIsRefusedAndLeavesNoTree) {
  auto escapes = Create(WithImageVolume("../etc"));
  EXPECT_EQ(escapes.status().code(), absl::StatusCode::kInvalidArgument) << escapes.status();
  auto missing = Create(WithImageVolume("weights/none"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_FALSE(fs::exists(Tree()));
  EXPECT_EQ(docker_.Containers().size(), 1u);
}

TEST_F(ImageVolumeServiceTest, FailedCreateRemovesTheTreeItUnpacked) {
  v1::ContainerConfig c = WithImageVolume("");
  c.add_envs()->set_value("no name");  // refused after the unpack, by the translation
  auto id = Create(c);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << id.status();
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 1);
  EXPECT_FALSE(fs::exists(Tree()));
  EXPECT_EQ(docker_.Containers().size(), 1u);
}

}  // namespace
}  // namespace shim

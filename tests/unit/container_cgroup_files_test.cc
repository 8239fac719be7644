// The cgroup v2 files the shim writes itself (unified keys, hugepage limits) through
// CreateContainer, StartContainer and UpdateContainerResources, on the fake Docker client
// and a fake cgroup v2 tree with the systemd driver (the real files: tests/integration/
// resources_test.cc in scripts/vm.sh's VM). The fake Docker plays systemd on update:
// it sets memory.high, memory.min and memory.oom.group back, as Docker 20.10 with runc
// 1.1.5 and systemd 252 does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "shim/cgroup_files.h"
#include "shim/cri_service.h"
#include "shim/stats/cgroup.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using testutil::FakeTree;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";
constexpr int kPid = 4242;  // what the fake gives every started container

// Docker on the systemd driver: an update has systemd apply the scope's properties
// again, which sets back what Docker has no field for.
class SystemdDocker : public FakeDockerClient {
 public:
  absl::Status UpdateContainer(const common::Context& ctx, const std::string& id,
                               const nlohmann::json& resources) override {
    RETURN_IF_ERROR(FakeDockerClient::UpdateContainer(ctx, id, resources));
    if (!scope_dir.empty()) {
      WriteCgroupFiles(scope_dir, {{"memory.high", "max"}, {"memory.min", "0"}, {"memory.oom.group", "0"}}).IgnoreError();
    }
    return absl::OkStatus();
  }
  std::string scope_dir;  // the container's cgroup, once it runs
};

class ContainerCgroupFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.Write("proc/self/mountinfo",
                "35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n");
    docker_.info.cgroup_driver = "systemd";
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    Options o;
    o.root_directory = tree_.Path("state");
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.proc_root = tree_.Path("proc");
    o.cgroup_prefix = tree_.root();
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());

    pod_.mutable_metadata()->set_name("web");
    pod_.mutable_metadata()->set_namespace_("prod");
    pod_.mutable_metadata()->set_uid("uid1");
    pod_.mutable_linux()->set_cgroup_parent("/kubepods/burstable/poduid1");
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod_;
    auto ran = service_->RunPodSandbox(ctx_, run);
    ASSERT_TRUE(ran.ok()) << ran.status();
    pod_id_ = ran->pod_sandbox_id();
    pod_path_ = stats::ExpandSystemdSlice(docker_.Containers().at(pod_id_).inspect.cgroup_parent);
    MakeCgroup(pod_path_);
  }

  // A cgroup v2 directory as the VM's kernel has it (some files).
  void MakeCgroup(const std::string& path, bool with_memory_high = true) {
    const std::string dir = "sys/fs/cgroup" + path;
    tree_.Write(dir + "/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    if (with_memory_high) tree_.Write(dir + "/memory.high", "max\n");
    tree_.Write(dir + "/memory.min", "0\n");
    tree_.Write(dir + "/memory.oom.group", "0\n");
    tree_.Write(dir + "/hugetlb.2MB.max", "max\n");
    tree_.Write(dir + "/hugetlb.2MB.rsvd.max", "max\n");
  }

  v1::ContainerConfig Config() {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name("app");
    c.mutable_image()->set_image(kBusybox);
    auto* r = c.mutable_linux()->mutable_resources();
    r->set_memory_limit_in_bytes(128 << 20);
    (*r->mutable_unified())["memory.high"] = "67108864";
    (*r->mutable_unified())["memory.oom.group"] = "1";
    auto* huge = r->add_hugepage_limits();
    huge->set_page_size("2MB");
    huge->set_limit(0);
    return c;
  }

  absl::StatusOr<std::string> Create(const v1::ContainerConfig& config) {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod_id_);
    *req.mutable_config() = config;
    *req.mutable_sandbox_config() = pod_;
    ASSIGN_OR_RETURN(v1::CreateContainerResponse resp, service_->CreateContainer(ctx_, req));
    return resp.container_id();
  }

  // runc's part of a start: the scope and the process in it.
  std::string PrepareScope(const std::string& id, bool with_memory_high = true) {
    const std::string path = absl::StrCat(pod_path_, "/docker-", id, ".scope");
    MakeCgroup(path, with_memory_high);
    tree_.Write(absl::StrCat("proc/", kPid, "/cgroup"), absl::StrCat("0::", path, "\n"));
    return tree_.Path("sys/fs/cgroup" + path);
  }

  absl::Status Start(const std::string& id) {
    v1::StartContainerRequest req;
    req.set_container_id(id);
    return service_->StartContainer(ctx_, req).status();
  }

  std::string Read(const std::string& dir, const std::string& file) {
    CgroupFileValues v = ReadCgroupFiles(dir, {file});
    return v.contains(file) ? v[file] : "<unreadable>";
  }

  FakeTree tree_;
  SystemdDocker docker_;
  FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  v1::PodSandboxConfig pod_;
  std::string pod_id_, pod_path_;
};

TEST_F(ContainerCgroupFiles, StartWritesWhatTheContainerWasCreatedWith) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  const std::string dir = PrepareScope(*id);
  ASSERT_TRUE(Start(*id).ok());
  EXPECT_EQ(Read(dir, "memory.high"), "67108864");
  EXPECT_EQ(Read(dir, "memory.oom.group"), "1");
  EXPECT_EQ(Read(dir, "hugetlb.2MB.max"), "0");
  EXPECT_EQ(Read(dir, "hugetlb.2MB.rsvd.max"), "0");
}

TEST_F(ContainerCgroupFiles, UpdateWritesAfterDockerAndPutsBackWhatItsUpdateSetBack) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  docker_.scope_dir = PrepareScope(*id);
  ASSERT_TRUE(Start(*id).ok());

  v1::UpdateContainerResourcesRequest req;
  req.set_container_id(*id);
  req.mutable_linux()->set_memory_limit_in_bytes(256 << 20);
  (*req.mutable_linux()->mutable_unified())["memory.min"] = "1048576";
  ASSERT_TRUE(service_->UpdateContainerResources(ctx_, req).ok());
  EXPECT_EQ(docker_.Containers().at(*id).inspect.resources.memory, 256 << 20);
  EXPECT_EQ(Read(docker_.scope_dir, "memory.min"), "1048576");  // asked now
  EXPECT_EQ(Read(docker_.scope_dir, "memory.high"), "67108864");  // from create, set back by the update
  EXPECT_EQ(Read(docker_.scope_dir, "memory.oom.group"), "1");
  EXPECT_EQ(Read(docker_.scope_dir, "hugetlb.2MB.max"), "0");
}

TEST_F(ContainerCgroupFiles, KeyTheCgroupCannotHaveFailsCreateBeforeDocker) {
  v1::ContainerConfig config = Config();
  (*config.mutable_linux()->mutable_resources()->mutable_unified())["memory.nosuch"] = "1";
  const int creates = docker_.CallCount("CreateContainer");  // the pod's infra container
  auto id = Create(config);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("memory.nosuch = \"1\""));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("no such cgroup file"));
  EXPECT_EQ(docker_.CallCount("CreateContainer"), creates);
}

TEST_F(ContainerCgroupFiles, StartStopsTheContainerWhenItsFilesCannotBeWritten) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  PrepareScope(*id, /*with_memory_high=*/false);
  absl::Status started = Start(*id);
  EXPECT_EQ(started.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(started.message()), HasSubstr("is stopped: its cgroup v2 settings cannot be applied"));
  EXPECT_THAT(std::string(started.message()), HasSubstr("memory.high"));
  ASSERT_EQ(docker_.Stops().size(), 1u);
  EXPECT_EQ(docker_.Stops()[0].id, *id);
}

TEST_F(ContainerCgroupFiles, UpdateOfAContainerThatDoesNotRunChangesNothing) {
  auto id = Create(Config());
  ASSERT_TRUE(id.ok()) << id.status();
  v1::UpdateContainerResourcesRequest req;
  req.set_container_id(*id);
  req.mutable_linux()->set_memory_limit_in_bytes(256 << 20);
  (*req.mutable_linux()->mutable_unified())["memory.high"] = "1048576";
  auto updated = service_->UpdateContainerResources(ctx_, req);
  EXPECT_EQ(updated.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(updated.status().message()), HasSubstr("does not run"));
  EXPECT_THAT(docker_.Calls(), Not(Contains("UpdateContainer")));
}

TEST_F(ContainerCgroupFiles, UpdatePodSandboxResourcesChecksUnifiedKeysAndWritesNoCgroup) {
  v1::UpdatePodSandboxResourcesRequest req;
  req.set_pod_sandbox_id(pod_id_);
  (*req.mutable_resources()->mutable_unified())["memory/../cpu.max"] = "1";
  auto bad = service_->UpdatePodSandboxResources(ctx_, req);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("UpdatePodSandboxResources: resources: linux.resources.unified[\"memory/../cpu.max\"]"));

  req.mutable_resources()->clear_unified();
  (*req.mutable_resources()->mutable_unified())["memory.high"] = "1048576";
  ASSERT_TRUE(service_->UpdatePodSandboxResources(ctx_, req).ok());
  EXPECT_EQ(Read(tree_.Path("sys/fs/cgroup" + pod_path_), "memory.high"), "max");  // the kubelet's to write
}

}  // namespace
}  // namespace shim

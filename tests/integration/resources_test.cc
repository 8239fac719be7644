// Container resources as the cgroup files show them, on a real dockerd: what Docker sets
// (memory.max, cpu.max, cpu.weight, pids.max) and what the shim writes itself because
// Docker has no field for it (unified keys, hugetlb.<size>.max), after CreateContainer +
// StartContainer and after UpdateContainerResources. The file tests need cgroup v2
// (scripts/vm.sh's node: systemd driver, pods under slices, as a kubelet with
// cgroupDriver: systemd makes them); the OOM test runs on both versions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "tests/integration/cgroup_node.h"
#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers

constexpr int64_t kMiB = 1 << 20;
constexpr char kCgroupPrefix[] = "dstestres";  // free of '-' and '_' (cgroup_node.h)

// cpu.weight of `shares` as runc converts it: runc before 1.3.2 (Debian 12's 1.1.5, which
// every engine here uses) maps [2, 262144] linearly onto [1, 10000], so the default 1024
// shares become 39; runc 1.3.2 and 1.4 use a quadratic in log2(shares) that maps 1024 to
// 100 (opencontainers/runc#4772, kubernetes/kubernetes#131216).
uint64_t RuncCpuWeight(uint64_t shares, bool quadratic) {
  if (!quadratic) return 1 + ((shares - 2) * 9999) / 262142;
  if (shares <= 2) return 1;
  if (shares >= 262144) return 10000;
  const double l = std::log2(static_cast<double>(shares));
  return static_cast<uint64_t>(std::ceil(std::pow(10, (l * l + 125 * l) / 612.0 - 7.0 / 34.0)));
}

// Whether the runc Docker runs converts with the quadratic formula: 1.3.2 and later. Docker
// says which (/info's RuncCommit: "1.1.5+ds1-1+deb12u1" from Debian's, "v1.4.3-0-gbb14dab"
// from a release); the runc on the test's PATH need not be it (Docker 29 has its own).
bool RuncConvertsQuadratically() {
  const std::string id(absl::StripAsciiWhitespace(Sh("docker info -f '{{.RuncCommit.ID}}'")));
  int major = 0, minor = 0, patch = 0;
  if (std::sscanf(std::string(absl::StripPrefix(id, "v")).c_str(), "%d.%d.%d", &major, &minor, &patch) != 3) {
    ADD_FAILURE() << "cannot read runc's version from Docker's RuncCommit: " << id;
    return false;
  }
  return std::make_tuple(major, minor, patch) >= std::make_tuple(1, 3, 2);
}

class ResourcesIntegration : public PodIntegration {
 protected:
  ResourcesIntegration() : PodIntegration({"dstest-res-", "dstest-resnet-", 200, 209, "resources_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    ASSERT_NO_FATAL_FAILURE(BuildService(Plugin::kCni, testenv::PauseImage()));
  }

  void TearDown() override {
    PodIntegration::TearDown();
    testenv::RemoveTestCgroups(kCgroupPrefix);
  }

  // A pod under its own cgroup parent, as a kubelet gives one (a slice name with systemd).
  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig config = BaseConfig(name);
    config.mutable_linux()->set_cgroup_parent(testenv::PodCgroupParent(kCgroupPrefix, RandomHex()));
    return config;
  }

  struct Running {
    std::string pod_id, container_id, dir;  // dir: the container's cgroup (v2)
    v1::PodSandboxConfig pod;
  };
  absl::StatusOr<Running> RunPodWith(const std::string& name, const v1::ContainerConfig& container) {
    Running out;
    out.pod = Pod(name);
    ASSIGN_OR_RETURN(out.pod_id, Run(out.pod));
    ASSIGN_OR_RETURN(out.container_id, Create(out.pod_id, out.pod, container));
    RETURN_IF_ERROR(Start(out.container_id));
    out.dir = testenv::ContainerCgroupDir(out.pod.linux().cgroup_parent(), out.container_id, "memory");
    return out;
  }

  absl::Status Update(const std::string& id, const v1::LinuxContainerResources& resources) {
    v1::UpdateContainerResourcesRequest req;
    req.set_container_id(id);
    *req.mutable_linux() = resources;
    return service_->UpdateContainerResources(ctx_, req).status();
  }

  static std::string CgroupFile(const std::string& dir, const std::string& file) {
    return std::string(absl::StripTrailingAsciiWhitespace(ReadFile(dir + "/" + file)));
  }
  static bool NodeHasHugetlb() {
    return absl::StrContains(ReadFile("/sys/fs/cgroup/cgroup.controllers"), "hugetlb");
  }
};

TEST_F(ResourcesIntegration, LimitsLandInTheCgroupFilesAtStartAndAfterAnUpdate) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  const bool hugetlb = NodeHasHugetlb();
  const bool quadratic = RuncConvertsQuadratically();
  std::cout << "runc converts CPU shares to cpu.weight " << (quadratic ? "quadratically (1.3.2+)" : "linearly")
            << "; hugetlb controller: " << (hugetlb ? "yes" : "no") << "\n";

  v1::ContainerConfig config = Busybox("app");
  v1::LinuxContainerResources& r = *config.mutable_linux()->mutable_resources();
  r.set_cpu_shares(512);
  r.set_cpu_period(100000);
  r.set_cpu_quota(50000);
  r.set_memory_limit_in_bytes(64 * kMiB);
  (*r.mutable_unified())["memory.high"] = absl::StrCat(48 * kMiB);
  (*r.mutable_unified())["memory.min"] = absl::StrCat(kMiB);
  (*r.mutable_unified())["memory.oom.group"] = "1";  // what a 1.32+ kubelet sends on cgroup v2
  (*r.mutable_unified())["pids.max"] = "64";
  if (hugetlb) {  // the kubelet sends every page size of the node, 0 unless asked
    auto* huge = r.add_hugepage_limits();
    huge->set_page_size("2MB");
    huge->set_limit(0);
  }
  auto p = RunPodWith("files", config);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(CgroupFile(p->dir, "memory.max"), absl::StrCat(64 * kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "cpu.max"), "50000 100000");
  EXPECT_EQ(CgroupFile(p->dir, "cpu.weight"), absl::StrCat(RuncCpuWeight(512, quadratic)));
  EXPECT_EQ(CgroupFile(p->dir, "pids.max"), "64");
  EXPECT_EQ(CgroupFile(p->dir, "memory.high"), absl::StrCat(48 * kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "memory.min"), absl::StrCat(kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "memory.oom.group"), "1");
  if (hugetlb) {
    EXPECT_EQ(CgroupFile(p->dir, "hugetlb.2MB.max"), "0");
  }

  // A resize as the kubelet sends it; memory.min and memory.oom.group are not asked
  // again and must stay (with the systemd driver Docker's update sets them back).
  v1::LinuxContainerResources resize;
  resize.set_cpu_shares(1024);
  resize.set_cpu_period(100000);
  resize.set_cpu_quota(150000);
  resize.set_memory_limit_in_bytes(96 * kMiB);
  (*resize.mutable_unified())["memory.high"] = absl::StrCat(80 * kMiB);
  (*resize.mutable_unified())["pids.max"] = "max";
  if (hugetlb) {
    auto* huge = resize.add_hugepage_limits();
    huge->set_page_size("2MB");
    huge->set_limit(4 * kMiB);
  }
  ASSERT_TRUE(Update(p->container_id, resize).ok());
  EXPECT_EQ(CgroupFile(p->dir, "memory.max"), absl::StrCat(96 * kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "cpu.max"), "150000 100000");
  EXPECT_EQ(CgroupFile(p->dir, "cpu.weight"), absl::StrCat(RuncCpuWeight(1024, quadratic)));
  EXPECT_EQ(CgroupFile(p->dir, "pids.max"), "max");
  EXPECT_EQ(CgroupFile(p->dir, "memory.high"), absl::StrCat(80 * kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "memory.min"), absl::StrCat(kMiB));
  EXPECT_EQ(CgroupFile(p->dir, "memory.oom.group"), "1");
  if (hugetlb) {
    EXPECT_EQ(CgroupFile(p->dir, "hugetlb.2MB.max"), absl::StrCat(4 * kMiB));
  }

  // The kubelet reads back what it set (ContainerStatus.resources).
  auto status = ContainerStatus(p->container_id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->resources().linux().memory_limit_in_bytes(), 96 * kMiB);
  EXPECT_EQ(status->resources().linux().cpu_shares(), 1024);
  EXPECT_EQ(status->resources().linux().cpu_quota(), 150000);
}

TEST_F(ResourcesIntegration, UnifiedKeysTheKernelOrTheCgroupRefusesAreClearErrors) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  // Refused at create, before Docker makes anything.
  v1::PodSandboxConfig pod = Pod("badkeys");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  for (const std::string key : {"memory.nosuch", "memory/../../cpu.max", "cgroup.procs"}) {
    v1::ContainerConfig config = Busybox("bad");
    (*config.mutable_linux()->mutable_resources()->mutable_unified())[key] = "1";
    auto created = Create(*pod_id, pod, config);
    EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << key << ": " << created.status();
    EXPECT_THAT(std::string(created.status().message()), HasSubstr(key));
  }
  EXPECT_EQ(Sh("docker ps -aq --filter name=k8s_bad_"), "");

  // Values the kernel rejects, at update: INVALID_ARGUMENT naming the file.
  auto id = Create(*pod_id, pod, Busybox("app"));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Start(*id).ok());
  const std::string dir = testenv::ContainerCgroupDir(pod.linux().cgroup_parent(), *id, "memory");
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"memory.high", "lots"}, {"cpu.weight", "0"}, {"memory.current", "0"}}) {
    v1::LinuxContainerResources r;
    (*r.mutable_unified())[key] = value;
    absl::Status s = Update(*id, r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << key << "=" << value << ": " << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(absl::StrCat(key, " = \"", value, "\"")));
  }
  EXPECT_EQ(CgroupFile(dir, "memory.high"), "max");
  EXPECT_EQ(CgroupFile(dir, "cpu.weight"), "100");  // Docker's default: no shares asked
}

TEST_F(ResourcesIntegration, UpdatePodSandboxResourcesLeavesThePodCgroupToTheKubelet) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  // The kubelet resizes the pod's cgroup itself, overhead included, before it tells the
  // runtime (CRI: "called after the kubelet reconfigures the pod-level cgroups");
  // containerd and CRI-O only record it. Here the test plays the kubelet.
  auto p = RunPodWith("podres", Busybox("app"));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string pod_dir = testenv::CgroupDir(testenv::CgroupParentPath(p->pod.linux().cgroup_parent()), "memory");
  std::ofstream(pod_dir + "/memory.max") << 320 * kMiB;  // 256 MiB for the containers + 64 MiB overhead
  v1::UpdatePodSandboxResourcesRequest req;
  req.set_pod_sandbox_id(p->pod_id);
  req.mutable_resources()->set_memory_limit_in_bytes(256 * kMiB);
  req.mutable_overhead()->set_memory_limit_in_bytes(64 * kMiB);
  ASSERT_TRUE(service_->UpdatePodSandboxResources(ctx_, req).ok());
  EXPECT_EQ(CgroupFile(pod_dir, "memory.max"), absl::StrCat(320 * kMiB));
  v1::PodSandboxStatusRequest status_req;
  status_req.set_pod_sandbox_id(p->pod_id);
  status_req.set_verbose(true);
  auto status = service_->PodSandboxStatus(ctx_, status_req);
  ASSERT_TRUE(status.ok()) << status.status();
  const nlohmann::json info = nlohmann::json::parse(status->info().at("info"));
  EXPECT_EQ(info["podResources"]["resources"]["memory_limit_in_bytes"], absl::StrCat(256 * kMiB));
  EXPECT_EQ(info["podResources"]["overhead"]["memory_limit_in_bytes"], absl::StrCat(64 * kMiB));
}

TEST_F(ResourcesIntegration, OomKillIsReportedAsOOMKilledWithExitCode137) {
  // dd's 64 MiB buffer does not fit in 32 MiB (no swap: MemorySwap = Memory).
  v1::ContainerConfig config = Busybox("oom", {"dd", "if=/dev/zero", "of=/dev/null", "bs=64M", "count=1"});
  config.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(32 * kMiB);
  auto p = RunPodWith("oom", config);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<v1::ContainerStatus> status;
  for (int i = 0; i < 300; ++i) {
    status = ContainerStatus(p->container_id);
    if (!status.ok() || status->state() == v1::CONTAINER_EXITED) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->state(), v1::CONTAINER_EXITED);
  EXPECT_EQ(status->reason(), "OOMKilled");
  EXPECT_EQ(status->exit_code(), 137);
}

}  // namespace
}  // namespace shim

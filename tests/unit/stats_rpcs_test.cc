// The stats and metrics RPCs of CriService (ContainerStats, ListContainerStats,
// PodSandboxStats, ListPodSandboxStats, ListMetricDescriptors, ListPodSandboxMetrics)
// and UpdatePodSandboxResources, on the fake Docker client and a fake cgroup and /proc
// tree: cgroup v1 with the cgroupfs driver (this machine's layout) and v2 with systemd.
// The Stream* forms and the gRPC codes go through the gRPC adapter (in-process channel).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "shim/cri_service.h"
#include "shim/grpc_services.h"
#include "shim/naming.h"
#include "shim/stats/cgroup.h"
#include "shim/stats/writable_layers.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using testutil::FakeTree;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";
constexpr char kDockerRoot[] = "/var/lib/docker";
constexpr uint64_t kV1Unlimited = 9223372036854771712ULL;

struct HostLayout {
  std::string name;
  std::string mountinfo;
  std::string cgroup_driver;
  bool v2;
  friend void PrintTo(const HostLayout& h, std::ostream* os) { *os << h.name; }
};

const HostLayout kV1Cgroupfs{
    "V1Cgroupfs",
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
    "cgroupfs", false};
const HostLayout kV2Systemd{
    "V2Systemd",
    "35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
    "systemd", true};

// What a fake cgroup's files say.
struct FakeCgroup {
  uint64_t cpu_ns = 0;  // a multiple of 1000 (v2 counts microseconds)
  uint64_t usage = 0, inactive_file = 0, rss = 0, pgfault = 0, pgmajfault = 0;
  std::optional<uint64_t> limit;  // unlimited when unset
  std::optional<uint64_t> swap;   // no swap accounting when unset
  uint64_t pids = 0;
};

FakeCgroup Busy(uint64_t cpu_ns) {
  FakeCgroup c;
  c.cpu_ns = cpu_ns;
  c.usage = 64 << 20;
  c.inactive_file = 4 << 20;
  c.rss = 50 << 20;
  c.pgfault = 1000;
  c.pgmajfault = 3;
  c.limit = 128 << 20;
  c.swap = 1 << 20;
  c.pids = 5;
  return c;
}

std::string NetDev(uint64_t eth0_rx, uint64_t eth0_tx) {
  return absl::StrCat(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
      "carrier compressed\n"
      "    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       "
      "0          0\n"
      "  eth0: ",
      eth0_rx, "     120    2    0    0     0          0         0 ", eth0_tx,
      "      90    1    0    0     0       0          0\n"
      "  net1:      500       5    0    0    0     0          0         0      400       4    0    0    0     0       "
      "0          0\n");
}

class StatsServiceTest : public ::testing::TestWithParam<HostLayout> {
 protected:
  void SetUp() override {
    tree_.Write("proc/self/mountinfo", GetParam().mountinfo);
    docker_.info.cgroup_driver = GetParam().cgroup_driver;
    docker_.info.docker_root_dir = kDockerRoot;
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    service_ = MakeService(nullptr);
  }

  std::unique_ptr<CriService> MakeService(stats::WritableLayerCollector* layers) {
    Options o;
    o.root_directory = tree_.Path("state");
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    o.proc_root = tree_.Path("proc");
    o.cgroup_prefix = tree_.root();
    o.clock = [this] { return now_; };
    o.writable_layers = layers;
    auto s = std::make_unique<CriService>(o, docker_, network_);
    EXPECT_TRUE(s->Init().ok());
    return s;
  }

  // --- the fake host ---

  // Docker's CgroupParent of a container (its pod's, as the shim gave it at create).
  std::string CgroupParentOf(const std::string& id) { return docker_.Containers().at(id).inspect.cgroup_parent; }
  std::string PodCgroupPath(const std::string& sandbox_id) {
    const std::string parent = CgroupParentOf(sandbox_id);
    return GetParam().v2 ? stats::ExpandSystemdSlice(parent) : parent;
  }
  // Where runc puts a container of that pod.
  std::string ContainerCgroupPath(const std::string& id) {
    const std::string parent = CgroupParentOf(id);
    if (GetParam().v2) return absl::StrCat(stats::ExpandSystemdSlice(parent), "/docker-", id, ".scope");
    return absl::StrCat(parent, "/", id);
  }

  void WriteCgroup(const std::string& path, const FakeCgroup& c) {
    if (GetParam().v2) {
      const std::string dir = "sys/fs/cgroup" + path;
      tree_.Write(dir + "/cpu.stat", absl::StrCat("usage_usec ", c.cpu_ns / 1000, "\nuser_usec 0\nsystem_usec 0\n"));
      tree_.Write(dir + "/memory.current", absl::StrCat(c.usage, "\n"));
      tree_.Write(dir + "/memory.max", c.limit ? absl::StrCat(*c.limit, "\n") : "max\n");
      tree_.Write(dir + "/memory.stat", absl::StrCat("anon ", c.rss, "\nfile 0\ninactive_file ", c.inactive_file,
                                                     "\npgfault ", c.pgfault, "\npgmajfault ", c.pgmajfault, "\n"));
      if (c.swap) {
        tree_.Write(dir + "/memory.swap.current", absl::StrCat(*c.swap, "\n"));
        tree_.Write(dir + "/memory.swap.max", "max\n");
      }
      tree_.Write(dir + "/pids.current", absl::StrCat(c.pids, "\n"));
      return;
    }
    tree_.Write("sys/fs/cgroup/cpuacct" + path + "/cpuacct.usage", absl::StrCat(c.cpu_ns, "\n"));
    const std::string memory = "sys/fs/cgroup/memory" + path;
    tree_.Write(memory + "/memory.usage_in_bytes", absl::StrCat(c.usage, "\n"));
    tree_.Write(memory + "/memory.limit_in_bytes", absl::StrCat(c.limit.value_or(kV1Unlimited), "\n"));
    tree_.Write(memory + "/memory.stat",
                absl::StrCat("cache 0\nrss 0\ntotal_rss ", c.rss, "\ntotal_inactive_file ", c.inactive_file,
                             "\ntotal_pgfault ", c.pgfault, "\ntotal_pgmajfault ", c.pgmajfault, "\n"));
    if (c.swap) {
      tree_.Write(memory + "/memory.memsw.usage_in_bytes", absl::StrCat(c.usage + *c.swap, "\n"));
      tree_.Write(memory + "/memory.memsw.limit_in_bytes", absl::StrCat(kV1Unlimited, "\n"));
    }
    tree_.Write("sys/fs/cgroup/pids" + path + "/pids.current", absl::StrCat(c.pids, "\n"));
  }

  // /proc/<pid>/cgroup of a process in the cgroup at `path`.
  void WriteProcCgroup(int pid, const std::string& path) {
    tree_.Write(absl::StrCat("proc/", pid, "/cgroup"),
                GetParam().v2 ? absl::StrCat("0::", path, "\n")
                              : absl::StrCat("8:pids:", path, "\n4:memory:", path, "\n3:cpuacct:", path, "\n2:cpu:",
                                             path, "\n1:name=systemd:", path, "\n0::", path, "\n"));
  }

  // Gives container `id` its own process, in its own cgroup.
  int GivePid(const std::string& id) {
    const int pid = next_pid_++;
    docker_.EditContainer(id, [&](dockerclient::ContainerInspect& c) { c.state.pid = pid; });
    WriteProcCgroup(pid, ContainerCgroupPath(id));
    return pid;
  }

  // --- pods and containers, made through the service as the kubelet makes them ---

  v1::PodSandboxConfig PodConfig(const std::string& name, bool with_cgroup_parent = true) {
    v1::PodSandboxConfig config;
    config.mutable_metadata()->set_name(name);
    config.mutable_metadata()->set_namespace_("prod");
    config.mutable_metadata()->set_uid("uid" + name);
    (*config.mutable_labels())["app"] = name;
    (*config.mutable_annotations())["note"] = "pod " + name;
    if (with_cgroup_parent) config.mutable_linux()->set_cgroup_parent("/kubepods/besteffort/pod" + name);
    return config;
  }

  // A ready pod whose infra process sees `net_dev` as /proc/net/dev.
  std::string RunPod(const v1::PodSandboxConfig& config, const std::string& net_dev = NetDev(5000, 3000)) {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = config;
    auto resp = service_->RunPodSandbox(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    const std::string id = resp.ok() ? resp->pod_sandbox_id() : "";
    pods_[id] = config;
    const int pid = GivePid(id);
    tree_.Write(absl::StrCat("proc/", pid, "/net/dev"), net_dev);
    return id;
  }

  v1::ContainerConfig ContainerConfig(const std::string& name) {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_metadata()->set_attempt(1);
    c.mutable_image()->set_image(kBusybox);
    (*c.mutable_labels())["tier"] = name;
    (*c.mutable_annotations())["owner"] = "team-" + name;
    return c;
  }

  // A container of `pod`; started (with a process and cgroup files) unless `start` is false.
  std::string AddContainer(const std::string& pod, const std::string& name, bool start = true,
                           const FakeCgroup& cgroup = Busy(1000000000)) {
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(pod);
    *create.mutable_config() = ContainerConfig(name);
    *create.mutable_sandbox_config() = pods_[pod];
    auto created = service_->CreateContainer(ctx_, create);
    EXPECT_TRUE(created.ok()) << created.status();
    const std::string id = created.ok() ? created->container_id() : "";
    if (!start) return id;
    v1::StartContainerRequest start_req;
    start_req.set_container_id(id);
    EXPECT_TRUE(service_->StartContainer(ctx_, start_req).ok());
    GivePid(id);
    WriteCgroup(ContainerCgroupPath(id), cgroup);
    return id;
  }

  void StopContainer(const std::string& id) {
    v1::StopContainerRequest req;
    req.set_container_id(id);
    ASSERT_TRUE(service_->StopContainer(ctx_, req).ok());
  }

  // --- calls ---

  std::vector<v1::ContainerStats> List(const v1::ContainerStatsFilter& filter = {}) {
    v1::ListContainerStatsRequest req;
    *req.mutable_filter() = filter;
    auto resp = service_->ListContainerStats(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return {};
    return {resp->stats().begin(), resp->stats().end()};
  }
  std::vector<std::string> ListIds(const v1::ContainerStatsFilter& filter = {}) {
    std::vector<std::string> ids;
    for (const auto& s : List(filter)) ids.push_back(s.attributes().id());
    return ids;
  }
  absl::StatusOr<v1::ContainerStats> Stats(const std::string& id) {
    v1::ContainerStatsRequest req;
    req.set_container_id(id);
    auto resp = service_->ContainerStats(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->stats();
  }
  absl::StatusOr<v1::PodSandboxStats> PodStats(const std::string& id) {
    v1::PodSandboxStatsRequest req;
    req.set_pod_sandbox_id(id);
    auto resp = service_->PodSandboxStats(ctx_, req);
    if (!resp.ok()) return resp.status();
    return resp->stats();
  }
  std::vector<std::string> ListPodIds(const v1::PodSandboxStatsFilter& filter = {}) {
    v1::ListPodSandboxStatsRequest req;
    *req.mutable_filter() = filter;
    auto resp = service_->ListPodSandboxStats(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    std::vector<std::string> ids;
    if (resp.ok())
      for (const auto& s : resp->stats()) ids.push_back(s.attributes().id());
    return ids;
  }
  std::optional<uint64_t> NanoCores(const std::string& id) {
    auto stats = Stats(id);
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (!stats.ok() || !stats->cpu().has_usage_nano_cores()) return std::nullopt;
    return stats->cpu().usage_nano_cores().value();
  }

  FakeTree tree_;
  FakeDockerClient docker_;
  FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(30));
  absl::Time now_ = absl::FromUnixSeconds(1700000000);
  std::map<std::string, v1::PodSandboxConfig> pods_;
  int next_pid_ = 7001;
};

INSTANTIATE_TEST_SUITE_P(Hosts, StatsServiceTest, ::testing::Values(kV1Cgroupfs, kV2Systemd),
                         [](const auto& info) { return info.param.name; });

std::map<std::string, std::string> AsMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

// --- container stats ----------------------------------------------------------------

TEST_P(StatsServiceTest, ContainerFiguresComeFromItsCgroup) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app", true, Busy(2500000000));

  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const int64_t now = absl::ToUnixNanos(now_);
  EXPECT_EQ(stats->cpu().timestamp(), now);
  EXPECT_EQ(stats->cpu().usage_core_nano_seconds().value(), 2500000000u);
  const v1::MemoryUsage& m = stats->memory();
  EXPECT_EQ(m.timestamp(), now);
  EXPECT_EQ(m.usage_bytes().value(), 64u << 20);
  EXPECT_EQ(m.working_set_bytes().value(), 60u << 20);  // usage - inactive_file
  EXPECT_EQ(m.rss_bytes().value(), 50u << 20);
  EXPECT_EQ(m.page_faults().value(), 1000u);
  EXPECT_EQ(m.major_page_faults().value(), 3u);
  EXPECT_EQ(m.available_bytes().value(), 68u << 20);  // limit - working set
  EXPECT_EQ(stats->swap().swap_usage_bytes().value(), 1u << 20);
  EXPECT_FALSE(stats->swap().has_swap_available_bytes());  // swap unlimited
  EXPECT_FALSE(stats->has_writable_layer());               // no collector
}

TEST_P(StatsServiceTest, AttributesAreThoseOfListContainers) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  v1::ListContainersRequest list;
  list.mutable_filter()->set_id(id);
  auto listed = service_->ListContainers(ctx_, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->containers_size(), 1);
  const v1::Container& c = listed->containers(0);

  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const v1::ContainerAttributes& a = stats->attributes();
  EXPECT_EQ(a.id(), id);
  EXPECT_EQ(a.metadata().DebugString(), c.metadata().DebugString());
  EXPECT_EQ(a.metadata().name(), "app");
  EXPECT_EQ(AsMap(a.labels()), AsMap(c.labels()));
  EXPECT_EQ(AsMap(a.labels()), (std::map<std::string, std::string>{{"tier", "app"}}));
  EXPECT_EQ(AsMap(a.annotations()), (std::map<std::string, std::string>{{"owner", "team-app"}}));
}

TEST_P(StatsServiceTest, StoppedAndCreatedContainersAreListedWithoutSamples) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string running = AddContainer(pod, "running");
  const std::string stopped = AddContainer(pod, "stopped");
  StopContainer(stopped);
  const std::string created = AddContainer(pod, "created", /*start=*/false);

  std::map<std::string, v1::ContainerStats> by_id;
  for (const auto& s : List()) by_id[s.attributes().id()] = s;
  ASSERT_EQ(by_id.size(), 3u);
  EXPECT_TRUE(by_id[running].has_cpu());
  EXPECT_TRUE(by_id[running].has_memory());
  for (const std::string& id : {stopped, created}) {
    EXPECT_EQ(by_id[id].attributes().metadata().name(), id == stopped ? "stopped" : "created");
    EXPECT_FALSE(by_id[id].has_cpu()) << id;
    EXPECT_FALSE(by_id[id].has_memory()) << id;
    EXPECT_FALSE(by_id[id].has_swap()) << id;
  }
}

TEST_P(StatsServiceTest, ListFiltersByIdPrefixPodAndLabels) {
  const std::string web = RunPod(PodConfig("web"));
  const std::string db = RunPod(PodConfig("db"));
  const std::string a = AddContainer(web, "a");
  const std::string b = AddContainer(web, "b");
  const std::string c = AddContainer(db, "c");

  EXPECT_THAT(ListIds(), UnorderedElementsAre(a, b, c));
  v1::ContainerStatsFilter by_id;
  by_id.set_id(b);
  EXPECT_THAT(ListIds(by_id), ElementsAre(b));
  // The ID filter is a prefix, as in ListContainers; the fake's IDs differ only in their
  // last digits, so this one matches every container.
  by_id.set_id(b.substr(0, 60));
  EXPECT_THAT(ListIds(by_id), UnorderedElementsAre(a, b, c));
  by_id.set_id("ffff");
  EXPECT_THAT(ListIds(by_id), IsEmpty());
  v1::ContainerStatsFilter by_pod;
  by_pod.set_pod_sandbox_id(web);
  EXPECT_THAT(ListIds(by_pod), UnorderedElementsAre(a, b));
  v1::ContainerStatsFilter by_label;
  (*by_label.mutable_label_selector())["tier"] = "c";
  EXPECT_THAT(ListIds(by_label), ElementsAre(c));
  v1::ContainerStatsFilter both;
  both.set_pod_sandbox_id(web);
  (*both.mutable_label_selector())["tier"] = "c";
  EXPECT_THAT(ListIds(both), IsEmpty());
  v1::ContainerStatsFilter unknown_pod;
  unknown_pod.set_pod_sandbox_id("0000dead");
  EXPECT_THAT(ListIds(unknown_pod), IsEmpty());
}

TEST_P(StatsServiceTest, UnknownContainerIsNotFound) {
  const std::string pod = RunPod(PodConfig("web"));
  AddContainer(pod, "app");
  EXPECT_EQ(Stats("0000dead").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Stats("0000dead").status().message(), HasSubstr("container 0000dead not found"));
  // The pod's infra container is no app container.
  EXPECT_EQ(Stats(pod).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Stats("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Stats("").status().message(), HasSubstr("container_id is required"));
}

TEST_P(StatsServiceTest, AmbiguousPrefixIsInvalid) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string a = AddContainer(pod, "a");
  AddContainer(pod, "b");
  // The fake's IDs share a long prefix of zeros.
  EXPECT_EQ(Stats("0000").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Stats("0000").status().message(), HasSubstr("ambiguous"));
  auto exact = Stats(a);
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->attributes().id(), a);
}

TEST_P(StatsServiceTest, MissingCgroupFilesLeaveFiguresUnset) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app", /*start=*/false);
  v1::StartContainerRequest start;
  start.set_container_id(id);
  ASSERT_TRUE(service_->StartContainer(ctx_, start).ok());
  GivePid(id);  // a process, but no cgroup files (a cgroup being torn down)

  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->has_cpu());
  EXPECT_FALSE(stats->has_memory());

  FakeCgroup unlimited = Busy(1000000000);
  unlimited.limit.reset();
  unlimited.swap.reset();
  WriteCgroup(ContainerCgroupPath(id), unlimited);
  stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->memory().has_working_set_bytes());
  EXPECT_FALSE(stats->memory().has_available_bytes());  // no limit, nothing "available"
  EXPECT_FALSE(stats->has_swap());                      // no swap accounting
}

// PSI: the v2 pressure files, Total in CRI's nanoseconds (the files count microseconds);
// a file or line that is not there leaves its message unset, never zeros.
TEST_P(StatsServiceTest, PressureFilesBecomePsiStats) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  WriteCgroup(PodCgroupPath(pod), Busy(2000000000));
  for (const std::string& path : {ContainerCgroupPath(id), PodCgroupPath(pod)}) {
    // Where v2 has them; on v1 the cpuacct hierarchy's directory, where nothing reads them.
    const std::string dir = (GetParam().v2 ? "sys/fs/cgroup" : "sys/fs/cgroup/cpuacct") + path;
    // A kernel before 5.13: no "full" line for cpu.
    tree_.Write(dir + "/cpu.pressure", "some avg10=12.50 avg60=3.25 avg300=0.75 total=4000123\n");
    tree_.Write(dir + "/memory.pressure",
                "some avg10=1.00 avg60=0.50 avg300=0.10 total=700\nfull avg10=0.50 avg60=0.25 avg300=0.05 total=300\n");
  }

  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto pod_stats = PodStats(pod);
  ASSERT_TRUE(pod_stats.ok()) << pod_stats.status();
  ASSERT_EQ(pod_stats->linux().containers_size(), 1);
  const v1::CpuUsage* cpus[] = {&stats->cpu(), &pod_stats->linux().cpu(), &pod_stats->linux().containers(0).cpu()};
  const v1::MemoryUsage* memories[] = {&stats->memory(), &pod_stats->linux().memory(),
                                       &pod_stats->linux().containers(0).memory()};
  if (!GetParam().v2) {
    for (const v1::CpuUsage* cpu : cpus) EXPECT_FALSE(cpu->has_psi());
    for (const v1::MemoryUsage* memory : memories) EXPECT_FALSE(memory->has_psi());
    EXPECT_FALSE(stats->has_io());
    EXPECT_FALSE(pod_stats->linux().has_io());
    return;
  }
  for (const v1::CpuUsage* cpu : cpus) {
    ASSERT_TRUE(cpu->has_psi());
    EXPECT_EQ(cpu->psi().some().total(), 4000123000u);
    EXPECT_EQ(cpu->psi().some().avg10(), 12.5);
    EXPECT_EQ(cpu->psi().some().avg60(), 3.25);
    EXPECT_EQ(cpu->psi().some().avg300(), 0.75);
    EXPECT_FALSE(cpu->psi().has_full());
  }
  for (const v1::MemoryUsage* memory : memories) {
    EXPECT_EQ(memory->psi().some().total(), 700000u);
    EXPECT_EQ(memory->psi().some().avg10(), 1.0);
    EXPECT_EQ(memory->psi().full().total(), 300000u);
    EXPECT_EQ(memory->psi().full().avg60(), 0.25);
  }
  EXPECT_FALSE(stats->has_io()) << "no io.pressure";
  EXPECT_FALSE(pod_stats->linux().has_io());

  tree_.Write("sys/fs/cgroup" + PodCgroupPath(pod) + "/io.pressure",
              "some avg10=0.20 avg60=0.10 avg300=0.00 total=9\nfull avg10=0.10 avg60=0.00 avg300=0.00 total=8\n");
  pod_stats = PodStats(pod);
  ASSERT_TRUE(pod_stats.ok()) << pod_stats.status();
  const v1::IoUsage& io = pod_stats->linux().io();
  EXPECT_EQ(io.timestamp(), absl::ToUnixNanos(now_));
  EXPECT_EQ(io.psi().some().total(), 9000u);
  EXPECT_EQ(io.psi().some().avg10(), 0.2);
  EXPECT_EQ(io.psi().full().total(), 8000u);
  EXPECT_FALSE(pod_stats->linux().containers(0).has_io()) << "the container's own file is still missing";
}

// --- CPU rate -------------------------------------------------------------------------

TEST_P(StatsServiceTest, NanoCoresIsTheRateSinceThePreviousSample) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app", true, Busy(1000000000));
  const std::string path = ContainerCgroupPath(id);

  EXPECT_EQ(NanoCores(id), std::nullopt) << "first sample: no rate yet (containerd, cAdvisor)";
  now_ += absl::Seconds(2);
  WriteCgroup(path, Busy(3000000000));
  EXPECT_EQ(NanoCores(id), 1000000000u) << "2 s of CPU in 2 s: one core";

  // Too soon after the last: the same rate, and the baseline stays.
  now_ += absl::Milliseconds(100);
  WriteCgroup(path, Busy(3050000000));
  EXPECT_EQ(NanoCores(id), 1000000000u);
  now_ += absl::Milliseconds(1900);
  WriteCgroup(path, Busy(4000000000));
  EXPECT_EQ(NanoCores(id), 500000000u) << "1 s of CPU over the 2 s since the baseline";

  // A restarted container's counter starts again: no negative rate, then a fresh one.
  now_ += absl::Seconds(2);
  WriteCgroup(path, Busy(100000000));
  EXPECT_EQ(NanoCores(id), std::nullopt);
  now_ += absl::Seconds(4);
  WriteCgroup(path, Busy(1100000000));
  EXPECT_EQ(NanoCores(id), 250000000u);
}

TEST_P(StatsServiceTest, RatesAreKeptPerContainer) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string a = AddContainer(pod, "a", true, Busy(0));
  const std::string b = AddContainer(pod, "b", true, Busy(0));
  List();
  now_ += absl::Seconds(10);
  WriteCgroup(ContainerCgroupPath(a), Busy(20000000000));
  WriteCgroup(ContainerCgroupPath(b), Busy(5000000000));
  std::map<std::string, uint64_t> rates;
  for (const auto& s : List()) rates[s.attributes().id()] = s.cpu().usage_nano_cores().value();
  EXPECT_EQ(rates[a], 2000000000u);
  EXPECT_EQ(rates[b], 500000000u);
}

// --- Docker calls -----------------------------------------------------------------------

TEST_P(StatsServiceTest, ListsOnceAndInspectsOnlyUnknownContainers) {
  const std::string pod = RunPod(PodConfig("web"));
  AddContainer(pod, "a");
  AddContainer(pod, "b");
  List();
  const int lists = docker_.CallCount("ListContainers"), inspects = docker_.CallCount("InspectContainer");
  List();
  EXPECT_EQ(docker_.CallCount("ListContainers"), lists + 1);
  EXPECT_EQ(docker_.CallCount("InspectContainer"), inspects);
  AddContainer(pod, "c");
  const int before_c = docker_.CallCount("InspectContainer");
  List();
  EXPECT_EQ(docker_.CallCount("InspectContainer"), before_c + 1);
}

TEST_P(StatsServiceTest, TheCgroupFoundOnceIsReadUntilItGoesThenFoundFromTheNewProcess) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  ASSERT_TRUE(Stats(id)->has_cpu());
  int inspects = docker_.CallCount("InspectContainer");

  // The container was restarted behind the shim's back: its old pid is now someone
  // else's, its cgroup (named by its ID) the same.
  const int old_pid = docker_.Containers().at(id).inspect.state.pid;
  WriteProcCgroup(old_pid, "/system.slice/cron.service");
  const int new_pid = GivePid(id);
  ASSERT_NE(new_pid, old_pid);
  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->has_cpu());
  EXPECT_EQ(docker_.CallCount("InspectContainer"), inspects) << "read without /proc or Docker";

  // Its cgroup gone: no sample; then found again from its process, which Docker names.
  const std::string path = ContainerCgroupPath(id);
  for (const char* hierarchy : {"", "/cpuacct", "/memory", "/pids"})
    std::filesystem::remove_all(tree_.Path(absl::StrCat("sys/fs/cgroup", hierarchy, path)));
  stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->has_cpu());
  WriteCgroup(path, Busy(3000000000));
  stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->has_cpu());
  EXPECT_EQ(docker_.CallCount("InspectContainer"), inspects + 1);

  StopContainer(id);  // inspects once itself: is `id` a container, not a pod?
  inspects = docker_.CallCount("InspectContainer");
  stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->has_cpu());
  // No collector: a stopped container's figures need no inspect at all.
  EXPECT_EQ(docker_.CallCount("InspectContainer"), inspects);
}

TEST_P(StatsServiceTest, CgroupFilesStayOpenWhileTheContainerRunsAndCloseWhenItStops) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  const int kept_before = stats::KeptKernelFiles::KeptInProcess();
  auto first = Stats(id);
  ASSERT_TRUE(first.ok()) << first.status();
  const int kept = stats::KeptKernelFiles::KeptInProcess();
  EXPECT_GT(kept, kept_before);
  WriteCgroup(ContainerCgroupPath(id), Busy(7000000000));
  auto second = Stats(id);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->cpu().usage_core_nano_seconds().value(), 7000000000u) << "the kept files' new text";
  EXPECT_EQ(stats::KeptKernelFiles::KeptInProcess(), kept) << "no file opened twice";

  StopContainer(id);
  ASSERT_TRUE(Stats(id).ok());
  EXPECT_EQ(stats::KeptKernelFiles::KeptInProcess(), kept_before) << "a stopped container's files are closed";
}

// A removed container is no longer listed: its files go with the next minute's pruning.
TEST_P(StatsServiceTest, CgroupFilesOfAContainerNotSampledForAMinuteAreClosed) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string a = AddContainer(pod, "a");
  const std::string b = AddContainer(pod, "b");
  const int kept_before = stats::KeptKernelFiles::KeptInProcess();
  ASSERT_TRUE(Stats(a).ok());
  const int per_container = stats::KeptKernelFiles::KeptInProcess() - kept_before;
  ASSERT_GT(per_container, 0);

  now_ += absl::Minutes(2);
  ASSERT_TRUE(Stats(b).ok());
  EXPECT_EQ(stats::KeptKernelFiles::KeptInProcess(), kept_before + per_container) << "a's closed, b's open";
  auto again = Stats(a);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->has_cpu());
  EXPECT_EQ(stats::KeptKernelFiles::KeptInProcess(), kept_before + 2 * per_container) << "a's open again";
}

TEST_P(StatsServiceTest, AGonePidGivesNoSample) {
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  const int pid = docker_.Containers().at(id).inspect.state.pid;
  std::filesystem::remove_all(tree_.Path(absl::StrCat("proc/", pid)));
  auto stats = Stats(id);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->has_cpu());
  EXPECT_EQ(stats->attributes().id(), id);
}

// --- writable layer ---------------------------------------------------------------------

TEST_P(StatsServiceTest, WritableLayerIsMeasuredInTheBackground) {
  stats::WritableLayerCollector layers(stats::LayerCollectorOptions{absl::Milliseconds(20), absl::Minutes(1), absl::Milliseconds(20)});
  service_ = MakeService(&layers);
  const std::string pod = RunPod(PodConfig("web"));
  const std::string id = AddContainer(pod, "app");
  const std::string stopped = AddContainer(pod, "stopped");
  StopContainer(stopped);
  for (const std::string& c : {id, stopped}) {
    tree_.Write("layers/" + c + "/diff/etc/file", std::string(20000, 'x'));
    docker_.EditContainer(c, [&](dockerclient::ContainerInspect& i) { i.upper_dir = tree_.Path("layers/" + c + "/diff"); });
  }

  auto layer_of = [&](const std::string& c, uint64_t at_least) -> std::optional<v1::FilesystemUsage> {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (absl::Now() < deadline) {
      for (const auto& s : List())
        if (s.attributes().id() == c && s.writable_layer().used_bytes().value() >= at_least) return s.writable_layer();
      absl::SleepFor(absl::Milliseconds(10));
    }
    return std::nullopt;
  };
  const absl::Time before = absl::Now();
  std::optional<v1::FilesystemUsage> layer = layer_of(id, 20000);
  ASSERT_TRUE(layer.has_value()) << "never measured";
  EXPECT_EQ(layer->fs_id().mountpoint(), kDockerRoot);
  EXPECT_EQ(layer->inodes_used().value(), 3u);  // diff, etc, file
  EXPECT_GE(layer->timestamp(), absl::ToUnixNanos(before));
  EXPECT_TRUE(layer_of(stopped, 20000).has_value()) << "a stopped container keeps its layer";

  tree_.Write("layers/" + id + "/diff/etc/more", std::string(100000, 'y'));
  EXPECT_TRUE(layer_of(id, 120000).has_value()) << "not measured again";
  layers.Stop();
}

// --- pod stats ------------------------------------------------------------------------

TEST_P(StatsServiceTest, PodFiguresComeFromThePodCgroupAndInfraNetwork) {
  const std::string pod = RunPod(PodConfig("web"), NetDev(123456, 654321));
  const std::string a = AddContainer(pod, "a");
  const std::string b = AddContainer(pod, "b");
  FakeCgroup whole = Busy(9000000000);
  whole.usage = 100 << 20;
  whole.limit = 256 << 20;
  whole.pids = 11;
  WriteCgroup(PodCgroupPath(pod), whole);

  auto stats = PodStats(pod.substr(0, 12));
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->attributes().id(), pod);
  EXPECT_EQ(stats->attributes().metadata().name(), "web");
  EXPECT_EQ(stats->attributes().metadata().namespace_(), "prod");
  EXPECT_EQ(AsMap(stats->attributes().labels()), (std::map<std::string, std::string>{{"app", "web"}}));
  EXPECT_EQ(AsMap(stats->attributes().annotations()), (std::map<std::string, std::string>{{"note", "pod web"}}));
  const v1::LinuxPodSandboxStats& linux = stats->linux();
  EXPECT_EQ(linux.cpu().usage_core_nano_seconds().value(), 9000000000u);
  EXPECT_EQ(linux.memory().working_set_bytes().value(), 96u << 20);
  EXPECT_EQ(linux.memory().available_bytes().value(), 160u << 20);
  EXPECT_EQ(linux.process().process_count().value(), 11u);
  EXPECT_EQ(linux.process().timestamp(), absl::ToUnixNanos(now_));
  ASSERT_EQ(linux.network().interfaces_size(), 2);  // no lo
  EXPECT_EQ(linux.network().default_interface().name(), "eth0");
  EXPECT_EQ(linux.network().default_interface().rx_bytes().value(), 123456u);
  EXPECT_EQ(linux.network().default_interface().tx_bytes().value(), 654321u);
  EXPECT_EQ(linux.network().default_interface().rx_errors().value(), 2u);
  EXPECT_EQ(linux.network().default_interface().tx_errors().value(), 1u);
  EXPECT_EQ(linux.network().interfaces(1).name(), "net1");
  std::vector<std::string> containers;
  for (const auto& c : linux.containers()) containers.push_back(c.attributes().id());
  EXPECT_THAT(containers, UnorderedElementsAre(a, b));
  EXPECT_EQ(linux.containers(0).memory().working_set_bytes().value(), 60u << 20);

  // The pod's own rate, from its own cgroup's counter.
  EXPECT_FALSE(linux.cpu().has_usage_nano_cores());
  now_ += absl::Seconds(3);
  whole.cpu_ns += 6000000000;
  WriteCgroup(PodCgroupPath(pod), whole);
  EXPECT_EQ(PodStats(pod)->linux().cpu().usage_nano_cores().value(), 2000000000u);
}

TEST_P(StatsServiceTest, NetworkDefaultsToTheFirstInterfaceWithoutEth0) {
  const std::string net_dev =
      "Inter-|   Receive |  Transmit\n face |bytes packets|bytes packets\n"
      "    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
      "  net1: 700 7 0 0 0 0 0 0 800 8 0 0 0 0 0 0\n";
  const std::string pod = RunPod(PodConfig("web"), net_dev);
  auto stats = PodStats(pod);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->linux().network().default_interface().name(), "net1");
  EXPECT_EQ(stats->linux().network().default_interface().rx_bytes().value(), 700u);
}

TEST_P(StatsServiceTest, PodWithoutCgroupParentOrOnTheHostNetwork) {
  const std::string no_parent = RunPod(PodConfig("plain", /*with_cgroup_parent=*/false));
  auto stats = PodStats(no_parent);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(stats->linux().has_cpu()) << "Docker's default parent holds every container: not the pod's";
  EXPECT_FALSE(stats->linux().has_memory());
  EXPECT_TRUE(stats->linux().has_network());

  v1::PodSandboxConfig host = PodConfig("host");
  host.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  const std::string host_pod = RunPod(host);
  WriteCgroup(PodCgroupPath(host_pod), Busy(1000000000));
  stats = PodStats(host_pod);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_TRUE(stats->linux().has_cpu());
  EXPECT_FALSE(stats->linux().has_network()) << "the node's interfaces are not the pod's";
}

TEST_P(StatsServiceTest, UnknownPodIsNotFoundAndStoppedPodsAreNotListed) {
  const std::string web = RunPod(PodConfig("web"));
  const std::string db = RunPod(PodConfig("db"));
  EXPECT_EQ(PodStats("0000dead").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(PodStats("0000dead").status().message(), HasSubstr("pod sandbox 0000dead not found"));
  EXPECT_EQ(PodStats("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(PodStats("").status().message(), HasSubstr("pod_sandbox_id is required"));
  EXPECT_THAT(ListPodIds(), UnorderedElementsAre(web, db));

  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(db);
  ASSERT_TRUE(service_->StopPodSandbox(ctx_, stop).ok());
  EXPECT_THAT(ListPodIds(), ElementsAre(web)) << "ready pods only, as containerd";
  auto stopped = PodStats(db);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->attributes().metadata().name(), "db");
  EXPECT_FALSE(stopped->linux().has_cpu());
  EXPECT_FALSE(stopped->linux().has_network());
}

TEST_P(StatsServiceTest, ListPodStatsFiltersByIdAndLabels) {
  const std::string web = RunPod(PodConfig("web"));
  const std::string db = RunPod(PodConfig("db"));
  v1::PodSandboxStatsFilter by_id;
  by_id.set_id(db);
  EXPECT_THAT(ListPodIds(by_id), ElementsAre(db));
  // A prefix (the fake's IDs share all but their last digits): both pods.
  by_id.set_id(db.substr(0, 20));
  EXPECT_THAT(ListPodIds(by_id), UnorderedElementsAre(web, db));
  by_id.set_id("ffff");
  EXPECT_THAT(ListPodIds(by_id), IsEmpty());
  v1::PodSandboxStatsFilter by_label;
  (*by_label.mutable_label_selector())["app"] = "web";
  EXPECT_THAT(ListPodIds(by_label), ElementsAre(web));
  (*by_label.mutable_label_selector())["app"] = "none";
  EXPECT_THAT(ListPodIds(by_label), IsEmpty());
}

// --- metrics ----------------------------------------------------------------------------

TEST_P(StatsServiceTest, DescriptorsNameCadvisorSeries) {
  auto resp = service_->ListMetricDescriptors(ctx_, v1::ListMetricDescriptorsRequest());
  ASSERT_TRUE(resp.ok()) << resp.status();
  std::map<std::string, std::vector<std::string>> keys;
  for (const auto& d : resp->descriptors()) {
    EXPECT_FALSE(d.help().empty()) << d.name();
    keys[d.name()] = {d.label_keys().begin(), d.label_keys().end()};
  }
  const std::vector<std::string> base = {"pod", "namespace", "container", "id", "image"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> all = base;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  EXPECT_EQ(keys["container_cpu_usage_seconds_total"], with({"cpu"}));
  EXPECT_EQ(keys["container_memory_working_set_bytes"], base);
  EXPECT_EQ(keys["container_memory_usage_bytes"], base);
  EXPECT_EQ(keys["container_memory_rss"], base);
  EXPECT_EQ(keys["container_memory_swap"], base);
  EXPECT_EQ(keys["container_memory_failures_total"], with({"failure_type", "scope"}));
  EXPECT_EQ(keys["container_spec_memory_limit_bytes"], base);
  EXPECT_EQ(keys["container_threads"], base);
  for (const char* name : {"container_network_receive_bytes_total", "container_network_receive_errors_total",
                           "container_network_transmit_bytes_total", "container_network_transmit_errors_total"})
    EXPECT_EQ(keys[name], with({"interface"})) << name;
  EXPECT_EQ(keys.size(), 12u);
}

// A metric by name and label values (as the kubelet's collector would see it).
struct Sample {
  v1::MetricType type;
  uint64_t value;
  int64_t timestamp;
};
std::map<std::string, Sample> Samples(const google::protobuf::RepeatedPtrField<v1::Metric>& metrics) {
  std::map<std::string, Sample> out;
  for (const auto& m : metrics) {
    std::string key = m.name();
    for (const auto& v : m.label_values()) absl::StrAppend(&key, "|", v);
    out[key] = {m.metric_type(), m.value().value(), m.timestamp()};
  }
  return out;
}

TEST_P(StatsServiceTest, PodMetricsCarryTheKubeletsLabels) {
  const std::string pod = RunPod(PodConfig("web"), NetDev(4096, 2048));
  const std::string app = AddContainer(pod, "app", true, Busy(7900000000));
  const std::string stopped = AddContainer(pod, "stopped");
  StopContainer(stopped);
  FakeCgroup whole = Busy(12000000000);
  whole.pids = 9;
  WriteCgroup(PodCgroupPath(pod), whole);

  auto resp = service_->ListPodSandboxMetrics(ctx_, v1::ListPodSandboxMetricsRequest());
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->pod_metrics_size(), 1);
  const v1::PodSandboxMetrics& metrics = resp->pod_metrics(0);
  EXPECT_EQ(metrics.pod_sandbox_id(), pod);

  const std::string pod_labels = absl::StrCat("|web|prod||", pod, "|");
  auto pod_samples = Samples(metrics.metrics());
  EXPECT_EQ(pod_samples["container_cpu_usage_seconds_total" + pod_labels + "|total"].value, 12u);
  EXPECT_EQ(pod_samples["container_threads" + pod_labels].value, 9u);
  const Sample rx = pod_samples["container_network_receive_bytes_total" + pod_labels + "|eth0"];
  EXPECT_EQ(rx.value, 4096u);
  EXPECT_EQ(rx.type, v1::COUNTER);
  EXPECT_EQ(rx.timestamp, absl::ToUnixNanos(now_));
  EXPECT_EQ(pod_samples["container_network_transmit_bytes_total" + pod_labels + "|eth0"].value, 2048u);
  EXPECT_EQ(pod_samples["container_network_transmit_errors_total" + pod_labels + "|eth0"].value, 1u);
  EXPECT_EQ(pod_samples.count("container_network_receive_bytes_total" + pod_labels + "|lo"), 0u);

  ASSERT_EQ(metrics.container_metrics_size(), 1) << "a stopped container has nothing to sample";
  EXPECT_EQ(metrics.container_metrics(0).container_id(), app);
  const std::string app_labels = absl::StrCat("|web|prod|app|", app, "|", kBusybox);
  auto app_samples = Samples(metrics.container_metrics(0).metrics());
  const Sample cpu = app_samples["container_cpu_usage_seconds_total" + app_labels + "|total"];
  EXPECT_EQ(cpu.value, 7u);  // whole seconds
  EXPECT_EQ(cpu.type, v1::COUNTER);
  const Sample ws = app_samples["container_memory_working_set_bytes" + app_labels];
  EXPECT_EQ(ws.value, 60u << 20);
  EXPECT_EQ(ws.type, v1::GAUGE);
  EXPECT_EQ(app_samples["container_memory_usage_bytes" + app_labels].value, 64u << 20);
  EXPECT_EQ(app_samples["container_memory_rss" + app_labels].value, 50u << 20);
  EXPECT_EQ(app_samples["container_memory_swap" + app_labels].value, 1u << 20);
  EXPECT_EQ(app_samples["container_spec_memory_limit_bytes" + app_labels].value, 128u << 20);
  EXPECT_EQ(app_samples["container_threads" + app_labels].value, 5u);
  const Sample faults = app_samples["container_memory_failures_total" + app_labels + "|pgmajfault|hierarchy"];
  EXPECT_EQ(faults.value, 3u);
  EXPECT_EQ(faults.type, v1::COUNTER);
}

TEST_P(StatsServiceTest, EveryMetricHasADescriptorWithItsLabelKeys) {
  const std::string pod = RunPod(PodConfig("web"));
  AddContainer(pod, "app");
  WriteCgroup(PodCgroupPath(pod), Busy(1000000000));
  auto descriptors = service_->ListMetricDescriptors(ctx_, v1::ListMetricDescriptorsRequest());
  ASSERT_TRUE(descriptors.ok()) << descriptors.status();
  std::map<std::string, int> key_counts;
  for (const auto& d : descriptors->descriptors()) key_counts[d.name()] = d.label_keys_size();
  auto resp = service_->ListPodSandboxMetrics(ctx_, v1::ListPodSandboxMetricsRequest());
  ASSERT_TRUE(resp.ok()) << resp.status();
  int seen = 0;
  auto check = [&](const v1::Metric& m) {
    ++seen;
    ASSERT_EQ(key_counts.count(m.name()), 1u) << m.name();
    EXPECT_EQ(m.label_values_size(), key_counts[m.name()]) << m.name();
  };
  for (const auto& pod_metrics : resp->pod_metrics()) {
    for (const auto& m : pod_metrics.metrics()) check(m);
    for (const auto& c : pod_metrics.container_metrics())
      for (const auto& m : c.metrics()) check(m);
  }
  EXPECT_GT(seen, 20);
}

// --- UpdatePodSandboxResources ----------------------------------------------------------

TEST_P(StatsServiceTest, UpdatePodSandboxResourcesIsRecordedAndReported) {
  const std::string pod = RunPod(PodConfig("web"));
  v1::UpdatePodSandboxResourcesRequest req;
  req.set_pod_sandbox_id(pod.substr(0, 12));
  req.mutable_overhead()->set_cpu_shares(25);
  req.mutable_resources()->set_cpu_shares(512);
  req.mutable_resources()->set_cpu_quota(50000);
  req.mutable_resources()->set_cpu_period(100000);
  req.mutable_resources()->set_memory_limit_in_bytes(256 << 20);
  const int updates = docker_.CallCount("UpdateContainer");
  auto resp = service_->UpdatePodSandboxResources(ctx_, req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(docker_.CallCount("UpdateContainer"), updates) << "the pod cgroup is the kubelet's; pause has none";

  v1::PodSandboxStatusRequest status;
  status.set_pod_sandbox_id(pod);
  status.set_verbose(true);
  auto st = service_->PodSandboxStatus(ctx_, status);
  ASSERT_TRUE(st.ok()) << st.status();
  const nlohmann::json info = nlohmann::json::parse(st->info().at("info"));
  EXPECT_EQ(info["podResources"]["resources"]["cpu_shares"], "512");  // CRI's JSON: int64 as strings
  EXPECT_EQ(info["podResources"]["resources"]["memory_limit_in_bytes"], "268435456");
  EXPECT_EQ(info["podResources"]["overhead"]["cpu_shares"], "25");
  EXPECT_TRUE(info.contains("hostConfig")) << "other keys stay";

  // A restarted shim reads it from the checkpoint.
  service_ = MakeService(nullptr);
  st = service_->PodSandboxStatus(ctx_, status);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(nlohmann::json::parse(st->info().at("info"))["podResources"]["resources"]["cpu_quota"], "50000");
}

TEST_P(StatsServiceTest, UpdatePodSandboxResourcesValidates) {
  const std::string pod = RunPod(PodConfig("web"));
  v1::UpdatePodSandboxResourcesRequest req;
  EXPECT_EQ(service_->UpdatePodSandboxResources(ctx_, req).status().code(), absl::StatusCode::kInvalidArgument);
  req.set_pod_sandbox_id("0000dead");
  EXPECT_EQ(service_->UpdatePodSandboxResources(ctx_, req).status().code(), absl::StatusCode::kNotFound);
  req.set_pod_sandbox_id(pod);
  req.mutable_resources()->set_memory_limit_in_bytes(-1);
  const absl::Status bad = service_->UpdatePodSandboxResources(ctx_, req).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("UpdatePodSandboxResources: resources"));
  EXPECT_THAT(bad.message(), HasSubstr("memory_limit_in_bytes"));

  v1::PodSandboxStatusRequest status;
  status.set_pod_sandbox_id(pod);
  status.set_verbose(true);
  auto st = service_->PodSandboxStatus(ctx_, status);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_FALSE(nlohmann::json::parse(st->info().at("info")).contains("podResources")) << "nothing recorded";
}


// --- the Stream* RPCs and gRPC codes, through the gRPC adapter --------------------------

TEST_P(StatsServiceTest, StreamRpcsSendTheListsOverGrpc) {
  const std::string web = RunPod(PodConfig("web"));
  const std::string db = RunPod(PodConfig("db"));
  const std::string a = AddContainer(web, "a");
  const std::string c = AddContainer(db, "c");
  dispatch::Dispatcher dispatcher;
  RuntimeServiceImpl runtime(*service_, GrpcOptions{}, dispatcher);
  grpc::ServerBuilder builder;
  builder.RegisterService(&runtime);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::RuntimeService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));

  {
    grpc::ClientContext context;
    v1::StreamContainerStatsRequest req;
    req.mutable_filter()->set_pod_sandbox_id(web);
    auto reader = stub->StreamContainerStats(&context, req);
    std::vector<std::string> ids;
    v1::StreamContainerStatsResponse batch;
    while (reader->Read(&batch))
      for (const auto& s : batch.container_stats()) ids.push_back(s.attributes().id());
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_THAT(ids, ElementsAre(a)) << "the filter applies";
  }
  {
    grpc::ClientContext context;
    auto reader = stub->StreamPodSandboxStats(&context, v1::StreamPodSandboxStatsRequest());
    std::vector<std::string> ids;
    v1::StreamPodSandboxStatsResponse batch;
    while (reader->Read(&batch))
      for (const auto& s : batch.pod_sandbox_stats()) ids.push_back(s.attributes().id());
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_THAT(ids, UnorderedElementsAre(web, db));
  }
  {
    grpc::ClientContext context;
    auto reader = stub->StreamPodSandboxMetrics(&context, v1::StreamPodSandboxMetricsRequest());
    std::map<std::string, std::vector<std::string>> containers;
    v1::StreamPodSandboxMetricsResponse batch;
    while (reader->Read(&batch))
      for (const auto& m : batch.pod_sandbox_metrics())
        for (const auto& cm : m.container_metrics()) containers[m.pod_sandbox_id()].push_back(cm.container_id());
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_THAT(containers,
                UnorderedElementsAre(::testing::Pair(web, ElementsAre(a)), ::testing::Pair(db, ElementsAre(c))));
  }
  // Codes and messages reach the client as the service gave them.
  {
    grpc::ClientContext context;
    v1::ContainerStatsRequest req;
    req.set_container_id("0000dead");
    v1::ContainerStatsResponse resp;
    grpc::Status status = stub->ContainerStats(&context, req, &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(status.error_message(), HasSubstr("container 0000dead not found"));
  }
  {
    grpc::ClientContext context;
    v1::PodSandboxStatsResponse resp;
    grpc::Status status = stub->PodSandboxStats(&context, v1::PodSandboxStatsRequest(), &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("pod_sandbox_id is required"));
  }
  {
    grpc::ClientContext context;
    v1::UpdatePodSandboxResourcesRequest req;
    req.set_pod_sandbox_id("0000dead");
    v1::UpdatePodSandboxResourcesResponse resp;
    EXPECT_EQ(stub->UpdatePodSandboxResources(&context, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace shim

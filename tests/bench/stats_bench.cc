// The stats RPCs through shim::CriService on a real dockerd, side by side with what
// they cannot avoid and with what cri-dockerd does instead:
//   - ListContainerStats of 20 running containers (target p50 ≤ 20 ms) and of 100
//     (≤ 100 ms), ListPodSandboxStats of the 20 pods (≤ 30 ms), ContainerStats of one
//     container (≤ 5 ms);
//   - "raw cgroup read": the same figures read straight from the files (each
//     container's /proc/<pid>/cgroup, then its cgroup files; for pods also the pod
//     cgroups and /proc/<pid>/net/dev), with no Docker call: the floor;
//   - "raw HTTP list": Docker's container list alone (bench::RawUnixHttp), which every
//     list RPC makes once;
//   - "docker /stats": GET /containers/<id>/stats?stream=false, what cri-dockerd calls
//     per container (dockerd waits for a second sample, about 1 s): timed for one
//     container and for the 20 in a row, a few iterations only.
// 20 pods (k8s_POD_bstat-<i>_dsbench-stats_...) on Docker's bridge network, each with a
// cgroup parent of its own (/dsbench-stats/pod<i>, as the kubelet gives one) and one
// running busybox container; the 100-container benchmark adds 4 more to each pod. A
// writable-layer collector runs as in the daemon. Every container of the
// "dsbench-stats" namespace is removed at start (a killed run) and at the end, also
// after a failure, and then the cgroup parents.
//
// Needs root, a running dockerd and the test images (scripts/test-env.sh).
//   stats_bench [--benchmark_min_time=0.5] [--benchmark_filter=...]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/network/docker_bridge.h"
#include "shim/stats/cgroup.h"
#include "shim/stats/netdev.h"
#include "shim/stats/writable_layers.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

namespace v1 = shim::v1;

constexpr int kPods = 20;
constexpr int kManyContainers = 100;
constexpr char kNamespace[] = "dsbench-stats";  // every container this bench creates has it in its name
constexpr char kCgroupRoot[] = "/dsbench-stats";
constexpr char kBenchLabel[] = "dsbench-stats";
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

struct Container {
  std::string id;
  int pid = 0;
};

struct Env {
  std::string dir;  // the shim's root dir
  std::unique_ptr<dockerclient::DockerClient> docker;
  std::unique_ptr<network::DockerBridgeNetwork> network;
  std::unique_ptr<shim::stats::WritableLayerCollector> layers;
  std::unique_ptr<shim::CriService> service;
  std::unique_ptr<bench::RawUnixHttp> raw;
  std::optional<shim::stats::CgroupLayout> layout;
  std::string api_prefix;
  std::string list_query;  // Docker's list of the bench's app containers
  std::vector<std::string> pods;
  std::vector<int> pod_pids;
  std::vector<std::string> pod_cgroup_parents;  // as Docker has them (HostConfig.CgroupParent)
  std::vector<Container> containers;            // the first kPods: one per pod
  int next = 0;                                 // round robin over the first kPods containers
};

Env* env = nullptr;

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }

v1::PodSandboxConfig PodConfig(int i) {
  v1::PodSandboxConfig config;
  config.mutable_metadata()->set_name(absl::StrCat("bstat-", i));
  config.mutable_metadata()->set_namespace_(kNamespace);
  config.mutable_metadata()->set_uid(absl::StrCat("dsbench-stats-", ::getpid(), "-", i));
  (*config.mutable_labels())[kBenchLabel] = "1";
  config.mutable_linux()->set_cgroup_parent(absl::StrCat(kCgroupRoot, "/pod", i));
  return config;
}

// --- Setup of pods and containers. -------------------------------------------------

std::string AddContainer(int pod, int n) {
  v1::CreateContainerRequest req;
  req.set_pod_sandbox_id(env->pods[pod]);
  *req.mutable_sandbox_config() = PodConfig(pod);
  v1::ContainerConfig& c = *req.mutable_config();
  c.mutable_metadata()->set_name(absl::StrCat("sbctr", n));
  c.mutable_image()->set_image(testenv::BusyboxImage());
  c.add_command("sleep");
  c.add_args("3600");
  (*c.mutable_labels())[kBenchLabel] = "1";
  auto created = env->service->CreateContainer(Ctx(), req);
  if (!created.ok()) return "CreateContainer: " + created.status().ToString();
  v1::StartContainerRequest start;
  start.set_container_id(created->container_id());
  if (auto s = env->service->StartContainer(Ctx(), start); !s.ok()) return "StartContainer: " + s.status().ToString();
  auto inspect = env->docker->InspectContainer(Ctx(), created->container_id());
  if (!inspect.ok()) return "inspect: " + inspect.status().ToString();
  env->containers.push_back({created->container_id(), inspect->state.pid});
  return "";
}

// Adds containers round robin over the pods until there are `n`.
std::string EnsureContainers(int n) {
  while (static_cast<int>(env->containers.size()) < n) {
    const int k = static_cast<int>(env->containers.size());
    if (std::string err = AddContainer(k % kPods, k / kPods); !err.empty()) return err;
  }
  return "";
}

// --- Operations; each returns "" on success, else what went wrong. ---------------

std::string ShimListContainerStats(int want) {
  v1::ListContainerStatsRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  auto resp = env->service->ListContainerStats(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->stats_size() != want) return absl::StrCat("ListContainerStats: ", resp->stats_size(), ", want ", want);
  for (const auto& s : resp->stats())
    if (!s.has_cpu() || !s.has_memory()) return "ListContainerStats: a running container without CPU or memory";
  return "";
}

std::string ShimListPodSandboxStats() {
  v1::ListPodSandboxStatsRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  auto resp = env->service->ListPodSandboxStats(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->stats_size() != kPods) return absl::StrCat("ListPodSandboxStats: ", resp->stats_size(), ", want ", kPods);
  for (const auto& s : resp->stats())
    if (!s.linux().has_cpu() || !s.linux().has_network()) return "ListPodSandboxStats: a pod without CPU or network";
  return "";
}

const Container& NextContainer() { return env->containers[env->next++ % kPods]; }

std::string ShimContainerStats() {
  v1::ContainerStatsRequest req;
  req.set_container_id(NextContainer().id);
  auto resp = env->service->ContainerStats(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (!resp->stats().has_memory()) return "ContainerStats: no memory figures";
  return "";
}

// What the shim reads of one running container's cgroup, and nothing else.
std::string RawCgroupRead(int pid) {
  auto dirs = env->layout->DirsOfProcess(pid);
  if (!dirs.ok()) return dirs.status().ToString();
  shim::stats::CgroupFigures figures = env->layout->Read(*dirs);
  if (!figures.cpu_usage_ns || !figures.memory) return absl::StrCat("pid ", pid, ": no cgroup figures");
  benchmark::DoNotOptimize(figures.memory->working_set_bytes);
  return "";
}

std::string RawCgroupReadContainers(int n) {
  for (int i = 0; i < n; ++i)
    if (std::string err = RawCgroupRead(env->containers[i].pid); !err.empty()) return err;
  return "";
}

std::string RawCgroupReadPods() {
  for (int i = 0; i < kPods; ++i) {
    shim::stats::CgroupFigures pod = env->layout->Read(env->layout->DirsOfParent(env->pod_cgroup_parents[i], false));
    if (!pod.cpu_usage_ns) return absl::StrCat("pod ", i, ": no cgroup figures");
    auto interfaces = shim::stats::ReadNetDev(env->pod_pids[i]);
    if (!interfaces.ok()) return interfaces.status().ToString();
  }
  for (const Container& c : env->containers)
    if (std::string err = RawCgroupRead(c.pid); !err.empty()) return err;
  return "";
}

std::string RawCgroupReadOne() { return RawCgroupRead(NextContainer().pid); }

std::string RawHttpList() { return env->raw->GetOk(env->list_query, true); }

std::string DockerStats(const std::string& id) {
  return env->raw->GetOk(env->api_prefix + "/containers/" + id + "/stats?stream=false", true);
}
std::string DockerStatsOne() { return DockerStats(NextContainer().id); }
std::string DockerStatsOfPods() {
  for (int i = 0; i < kPods; ++i)
    if (std::string err = DockerStats(env->containers[i].id); !err.empty()) return err;
  return "";
}

// --- Benchmarks. -------------------------------------------------------------------

void BM_ListContainerStats_20(benchmark::State& s) {
  if (std::string err = EnsureContainers(kPods); !err.empty()) return s.SkipWithError(err.c_str());
  bench::Compare(s, {{"ListContainerStats x20: shim", [] { return ShimListContainerStats(kPods); }},
                     {"ListContainerStats x20: raw cgroup read", [] { return RawCgroupReadContainers(kPods); }},
                     {"ListContainerStats x20: raw HTTP list", RawHttpList}});
}
void BM_ListPodSandboxStats_20(benchmark::State& s) {
  bench::Compare(s, {{"ListPodSandboxStats x20: shim", ShimListPodSandboxStats},
                     {"ListPodSandboxStats x20: raw cgroup + net/dev read", RawCgroupReadPods}});
}
void BM_ContainerStats(benchmark::State& s) {
  bench::Compare(s, {{"ContainerStats: shim", ShimContainerStats},
                     {"ContainerStats: raw cgroup read", RawCgroupReadOne}});
}
void BM_DockerStats_One(benchmark::State& s) { bench::Measure(s, "ContainerStats: docker /stats", DockerStatsOne); }
void BM_DockerStats_20(benchmark::State& s) {
  bench::Measure(s, "ListContainerStats x20: docker /stats each", DockerStatsOfPods);
}
void BM_ListContainerStats_100(benchmark::State& s) {
  if (std::string err = EnsureContainers(kManyContainers); !err.empty()) return s.SkipWithError(err.c_str());
  bench::Compare(s,
                 {{"ListContainerStats x100: shim", [] { return ShimListContainerStats(kManyContainers); }},
                  {"ListContainerStats x100: raw cgroup read", [] { return RawCgroupReadContainers(kManyContainers); }},
                  {"ListContainerStats x100: raw HTTP list", RawHttpList}});
}

#define BENCH(fn) BENCHMARK(fn)->UseRealTime()->Unit(benchmark::kMillisecond)
BENCH(BM_ListContainerStats_20);
BENCH(BM_ListPodSandboxStats_20);
BENCH(BM_ContainerStats);
// About 1 s per container: a few iterations are enough to see it.
BENCH(BM_DockerStats_One)->Iterations(6);
BENCH(BM_DockerStats_20)->Iterations(2);
BENCH(BM_ListContainerStats_100);

// --- Setup and cleanup. --------------------------------------------------------------

// Every container of the bench's namespace (k8s_<container>_<pod>_dsbench-stats_...).
void RemoveBenchContainers(dockerclient::DockerClient& docker) {
  bench::RemoveContainersNamed(
      docker,
      [](std::string_view name) { return name.find(absl::StrCat("_", kNamespace, "_")) != std::string_view::npos; },
      "stats_bench");
}

// The pod cgroups runc made under kCgroupRoot in every hierarchy, deepest first.
void RemoveCgroups() {
  std::error_code ec;
  for (const auto& hierarchy : std::filesystem::directory_iterator("/sys/fs/cgroup", ec)) {
    const std::filesystem::path root = hierarchy.path() / std::string(kCgroupRoot).substr(1);
    if (!std::filesystem::is_directory(root, ec)) continue;
    std::vector<std::filesystem::path> dirs;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root, ec))
      if (e.is_directory(ec)) dirs.push_back(e.path());
    std::sort(dirs.rbegin(), dirs.rend());  // children sort after their parents
    for (const auto& d : dirs) ::rmdir(d.c_str());
    ::rmdir(root.c_str());
  }
}

void Cleanup(Env& e) {
  e.service.reset();
  if (e.layers) e.layers->Stop();
  if (e.docker) RemoveBenchContainers(*e.docker);
  RemoveCgroups();
  if (!e.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);
    e.dir.clear();
  }
}

std::string Setup(Env& e) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "dsbench.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return "mkdtemp failed";
  e.dir = tmpl;
  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) return docker.status().ToString();
  e.docker = std::move(*docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) return "dockerd must run (scripts/test-env.sh): " + api.status().ToString();
  e.api_prefix = "/v" + *api;
  RemoveBenchContainers(*e.docker);  // a killed earlier run
  RemoveCgroups();
  auto info = e.docker->Info(Ctx());
  if (!info.ok()) return "docker info: " + info.status().ToString();
  if (info->cgroup_driver != "cgroupfs") return "the raw cgroup reads assume Docker's cgroupfs driver";
  auto layout = shim::stats::CgroupLayout::Discover();
  if (!layout.ok()) return layout.status().ToString();
  e.layout = std::move(*layout);

  e.network = std::make_unique<network::DockerBridgeNetwork>(*e.docker);
  e.layers = std::make_unique<shim::stats::WritableLayerCollector>();
  shim::Options options;
  options.docker_endpoint = endpoint;
  options.pod_infra_image = testenv::PauseImage();
  options.root_directory = e.dir + "/root";
  options.network_plugin = "docker";
  options.writable_layers = e.layers.get();
  e.service = std::make_unique<shim::CriService>(options, *e.docker, *e.network);
  if (absl::Status s = e.service->Init(); !s.ok()) return "CriService::Init: " + s.ToString();

  std::string path = endpoint;
  if (absl::StartsWith(path, "unix://")) path = path.substr(7);
  e.raw = std::make_unique<bench::RawUnixHttp>(path);
  nlohmann::json filters = nlohmann::json::object();
  filters["label"] = nlohmann::json::array(
      {absl::StrCat(kBenchLabel, "=1"), absl::StrCat(shim::kContainerTypeLabel, "=", shim::kContainerTypeContainer)});
  e.list_query = e.api_prefix + "/containers/json?all=1&filters=" + bench::UrlEscape(filters.dump());

  const auto t0 = bench::Clock::now();
  for (int i = 0; i < kPods; ++i) {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = PodConfig(i);
    auto resp = e.service->RunPodSandbox(Ctx(), req);
    if (!resp.ok()) return "RunPodSandbox: " + resp.status().ToString();
    e.pods.push_back(resp->pod_sandbox_id());
    auto inspect = e.docker->InspectContainer(Ctx(), resp->pod_sandbox_id());
    if (!inspect.ok()) return "inspect: " + inspect.status().ToString();
    e.pod_pids.push_back(inspect->state.pid);
    e.pod_cgroup_parents.push_back(inspect->cgroup_parent);
  }
  if (std::string err = EnsureContainers(kPods); !err.empty()) return err;
  std::printf("stats_bench: dockerd API %s, %d pods with a container each up in %.0f ms; cgroup v%d\n",
              api->c_str(), kPods, std::chrono::duration<double, std::milli>(bench::Clock::now() - t0).count(),
              e.layout->version() == shim::stats::CgroupVersion::kV1 ? 1 : 2);
  // Warm every path once (the sampler's first inspect of each container).
  for (auto op : {+[] { return ShimListContainerStats(kPods); }, ShimListPodSandboxStats, ShimContainerStats,
                  +[] { return RawCgroupReadContainers(kPods); }, RawCgroupReadPods, RawHttpList})
    if (std::string err = op(); !err.empty()) return "warm-up: " + err;
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  common::SetLogLevel(common::LogLevel::kWarning);  // the shim logs every pod at INFO
  Env e;
  env = &e;
  if (std::string err = Setup(e); !err.empty()) {
    std::fprintf(stderr, "stats_bench: setup: %s\n", err.c_str());
    Cleanup(e);
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Cleanup(e);

  bench::PrintLatencyTable("Stats latency");
  bench::PrintRatioTable({
      {"ListContainerStats x20: shim / raw cgroup read", "ListContainerStats x20: shim",
       "ListContainerStats x20: raw cgroup read"},
      {"ListContainerStats x20: shim / raw HTTP list", "ListContainerStats x20: shim",
       "ListContainerStats x20: raw HTTP list"},
      {"ListContainerStats x20: docker /stats each / shim", "ListContainerStats x20: docker /stats each",
       "ListContainerStats x20: shim"},
      {"ListPodSandboxStats x20: shim / raw read", "ListPodSandboxStats x20: shim",
       "ListPodSandboxStats x20: raw cgroup + net/dev read"},
      {"ContainerStats: shim / raw cgroup read", "ContainerStats: shim", "ContainerStats: raw cgroup read"},
      {"ContainerStats: docker /stats / shim", "ContainerStats: docker /stats", "ContainerStats: shim"},
      {"ListContainerStats x100: shim / raw cgroup read", "ListContainerStats x100: shim",
       "ListContainerStats x100: raw cgroup read"},
  });
  auto p50_ms = [](const char* key) {
    auto it = bench::Samples().find(key);
    return it == bench::Samples().end() || it->second.empty() ? -1.0 : bench::Percentile(it->second, 50) / 1000.0;
  };
  std::printf("\nTargets (p50): ListContainerStats x20 %.2f ms (<= 20), ListPodSandboxStats x20 %.2f ms (<= 30), "
              "ContainerStats %.2f ms (<= 5), ListContainerStats x100 %.2f ms (<= 100)\n",
              p50_ms("ListContainerStats x20: shim"), p50_ms("ListPodSandboxStats x20: shim"),
              p50_ms("ContainerStats: shim"), p50_ms("ListContainerStats x100: shim"));
  return 0;
}

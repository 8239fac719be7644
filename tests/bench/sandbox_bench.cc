// Pod sandbox RPCs through shim::CriService with a CniNetwork (real bridge,
// host-local and loopback plugins), against the raw Docker calls they make:
//   - PodSandboxStatus latency (p50/p99; target p50 ≤ 2 ms) vs InspectContainer
//     through the same DockerClientImpl and vs a bare HTTP GET (bench::RawUnixHttp);
//   - ListPodSandbox vs ListContainers with the same label filter (target ≤ 1.1×);
//   - RunPodSandbox + StopPodSandbox + RemovePodSandbox cycles, side by side with
//     docker create + start + stop + rm of the same infra container body, and CNI
//     ADD/DEL timed alone, so the network's share of RunPodSandbox shows;
//   - the CPU cost of decoding one pod's inspect body (json::parse, the
//     ContainerInspect conversion, the deep copy into ContainerInspect::raw).
//   - the container RPCs kubelet calls most: ContainerStatus vs InspectContainer,
//     ListContainers vs Docker's list with the same filter, and ExecSync (what an
//     exec probe costs) vs Docker's exec create + start + inspect.
// 20 pods (k8s_POD_bench-<i>_dsbench_...), each with one running busybox container
// (k8s_bctr_bench-<i>_...), stay up while status, list and exec are measured.
//
// Isolation: before anything else the process moves its main thread into a new,
// private network namespace (unshare), where the CNI bridge "dsbench0"
// (10.99.200.0/24) and the host ends of the veths live; it disappears with the
// process. IPAM state, the CNI cache and the shim's root dir are in a temp dir.
// Every container named k8s_POD_bench-* is removed at start (leftovers of a killed
// run) and at the end, also after a failure.
//
// Needs root, a running dockerd, the test images (scripts/test-env.sh) and the CNI
// plugins in $DOCKERSHIM_TEST_CNI_BIN (/usr/lib/cni).
//   sandbox_bench [--benchmark_min_time=0.5] [--benchmark_filter=...]
//   DSBENCH_CYCLES=5 (create/remove cycles per cycle benchmark)
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
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
#include "shim/network/cni_network.h"
#include "shim/oom_score.h"
#include "shim/sandbox_config.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

namespace v1 = shim::v1;

constexpr int kPods = 20;
constexpr char kNamespace[] = "dsbench";
constexpr char kNamePrefix[] = "k8s_POD_bench-";  // every infra container this bench creates
constexpr char kAppNamePrefix[] = "k8s_bctr_bench-";  // every app container this bench creates
constexpr char kAppName[] = "bctr";
constexpr char kBenchLabel[] = "dsbench";
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

struct Env {
  std::string dir;  // temp dir: net.d, ipam, cache, root
  std::unique_ptr<dockerclient::DockerClient> docker;
  std::unique_ptr<network::CniNetwork> network;
  std::unique_ptr<shim::CriService> service;
  std::unique_ptr<bench::RawUnixHttp> raw;
  std::string api_prefix;
  nlohmann::json raw_create_body;  // the infra container body the shim would send, minus its labels
  std::vector<std::string> pods;   // IDs of the kPods standing sandboxes
  std::vector<std::string> containers;  // one running app container per pod
  std::string list_query;          // the ListContainers query the shim sends for ListPodSandbox
  std::string inspect_body;        // one pod's /containers/<id>/json, for the decode benchmarks
  std::string container_list_query;  // the ListContainers query the shim sends for ListContainers
  int next = 0;                    // round robin over pods
  int next_container = 0;          // round robin over containers
  int serial = 0;                  // unique names for cycle pods
};

Env* env = nullptr;

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }

double Since(bench::Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(bench::Clock::now() - t0).count();
}
void Record(const std::string& key, double us) { bench::Samples()[key].push_back(us); }

v1::PodSandboxConfig PodConfig(const std::string& name, const std::string& uid) {
  v1::PodSandboxConfig config = bench::KubeletLikePodConfig(name, kNamespace, uid, kBenchLabel);
  (*config.mutable_annotations())["dsbench/annotation"] = "x";
  return config;
}

// --- Operations; each returns "" on success, else what went wrong. ---------------

std::string RunPod(const std::string& name, const std::string& uid, std::string* id) {
  v1::RunPodSandboxRequest req;
  *req.mutable_config() = PodConfig(name, uid);
  auto resp = env->service->RunPodSandbox(Ctx(), req);
  if (!resp.ok()) return "RunPodSandbox " + name + ": " + resp.status().ToString();
  *id = resp->pod_sandbox_id();
  return "";
}

std::string StopPod(const std::string& id) {
  v1::StopPodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  auto resp = env->service->StopPodSandbox(Ctx(), req);
  return resp.ok() ? "" : "StopPodSandbox: " + resp.status().ToString();
}

std::string RemovePod(const std::string& id) {
  v1::RemovePodSandboxRequest req;
  req.set_pod_sandbox_id(id);
  auto resp = env->service->RemovePodSandbox(Ctx(), req);
  return resp.ok() ? "" : "RemovePodSandbox: " + resp.status().ToString();
}

const std::string& NextPod() { return env->pods[env->next++ % env->pods.size()]; }

std::string ShimStatus() {
  v1::PodSandboxStatusRequest req;
  req.set_pod_sandbox_id(NextPod());
  auto resp = env->service->PodSandboxStatus(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->status().network().ip().empty()) return "PodSandboxStatus reported no pod IP";
  benchmark::DoNotOptimize(resp->status().id().data());
  return "";
}

std::string ClientInspect() {
  auto c = env->docker->InspectContainer(Ctx(), NextPod());
  if (!c.ok()) return c.status().ToString();
  benchmark::DoNotOptimize(c->id.data());
  return "";
}

std::string RawGet(const std::string& path, bool parse = false) {
  return env->raw->GetOk(env->api_prefix + path, parse);
}

std::string RawInspect() { return RawGet("/containers/" + NextPod() + "/json"); }
std::string RawInspectParse() { return RawGet("/containers/" + NextPod() + "/json", true); }

std::string ShimList() {
  v1::ListPodSandboxRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  auto resp = env->service->ListPodSandbox(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->items_size() != kPods) return absl::StrCat("ListPodSandbox: ", resp->items_size(), " pods, want ", kPods);
  return "";
}

std::string ClientList() {
  dockerclient::ListContainersOptions options;
  options.all = true;
  options.label_filter = {{kBenchLabel, "1"}, {shim::kContainerTypeLabel, shim::kContainerTypeSandbox}};
  auto list = env->docker->ListContainers(Ctx(), options);
  if (!list.ok()) return list.status().ToString();
  if (list->size() != kPods) return absl::StrCat("ListContainers: ", list->size(), " containers, want ", kPods);
  return "";
}

std::string RawList() { return RawGet(env->list_query); }
std::string RawListParse() { return RawGet(env->list_query, true); }

const std::string& NextContainer() { return env->containers[env->next_container++ % env->containers.size()]; }

std::string CreateAppContainer(const std::string& pod_id, int i) {
  v1::CreateContainerRequest req;
  req.set_pod_sandbox_id(pod_id);
  *req.mutable_sandbox_config() = PodConfig(absl::StrCat("bench-", i), "unused");
  v1::ContainerConfig& c = *req.mutable_config();
  c.mutable_metadata()->set_name(kAppName);
  c.mutable_image()->set_image(testenv::BusyboxImage());
  c.add_command("sleep");
  c.add_args("3600");
  (*c.mutable_labels())[kBenchLabel] = "1";
  auto created = env->service->CreateContainer(Ctx(), req);
  if (!created.ok()) return "CreateContainer: " + created.status().ToString();
  v1::StartContainerRequest start;
  start.set_container_id(created->container_id());
  if (auto s = env->service->StartContainer(Ctx(), start); !s.ok()) return "StartContainer: " + s.status().ToString();
  env->containers.push_back(created->container_id());
  return "";
}

std::string ShimContainerStatus() {
  v1::ContainerStatusRequest req;
  req.set_container_id(NextContainer());
  auto resp = env->service->ContainerStatus(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->status().state() != v1::CONTAINER_RUNNING) return "ContainerStatus: not running";
  return "";
}

std::string ClientInspectContainer() {
  auto c = env->docker->InspectContainer(Ctx(), NextContainer());
  if (!c.ok()) return c.status().ToString();
  benchmark::DoNotOptimize(c->id.data());
  return "";
}

std::string ShimListContainers() {
  v1::ListContainersRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  auto resp = env->service->ListContainers(Ctx(), req);
  if (!resp.ok()) return resp.status().ToString();
  if (resp->containers_size() != kPods)
    return absl::StrCat("ListContainers: ", resp->containers_size(), " containers, want ", kPods);
  return "";
}

std::string ClientListContainers() {
  dockerclient::ListContainersOptions options;
  options.all = true;
  options.label_filter = {{kBenchLabel, "1"}, {shim::kContainerTypeLabel, shim::kContainerTypeContainer}};
  auto list = env->docker->ListContainers(Ctx(), options);
  if (!list.ok()) return list.status().ToString();
  if (list->size() != kPods) return absl::StrCat("docker list: ", list->size(), " containers, want ", kPods);
  return "";
}

std::string RawListContainers() { return RawGet(env->container_list_query); }

std::string ShimExecSync() {
  v1::ExecSyncRequest req;
  req.set_container_id(NextContainer());
  req.add_cmd("true");
  req.set_timeout(10);
  auto resp = env->service->ExecSync(Ctx(), req);
  if (!resp.ok()) return "ExecSync: " + resp.status().ToString();
  if (resp->exit_code() != 0) return absl::StrCat("ExecSync: exit code ", resp->exit_code());
  return "";
}

// What ExecSync needs of Docker at least: exec create, start (output to EOF), inspect.
std::string ClientExec() {
  dockerclient::ExecConfig config;
  config.cmd = {"true"};
  auto id = env->docker->CreateExec(Ctx(), NextContainer(), config);
  if (!id.ok()) return "exec create: " + id.status().ToString();
  if (absl::Status s = env->docker->RunExec(Ctx(), *id, false, {}); !s.ok()) return "exec start: " + s.ToString();
  auto inspect = env->docker->InspectExec(Ctx(), *id);
  if (!inspect.ok()) return "exec inspect: " + inspect.status().ToString();
  return "";
}

// docker create + start of the shim's infra container body (no CNI, no checkpoint),
// then stop + rm; each step recorded.
std::string RawCycle(int n) {
  const std::string name = absl::StrCat(kNamePrefix, "raw-", n, "_", kNamespace, "_raw-", ::getpid(), "-", n, "_0");
  auto t0 = bench::Clock::now();
  auto id = env->docker->CreateContainer(Ctx(), name, env->raw_create_body);
  if (!id.ok()) return "docker create: " + id.status().ToString();
  const double create = Since(t0);
  auto t1 = bench::Clock::now();
  if (absl::Status s = env->docker->StartContainer(Ctx(), *id); !s.ok()) return "docker start: " + s.ToString();
  const double start = Since(t1);
  auto t2 = bench::Clock::now();
  if (absl::Status s = env->docker->StopContainer(Ctx(), *id, {10}); !s.ok()) return "docker stop: " + s.ToString();
  const double stop = Since(t2);
  auto t3 = bench::Clock::now();
  if (absl::Status s = env->docker->RemoveContainer(Ctx(), *id, true); !s.ok()) return "docker rm: " + s.ToString();
  const double rm = Since(t3);
  Record("raw: docker create", create);
  Record("raw: docker start", start);
  Record("raw: docker create+start", create + start);
  Record("raw: docker stop", stop);
  Record("raw: docker rm", rm);
  Record("raw: cycle create+start+stop+rm", create + start + stop + rm);
  return "";
}

std::string ShimCycle(int n) {
  const std::string name = absl::StrCat("bench-cycle-", n);
  const std::string uid = absl::StrCat("dsbench-cycle-", ::getpid(), "-", n);
  std::string id;
  auto t0 = bench::Clock::now();
  if (std::string err = RunPod(name, uid, &id); !err.empty()) return err;
  const double run = Since(t0);
  auto t1 = bench::Clock::now();
  if (std::string err = StopPod(id); !err.empty()) return err;
  const double stop = Since(t1);
  auto t2 = bench::Clock::now();
  if (std::string err = RemovePod(id); !err.empty()) return err;
  const double remove = Since(t2);
  Record("shim: RunPodSandbox", run);
  Record("shim: StopPodSandbox", stop);
  Record("shim: RemovePodSandbox", remove);
  Record("shim: cycle Run+Stop+Remove", run + stop + remove);
  return "";
}

// --- Benchmarks. -------------------------------------------------------------------

void BM_PodSandboxStatus_Shim(benchmark::State& s) { bench::Measure(s, "PodSandboxStatus: shim", ShimStatus); }
void BM_InspectContainer_Client(benchmark::State& s) {
  bench::Measure(s, "InspectContainer: DockerClientImpl", ClientInspect);
}
void BM_InspectContainer_RawHttp(benchmark::State& s) { bench::Measure(s, "InspectContainer: raw HTTP", RawInspect); }
void BM_ListPodSandbox_Shim(benchmark::State& s) { bench::Measure(s, "ListPodSandbox: shim", ShimList); }
void BM_ListContainers_Client(benchmark::State& s) {
  bench::Measure(s, "ListContainers: DockerClientImpl", ClientList);
}
void BM_ListContainers_RawHttp(benchmark::State& s) { bench::Measure(s, "ListContainers: raw HTTP", RawList); }

void BM_Compare_Status(benchmark::State& s) {
  bench::Compare(s, {{"cmp PodSandboxStatus: shim", ShimStatus},
                     {"cmp PodSandboxStatus: DockerClientImpl inspect", ClientInspect},
                     {"cmp PodSandboxStatus: raw HTTP inspect", RawInspect},
                     {"cmp PodSandboxStatus: raw HTTP inspect + json::parse", RawInspectParse}});
}
void BM_Compare_List(benchmark::State& s) {
  bench::Compare(s, {{"cmp ListPodSandbox: shim", ShimList},
                     {"cmp ListPodSandbox: DockerClientImpl list", ClientList},
                     {"cmp ListPodSandbox: raw HTTP list", RawList},
                     {"cmp ListPodSandbox: raw HTTP list + json::parse", RawListParse}});
}

// Shim cycle and raw cycle alternate (which goes first alternates too).
void BM_Cycle_ShimVsRaw(benchmark::State& state) {
  int round = 0;
  for (auto _ : state) {
    const int n = env->serial++;
    std::string err;
    for (int k = 0; k < 2 && err.empty(); ++k) err = ((k + round) % 2 == 0) ? ShimCycle(n) : RawCycle(n);
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
    ++round;
  }
}

// CNI ADD and DEL alone, on a running infra container made with the raw body.
void BM_CniAddDel(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    const int n = env->serial++;
    const std::string name = absl::StrCat(kNamePrefix, "cni-", n, "_", kNamespace, "_cni-", ::getpid(), "-", n, "_0");
    std::string err;
    auto id = env->docker->CreateContainer(Ctx(), name, env->raw_create_body);
    if (!id.ok()) err = "docker create: " + id.status().ToString();
    if (err.empty()) {
      if (absl::Status s = env->docker->StartContainer(Ctx(), *id); !s.ok()) err = "docker start: " + s.ToString();
    }
    absl::StatusOr<dockerclient::ContainerInspect> inspect = absl::UnknownError("not started");
    if (err.empty()) inspect = env->docker->InspectContainer(Ctx(), *id);
    if (err.empty() && (!inspect.ok() || inspect->state.pid <= 0)) err = "inspect: no pid";
    state.ResumeTiming();
    if (err.empty()) {
      network::PodNetworkRequest req;
      req.pod_name = absl::StrCat("bench-cni-", n);
      req.pod_namespace = kNamespace;
      req.pod_uid = absl::StrCat("cni-", ::getpid(), "-", n);
      req.sandbox_id = *id;
      req.netns_path = absl::StrCat("/proc/", inspect->state.pid, "/ns/net");
      auto t0 = bench::Clock::now();
      auto added = env->network->SetUp(Ctx(), req);
      const double add = Since(t0);
      if (!added.ok()) {
        err = "CNI ADD: " + added.status().ToString();
      } else {
        auto t1 = bench::Clock::now();
        absl::Status del = env->network->TearDown(Ctx(), req, added->network_name);
        const double d = Since(t1);
        if (!del.ok()) err = "CNI DEL: " + del.ToString();
        Record("CNI ADD (bridge+host-local+loopback)", add);
        Record("CNI DEL", d);
      }
    }
    state.PauseTiming();
    if (id.ok()) (void)env->docker->RemoveContainer(Ctx(), *id, true);
    state.ResumeTiming();
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      break;
    }
  }
}

// CPU only, no I/O: what decoding one pod's inspect body costs the shim.
void BM_Decode_JsonParse(benchmark::State& state) {
  bench::Measure(state, "decode: json::parse(inspect body)", [] {
    nlohmann::json j = nlohmann::json::parse(env->inspect_body, nullptr, false);
    benchmark::DoNotOptimize(j.size());
    return std::string();
  });
}
void BM_Decode_ParseContainerInspect(benchmark::State& state) {
  const nlohmann::json j = nlohmann::json::parse(env->inspect_body, nullptr, false);
  bench::Measure(state, "decode: ParseContainerInspect(json)", [&j] {
    dockerclient::ContainerInspect c = dockerclient::ParseContainerInspect(j);
    benchmark::DoNotOptimize(c.id.data());
    return std::string();
  });
}
void BM_Decode_JsonCopy(benchmark::State& state) {
  const nlohmann::json j = nlohmann::json::parse(env->inspect_body, nullptr, false);
  bench::Measure(state, "decode: json deep copy (ContainerInspect::raw = j)", [&j] {
    nlohmann::json copy = j;
    benchmark::DoNotOptimize(copy.size());
    return std::string();
  });
}

void BM_Compare_ContainerStatus(benchmark::State& s) {
  bench::Compare(s, {{"cmp ContainerStatus: shim", ShimContainerStatus},
                     {"cmp ContainerStatus: DockerClientImpl inspect", ClientInspectContainer}});
}
void BM_Compare_ListContainers(benchmark::State& s) {
  bench::Compare(s, {{"cmp ListContainers: shim", ShimListContainers},
                     {"cmp ListContainers: DockerClientImpl list", ClientListContainers},
                     {"cmp ListContainers: raw HTTP list", RawListContainers}});
}
void BM_Compare_ExecSync(benchmark::State& s) {
  bench::Compare(s, {{"cmp ExecSync: shim", ShimExecSync},
                     {"cmp ExecSync: DockerClientImpl create+start+inspect", ClientExec}});
}

#define BENCH(fn) BENCHMARK(fn)->UseRealTime()->Unit(benchmark::kMicrosecond)
BENCH(BM_Decode_JsonParse);
BENCH(BM_Decode_ParseContainerInspect);
BENCH(BM_Decode_JsonCopy);
BENCH(BM_PodSandboxStatus_Shim);
BENCH(BM_InspectContainer_Client);
BENCH(BM_InspectContainer_RawHttp);
BENCH(BM_Compare_Status);
BENCH(BM_ListPodSandbox_Shim);
BENCH(BM_ListContainers_Client);
BENCH(BM_ListContainers_RawHttp);
BENCH(BM_Compare_List);
BENCH(BM_Compare_ContainerStatus);
BENCH(BM_Compare_ListContainers);
BENCH(BM_Compare_ExecSync);

// --- Setup and cleanup. --------------------------------------------------------------

void Cleanup(Env& e) {
  if (e.service) {
    for (const std::string& id : e.pods) {
      std::string err = StopPod(id);
      if (err.empty()) err = RemovePod(id);
      if (!err.empty()) std::fprintf(stderr, "sandbox_bench: cleanup: %s\n", err.c_str());
    }
    e.pods.clear();
    e.containers.clear();  // removed with their pods
  }
  if (e.docker) bench::RemoveContainersNamed(*e.docker, {kNamePrefix, kAppNamePrefix}, "sandbox_bench");
  if (!e.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);
    e.dir.clear();
  }
}

std::string Setup(Env& e) {
  if (!std::filesystem::exists(testenv::CniBinDir() + "/bridge"))
    return "containernetworking-plugins must be installed in " + testenv::CniBinDir();
  std::string tmpl = (std::filesystem::temp_directory_path() / "dsbench.XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return "mkdtemp failed";
  e.dir = tmpl;
  std::filesystem::create_directories(e.dir + "/net.d");
  std::ofstream(e.dir + "/net.d/10-dsbench.conflist") << absl::StrCat(
      R"({"cniVersion": "1.0.0", "name": "dsbench", "plugins": [
  {"type": "bridge", "bridge": "dsbench0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.200.0/24"}]], "dataDir": ")",
      e.dir, R"(/ipam"}},
  {"type": "loopback"}]})");

  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) return docker.status().ToString();
  e.docker = std::move(*docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) return "dockerd must run (scripts/test-env.sh): " + api.status().ToString();
  e.api_prefix = "/v" + *api;
  bench::RemoveContainersNamed(*e.docker, {kNamePrefix, kAppNamePrefix}, "sandbox_bench");  // a killed earlier run

  network::CniOptions cni;
  cni.bin_dirs = {testenv::CniBinDir()};
  cni.conf_dir = e.dir + "/net.d";
  cni.cache_dir = e.dir + "/cache";
  e.network = std::make_unique<network::CniNetwork>(cni);
  if (absl::Status ready = e.network->Ready(); !ready.ok()) return "CNI not ready: " + ready.ToString();

  shim::Options options;
  options.docker_endpoint = endpoint;
  options.pod_infra_image = testenv::PauseImage();
  options.root_directory = e.dir + "/root";
  options.network_plugin = "cni";
  e.service = std::make_unique<shim::CriService>(options, *e.docker, *e.network);
  if (absl::Status s = e.service->Init(); !s.ok()) return "CriService::Init: " + s.ToString();

  std::string path = endpoint;
  if (absl::StartsWith(path, "unix://")) path = path.substr(7);
  e.raw = std::make_unique<bench::RawUnixHttp>(path);

  // The body the shim sends for an infra container, for the raw create+start.
  auto info = e.docker->Info(Ctx());
  if (!info.ok()) return "docker info: " + info.status().ToString();
  shim::SandboxCreateParams params;
  params.image = options.pod_infra_image;
  params.cgroup_driver = info->cgroup_driver;
  params.network_mode = e.network->DockerNetworkMode();
  params.oom_score_adj = shim::OomScoreClamp().Clamp(-998);
  params.seccomp_profile_root = options.seccomp_profile_root;
  auto body = shim::MakeSandboxCreateBody(PodConfig("bench-raw", "raw"), params);
  if (!body.ok()) return "MakeSandboxCreateBody: " + body.status().ToString();
  e.raw_create_body = std::move(*body);
  e.raw_create_body["Labels"] = {{kBenchLabel, "raw"}};

  nlohmann::json filters = nlohmann::json::object();
  filters["label"] = nlohmann::json::array(
      {absl::StrCat(kBenchLabel, "=1"), absl::StrCat(shim::kContainerTypeLabel, "=", shim::kContainerTypeSandbox)});
  e.list_query = "/containers/json?all=1&filters=" + bench::UrlEscape(filters.dump());
  filters["label"] = nlohmann::json::array(
      {absl::StrCat(kBenchLabel, "=1"), absl::StrCat(shim::kContainerTypeLabel, "=", shim::kContainerTypeContainer)});
  e.container_list_query = "/containers/json?all=1&filters=" + bench::UrlEscape(filters.dump());

  const auto t0 = bench::Clock::now();
  for (int i = 0; i < kPods; ++i) {
    std::string id;
    if (std::string err = RunPod(absl::StrCat("bench-", i), absl::StrCat("dsbench-", ::getpid(), "-", i), &id);
        !err.empty())
      return err;
    e.pods.push_back(id);
    if (std::string err = CreateAppContainer(id, i); !err.empty()) return err;
  }
  std::printf("sandbox_bench: dockerd API %s, %d pods with a container each up in %.0f ms (serially), private netns, "
              "bridge dsbench0\n",
              api->c_str(), kPods, Since(t0) / 1000.0);
  // Warm every path once.
  for (auto op : {ShimStatus, ClientInspect, RawInspect, ShimList, ClientList, RawList, ShimContainerStatus,
                  ClientInspectContainer, ShimListContainers, ClientListContainers, ShimExecSync, ClientExec})
    if (std::string err = op(); !err.empty()) return "warm-up: " + err;
  std::string error;
  if (e.raw->Get(e.api_prefix + "/containers/" + e.pods.front() + "/json", &e.inspect_body, &error) != 200)
    return "inspect body: " + error;
  std::printf("sandbox_bench: a pod's inspect body is %zu bytes\n", e.inspect_body.size());
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // First, while the process has one thread: a private network namespace for the
  // bridge and the veths' host ends (CNI plugins inherit it from this thread).
  if (::unshare(CLONE_NEWNET) != 0) {
    std::perror("sandbox_bench: unshare(CLONE_NEWNET) (run as root)");
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  common::SetLogLevel(common::LogLevel::kWarning);  // the shim logs every pod at INFO
  int cycles = 5;
  if (const char* c = std::getenv("DSBENCH_CYCLES"); c && std::atoi(c) > 0) cycles = std::atoi(c);
  benchmark::RegisterBenchmark("BM_Cycle_ShimVsRaw", BM_Cycle_ShimVsRaw)
      ->Iterations(cycles)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_CniAddDel", BM_CniAddDel)
      ->Iterations(cycles)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);

  Env e;
  env = &e;
  if (std::string err = Setup(e); !err.empty()) {
    std::fprintf(stderr, "sandbox_bench: setup: %s\n", err.c_str());
    Cleanup(e);
    return 1;
  }
  // One untimed cycle of each kind first (cold caches in dockerd and the plugins).
  {
    const int n = e.serial++;
    std::string err = ShimCycle(n);
    if (err.empty()) err = RawCycle(n);
    if (!err.empty()) {
      std::fprintf(stderr, "sandbox_bench: warm-up cycle: %s\n", err.c_str());
      Cleanup(e);
      return 1;
    }
    for (const char* key : {"shim: RunPodSandbox", "shim: StopPodSandbox", "shim: RemovePodSandbox",
                            "shim: cycle Run+Stop+Remove", "raw: docker create", "raw: docker start",
                            "raw: docker create+start", "raw: docker stop", "raw: docker rm",
                            "raw: cycle create+start+stop+rm"})
      bench::Samples().erase(key);
  }

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  Cleanup(e);

  bench::PrintLatencyTable("Latency");
  bench::PrintRatioTable({
      {"ListPodSandbox: shim / DockerClientImpl list (side by side)", "cmp ListPodSandbox: shim",
       "cmp ListPodSandbox: DockerClientImpl list", 1.1},
      {"ListContainers: DockerClientImpl / raw HTTP (side by side)", "cmp ListPodSandbox: DockerClientImpl list",
       "cmp ListPodSandbox: raw HTTP list", 0},
      {"PodSandboxStatus: shim / DockerClientImpl inspect (side by side)", "cmp PodSandboxStatus: shim",
       "cmp PodSandboxStatus: DockerClientImpl inspect", 0},
      {"InspectContainer: DockerClientImpl / raw HTTP (side by side)", "cmp PodSandboxStatus: DockerClientImpl inspect",
       "cmp PodSandboxStatus: raw HTTP inspect", 0},
      {"InspectContainer: DockerClientImpl / raw HTTP+parse (side by side)",
       "cmp PodSandboxStatus: DockerClientImpl inspect", "cmp PodSandboxStatus: raw HTTP inspect + json::parse", 0},
      {"ListContainers: DockerClientImpl / raw HTTP+parse (side by side)", "cmp ListPodSandbox: DockerClientImpl list",
       "cmp ListPodSandbox: raw HTTP list + json::parse", 0},
      {"ListPodSandbox: shim / DockerClientImpl (separate runs)", "ListPodSandbox: shim",
       "ListContainers: DockerClientImpl", 0},
      {"ContainerStatus: shim / DockerClientImpl inspect (side by side)", "cmp ContainerStatus: shim",
       "cmp ContainerStatus: DockerClientImpl inspect", 0},
      {"ListContainers: shim / DockerClientImpl list (side by side)", "cmp ListContainers: shim",
       "cmp ListContainers: DockerClientImpl list", 1.1},
      {"ExecSync: shim / DockerClientImpl exec create+start+inspect (side by side)", "cmp ExecSync: shim",
       "cmp ExecSync: DockerClientImpl create+start+inspect", 0},
      {"RunPodSandbox / raw docker create+start", "shim: RunPodSandbox", "raw: docker create+start", 0},
      {"StopPodSandbox / raw docker stop", "shim: StopPodSandbox", "raw: docker stop", 0},
      {"RemovePodSandbox / raw docker rm", "shim: RemovePodSandbox", "raw: docker rm", 0},
      {"cycle: shim Run+Stop+Remove / raw create+start+stop+rm", "shim: cycle Run+Stop+Remove",
       "raw: cycle create+start+stop+rm", 0},
  });

  const auto& s = bench::Samples();
  for (const char* key : {"PodSandboxStatus: shim", "cmp PodSandboxStatus: shim", "cmp ContainerStatus: shim"}) {
    auto it = s.find(key);
    if (it == s.end() || it->second.empty()) continue;
    const double p50 = bench::Percentile(it->second, 50) / 1000.0, p99 = bench::Percentile(it->second, 99) / 1000.0;
    std::printf("\n%s: p50 %.3f ms, p99 %.3f ms (target p50 <= 2 ms: %s)", key, p50, p99,
                p50 <= 2.0 ? "ok" : "OVER TARGET");
  }
  auto run = s.find("shim: RunPodSandbox"), raw = s.find("raw: docker create+start"), add = s.find("CNI ADD (bridge+host-local+loopback)");
  if (run != s.end() && raw != s.end() && !run->second.empty() && !raw->second.empty()) {
    std::printf("\nRunPodSandbox p50 - raw create+start p50 = %.1f ms (CNI ADD p50 alone: %s)",
                (bench::Percentile(run->second, 50) - bench::Percentile(raw->second, 50)) / 1000.0,
                add != s.end() && !add->second.empty()
                    ? absl::StrCat(bench::Percentile(add->second, 50) / 1000.0, " ms").c_str()
                    : "not run");
  }
  std::printf("\n");
  env = nullptr;
  return 0;
}

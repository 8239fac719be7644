// Pod start-up (RunPodSandbox + CreateContainer + StartContainer of one busybox
// container) through shim::CriService, in-process, with a real DockerClientImpl and
// CniNetwork, wired as shim/main.cc wires them by default: the ContainerView behind a
// ViewClient, followed by an EventHub (relists from memory), and a LogCopier. Against
// it, THE FLOOR: for the same pod, the Docker calls and the CNI ADD that cannot be
// left out, made directly with no CriService in between:
//   docker create (the infra container body the shim sent, captured) ─► start ─►
//   inspect (the pid, for /proc/<pid>/ns/net) ─► each plugin of the same conflist,
//   ADD, with the same stdin (BuildPluginConfig, libcni's rules) and CNI_* environment,
//   exec'd by network::ProcessPluginExecutor (posix_spawn, the lowest level there is:
//   what libcni's exec does) ─► docker create (the app body the shim sent, with the
//   floor's infra ID) ─► start.
// No image inspect, no checkpoint, no CNI cache file, no creation marker, no log file:
// what the shim adds beyond that is what the floor lets one see.
//
// Two shapes, each printed for the shim and for the floor, per phase p50/p95:
//   - 1 pod at a time, DSBENCH_PODS_SERIAL times (default 10); shim and floor pods
//     alternate (and which goes first alternates), since dockerd's speed drifts;
//   - DSBENCH_PODS_CONCURRENT pods (default 30) started by DSBENCH_CLIENTS threads
//     (default 8) at once, as the kubelet's pod workers do; DSBENCH_ROUNDS rounds
//     (default 3) of shim then floor, the order alternating; the time to the last pod
//     started (all three calls returned) per round.
// Shim phases come from the shim itself: common::PhaseSink through
// shim::Options::phase_sink and network::CniOptions::phase_sink (null in production).
// Pods are torn down between batches, untimed.
// DSBENCH_VIEW=0: CriService straight on the DockerClientImpl (no view, no events hub),
// to see what the view's refreshing inspects cost.
//
// Isolation: the process first moves into a private network namespace (unshare), where
// the CNI bridge "pbench0" (10.99.201.0/24) and the host ends of the veths live; it
// disappears with the process. IPAM state, the CNI cache, the shim's root dir and the
// pods' log dirs are in a temp dir under /var/tmp (a disk, so fsyncs cost what they
// cost on a node). Every container named k8s_POD_podbench-* or k8s_bctr_podbench-* is
// removed at start (leftovers of a killed run) and at the end, also after a failure.
//
// Needs root, a running dockerd ($DOCKERSHIM_TEST_DOCKER, tests/integration/env.h), the
// test images (scripts/test-env.sh) and the CNI plugins bridge, host-local, portmap and
// loopback in $DOCKERSHIM_TEST_CNI_BIN (/usr/lib/cni). Prints figures; no pass/fail.
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "common/log.h"
#include "common/phase_timer.h"
#include "dockerclient/docker_client_impl.h"
#include "dockerclient/forwarding_docker_client.h"
#include "shim/cri_service.h"
#include "shim/events/event_hub.h"
#include "shim/logs/log_copier.h"
#include "shim/naming.h"
#include "shim/network/cni_config.h"
#include "shim/network/cni_exec.h"
#include "shim/network/cni_network.h"
#include "shim/view/container_view.h"
#include "shim/view/view_client.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

namespace v1 = shim::v1;
using nlohmann::json;

constexpr char kNamespace[] = "podbench";
constexpr char kPodPrefix[] = "podbench-";  // every pod name; the floor's: podbench-floor-
const std::vector<std::string> kContainerPrefixes = {"k8s_POD_podbench-", "k8s_bctr_podbench-"};
constexpr char kAppName[] = "bctr";
constexpr char kBenchLabel[] = "podbench";
// Floor bodies carry this key instead of io.kubernetes.docker.type, so that the shim's
// events hub and view (running alongside) take no notice of floor containers.
constexpr char kFloorTypeLabel[] = "podbench.floor.type";
constexpr absl::Duration kCallTimeout = absl::Seconds(120);

common::Context Ctx() { return common::Context::WithTimeout(kCallTimeout); }

// --- Samples, per shape ("1 pod", "30 concurrent"), in milliseconds. ----------------

class SampleStore {
 public:
  void Add(const std::string& key, double ms) {
    std::lock_guard lock(mu_);
    samples_[shape_][key].push_back(ms);
  }
  void SetShape(const std::string& shape) {
    std::lock_guard lock(mu_);
    shape_ = shape;
  }
  std::map<std::string, std::vector<double>> Of(const std::string& shape) {
    std::lock_guard lock(mu_);
    return samples_[shape];
  }

 private:
  std::mutex mu_;
  std::string shape_;
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
};

SampleStore store;

// The shim's phases, recorded while `on` (not during warm-up and teardown).
class BenchSink : public common::PhaseSink {
 public:
  void Record(std::string_view phase, absl::Duration elapsed) override {
    if (on.load()) store.Add(absl::StrCat("shim ", absl::string_view(phase.data(), phase.size())), absl::ToDoubleMilliseconds(elapsed));
  }
  std::atomic<bool> on{false};
};

// Below the view (between it and DockerClientImpl): keeps the bodies of the containers
// the shim creates while `capture` is on, and times the shim's Docker create and start
// calls themselves while `sink->on`, so that what the view adds to a phase shows.
class RecordingClient : public dockerclient::ForwardingDockerClient {
 public:
  RecordingClient(dockerclient::DockerClient& inner, const std::atomic<bool>& timing)
      : ForwardingDockerClient(inner), timing_(timing) {}
  absl::StatusOr<std::string> CreateContainer(const common::Context& ctx, const std::string& name,
                                              const json& body) override {
    if (capture.load()) {
      std::lock_guard lock(mu);
      bodies[name] = body;
    }
    const bool infra = name.rfind("k8s_POD_", 0) == 0;
    const auto t0 = bench::Clock::now();
    auto id = ForwardingDockerClient::CreateContainer(ctx, name, body);
    if (timing_.load()) store.Add(infra ? "shim docker: infra create" : "shim docker: app create", bench::MsSince(t0));
    if (id.ok() && infra) {
      std::lock_guard lock(mu);
      infra_ids.insert(*id);
    }
    return id;
  }
  absl::Status StartContainer(const common::Context& ctx, const std::string& id) override {
    const auto t0 = bench::Clock::now();
    absl::Status s = ForwardingDockerClient::StartContainer(ctx, id);
    if (timing_.load()) {
      bool infra;
      {
        std::lock_guard lock(mu);
        infra = infra_ids.count(id) > 0;
      }
      store.Add(infra ? "shim docker: infra start" : "shim docker: app start", bench::MsSince(t0));
    }
    return s;
  }
  std::atomic<bool> capture{false};
  std::mutex mu;
  std::map<std::string, json> bodies;
  std::set<std::string> infra_ids;

 private:
  const std::atomic<bool>& timing_;
};

struct Env {
  std::string dir;
  std::unique_ptr<dockerclient::DockerClient> docker;        // the shim's
  std::unique_ptr<dockerclient::DockerClient> floor_docker;  // the floor's own connections
  std::unique_ptr<RecordingClient> recorder;
  std::unique_ptr<shim::view::ContainerView> view;
  std::unique_ptr<shim::view::ViewClient> viewed;
  std::unique_ptr<shim::logs::LogCopier> log_copier;
  std::unique_ptr<shim::events::EventHub> hub;
  BenchSink sink;
  std::unique_ptr<network::CniNetwork> network;
  std::unique_ptr<shim::CriService> service;
  // The floor.
  network::CniNetworkConfig cni_config;
  std::unique_ptr<network::ProcessPluginExecutor> executor;
  json infra_body;              // as the shim sent it for the warm-up pod
  json app_body;                // likewise, with kSandboxIdMarker for the infra ID
  std::string warmup_sandbox_id;
  bool with_view = true;
};

Env* env = nullptr;
constexpr char kSandboxIdMarker[] = "@@PODBENCH_SANDBOX_ID@@";

v1::PodSandboxConfig PodConfig(const std::string& name, const std::string& uid) {
  v1::PodSandboxConfig config = bench::KubeletLikePodConfig(name, kNamespace, uid, kBenchLabel);
  config.set_log_directory(absl::StrCat(env->dir, "/logs/", kNamespace, "_", name, "_", uid));
  (*config.mutable_annotations())["kubernetes.io/config.source"] = "api";
  return config;
}

// --- A pod through the shim. ------------------------------------------------------

struct ShimPod {
  std::string sandbox_id, container_id;
};

std::string StartShimPod(const std::string& name, ShimPod* pod, bool record) {
  const std::string uid = absl::StrCat(name, "-", ::getpid());
  const auto t0 = bench::Clock::now();
  v1::RunPodSandboxRequest run;
  *run.mutable_config() = PodConfig(name, uid);
  auto ran = env->service->RunPodSandbox(Ctx(), run);
  if (!ran.ok()) return "RunPodSandbox " + name + ": " + ran.status().ToString();
  pod->sandbox_id = ran->pod_sandbox_id();
  const double run_ms = bench::MsSince(t0);
  const auto t1 = bench::Clock::now();
  v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(pod->sandbox_id);
  *create.mutable_config() = bench::SleeperContainerConfig(kAppName, testenv::BusyboxImage(), kBenchLabel);
  *create.mutable_sandbox_config() = run.config();
  auto created = env->service->CreateContainer(Ctx(), create);
  if (!created.ok()) return "CreateContainer " + name + ": " + created.status().ToString();
  pod->container_id = created->container_id();
  const double create_ms = bench::MsSince(t1);
  const auto t2 = bench::Clock::now();
  v1::StartContainerRequest start;
  start.set_container_id(pod->container_id);
  if (auto s = env->service->StartContainer(Ctx(), start); !s.ok())
    return "StartContainer " + name + ": " + s.status().ToString();
  const double start_ms = bench::MsSince(t2);
  const double total = bench::MsSince(t0);
  if (record) {
    store.Add("shim RunPodSandbox", run_ms);
    store.Add("shim CreateContainer", create_ms);
    store.Add("shim StartContainer", start_ms);
    store.Add("shim total", total);
  }
  return "";
}

std::string StopShimPod(const ShimPod& pod) {
  // The app container first, at once (busybox's sleep ignores SIGTERM as pid 1).
  if (!pod.container_id.empty()) {
    absl::Status s = env->docker->RemoveContainer(Ctx(), pod.container_id, /*force=*/true);
    if (!s.ok() && !absl::IsNotFound(s)) return "rm app: " + s.ToString();
  }
  if (pod.sandbox_id.empty()) return "";
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(pod.sandbox_id);
  if (auto s = env->service->StopPodSandbox(Ctx(), stop); !s.ok()) return "StopPodSandbox: " + s.status().ToString();
  v1::RemovePodSandboxRequest rm;
  rm.set_pod_sandbox_id(pod.sandbox_id);
  if (auto s = env->service->RemovePodSandbox(Ctx(), rm); !s.ok()) return "RemovePodSandbox: " + s.status().ToString();
  return "";
}

// --- The same pod with no shim. ---------------------------------------------------

struct FloorPod {
  std::string infra_id, app_id;
  network::PodNetworkRequest net;
  json cni_result;  // set once ADD went through
};

void Rec(bool record, const std::string& key, double ms) {
  if (record) store.Add(key, ms);
}

std::string FloorAdd(FloorPod* pod, bool record) {
  const network::CniNetworkConfig& config = env->cni_config;
  const json capability_args = network::CapabilityArgs(pod->net, "");
  network::PluginRequest req{"ADD", pod->infra_id, pod->net.netns_path, "eth0",
                             network::JoinCniArgs(network::CniArgs(pod->net))};
  json result;
  for (size_t i = 0; i < config.plugins().size(); ++i) {
    const auto t0 = bench::Clock::now();
    const std::string stdin_config = network::BuildPluginConfig(config, i, result, capability_args).dump();
    const std::string type = config.PluginType(i);
    auto out = env->executor->Exec(Ctx(), type, req, stdin_config);
    if (!out.ok()) return "CNI ADD " + type + ": " + out.status().ToString();
    json parsed = json::parse(*out, nullptr, false);
    if (!parsed.is_object()) return "CNI ADD " + type + ": no JSON result";
    result = std::move(parsed);
    Rec(record, "floor cni ADD " + type, bench::MsSince(t0));
  }
  auto ips = network::ParseResultIps(result);
  if (!ips.ok() || ips->primary.empty()) return "CNI ADD: no pod IP in the result";
  pod->cni_result = std::move(result);
  return "";
}

std::string StartFloorPod(const std::string& name, FloorPod* pod, bool record) {
  const auto t0 = bench::Clock::now();
  const std::string uid = absl::StrCat(name, "-", ::getpid());
  const std::string infra_name = absl::StrCat("k8s_POD_", name, "_", kNamespace, "_", uid, "_0");
  auto t = bench::Clock::now();
  auto infra = env->floor_docker->CreateContainer(Ctx(), infra_name, env->infra_body);
  if (!infra.ok()) return "floor infra create: " + infra.status().ToString();
  pod->infra_id = *infra;
  Rec(record, "floor infra create", bench::MsSince(t));
  t = bench::Clock::now();
  if (absl::Status s = env->floor_docker->StartContainer(Ctx(), pod->infra_id); !s.ok())
    return "floor infra start: " + s.ToString();
  Rec(record, "floor infra start", bench::MsSince(t));
  t = bench::Clock::now();
  auto inspect = env->floor_docker->InspectContainer(Ctx(), pod->infra_id);
  if (!inspect.ok() || inspect->state.pid <= 0) return "floor inspect: no pid";
  Rec(record, "floor netns lookup (inspect)", bench::MsSince(t));
  pod->net.pod_name = name;
  pod->net.pod_namespace = kNamespace;
  pod->net.pod_uid = uid;
  pod->net.sandbox_id = pod->infra_id;
  pod->net.netns_path = absl::StrCat("/proc/", inspect->state.pid, "/ns/net");
  t = bench::Clock::now();
  if (std::string err = FloorAdd(pod, record); !err.empty()) return err;
  Rec(record, "floor CNI ADD chain", bench::MsSince(t));
  const double run_ms = bench::MsSince(t0);

  const auto t1 = bench::Clock::now();
  const std::string app_name = absl::StrCat("k8s_", kAppName, "_", name, "_", kNamespace, "_", uid, "_0");
  json body = json::parse(absl::StrReplaceAll(env->app_body.dump(), {{kSandboxIdMarker, pod->infra_id}}));
  auto app = env->floor_docker->CreateContainer(Ctx(), app_name, body);
  if (!app.ok()) return "floor app create: " + app.status().ToString();
  pod->app_id = *app;
  const double create_ms = bench::MsSince(t1);
  Rec(record, "floor app create", create_ms);
  const auto t2 = bench::Clock::now();
  if (absl::Status s = env->floor_docker->StartContainer(Ctx(), pod->app_id); !s.ok())
    return "floor app start: " + s.ToString();
  const double start_ms = bench::MsSince(t2);
  Rec(record, "floor app start", start_ms);
  Rec(record, "floor RunPodSandbox (infra create..CNI ADD)", run_ms);
  Rec(record, "floor CreateContainer (app create)", create_ms);
  Rec(record, "floor StartContainer (app start)", start_ms);
  Rec(record, "floor total", bench::MsSince(t0));
  return "";
}

std::string StopFloorPod(const FloorPod& pod) {
  std::string err;
  if (!pod.app_id.empty()) {
    absl::Status s = env->floor_docker->RemoveContainer(Ctx(), pod.app_id, true);
    if (!s.ok() && !absl::IsNotFound(s)) err = "floor rm app: " + s.ToString();
  }
  if (!pod.cni_result.is_null()) {
    const network::CniNetworkConfig& config = env->cni_config;
    const json capability_args = network::CapabilityArgs(pod.net, "");
    network::PluginRequest req{"DEL", pod.infra_id, pod.net.netns_path, "eth0",
                               network::JoinCniArgs(network::CniArgs(pod.net))};
    for (size_t i = config.plugins().size(); i-- > 0;) {
      auto out = env->executor->Exec(Ctx(), config.PluginType(i), req,
                                     network::BuildPluginConfig(config, i, pod.cni_result, capability_args).dump());
      if (!out.ok() && err.empty()) err = "floor CNI DEL: " + out.status().ToString();
    }
  }
  if (!pod.infra_id.empty()) {
    absl::Status s = env->floor_docker->RemoveContainer(Ctx(), pod.infra_id, true);
    if (!s.ok() && !absl::IsNotFound(s) && err.empty()) err = "floor rm infra: " + s.ToString();
  }
  return err;
}

std::string ShimBatch(const std::string& tag, int n, int clients, bool record, double* to_last) {
  std::vector<ShimPod> pods(n);
  std::string error;
  env->sink.on = record;
  *to_last = bench::RunConcurrent(
      n, clients, [&](int i) { return StartShimPod(absl::StrCat(kPodPrefix, tag, "-", i), &pods[i], record); },
      &error);
  env->sink.on = false;
  std::string teardown;
  bench::RunConcurrent(n, clients, [&](int i) { return StopShimPod(pods[i]); }, &teardown);
  if (!teardown.empty()) std::fprintf(stderr, "pod_startup_bench: teardown: %s\n", teardown.c_str());
  return error;
}

std::string FloorBatch(const std::string& tag, int n, int clients, bool record, double* to_last) {
  std::vector<FloorPod> pods(n);
  std::string error;
  *to_last = bench::RunConcurrent(
      n, clients,
      [&](int i) { return StartFloorPod(absl::StrCat(kPodPrefix, "floor-", tag, "-", i), &pods[i], record); }, &error);
  std::string teardown;
  bench::RunConcurrent(n, clients, [&](int i) { return StopFloorPod(pods[i]); }, &teardown);
  if (!teardown.empty()) std::fprintf(stderr, "pod_startup_bench: floor teardown: %s\n", teardown.c_str());
  return error;
}

// --- Tables. ----------------------------------------------------------------------

struct Row {
  std::string label, shim, floor;  // sample keys; "" when one side has no such phase
};

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = {
      {"total (Run + Create + Start)", "shim total", "floor total"},
      {"RunPodSandbox", "shim RunPodSandbox", "floor RunPodSandbox (infra create..CNI ADD)"},
      {"  checks and create body", "shim RunPodSandbox: checks and create body", ""},
      {"  pause image check (inspect)", "shim RunPodSandbox: pause image check", ""},
      {"  creation marker", "shim RunPodSandbox: creation marker", ""},
      {"  infra create", "shim RunPodSandbox: infra create", "floor infra create"},
      {"    of which Docker's create (below view)", "shim docker: infra create", ""},
      {"  checkpoint write (pending)", "shim RunPodSandbox: checkpoint write (pending)", ""},
      {"  infra start", "shim RunPodSandbox: infra start", "floor infra start"},
      {"    of which Docker's start (below view)", "shim docker: infra start", ""},
      {"  netns lookup (inspect)", "shim RunPodSandbox: netns lookup (inspect)", "floor netns lookup (inspect)"},
      {"  network SetUp / CNI ADD chain", "shim RunPodSandbox: network SetUp (CNI ADD chain + cache)",
       "floor CNI ADD chain"},
      {"    cni ADD bridge (+host-local)", "shim cni ADD bridge", "floor cni ADD bridge"},
      {"    cni ADD portmap", "shim cni ADD portmap", "floor cni ADD portmap"},
      {"    cni ADD loopback", "shim cni ADD loopback", "floor cni ADD loopback"},
      {"    cni cache file write", "shim cni: cache file write", ""},
      {"  checkpoint write (final)", "shim RunPodSandbox: checkpoint write (final)", ""},
      {"CreateContainer", "shim CreateContainer", "floor CreateContainer (app create)"},
      {"  sandbox inspect", "shim CreateContainer: sandbox inspect", ""},
      {"  create body (info, features, mounts)", "shim CreateContainer: create body (info, features, mounts)", ""},
      {"  image check (inspect)", "shim CreateContainer: image check", ""},
      {"  app create", "shim CreateContainer: create", "floor app create"},
      {"    of which Docker's create (below view)", "shim docker: app create", ""},
      {"  log file", "shim CreateContainer: log file", ""},
      {"StartContainer", "shim StartContainer", "floor StartContainer (app start)"},
      {"  inspect", "shim StartContainer: inspect", ""},
      {"  app start", "shim StartContainer: start", "floor app start"},
      {"    of which Docker's start (below view)", "shim docker: app start", ""},
      {"  log copy follow", "shim StartContainer: log copy follow", ""},
      {"  cgroup files", "shim StartContainer: cgroup files", ""},
  };
  return rows;
}

void PrintPhaseTable(const std::string& shape) {
  auto s = store.Of(shape);
  std::printf("\n%s: per phase, milliseconds (n = samples; shim phases from its PhaseSink)\n", shape.c_str());
  std::printf("  %-40s %4s %9s %9s   %4s %9s %9s   %7s\n", "phase", "n", "shim p50", "shim p95", "n", "floor p50",
              "floor p95", "p50 x");
  std::set<std::string> shown;
  auto cell = [&](const std::string& key, std::vector<double>** v) {
    *v = nullptr;
    if (key.empty()) return;
    shown.insert(key);
    auto it = s.find(key);
    if (it != s.end() && !it->second.empty()) *v = &it->second;
  };
  for (const Row& r : Rows()) {
    std::vector<double>*a, *b;
    cell(r.shim, &a);
    cell(r.floor, &b);
    if (!a && !b) continue;
    std::printf("  %-40s", r.label.c_str());
    if (a) std::printf(" %4zu %9.2f %9.2f", a->size(), bench::Percentile(*a, 50), bench::Percentile(*a, 95));
    else std::printf(" %4s %9s %9s", "", "-", "-");
    if (b) std::printf("   %4zu %9.2f %9.2f", b->size(), bench::Percentile(*b, 50), bench::Percentile(*b, 95));
    else std::printf("   %4s %9s %9s", "", "-", "-");
    if (a && b) std::printf("   %6.2fx", bench::Percentile(*a, 50) / bench::Percentile(*b, 50));
    std::printf("\n");
  }
  for (const auto& [key, v] : s) {  // phases nobody listed above (a new one, a DEL)
    if (shown.count(key) || v.empty() || key.rfind("to last", 0) == 0) continue;
    std::printf("  %-40s %4zu %9.2f %9.2f   (unlisted)\n", key.c_str(), v.size(), bench::Percentile(v, 50),
                bench::Percentile(v, 95));
  }
}

void PrintTargets(const std::string& serial_shape, const std::string& concurrent_shape,
                  const std::vector<double>& shim_last, const std::vector<double>& floor_last) {
  std::printf("\nShim / floor (issue 18 targets: 1 pod <= 1.05x, 30 concurrent time to last <= 1.10x)\n");
  auto s = store.Of(serial_shape);
  if (!s["shim total"].empty() && !s["floor total"].empty()) {
    const double shim50 = bench::Percentile(s["shim total"], 50), floor50 = bench::Percentile(s["floor total"], 50);
    std::printf("  %-52s shim %8.1f ms  floor %8.1f ms  %6.3fx (target 1.05x)\n", (serial_shape + ", total p50").c_str(),
                shim50, floor50, shim50 / floor50);
  }
  if (!shim_last.empty() && !floor_last.empty()) {
    auto str = [](const std::vector<double>& v) {
      std::string out;
      for (double x : v) absl::StrAppend(&out, out.empty() ? "" : " ", absl::StrFormat("%.0f", x));
      return out;
    };
    const double a = bench::Percentile(shim_last, 50), b = bench::Percentile(floor_last, 50);
    std::printf("  %-52s shim %8.1f ms  floor %8.1f ms  %6.3fx (target 1.10x)\n",
                (concurrent_shape + ", time to last, median of rounds").c_str(), a, b, a / b);
    std::printf("    rounds, ms: shim [%s]  floor [%s]\n", str(shim_last).c_str(), str(floor_last).c_str());
  }
  auto c = store.Of(concurrent_shape);
  if (!c["shim total"].empty() && !c["floor total"].empty()) {
    const double a = bench::Percentile(c["shim total"], 50), b = bench::Percentile(c["floor total"], 50);
    std::printf("  %-52s shim %8.1f ms  floor %8.1f ms  %6.3fx\n", (concurrent_shape + ", per-pod total p50").c_str(),
                a, b, a / b);
  }
  std::fflush(stdout);
}

// --- Setup and cleanup. -------------------------------------------------------------

void Cleanup(Env& e) {
  if (e.hub) e.hub->Stop();
  if (e.log_copier) e.log_copier->Stop();
  if (e.docker) bench::RemoveContainersNamed(*e.docker, kContainerPrefixes, "pod_startup_bench");
  if (!e.dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(e.dir, ec);
    e.dir.clear();
  }
}

std::string Setup(Env& e) {
  for (const char* plugin : {"bridge", "host-local", "portmap", "loopback"})
    if (!std::filesystem::exists(testenv::CniBinDir() + "/" + plugin))
      return absl::StrCat("CNI plugin ", plugin, " must be installed in ", testenv::CniBinDir());
  std::string tmpl = "/var/tmp/podbench.XXXXXX";
  if (!::mkdtemp(tmpl.data())) return "mkdtemp failed";
  e.dir = tmpl;
  std::filesystem::create_directories(e.dir + "/net.d");
  std::filesystem::create_directories(e.dir + "/logs");
  // A kubelet-like chain: bridge with host-local IPAM, portmap, loopback.
  std::ofstream(e.dir + "/net.d/10-podbench.conflist") << absl::StrCat(
      R"({"cniVersion": "1.0.0", "name": "podbench", "plugins": [
  {"type": "bridge", "bridge": "pbench0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.201.0/24"}]], "dataDir": ")",
      e.dir, R"(/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]})");

  const std::string endpoint = testenv::DockerEndpoint();
  auto docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!docker.ok()) return docker.status().ToString();
  e.docker = std::move(*docker);
  auto floor_docker = dockerclient::DockerClientImpl::Create(endpoint);
  if (!floor_docker.ok()) return floor_docker.status().ToString();
  e.floor_docker = std::move(*floor_docker);
  auto api = e.docker->Ping(Ctx());
  if (!api.ok()) return "dockerd must run (scripts/test-env.sh): " + api.status().ToString();
  if (auto p = e.floor_docker->Ping(Ctx()); !p.ok()) return p.status().ToString();
  auto version = e.docker->Version(Ctx());
  bench::RemoveContainersNamed(*e.docker, kContainerPrefixes, "pod_startup_bench");  // a killed earlier run
  std::string socket_path = endpoint;
  if (socket_path.rfind("unix://", 0) == 0) socket_path = socket_path.substr(7);

  network::CniOptions cni;
  cni.bin_dirs = {testenv::CniBinDir()};
  cni.conf_dir = e.dir + "/net.d";
  cni.cache_dir = e.dir + "/cache";
  cni.phase_sink = &e.sink;
  e.network = std::make_unique<network::CniNetwork>(cni);
  if (absl::Status ready = e.network->Ready(); !ready.ok()) return "CNI not ready: " + ready.ToString();

  e.recorder = std::make_unique<RecordingClient>(*e.docker, e.sink.on);
  shim::Options options;
  options.docker_endpoint = endpoint;
  options.pod_infra_image = testenv::PauseImage();
  options.root_directory = e.dir + "/root";
  options.network_plugin = "cni";
  options.phase_sink = &e.sink;
  shim::logs::CopierOptions copier;
  copier.docker_socket_path = socket_path;
  e.log_copier = std::make_unique<shim::logs::LogCopier>(*e.docker, copier);
  options.log_copier = e.log_copier.get();
  dockerclient::DockerClient* client = e.recorder.get();
  if (e.with_view) {
    e.view = std::make_unique<shim::view::ContainerView>(*e.docker);
    e.viewed = std::make_unique<shim::view::ViewClient>(*e.recorder, *e.view);
    options.container_view = e.view.get();
    client = e.viewed.get();
  }
  e.service = std::make_unique<shim::CriService>(options, *client, *e.network);
  if (absl::Status s = e.service->Init(); !s.ok()) return "CriService::Init: " + s.ToString();
  if (e.with_view) {
    shim::events::HubOptions hub;
    hub.docker_socket_path = socket_path;
    e.hub = std::make_unique<shim::events::EventHub>(
        *e.docker, hub, [](const shim::events::CriEvent&) { return runtime::v1::ContainerEventResponse(); },
        e.view.get());
    // As a node's shim: the view live before pods start (so its refreshes run).
    for (int i = 0; i < 100 && !e.view->Live(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!e.view->Live()) return "the container view did not become live within 5 s";
  }

  // The floor's CNI: the same conflist, plugins exec'd directly.
  auto config = network::LoadDefaultNetworkConfig(cni.conf_dir);
  if (!config.ok()) return "floor CNI config: " + config.status().ToString();
  e.cni_config = std::move(*config);
  e.executor = std::make_unique<network::ProcessPluginExecutor>(cni.bin_dirs);

  // A warm-up pod through the shim (untimed), whose bodies become the floor's.
  e.recorder->capture = true;
  ShimPod warm;
  std::string err = StartShimPod(absl::StrCat(kPodPrefix, "warmup"), &warm, false);
  e.recorder->capture = false;
  if (err.empty()) {
    std::lock_guard lock(e.recorder->mu);
    for (auto& [name, body] : e.recorder->bodies) {
      json b = body;
      if (b.contains("Labels") && b["Labels"].is_object() && b["Labels"].contains(shim::kContainerTypeLabel)) {
        b["Labels"][kFloorTypeLabel] = b["Labels"][shim::kContainerTypeLabel];
        b["Labels"].erase(shim::kContainerTypeLabel);
      }
      if (name.rfind("k8s_POD_", 0) == 0) e.infra_body = std::move(b);
      else e.app_body = json::parse(absl::StrReplaceAll(b.dump(), {{warm.sandbox_id, kSandboxIdMarker}}));
    }
    if (e.infra_body.is_null() || e.app_body.is_null()) err = "warm-up: the shim's create bodies were not captured";
  }
  if (std::string e2 = StopShimPod(warm); err.empty()) err = e2;
  if (!err.empty()) return "warm-up: " + err;
  FloorPod floor_warm;
  err = StartFloorPod(absl::StrCat(kPodPrefix, "floor-warmup"), &floor_warm, false);
  if (std::string e2 = StopFloorPod(floor_warm); err.empty()) err = e2;
  if (!err.empty()) return "floor warm-up: " + err;

  std::printf("pod_startup_bench: Docker %s (API %s), %s, CNI chain bridge+host-local, portmap, loopback "
              "(cniVersion 1.0.0) in a private netns, state in %s\n",
              version.ok() ? version->version.c_str() : "?", api->c_str(),
              e.with_view ? "shim with the view, events hub and log copier (as main.cc)"
                          : "shim without the view (DSBENCH_VIEW=0), with the log copier",
              e.dir.c_str());
  std::fflush(stdout);
  return "";
}

}  // namespace

int main(int /*argc*/, char** /*argv*/) {
  // First, while the process has one thread: a private network namespace for the
  // bridge and the veths' host ends (CNI plugins inherit it from this thread).
  if (::unshare(CLONE_NEWNET) != 0) {
    std::perror("pod_startup_bench: unshare(CLONE_NEWNET) (run as root)");
    return 1;
  }
  common::SetLogLevel(common::LogLevel::kWarning);  // the shim logs every pod at INFO
  const int serial = bench::EnvInt("DSBENCH_PODS_SERIAL", 10);
  const int concurrent = bench::EnvInt("DSBENCH_PODS_CONCURRENT", 30);
  const int clients = bench::EnvInt("DSBENCH_CLIENTS", 8);
  const int rounds = bench::EnvInt("DSBENCH_ROUNDS", 3);
  const char* view = std::getenv("DSBENCH_VIEW");

  Env e;
  e.with_view = !(view && std::string(view) == "0");
  env = &e;
  auto fail = [&e](const std::string& what) {
    std::fprintf(stderr, "pod_startup_bench: %s\n", what.c_str());
    Cleanup(e);
    return 1;
  };
  if (std::string err = Setup(e); !err.empty()) return fail("setup: " + err);

  const std::string serial_shape = "1 pod at a time";
  const std::string concurrent_shape = absl::StrCat(concurrent, " pods, ", clients, " clients");
  store.SetShape(serial_shape);
  for (int i = 0; i < serial; ++i) {
    double unused;
    for (int k = 0; k < 2; ++k) {
      const bool shim_turn = (i + k) % 2 == 0;
      const std::string tag = absl::StrCat("s", i);
      std::string err = shim_turn ? ShimBatch(tag, 1, 1, true, &unused) : FloorBatch(tag, 1, 1, true, &unused);
      if (!err.empty()) return fail(err);
    }
  }
  PrintPhaseTable(serial_shape);
  std::fflush(stdout);

  store.SetShape(concurrent_shape);
  std::vector<double> shim_last, floor_last;
  for (int r = 0; r < rounds; ++r) {
    for (int k = 0; k < 2; ++k) {
      const bool shim_turn = (r + k) % 2 == 0;
      const std::string tag = absl::StrCat("c", r);
      double to_last = -1;
      std::string err = shim_turn ? ShimBatch(tag, concurrent, clients, true, &to_last)
                                  : FloorBatch(tag, concurrent, clients, true, &to_last);
      if (!err.empty()) return fail(err);
      (shim_turn ? shim_last : floor_last).push_back(to_last);
      std::printf("  round %d: %s %d pods to the last one started: %.0f ms\n", r, shim_turn ? "shim " : "floor",
                  concurrent, to_last);
      std::fflush(stdout);
    }
  }
  PrintPhaseTable(concurrent_shape);
  PrintTargets(serial_shape, concurrent_shape, shim_last, floor_last);
  Cleanup(e);
  return 0;
}

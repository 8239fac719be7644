// Pod start-up over the CRI socket, runtime beside runtime: RunPodSandbox +
// CreateContainer + StartContainer of the same kubelet-like pod (one busybox container,
// `sleep 3600`, the pod network through the runtime's own CNI config) against each
// runtime in DSBENCH_ENDPOINTS, "name=unix:///path.sock,name=unix:///path.sock" (say the
// shim and cri-dockerd, started by hand on the same engine with the same CNI chain).
// pod_startup_bench, in-process, shows where the shim's time goes and the floor under
// it; this one is what the kubelet sees, as the kubelet calls.
//   - DSBENCH_PODS_SERIAL pods one at a time (default 10), the runtimes taking turns
//     (and which goes first alternating), since dockerd's speed drifts;
//   - DSBENCH_ROUNDS rounds (default 3) of DSBENCH_PODS_CONCURRENT pods (default 30)
//     started by DSBENCH_CLIENTS gRPC clients (default 8) at once, as the kubelet's pod
//     workers do, per runtime in turn: the time to the last pod started.
// Pods are stopped and removed between batches, untimed; so are the pods labelled
// `cribench` that a killed run left. The pods' logs go to a temp dir under /var/tmp.
// The busybox image (DSBENCH_IMAGE, default the test image) must be on the engine.
// Prints figures; no pass/fail.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/cri.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"

namespace {

namespace v1 = runtime::v1;

constexpr char kNamespace[] = "cribench";
constexpr char kBenchLabel[] = "cribench";
constexpr char kAppName[] = "bctr";

struct Runtime {
  std::string name, endpoint;
  std::unique_ptr<v1::RuntimeService::Stub> stub;
};

std::string log_root;
std::string image;

std::unique_ptr<grpc::ClientContext> Ctx() { return bench::RpcContext(std::chrono::seconds(120)); }

std::string Failed(const Runtime& r, const char* call, const grpc::Status& s) {
  return absl::StrCat(r.name, " ", call, ": ", s.error_message());
}

// Starts one pod; its sandbox ID in *sandbox; "" or why not.
std::string StartPod(Runtime& r, const std::string& name, std::string* sandbox) {
  const std::string uid = absl::StrCat(name, "-", ::getpid());
  v1::PodSandboxConfig pod = bench::KubeletLikePodConfig(name, kNamespace, uid, kBenchLabel);
  pod.set_log_directory(absl::StrCat(log_root, "/", r.name, "/", kNamespace, "_", name, "_", uid));
  (*pod.mutable_annotations())["kubernetes.io/config.source"] = "api";
  // The kubelet makes the pod's and the container's log directories before it calls.
  std::error_code ec;
  std::filesystem::create_directories(absl::StrCat(pod.log_directory(), "/", kAppName), ec);
  v1::RunPodSandboxRequest run;
  *run.mutable_config() = pod;
  v1::RunPodSandboxResponse ran;
  if (grpc::Status s = r.stub->RunPodSandbox(Ctx().get(), run, &ran); !s.ok()) return Failed(r, "RunPodSandbox", s);
  *sandbox = ran.pod_sandbox_id();
  v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(*sandbox);
  *create.mutable_sandbox_config() = pod;
  *create.mutable_config() = bench::SleeperContainerConfig(kAppName, image, kBenchLabel);
  v1::CreateContainerResponse created;
  if (grpc::Status s = r.stub->CreateContainer(Ctx().get(), create, &created); !s.ok())
    return Failed(r, "CreateContainer", s);
  v1::StartContainerRequest start;
  start.set_container_id(created.container_id());
  v1::StartContainerResponse started;
  if (grpc::Status s = r.stub->StartContainer(Ctx().get(), start, &started); !s.ok())
    return Failed(r, "StartContainer", s);
  return "";
}

std::string RemovePod(Runtime& r, const std::string& sandbox) {
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(sandbox);
  v1::StopPodSandboxResponse stopped;
  if (grpc::Status s = r.stub->StopPodSandbox(Ctx().get(), stop, &stopped); !s.ok())
    return Failed(r, "StopPodSandbox", s);
  v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(sandbox);
  v1::RemovePodSandboxResponse removed;
  if (grpc::Status s = r.stub->RemovePodSandbox(Ctx().get(), remove, &removed); !s.ok())
    return Failed(r, "RemovePodSandbox", s);
  return "";
}

// Every pod of this bench that the runtime lists (a killed run's), removed.
std::string RemoveLeftovers(Runtime& r) {
  v1::ListPodSandboxRequest list;
  (*list.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  v1::ListPodSandboxResponse listed;
  if (grpc::Status s = r.stub->ListPodSandbox(Ctx().get(), list, &listed); !s.ok())
    return Failed(r, "ListPodSandbox", s);
  for (const v1::PodSandbox& pod : listed.items()) {
    if (std::string err = RemovePod(r, pod.id()); !err.empty()) return err;
  }
  return "";
}

// n pods by `clients` clients at once: the time to the last one started (ms), and each
// pod's own time in *per_pod; "" or why not. The pods are removed afterwards.
std::string Batch(Runtime& r, const std::string& tag, int n, int clients, double* to_last, std::vector<double>* per_pod) {
  std::vector<std::string> sandboxes(n);
  std::vector<double> took(n);
  std::string error;
  *to_last = bench::RunConcurrent(
      n, clients,
      [&](int i) {
        const auto t0 = bench::Clock::now();
        std::string err = StartPod(r, absl::StrCat("cb-", tag, "-", i), &sandboxes[i]);
        took[i] = bench::MsSince(t0);
        return err;
      },
      &error);
  for (const std::string& sandbox : sandboxes) {
    if (sandbox.empty()) continue;
    if (std::string err = RemovePod(r, sandbox); error.empty()) error = err;
  }
  per_pod->insert(per_pod->end(), took.begin(), took.end());
  return error;
}

}  // namespace

int main() {
  const char* endpoints = std::getenv("DSBENCH_ENDPOINTS");
  if (!endpoints || !*endpoints) {
    std::fprintf(stderr, "cri_startup_bench: set DSBENCH_ENDPOINTS=name=unix:///a.sock,name=unix:///b.sock\n");
    return 2;
  }
  const int serial = bench::EnvInt("DSBENCH_PODS_SERIAL", 10);
  const int concurrent = bench::EnvInt("DSBENCH_PODS_CONCURRENT", 30);
  const int clients = bench::EnvInt("DSBENCH_CLIENTS", 8);
  const int rounds = bench::EnvInt("DSBENCH_ROUNDS", 3);
  image = std::getenv("DSBENCH_IMAGE") ? std::getenv("DSBENCH_IMAGE") : testenv::BusyboxImage();

  std::vector<Runtime> runtimes;
  for (absl::string_view item : absl::StrSplit(endpoints, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.second.empty()) {
      std::fprintf(stderr, "cri_startup_bench: %s: want name=unix:///path.sock\n", std::string(item).c_str());
      return 2;
    }
    Runtime r{kv.first, kv.second, nullptr};
    r.stub = v1::RuntimeService::NewStub(grpc::CreateChannel(r.endpoint, grpc::InsecureChannelCredentials()));
    v1::VersionRequest ask;
    v1::VersionResponse version;
    if (grpc::Status s = r.stub->Version(Ctx().get(), ask, &version); !s.ok()) {
      std::fprintf(stderr, "cri_startup_bench: %s at %s: %s\n", r.name.c_str(), r.endpoint.c_str(),
                   s.error_message().c_str());
      return 1;
    }
    std::printf("%s at %s: %s %s (%s)\n", r.name.c_str(), r.endpoint.c_str(), version.runtime_name().c_str(),
                version.runtime_version().c_str(), version.runtime_api_version().c_str());
    runtimes.push_back(std::move(r));
  }
  std::string tmpl = "/var/tmp/cribench.XXXXXX";
  if (!::mkdtemp(tmpl.data())) return 1;
  log_root = tmpl;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "cri_startup_bench: %s\n", what.c_str());
    for (Runtime& r : runtimes) (void)RemoveLeftovers(r);
    std::filesystem::remove_all(log_root);
    return 1;
  };
  for (Runtime& r : runtimes) {
    if (std::string err = RemoveLeftovers(r); !err.empty()) return fail(err);
    double unused;
    std::vector<double> warm;
    if (std::string err = Batch(r, "warmup", 1, 1, &unused, &warm); !err.empty()) return fail("warm-up: " + err);
  }

  const std::size_t count = runtimes.size();
  std::map<std::string, std::vector<double>> one, many, to_last;
  for (int i = 0; i < serial; ++i) {
    for (std::size_t k = 0; k < count; ++k) {
      Runtime& r = runtimes[(i + k) % count];
      double unused;
      if (std::string err = Batch(r, absl::StrCat("s", i), 1, 1, &unused, &one[r.name]); !err.empty()) return fail(err);
    }
  }
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < count; ++k) {
      Runtime& r = runtimes[(round + k) % count];
      double last;
      if (std::string err = Batch(r, absl::StrCat("c", round), concurrent, clients, &last, &many[r.name]); !err.empty())
        return fail(err);
      to_last[r.name].push_back(last);
      std::printf("  round %d: %-12s %d pods to the last one started: %.0f ms\n", round, r.name.c_str(), concurrent, last);
      std::fflush(stdout);
    }
  }

  std::printf("\npod start-up over CRI (RunPodSandbox + CreateContainer + StartContainer), ms\n");
  std::printf("%-14s %22s %30s %26s\n", "runtime", "1 pod p50 / p95",
              absl::StrCat(concurrent, " pods (", clients, " clients) p50 / p95").c_str(), "to the last: best / median");
  const std::string& first = runtimes[0].name;
  for (const Runtime& r : runtimes) {
    const auto& o = one[r.name];
    const auto& m = many[r.name];
    const auto& l = to_last[r.name];
    std::printf("%-14s %11.0f / %8.0f %19.0f / %8.0f %15.0f / %8.0f\n", r.name.c_str(), bench::Percentile(o, 50),
                bench::Percentile(o, 95), bench::Percentile(m, 50), bench::Percentile(m, 95), bench::Percentile(l, 0),
                bench::Percentile(l, 50));
  }
  for (const Runtime& r : runtimes) {
    if (r.name == first) continue;
    std::printf("%s / %s: 1 pod p50 %.2fx, %d pods to the last (median) %.2fx\n", first.c_str(), r.name.c_str(),
                bench::Percentile(one[first], 50) / bench::Percentile(one[r.name], 50), concurrent,
                bench::Percentile(to_last[first], 50) / bench::Percentile(to_last[r.name], 50));
  }
  std::filesystem::remove_all(log_root);
  return 0;
}

#pragma once
// Drives a running shim over its CRI socket as several kubelets would: pods with one
// container each are created (RunPodSandbox, CreateContainer, StartContainer) and
// removed (StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox) by
// concurrent gRPC clients, each on its own channel and connection. Every call's
// latency and status code are kept per RPC. CountLeftovers tells what a round left
// behind. Shared by tests/bench/load_bench.cc and tests/integration/load_test.cc.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/cri.h"
#include "tests/support/shim_process.h"

namespace testsupport {

struct LoadOptions {
  std::string socket_path;      // the shim's CRI socket
  int clients = 8;
  std::string pod_namespace;    // every pod's namespace: what CountLeftovers looks for
  std::string container_image;  // must be present in the engine
  std::string log_directory;    // pods' log directories go under it
  absl::Duration call_timeout = absl::Minutes(2);
};

// The calls of one RPC: latencies and the codes of those that failed.
struct RpcFigures {
  std::vector<double> ms;
  std::map<grpc::StatusCode, int> failures;
  std::string first_error;  // the message of the first failure
};

struct Figures {
  std::map<std::string, RpcFigures> rpcs;  // by RPC name
  int Failures() const;
  void Merge(const Figures& other);
};

struct Pod {
  std::string sandbox_id, container_id;  // empty when that step failed
  int client = 0;
};

class LoadDriver {
 public:
  explicit LoadDriver(LoadOptions options);
  ~LoadDriver();

  // Creates `count` pods named <prefix>-<i>, one container each, spread over the
  // clients. Pods whose creation failed part way are returned too, with what exists,
  // so that RemovePods cleans them up.
  std::vector<Pod> CreatePods(const std::string& prefix, int count, Figures* figures);
  // Stops and removes them (containers first), each by the client that made it.
  void RemovePods(const std::vector<Pod>& pods, Figures* figures);
  // What the kubelet does every few seconds on a node: relist (ListPodSandbox,
  // ListContainers, then a status of each), and the stats lists.
  void Poll(const std::vector<Pod>& pods, Figures* figures);

  const LoadOptions& options() const { return options_; }

 private:
  class Client;
  LoadOptions options_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// What CRI objects of a load run remain: containers (infra or app) of its pod
// namespace in Docker, host-local IP reservations, checkpoint files, CNI cache files.
struct Leftovers {
  int containers = 0, ip_allocations = 0, checkpoints = 0, cni_cache_files = 0;
  int creation_markers = 0;  // <root>/creating: RunPodSandbox's, kept only for a clean-up to come
  int Total() const { return containers + ip_allocations + checkpoints + cni_cache_files + creation_markers; }
};

struct LeftoverPlaces {
  std::string docker_endpoint;  // unix:///...
  std::string pod_namespace;
  std::string ipam_dir;         // host-local's dataDir (a folder per network under it)
  std::string root_directory;   // the shim's; checkpoints are in <root>/sandbox, markers in <root>/creating
  std::string cni_cache_dir;
};

absl::StatusOr<Leftovers> CountLeftovers(const LeftoverPlaces& places);

// gRPC starts some threads on demand (its executors) and keeps them: a later round may
// find one or two more than the first without anything leaking.
inline constexpr int kThreadSlack = 2;

// A load run in `dir`, on the engine, CNI plugins and images of tests/integration/env.h:
// a CNI conflist (network and bridge `bridge`, host-local over 10.98.0.0/16, then
// loopback) in <dir>/net.d, IPAM state, CNI cache, the shim's root and the pods' logs
// under `dir`, the flags that make the shim `binary` use them, and the driver's options.
struct LoadRun {
  LeftoverPlaces places;
  ShimLaunch launch;
  LoadOptions options;
};
absl::StatusOr<LoadRun> PrepareLoadRun(const std::string& binary, const std::string& dir,
                                       const std::string& pod_namespace, const std::string& bridge, int clients);

}  // namespace testsupport

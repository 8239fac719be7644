#include "tests/support/load_driver.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/context.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/naming.h"
#include "tests/integration/env.h"

namespace testsupport {
namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

// Exits at once on SIGTERM (a shell as PID 1 ignores it otherwise), so StopContainer
// measures the shim and Docker, not a grace period running out.
constexpr char kContainerScript[] = "trap 'exit 0' TERM; sleep 3600 & wait";
constexpr int64_t kStopTimeoutSeconds = 10;

int CountFiles(const std::string& dir, const std::function<bool(const fs::path&)>& counts) {
  int n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file(ec) && counts(it->path())) ++n;
  return n;
}

}  // namespace

int Figures::Failures() const {
  int n = 0;
  for (const auto& [name, rpc] : rpcs)
    for (const auto& [code, count] : rpc.failures) n += count;
  return n;
}

void Figures::Merge(const Figures& other) {
  for (const auto& [name, rpc] : other.rpcs) {
    RpcFigures& mine = rpcs[name];
    mine.ms.insert(mine.ms.end(), rpc.ms.begin(), rpc.ms.end());
    for (const auto& [code, count] : rpc.failures) mine.failures[code] += count;
    if (mine.first_error.empty()) mine.first_error = rpc.first_error;
  }
}

// One kubelet-like client: its own channel (a local subchannel pool, so its own
// connection) and stub.
class LoadDriver::Client {
 public:
  Client(const LoadOptions& options) : options_(options) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(16 << 20);
    stub_ = v1::RuntimeService::NewStub(
        grpc::CreateCustomChannel("unix://" + options.socket_path, grpc::InsecureChannelCredentials(), args));
  }

  // Times one call and records it under `name`; true when it succeeded.
  template <typename Request, typename Response>
  bool Call(const std::string& name,
            grpc::Status (v1::RuntimeService::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
            const Request& request, Response* response, Figures* figures) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(options_.call_timeout));
    const auto t0 = std::chrono::steady_clock::now();
    grpc::Status s = ((*stub_).*method)(&ctx, request, response);
    RpcFigures& rpc = figures->rpcs[name];
    rpc.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (s.ok()) return true;
    ++rpc.failures[s.error_code()];
    if (rpc.first_error.empty()) rpc.first_error = s.error_message();
    return false;
  }

  void Create(const std::string& name, Pod* pod, Figures* figures) {
    v1::PodSandboxConfig config;
    config.mutable_metadata()->set_name(name);
    config.mutable_metadata()->set_namespace_(options_.pod_namespace);
    config.mutable_metadata()->set_uid(absl::StrCat(name, "-", ::getpid()));  // names are unique per run
    config.set_hostname(name);
    config.set_log_directory(absl::StrCat(options_.log_directory, "/", config.metadata().uid()));
    config.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = config;
    v1::RunPodSandboxResponse ran;
    if (!Call("RunPodSandbox", &v1::RuntimeService::Stub::RunPodSandbox, run, &ran, figures)) return;
    pod->sandbox_id = ran.pod_sandbox_id();

    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(pod->sandbox_id);
    *create.mutable_sandbox_config() = config;
    v1::ContainerConfig& c = *create.mutable_config();
    c.mutable_metadata()->set_name("app");
    c.mutable_image()->set_image(options_.container_image);
    for (const char* part : {"sh", "-c", kContainerScript}) c.add_command(part);
    c.set_log_path("app/0.log");
    c.mutable_linux();
    v1::CreateContainerResponse created;
    if (!Call("CreateContainer", &v1::RuntimeService::Stub::CreateContainer, create, &created, figures)) return;
    pod->container_id = created.container_id();

    v1::StartContainerRequest start;
    start.set_container_id(pod->container_id);
    v1::StartContainerResponse started;
    Call("StartContainer", &v1::RuntimeService::Stub::StartContainer, start, &started, figures);
  }

  void Remove(const Pod& pod, Figures* figures) {
    if (!pod.container_id.empty()) {
      v1::StopContainerRequest stop;
      stop.set_container_id(pod.container_id);
      stop.set_timeout(kStopTimeoutSeconds);
      v1::StopContainerResponse stopped;
      Call("StopContainer", &v1::RuntimeService::Stub::StopContainer, stop, &stopped, figures);
      v1::RemoveContainerRequest remove;
      remove.set_container_id(pod.container_id);
      v1::RemoveContainerResponse removed;
      Call("RemoveContainer", &v1::RuntimeService::Stub::RemoveContainer, remove, &removed, figures);
    }
    if (!pod.sandbox_id.empty()) {
      v1::StopPodSandboxRequest stop;
      stop.set_pod_sandbox_id(pod.sandbox_id);
      v1::StopPodSandboxResponse stopped;
      Call("StopPodSandbox", &v1::RuntimeService::Stub::StopPodSandbox, stop, &stopped, figures);
      v1::RemovePodSandboxRequest remove;
      remove.set_pod_sandbox_id(pod.sandbox_id);
      v1::RemovePodSandboxResponse removed;
      Call("RemovePodSandbox", &v1::RuntimeService::Stub::RemovePodSandbox, remove, &removed, figures);
    }
  }

  void Poll(const std::vector<Pod>& pods, Figures* figures) {
    v1::ListPodSandboxResponse sandboxes;
    Call("ListPodSandbox", &v1::RuntimeService::Stub::ListPodSandbox, v1::ListPodSandboxRequest(), &sandboxes, figures);
    v1::ListContainersResponse containers;
    Call("ListContainers", &v1::RuntimeService::Stub::ListContainers, v1::ListContainersRequest(), &containers, figures);
    for (const Pod& pod : pods) {
      if (!pod.sandbox_id.empty()) {
        v1::PodSandboxStatusRequest req;
        req.set_pod_sandbox_id(pod.sandbox_id);
        v1::PodSandboxStatusResponse resp;
        Call("PodSandboxStatus", &v1::RuntimeService::Stub::PodSandboxStatus, req, &resp, figures);
      }
      if (!pod.container_id.empty()) {
        v1::ContainerStatusRequest req;
        req.set_container_id(pod.container_id);
        v1::ContainerStatusResponse resp;
        Call("ContainerStatus", &v1::RuntimeService::Stub::ContainerStatus, req, &resp, figures);
      }
    }
    v1::ListContainerStatsResponse container_stats;
    Call("ListContainerStats", &v1::RuntimeService::Stub::ListContainerStats, v1::ListContainerStatsRequest(),
         &container_stats, figures);
    v1::ListPodSandboxStatsResponse pod_stats;
    Call("ListPodSandboxStats", &v1::RuntimeService::Stub::ListPodSandboxStats, v1::ListPodSandboxStatsRequest(),
         &pod_stats, figures);
  }

 private:
  const LoadOptions& options_;
  std::unique_ptr<v1::RuntimeService::Stub> stub_;
};

LoadDriver::LoadDriver(LoadOptions options) : options_(std::move(options)) {
  for (int i = 0; i < std::max(1, options_.clients); ++i) clients_.push_back(std::make_unique<Client>(options_));
}

LoadDriver::~LoadDriver() = default;

std::vector<Pod> LoadDriver::CreatePods(const std::string& prefix, int count, Figures* figures) {
  std::vector<Pod> pods(static_cast<size_t>(count));
  std::vector<Figures> per_client(clients_.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < clients_.size(); ++k) {
    threads.emplace_back([&, k] {
      for (size_t i = k; i < pods.size(); i += clients_.size()) {
        pods[i].client = static_cast<int>(k);
        clients_[k]->Create(absl::StrCat(prefix, "-", i), &pods[i], &per_client[k]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Figures& f : per_client) figures->Merge(f);
  return pods;
}

void LoadDriver::RemovePods(const std::vector<Pod>& pods, Figures* figures) {
  std::vector<Figures> per_client(clients_.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < clients_.size(); ++k) {
    threads.emplace_back([&, k] {
      for (const Pod& pod : pods)
        if (static_cast<size_t>(pod.client) == k) clients_[k]->Remove(pod, &per_client[k]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Figures& f : per_client) figures->Merge(f);
}

void LoadDriver::Poll(const std::vector<Pod>& pods, Figures* figures) { clients_.front()->Poll(pods, figures); }

absl::StatusOr<Leftovers> CountLeftovers(const LeftoverPlaces& places) {
  auto docker = dockerclient::DockerClientImpl::Create(places.docker_endpoint);
  if (!docker.ok()) return docker.status();
  dockerclient::ListContainersOptions list;
  list.all = true;
  list.label_filter[shim::kPodNamespaceLabel] = places.pod_namespace;
  list.label_keys = {shim::kContainerTypeLabel};
  auto containers = (*docker)->ListContainers(common::Context::WithTimeout(absl::Seconds(60)), list);
  if (!containers.ok()) return containers.status();
  Leftovers left;
  left.containers = static_cast<int>(containers->size());
  // host-local keeps one file per reserved IP, named by the address, beside "lock"
  // and "last_reserved_ip.<range>".
  left.ip_allocations = CountFiles(places.ipam_dir, [](const fs::path& p) {
    const std::string name = p.filename().string();
    return name != "lock" && !absl::StartsWith(name, "last_reserved_ip");
  });
  left.checkpoints = CountFiles(places.root_directory + "/sandbox", [](const fs::path&) { return true; });
  left.creation_markers = CountFiles(places.root_directory + "/creating", [](const fs::path&) { return true; });
  left.cni_cache_files = CountFiles(places.cni_cache_dir, [](const fs::path&) { return true; });
  return left;
}

absl::StatusOr<LoadRun> PrepareLoadRun(const std::string& binary, const std::string& dir,
                                       const std::string& pod_namespace, const std::string& bridge, int clients) {
  LoadRun run;
  run.places = {testenv::DockerEndpoint(), pod_namespace, dir + "/ipam", dir + "/root", dir + "/cache"};
  const std::string conf_dir = dir + "/net.d";
  std::error_code ec;
  fs::create_directories(conf_dir, ec);
  const std::string path = absl::StrCat(conf_dir, "/10-", bridge, ".conflist");
  std::ofstream out(path);
  out << absl::StrCat(R"({"cniVersion": "1.0.0", "name": ")", bridge, R"(", "plugins": [
  {"type": "bridge", "bridge": ")", bridge, R"(", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.98.0.0/16"}]], "dataDir": ")", run.places.ipam_dir, R"("}},
  {"type": "loopback"}]})");
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));

  run.launch.binary = binary;
  run.launch.socket_path = dir + "/ds.sock";
  run.launch.output_dir = dir;
  run.launch.args = {"--container-runtime-endpoint", "unix://" + run.launch.socket_path, "--docker-endpoint",
                     run.places.docker_endpoint, "--network-plugin", "cni", "--cni-bin-dir", testenv::CniBinDir(),
                     "--cni-conf-dir", conf_dir, "--cni-cache-dir", run.places.cni_cache_dir, "--root-directory",
                     run.places.root_directory, "--pod-infra-container-image", testenv::PauseImage()};
  run.options.socket_path = run.launch.socket_path;
  run.options.clients = clients;
  run.options.pod_namespace = pod_namespace;
  run.options.container_image = testenv::BusyboxImage();
  run.options.log_directory = dir + "/logs";
  return run;
}

}  // namespace testsupport

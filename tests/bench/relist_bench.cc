// The kubelet's relist (ListPodSandbox + ListContainers) served from the container
// view vs from Docker's list, side by side, through the real dockershim binary over
// gRPC, with N pods (pause + one busybox container each) on a real engine:
//   - p50/p99 of each call over DSBENCH_SAMPLES calls (target: p50 ≤ 1 ms from memory),
//     and of PodSandboxStatus and ContainerStatus, asked of each pod and container in turn
//     (the kubelet asks them of what changed; from memory once each has been read);
//   - dockerd's CPU (utime+stime of /proc/<dockerd pid>/stat) over DSBENCH_SECONDS of a
//     kubelet-like loop (both calls once a second), in each mode, and over as long with
//     no shim at all (what the engine spends anyway; other users of the engine show
//     there). Target: ≥ 90% less with relists from memory.
// The pods are created once through the shim (host network), then the shim
// is restarted with --relist-from-memory=true and =false on the same root directory.
// Every container named *_dsrelist-bench_* is removed at start and at the end.
//   DOCKERSHIM_TEST_DOCKER=unix:///... relist_bench
//   DSBENCH_PODS=100 DSBENCH_SAMPLES=1000 DSBENCH_SECONDS=30
//   DSBENCH_DOCKERSHIM=<binary> (default: this build's) DSBENCH_DOCKERD_PID=<pid> (default: found by the socket)
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "api/cri.h"
#include "dockerclient/docker_client_impl.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"
#include "tests/support/socket_probe.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using Clock = std::chrono::steady_clock;

constexpr char kNamespace[] = "dsrelist-bench";

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
int EnvInt(const char* name, int fallback) { return std::atoi(Env(name, std::to_string(fallback)).c_str()); }

// utime + stime of `pid`, in clock ticks; -1 when unreadable.
long long CpuTicks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  long long utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {  // field 3 is the state
    if (i == 14) utime = std::atoll(f.c_str());
    if (i == 15) {
      stime = std::atoll(f.c_str());
      return utime + stime;
    }
  }
  return -1;
}
double TicksToMs(long long ticks) { return 1000.0 * static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK)); }

// The process listening on the unix socket `path`: its inode in /proc/net/unix, then
// the process holding that socket.
int ListenerOf(const std::string& path) {
  std::ifstream unix_sockets("/proc/net/unix");
  std::string line, inode;
  while (std::getline(unix_sockets, line)) {
    std::istringstream f(line);
    std::vector<std::string> cols((std::istream_iterator<std::string>(f)), std::istream_iterator<std::string>());
    if (cols.size() >= 8 && cols[7] == path && cols[5] == "01") inode = cols[6];  // state 01: listening
  }
  if (inode.empty()) return -1;
  const std::string target = "socket:[" + inode + "]";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec)) {
      if (fs::read_symlink(fd.path(), ec) == target) return std::atoi(pid.c_str());
    }
  }
  return -1;
}

class Shim {
 public:
  Shim(const fs::path& dir, const std::string& binary, const std::string& docker, bool from_memory)
      : socket_((dir / "shim.sock").string()) {
    std::vector<std::string> args = {binary,
                                     "--container-runtime-endpoint", "unix://" + socket_,
                                     "--docker-endpoint", docker,
                                     "--network-plugin", "docker",
                                     "--root-directory", (dir / "root").string(),
                                     "--pod-infra-container-image", testenv::PauseImage(),
                                     absl::StrCat("--relist-from-memory=", from_memory ? "true" : "false")};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = (dir / (from_memory ? "shim-memory.log" : "shim-docker.log")).string();
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 500 && !testsupport::AcceptsConnections(socket_); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stub_ = v1::RuntimeService::NewStub(grpc::CreateChannel("unix://" + socket_, grpc::InsecureChannelCredentials()));
  }
  ~Shim() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }
  v1::RuntimeService::Stub& stub() { return *stub_; }

 private:
  std::string socket_;
  pid_t pid_ = -1;
  std::unique_ptr<v1::RuntimeService::Stub> stub_;
};

std::unique_ptr<grpc::ClientContext> Ctx() { return bench::RpcContext(std::chrono::seconds(60)); }

// A pod with one running busybox container; "" or why not.
std::string RunPod(v1::RuntimeService::Stub& stub, int i) {
  v1::PodSandboxConfig pod;
  pod.mutable_metadata()->set_name(absl::StrCat("p", i));
  pod.mutable_metadata()->set_namespace_(kNamespace);
  pod.mutable_metadata()->set_uid(absl::StrCat("relist-bench-", i));
  // Host network: the relist, not the bridge, is measured.
  pod.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
  v1::RunPodSandboxRequest run;
  *run.mutable_config() = pod;
  v1::RunPodSandboxResponse ran;
  if (grpc::Status s = stub.RunPodSandbox(Ctx().get(), run, &ran); !s.ok()) return "RunPodSandbox: " + s.error_message();
  v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(ran.pod_sandbox_id());
  *create.mutable_sandbox_config() = pod;
  create.mutable_config()->mutable_metadata()->set_name("app");
  create.mutable_config()->mutable_image()->set_image(testenv::BusyboxImage());
  for (const char* part : {"sleep", "3600"}) create.mutable_config()->add_command(part);
  create.mutable_config()->mutable_linux();
  v1::CreateContainerResponse created;
  if (grpc::Status s = stub.CreateContainer(Ctx().get(), create, &created); !s.ok())
    return "CreateContainer: " + s.error_message();
  v1::StartContainerRequest start;
  start.set_container_id(created.container_id());
  v1::StartContainerResponse started;
  if (grpc::Status s = stub.StartContainer(Ctx().get(), start, &started); !s.ok())
    return "StartContainer: " + s.error_message();
  return "";
}

// One relist; the number of pods and containers listed, or -1.
std::pair<int, int> Relist(v1::RuntimeService::Stub& stub, double* pods_us = nullptr, double* ctrs_us = nullptr) {
  v1::ListPodSandboxResponse pods;
  auto t0 = Clock::now();
  grpc::Status a = stub.ListPodSandbox(Ctx().get(), v1::ListPodSandboxRequest(), &pods);
  auto t1 = Clock::now();
  v1::ListContainersResponse ctrs;
  grpc::Status b = stub.ListContainers(Ctx().get(), v1::ListContainersRequest(), &ctrs);
  auto t2 = Clock::now();
  if (pods_us) *pods_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  if (ctrs_us) *ctrs_us = std::chrono::duration<double, std::micro>(t2 - t1).count();
  return {a.ok() ? pods.items_size() : -1, b.ok() ? ctrs.containers_size() : -1};
}

// The IDs of every pod and container listed.
std::pair<std::vector<std::string>, std::vector<std::string>> ListedIds(v1::RuntimeService::Stub& stub) {
  std::pair<std::vector<std::string>, std::vector<std::string>> ids;
  v1::ListPodSandboxResponse pods;
  if (stub.ListPodSandbox(Ctx().get(), v1::ListPodSandboxRequest(), &pods).ok())
    for (const auto& p : pods.items()) ids.first.push_back(p.id());
  v1::ListContainersResponse ctrs;
  if (stub.ListContainers(Ctx().get(), v1::ListContainersRequest(), &ctrs).ok())
    for (const auto& c : ctrs.containers()) ids.second.push_back(c.id());
  return ids;
}

// The time of one PodSandboxStatus and one ContainerStatus, in microseconds (-1: failed).
std::pair<double, double> Statuses(v1::RuntimeService::Stub& stub, const std::string& pod, const std::string& ctr) {
  v1::PodSandboxStatusRequest pod_req;
  pod_req.set_pod_sandbox_id(pod);
  v1::PodSandboxStatusResponse pod_resp;
  auto t0 = Clock::now();
  grpc::Status a = stub.PodSandboxStatus(Ctx().get(), pod_req, &pod_resp);
  auto t1 = Clock::now();
  v1::ContainerStatusRequest ctr_req;
  ctr_req.set_container_id(ctr);
  v1::ContainerStatusResponse ctr_resp;
  grpc::Status b = stub.ContainerStatus(Ctx().get(), ctr_req, &ctr_resp);
  auto t2 = Clock::now();
  return {a.ok() ? std::chrono::duration<double, std::micro>(t1 - t0).count() : -1,
          b.ok() ? std::chrono::duration<double, std::micro>(t2 - t1).count() : -1};
}

// dockerd's CPU over `seconds` of one relist per second (none when `shim` is null), in ms.
double DockerdCpuMs(int dockerd, Shim* shim, int seconds, double* shim_ms) {
  const long long d0 = CpuTicks(dockerd), s0 = shim ? CpuTicks(shim->pid()) : 0;
  const auto start = Clock::now();
  for (int i = 0; i < seconds; ++i) {
    if (shim) Relist(shim->stub());
    std::this_thread::sleep_until(start + std::chrono::seconds(i + 1));
  }
  if (shim_ms) *shim_ms = shim ? TicksToMs(CpuTicks(shim->pid()) - s0) : 0;
  return TicksToMs(CpuTicks(dockerd) - d0);
}

}  // namespace

int main() {
  const std::string docker_endpoint = testenv::DockerEndpoint();
  const std::string binary = Env("DSBENCH_DOCKERSHIM", DOCKERSHIM_BINARY);
  const int pods = EnvInt("DSBENCH_PODS", 100), samples = EnvInt("DSBENCH_SAMPLES", 1000),
            seconds = EnvInt("DSBENCH_SECONDS", 30);
  auto docker = dockerclient::DockerClientImpl::Create(docker_endpoint);
  if (!docker.ok()) {
    std::fprintf(stderr, "relist_bench: %s\n", docker.status().ToString().c_str());
    return 1;
  }
  const int dockerd = EnvInt("DSBENCH_DOCKERD_PID", ListenerOf(std::string(absl::StripPrefix(docker_endpoint, "unix://"))));
  if (dockerd <= 0 || CpuTicks(dockerd) < 0) {
    std::fprintf(stderr, "relist_bench: cannot find dockerd's pid for %s; set DSBENCH_DOCKERD_PID\n",
                 docker_endpoint.c_str());
    return 1;
  }
  auto ours = [](std::string_view name) {
    return name.find(std::string("_") + kNamespace + "_") != std::string_view::npos;
  };
  bench::RemoveContainersNamed(**docker, ours, "relist_bench");
  char tmpl[] = "/tmp/relist_bench.XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  std::printf("relist_bench: %d pods on %s (dockerd pid %d), shim %s, state in %s\n", pods, docker_endpoint.c_str(),
              dockerd, binary.c_str(), dir.c_str());
  std::fflush(stdout);

  int status = 0;
  {
    Shim shim(dir, binary, docker_endpoint, true);
    std::atomic<int> next{0}, failed{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w) {
      workers.emplace_back([&] {
        for (int i; (i = next++) < pods;) {
          if (std::string err = RunPod(shim.stub(), i); !err.empty()) {
            std::fprintf(stderr, "relist_bench: pod %d: %s\n", i, err.c_str());
            ++failed;
          }
        }
      });
    }
    for (auto& w : workers) w.join();
    if (failed > 0) status = 1;
  }

  struct Figures {
    std::vector<double> pods_us, ctrs_us, pod_status_us, ctr_status_us;
    double dockerd_ms = 0, shim_ms = 0;
    std::pair<int, int> listed;
  };
  Figures modes[2];
  double idle_ms = 0;
  for (int m = 0; m < 2 && status == 0; ++m) {
    const bool from_memory = m == 0;
    Shim shim(dir, binary, docker_endpoint, from_memory);
    // Until the view has listed (a relist answers all pods either way).
    std::this_thread::sleep_for(std::chrono::seconds(1));
    Figures& f = modes[m];
    f.listed = Relist(shim.stub());
    const auto [pod_ids, ctr_ids] = ListedIds(shim.stub());
    for (int i = 0; i < samples; ++i) {
      double a = 0, b = 0;
      Relist(shim.stub(), &a, &b);
      f.pods_us.push_back(a);
      f.ctrs_us.push_back(b);
      if (pod_ids.empty() || ctr_ids.empty()) continue;
      auto [pod_us, ctr_us] = Statuses(shim.stub(), pod_ids[i % pod_ids.size()], ctr_ids[i % ctr_ids.size()]);
      if (pod_us < 0 || ctr_us < 0) {
        std::fprintf(stderr, "relist_bench: a status call failed\n");
        status = 1;
      }
      f.pod_status_us.push_back(pod_us);
      f.ctr_status_us.push_back(ctr_us);
    }
    f.dockerd_ms = DockerdCpuMs(dockerd, &shim, seconds, &f.shim_ms);
    if (m == 0) idle_ms = DockerdCpuMs(dockerd, nullptr, seconds, nullptr);  // the shim idles meanwhile
  }

  if (status == 0) {
    std::printf("\nRelist latency over gRPC, %d calls each (microseconds)\n", samples);
    std::printf("  %-44s %8s %8s %8s %8s %8s\n", "call", "listed", "mean", "p50", "p99", "max");
    const char* names[2] = {"from memory", "from Docker"};
    for (int m = 0; m < 2; ++m) {
      const Figures& f = modes[m];
      std::printf("  %-44s %8d %8.0f %8.0f %8.0f %8.0f\n", absl::StrCat("ListPodSandbox ", names[m]).c_str(),
                  f.listed.first, bench::Mean(f.pods_us), bench::Percentile(f.pods_us, 50),
                  bench::Percentile(f.pods_us, 99), bench::Percentile(f.pods_us, 100));
      std::printf("  %-44s %8d %8.0f %8.0f %8.0f %8.0f\n", absl::StrCat("ListContainers ", names[m]).c_str(),
                  f.listed.second, bench::Mean(f.ctrs_us), bench::Percentile(f.ctrs_us, 50),
                  bench::Percentile(f.ctrs_us, 99), bench::Percentile(f.ctrs_us, 100));
      std::printf("  %-44s %8s %8.0f %8.0f %8.0f %8.0f\n", absl::StrCat("PodSandboxStatus ", names[m]).c_str(), "-",
                  bench::Mean(f.pod_status_us), bench::Percentile(f.pod_status_us, 50),
                  bench::Percentile(f.pod_status_us, 99), bench::Percentile(f.pod_status_us, 100));
      std::printf("  %-44s %8s %8.0f %8.0f %8.0f %8.0f\n", absl::StrCat("ContainerStatus ", names[m]).c_str(), "-",
                  bench::Mean(f.ctr_status_us), bench::Percentile(f.ctr_status_us, 50),
                  bench::Percentile(f.ctr_status_us, 99), bench::Percentile(f.ctr_status_us, 100));
    }
    std::printf("\nCPU over %d s of one relist per second (ms of utime+stime)\n", seconds);
    std::printf("  %-44s %10s %10s\n", "mode", "dockerd", "dockershim");
    for (int m = 0; m < 2; ++m)
      std::printf("  %-44s %10.0f %10.0f\n", names[m], modes[m].dockerd_ms, modes[m].shim_ms);
    std::printf("  %-44s %10.0f %10s\n", "no relists (the engine's own load)", idle_ms, "-");
    const double memory = modes[0].dockerd_ms - idle_ms, from_docker = modes[1].dockerd_ms - idle_ms;
    std::printf("  dockerd CPU due to relists: %.0f ms from memory vs %.0f ms from Docker (%.1f%% less; target >= 90%%)\n",
                memory, from_docker, from_docker > 0 ? 100.0 * (1.0 - memory / from_docker) : 0.0);
    std::printf("  p50 targets (<= 1000 us from memory): ListPodSandbox %s, ListContainers %s\n",
                bench::Percentile(modes[0].pods_us, 50) <= 1000 ? "ok" : "OVER",
                bench::Percentile(modes[0].ctrs_us, 50) <= 1000 ? "ok" : "OVER");
  }
  bench::RemoveContainersNamed(**docker, ours, "relist_bench");
  std::error_code ec;
  fs::remove_all(dir, ec);
  return status;
}

// A full node through the CRI, as a kubelet drives it: DSBENCH_PODS pods (default 100)
// of one busybox container each, started at once (one thread per pod, as the kubelet's
// pod workers), while the kubelet's loops run against the same runtime:
//   - relist every 1 s: ListPodSandbox, ListContainers, and for each pod whose
//     containers changed PodSandboxStatus + ContainerStatus (the generic PLEG);
//   - Status every 5 s, Version every 10 s (runtime and node status);
//   - stats every 10 s: ListPodSandbox, ListContainers, ListPodSandboxStats,
//     ListContainerStats, ImageFsInfo (the summary API); ListImages every 30 s;
//   - an exec liveness probe (ExecSync `true`) per pod every DSBENCH_PROBE_PERIOD
//     seconds (default 10; 0: none), spread over the period.
// Then DSBENCH_STEADY_SECONDS (default 120) of steady state with those loops, and all
// pods removed at once (StopContainer, StopPodSandbox, RemoveContainer,
// RemovePodSandbox per pod). A step that fails is retried a second later, as the
// kubelet's pod workers retry a sync.
//
// Printed per runtime: the time to all running (as the relist sees it), the calls
// refused (RESOURCE_EXHAUSTED) and failed by RPC and code, the steady CPU (mcores, and
// per pod) of the runtime (own, and its children: CNI plugins), dockerd, and containerd
// with every runc shim on the host, their RSS, and the time to all removed.
//
// Runtimes: by default the shim binary, started by the bench in a network namespace of
// its own with a CNI bridge (as load_bench). DSBENCH_ENDPOINTS="name=unix:///a.sock,..."
// takes runtimes started by hand instead (say the shim and cri-dockerd on the same
// engine and CNI chain), one after the other; each one's process is the one listening on
// its socket (DSBENCH_METRICS=name=http://host:port/metrics adds a shim's Docker requests
// to the figures; the bench's own shim gets them). dockerd is the one listening on the
// test environment's Docker socket.
// Needs root, the engine and the test images (scripts/test-env.sh). Prints figures; the
// exit code is non-zero only when the bench cannot run.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "api/cri.h"
#include "dockerclient/docker_client_impl.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"
#include "tests/support/footprint.h"
#include "tests/support/load_driver.h"
#include "tests/support/shim_process.h"

namespace {

namespace v1 = runtime::v1;
namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr char kNamespace[] = "dsdensity";
constexpr char kBenchLabel[] = "dsdensity";
constexpr char kAppName[] = "app";

// ---------------------------------------------------------------------------
// Processes: CPU ticks and who listens on a unix socket.

struct Ticks {
  long long own = 0, children = 0;  // utime+stime, cutime+cstime
};

std::optional<Ticks> ReadTicks(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::vector<std::string> f = absl::StrSplit(stat.substr(paren + 2), ' ');
  // After the name: state is field 3; utime 14, stime 15, cutime 16, cstime 17.
  if (f.size() < 15) return std::nullopt;
  long long v[4];
  for (int i = 0; i < 4; ++i)
    if (!absl::SimpleAtoi(f[11 + i], &v[i])) return std::nullopt;
  return Ticks{v[0] + v[1], v[2] + v[3]};
}

std::string Comm(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/comm"));
  std::string comm;
  std::getline(in, comm);
  return comm;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    pid_t pid;
    if (absl::SimpleAtoi(e->d_name, &pid)) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

// containerd and every containerd-shim* process on the host.
std::vector<pid_t> ContainerdPids() {
  std::vector<pid_t> out;
  for (pid_t pid : AllPids()) {
    const std::string comm = Comm(pid);
    if (comm == "containerd" || absl::StartsWith(comm, "containerd-shim")) out.push_back(pid);
  }
  return out;
}

// The process listening on the unix socket at `path` (in this network namespace).
std::optional<pid_t> ListenerOf(const std::string& path) {
  std::ifstream in("/proc/net/unix");
  std::string line;
  std::set<std::string> inodes;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // Num RefCount Protocol Flags Type St Inode Path; St 01 = listening. gRPC binds
    // "unix:///run/x.sock" as "///run/x.sock": the same file.
    if (f.size() >= 8 && f[5] == "01" && fs::path(f[7]).lexically_normal() == fs::path(path).lexically_normal())
      inodes.insert(absl::StrCat("socket:[", f[6], "]"));
  }
  if (inodes.empty()) return std::nullopt;
  for (pid_t pid : AllPids()) {
    std::error_code ec;
    for (const auto& fd : fs::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), ec)) {
      std::error_code lec;
      if (inodes.count(fs::read_symlink(fd.path(), lec).string())) return pid;
    }
  }
  return std::nullopt;
}

// The runtime serving `path`: its listener, or else the one process whose command line
// names the path (cri-dockerd binds a temporary name and renames it into place, so
// /proc/net/unix does not know the path).
std::optional<pid_t> RuntimeServing(const std::string& path) {
  if (std::optional<pid_t> pid = ListenerOf(path)) return pid;
  std::optional<pid_t> found;
  for (pid_t pid : AllPids()) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"));
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (pid == ::getpid() || !absl::StrContains(cmdline, path)) continue;
    if (found) return std::nullopt;  // ambiguous
    found = pid;
  }
  return found;
}

// CPU of a set of processes over a window, in millicores.
class CpuWindow {
 public:
  explicit CpuWindow(std::vector<pid_t> pids) : pids_(std::move(pids)), t0_(bench::Clock::now()) {
    for (pid_t pid : pids_)
      if (auto t = ReadTicks(pid)) start_[pid] = *t;
  }
  // own and children mcores since the start, over the processes alive at both ends.
  std::pair<double, double> Mcores() const {
    const double s = std::chrono::duration<double>(bench::Clock::now() - t0_).count();
    const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    double own = 0, children = 0;
    for (const auto& [pid, t0] : start_) {
      auto t1 = ReadTicks(pid);
      if (!t1) continue;
      own += static_cast<double>(t1->own - t0.own);
      children += static_cast<double>(t1->children - t0.children);
    }
    return {own / hz / s * 1000, children / hz / s * 1000};
  }

 private:
  std::vector<pid_t> pids_;
  bench::Clock::time_point t0_;
  std::map<pid_t, Ticks> start_;
};

double RssMb(pid_t pid) {
  auto f = testsupport::ReadFootprint(pid);
  return f.ok() ? f->rss_kb / 1024.0 : 0;
}

// The shim's Docker requests so far by "METHOD endpoint status", from its /metrics at
// `url` (through its network namespace when `netns_pid` is set); empty when unreadable.
std::map<std::string, double> DockerRequests(const std::string& url, pid_t netns_pid) {
  std::map<std::string, double> counts;
  if (url.empty()) return counts;
  const std::string cmd = absl::StrCat(netns_pid > 0 ? absl::StrCat("nsenter --net=/proc/", netns_pid, "/ns/net ") : "",
                                       "curl -sf ", url);
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return counts;
  constexpr absl::string_view kFamily = "dockershim_docker_request_duration_seconds_count{";
  char line[1024];
  while (std::fgets(line, sizeof line, f)) {
    absl::string_view l(line);
    if (!absl::ConsumePrefix(&l, kFamily)) continue;
    const size_t close = l.find("} ");
    if (close == absl::string_view::npos) continue;
    std::map<std::string, std::string> labels;
    for (absl::string_view kv : absl::StrSplit(l.substr(0, close), "\",", absl::SkipEmpty())) {
      std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(kv, absl::MaxSplits("=\"", 1));
      labels[std::string(p.first)] = std::string(absl::StripSuffix(p.second, "\""));
    }
    double n = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(l.substr(close + 2)), &n))
      counts[absl::StrCat(labels["method"], " ", labels["endpoint"], " ", labels["status"])] += n;
  }
  ::pclose(f);
  return counts;
}

// ---------------------------------------------------------------------------
// The runtime under test and its calls.

struct CallFigures {
  int calls = 0;
  std::map<grpc::StatusCode, int> failed;
  std::string first_error;
};

struct Runtime {
  std::string name, endpoint;
  pid_t pid = 0;
  std::string metrics_url;  // the shim's /metrics, when known
  pid_t metrics_netns_pid = 0;
  std::unique_ptr<v1::RuntimeService::Stub> rt;
  std::unique_ptr<v1::ImageService::Stub> img;
  std::mutex mu;
  std::map<std::string, CallFigures> calls;  // by RPC

  template <typename Stub, typename Req, typename Resp>
  grpc::Status Call(Stub& stub, const char* rpc, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp, seconds timeout = seconds(60)) {
    grpc::Status s = (stub.*method)(bench::RpcContext(timeout).get(), req, resp);
    std::lock_guard lock(mu);
    CallFigures& f = calls[rpc];
    ++f.calls;
    if (!s.ok()) {
      ++f.failed[s.error_code()];
      if (f.first_error.empty()) f.first_error = s.error_message();
    }
    return s;
  }
  std::map<std::string, CallFigures> TakeCalls() {
    std::lock_guard lock(mu);
    return std::exchange(calls, {});
  }
};

std::string image;
std::string log_root;

v1::PodSandboxConfig PodConfig(const std::string& name) {
  const std::string uid = absl::StrCat(name, "-", ::getpid());
  v1::PodSandboxConfig pod = bench::KubeletLikePodConfig(name, kNamespace, uid, kBenchLabel);
  pod.set_log_directory(absl::StrCat(log_root, "/", kNamespace, "_", name, "_", uid));
  (*pod.mutable_annotations())["kubernetes.io/config.source"] = "api";
  return pod;
}

// Ends on SIGTERM at once (`sleep` alone as PID 1 would wait out the grace period).
v1::ContainerConfig AppConfig() {
  v1::ContainerConfig c = bench::SleeperContainerConfig(kAppName, image, kBenchLabel);
  c.clear_command();
  c.clear_args();
  for (const char* arg : {"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}) c.add_command(arg);
  return c;
}

// Repeats `step` (true when done) once a second until it is done or `stop` is set.
void Retry(const std::atomic<bool>& stop, const std::function<bool()>& step) {
  while (!step() && !stop) std::this_thread::sleep_for(seconds(1));
}

struct Pod {
  std::string name, sandbox, container;
};

// A pod worker's start of one pod.
void StartPod(Runtime& r, Pod& pod, const std::atomic<bool>& stop) {
  const v1::PodSandboxConfig config = PodConfig(pod.name);
  std::error_code ec;
  fs::create_directories(absl::StrCat(config.log_directory(), "/", kAppName), ec);
  Retry(stop, [&] {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = config;
    v1::RunPodSandboxResponse resp;
    if (!r.Call(*r.rt, "RunPodSandbox", &v1::RuntimeService::Stub::RunPodSandbox, req, &resp).ok()) return false;
    pod.sandbox = resp.pod_sandbox_id();
    return true;
  });
  Retry(stop, [&] {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(pod.sandbox);
    v1::PodSandboxStatusResponse resp;
    return r.Call(*r.rt, "PodSandboxStatus", &v1::RuntimeService::Stub::PodSandboxStatus, req, &resp).ok();
  });
  Retry(stop, [&] {
    v1::ImageStatusRequest req;
    req.mutable_image()->set_image(image);
    v1::ImageStatusResponse resp;
    return r.Call(*r.img, "ImageStatus", &v1::ImageService::Stub::ImageStatus, req, &resp).ok();
  });
  Retry(stop, [&] {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod.sandbox);
    *req.mutable_sandbox_config() = config;
    *req.mutable_config() = AppConfig();
    v1::CreateContainerResponse resp;
    if (!r.Call(*r.rt, "CreateContainer", &v1::RuntimeService::Stub::CreateContainer, req, &resp).ok()) return false;
    pod.container = resp.container_id();
    return true;
  });
  Retry(stop, [&] {
    v1::StartContainerRequest req;
    req.set_container_id(pod.container);
    v1::StartContainerResponse resp;
    return r.Call(*r.rt, "StartContainer", &v1::RuntimeService::Stub::StartContainer, req, &resp).ok();
  });
}

// A pod worker's kill and the garbage collector's removal of one pod.
void RemovePod(Runtime& r, const Pod& pod, const std::atomic<bool>& stop) {
  if (!pod.container.empty()) {
    Retry(stop, [&] {
      v1::StopContainerRequest req;
      req.set_container_id(pod.container);
      req.set_timeout(10);
      v1::StopContainerResponse resp;
      return r.Call(*r.rt, "StopContainer", &v1::RuntimeService::Stub::StopContainer, req, &resp).ok();
    });
  }
  Retry(stop, [&] {
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(pod.sandbox);
    v1::StopPodSandboxResponse resp;
    return r.Call(*r.rt, "StopPodSandbox", &v1::RuntimeService::Stub::StopPodSandbox, req, &resp).ok();
  });
  if (!pod.container.empty()) {
    Retry(stop, [&] {
      v1::RemoveContainerRequest req;
      req.set_container_id(pod.container);
      v1::RemoveContainerResponse resp;
      return r.Call(*r.rt, "RemoveContainer", &v1::RuntimeService::Stub::RemoveContainer, req, &resp).ok();
    });
  }
  Retry(stop, [&] {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(pod.sandbox);
    v1::RemovePodSandboxResponse resp;
    return r.Call(*r.rt, "RemovePodSandbox", &v1::RuntimeService::Stub::RemovePodSandbox, req, &resp).ok();
  });
}

// The kubelet's periodic loops, on their own threads until destroyed. running() is what
// the last relist saw: the bench's containers in state RUNNING, and its pods.
class KubeletLoops {
 public:
  KubeletLoops(Runtime& r, int probe_period_s, const std::vector<Pod>& pods) : r_(r), pods_(pods) {
    threads_.emplace_back([this] { Every(seconds(1), [this] { Relist(); }); });
    threads_.emplace_back([this] { Every(seconds(5), [this] { RuntimeStatus(); }); });
    threads_.emplace_back([this] { Every(seconds(10), [this] { NodeStatus(); }); });
    threads_.emplace_back([this] { Every(seconds(10), [this] { Stats(); }); });
    threads_.emplace_back([this] { Every(seconds(30), [this] { Images(); }); });
    if (probe_period_s > 0) {
      constexpr int kProbers = 8;
      for (int k = 0; k < kProbers; ++k)
        threads_.emplace_back([this, k, probe_period_s] { Probe(k, kProbers, seconds(probe_period_s)); });
    }
  }
  ~KubeletLoops() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  int running() const { return running_; }
  int pods_listed() const { return pods_listed_; }
  // Once every pod worker is done (the pods' IDs are written), as the kubelet's probes
  // start with the containers; stopped before the pods are killed, as the kubelet's.
  void StartProbing() { probing_.store(true, std::memory_order_release); }
  void StopProbing() { probing_.store(false, std::memory_order_release); }

 private:
  void Every(std::chrono::milliseconds period, const std::function<void()>& fn) {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      fn();
      lock.lock();
      cv_.wait_for(lock, period, [this] { return stop_; });
    }
  }

  v1::ListContainersResponse Containers() {
    v1::ListContainersRequest req;
    (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
    v1::ListContainersResponse resp;
    r_.Call(*r_.rt, "ListContainers", &v1::RuntimeService::Stub::ListContainers, req, &resp);
    return resp;
  }
  v1::ListPodSandboxResponse Sandboxes() {
    v1::ListPodSandboxRequest req;
    v1::ListPodSandboxResponse resp;
    r_.Call(*r_.rt, "ListPodSandbox", &v1::RuntimeService::Stub::ListPodSandbox, req, &resp);
    return resp;
  }

  void Relist() {
    v1::ListPodSandboxResponse sandboxes = Sandboxes();
    v1::ListContainersResponse containers = Containers();
    std::map<std::string, std::string> state;  // container ID -> state, this relist
    std::set<std::string> changed_pods;
    int running = 0;
    for (const v1::Container& c : containers.containers()) {
      state[c.id()] = v1::ContainerState_Name(c.state());
      if (c.state() == v1::CONTAINER_RUNNING) ++running;
      auto it = last_state_.find(c.id());
      if (it == last_state_.end() || it->second != state[c.id()]) changed_pods.insert(c.pod_sandbox_id());
    }
    int pods = 0;
    for (const v1::PodSandbox& s : sandboxes.items())
      if (s.labels().count(kBenchLabel)) ++pods;
    last_state_ = std::move(state);
    running_ = running;
    pods_listed_ = pods;
    for (const std::string& id : changed_pods) {
      v1::PodSandboxStatusRequest req;
      req.set_pod_sandbox_id(id);
      v1::PodSandboxStatusResponse resp;
      r_.Call(*r_.rt, "PodSandboxStatus", &v1::RuntimeService::Stub::PodSandboxStatus, req, &resp);
      for (const v1::Container& c : containers.containers()) {
        if (c.pod_sandbox_id() != id) continue;
        v1::ContainerStatusRequest creq;
        creq.set_container_id(c.id());
        v1::ContainerStatusResponse cresp;
        r_.Call(*r_.rt, "ContainerStatus", &v1::RuntimeService::Stub::ContainerStatus, creq, &cresp);
      }
    }
  }
  void RuntimeStatus() {
    v1::StatusRequest req;
    v1::StatusResponse resp;
    r_.Call(*r_.rt, "Status", &v1::RuntimeService::Stub::Status, req, &resp);
  }
  void NodeStatus() {
    v1::VersionRequest req;
    v1::VersionResponse resp;
    r_.Call(*r_.rt, "Version", &v1::RuntimeService::Stub::Version, req, &resp);
  }
  void Stats() {
    Sandboxes();
    Containers();
    {
      v1::ListPodSandboxStatsRequest req;
      v1::ListPodSandboxStatsResponse resp;
      r_.Call(*r_.rt, "ListPodSandboxStats", &v1::RuntimeService::Stub::ListPodSandboxStats, req, &resp);
    }
    {
      v1::ListContainerStatsRequest req;
      v1::ListContainerStatsResponse resp;
      r_.Call(*r_.rt, "ListContainerStats", &v1::RuntimeService::Stub::ListContainerStats, req, &resp);
    }
    v1::ImageFsInfoRequest req;
    v1::ImageFsInfoResponse resp;
    r_.Call(*r_.img, "ImageFsInfo", &v1::ImageService::Stub::ImageFsInfo, req, &resp);
  }
  void Images() {
    v1::ListImagesRequest req;
    v1::ListImagesResponse resp;
    r_.Call(*r_.img, "ListImages", &v1::ImageService::Stub::ListImages, req, &resp);
  }
  // Prober k of n: pods k, k+n, ..., each once per period, spread over it, from
  // StartProbing on.
  void Probe(int k, int n, std::chrono::milliseconds period) {
    std::vector<size_t> mine;
    for (size_t i = k; i < pods_.size(); i += n) mine.push_back(i);
    if (mine.empty()) return;
    size_t next = 0;
    Every(period / mine.size(), [&] {
      if (!probing_.load(std::memory_order_acquire)) return;
      const Pod& pod = pods_[mine[next]];
      next = (next + 1) % mine.size();
      v1::ExecSyncRequest req;
      req.set_container_id(pod.container);
      req.add_cmd("true");
      req.set_timeout(1);
      v1::ExecSyncResponse resp;
      r_.Call(*r_.rt, "ExecSync", &v1::RuntimeService::Stub::ExecSync, req, &resp);
    });
  }

  Runtime& r_;
  const std::vector<Pod>& pods_;
  std::map<std::string, std::string> last_state_;  // relist thread only
  std::atomic<int> running_{0}, pods_listed_{0};
  std::atomic<bool> probing_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

struct Result {
  std::string name;
  double to_running_s = -1, to_removed_s = -1;
  double runtime_mc = 0, runtime_children_mc = 0, dockerd_mc = 0, containerd_mc = 0;
  double runtime_rss = 0, dockerd_rss = 0;
  int shims = 0;
  std::map<std::string, CallFigures> start_calls, steady_calls, remove_calls;
  std::map<std::string, double> steady_docker_requests;  // by "METHOD endpoint status"
};

int Refused(const std::map<std::string, CallFigures>& calls) {
  int n = 0;
  for (const auto& [rpc, f] : calls) {
    auto it = f.failed.find(grpc::StatusCode::RESOURCE_EXHAUSTED);
    if (it != f.failed.end()) n += it->second;
  }
  return n;
}

int Failed(const std::map<std::string, CallFigures>& calls) {
  int n = 0;
  for (const auto& [rpc, f] : calls)
    for (const auto& [code, k] : f.failed) n += k;
  return n;
}

void PrintCalls(const char* phase, const std::map<std::string, CallFigures>& calls, double seconds_long) {
  std::printf("  %s:\n", phase);
  for (const auto& [rpc, f] : calls) {
    std::string codes;
    for (const auto& [code, k] : f.failed) absl::StrAppend(&codes, " ", k, "x code ", static_cast<int>(code));
    std::printf("    %-22s %7d calls (%6.2f/s)%s%s\n", rpc.c_str(), f.calls, f.calls / seconds_long,
                codes.empty() ? "" : ", failed:", codes.c_str());
    if (!f.first_error.empty()) std::printf("      first error: %s\n", f.first_error.c_str());
  }
}

// Every pod of this bench that the runtime lists, removed (a killed run's leftovers).
void RemoveLeftovers(Runtime& r) {
  v1::ListPodSandboxRequest req;
  (*req.mutable_filter()->mutable_label_selector())[kBenchLabel] = "1";
  v1::ListPodSandboxResponse resp;
  if (!r.Call(*r.rt, "ListPodSandbox", &v1::RuntimeService::Stub::ListPodSandbox, req, &resp).ok()) return;
  std::atomic<bool> stop{false};
  for (const v1::PodSandbox& s : resp.items()) RemovePod(r, Pod{"", s.id(), ""}, stop);
  r.TakeCalls();
}

Result RunOne(Runtime& r, int n, int probe_period_s, int steady_s, pid_t dockerd) {
  Result res;
  res.name = r.name;
  RemoveLeftovers(r);
  std::vector<Pod> pods(n);
  for (int i = 0; i < n; ++i) pods[i].name = absl::StrCat("dens-", i);
  std::atomic<bool> give_up{false};

  const auto t0 = bench::Clock::now();
  auto loops = std::make_unique<KubeletLoops>(r, probe_period_s, pods);
  {
    std::vector<std::thread> workers;
    for (Pod& pod : pods) workers.emplace_back([&] { StartPod(r, pod, give_up); });
    for (auto& t : workers) t.join();
  }
  loops->StartProbing();
  while (loops->running() < n && bench::MsSince(t0) < 600'000) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  res.to_running_s = loops->running() >= n ? bench::MsSince(t0) / 1000 : -1;
  res.start_calls = r.TakeCalls();
  std::printf("%s: %d pods running after %.1f s\n", r.name.c_str(), loops->running(), res.to_running_s);
  std::fflush(stdout);

  std::this_thread::sleep_for(seconds(10));  // the start's after-work (events, first stats)
  r.TakeCalls();
  std::vector<pid_t> containerd = ContainerdPids();
  res.shims = static_cast<int>(containerd.size());
  const std::map<std::string, double> docker_before = DockerRequests(r.metrics_url, r.metrics_netns_pid);
  CpuWindow runtime_cpu({r.pid}), dockerd_cpu({dockerd}), containerd_cpu(containerd);
  std::this_thread::sleep_for(seconds(steady_s));
  for (const auto& [key, n] : DockerRequests(r.metrics_url, r.metrics_netns_pid)) {
    auto it = docker_before.find(key);
    const double delta = n - (it == docker_before.end() ? 0 : it->second);
    if (delta > 0) res.steady_docker_requests[key] = delta;
  }
  std::tie(res.runtime_mc, res.runtime_children_mc) = runtime_cpu.Mcores();
  res.dockerd_mc = dockerd_cpu.Mcores().first;
  auto [cd_own, cd_children] = containerd_cpu.Mcores();
  res.containerd_mc = cd_own + cd_children;
  res.runtime_rss = RssMb(r.pid);
  res.dockerd_rss = RssMb(dockerd);
  res.steady_calls = r.TakeCalls();

  loops->StopProbing();
  const auto t1 = bench::Clock::now();
  {
    std::vector<std::thread> workers;
    for (const Pod& pod : pods) workers.emplace_back([&] { RemovePod(r, pod, give_up); });
    for (auto& t : workers) t.join();
  }
  while (loops->pods_listed() > 0 && bench::MsSince(t1) < 600'000) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  res.to_removed_s = loops->pods_listed() == 0 ? bench::MsSince(t1) / 1000 : -1;
  loops.reset();
  res.remove_calls = r.TakeCalls();
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  const bool brief = argc > 1 && absl::StartsWith(argv[1], "--benchmark_min_time");  // scripts/test.sh BENCH=1
  const int n = brief ? 5 : bench::EnvInt("DSBENCH_PODS", 100);
  const int steady_s = brief ? 5 : bench::EnvInt("DSBENCH_STEADY_SECONDS", 120);
  const char* probe_env = std::getenv("DSBENCH_PROBE_PERIOD");
  const int probe_period_s = probe_env ? std::atoi(probe_env) : 10;
  image = std::getenv("DSBENCH_IMAGE") ? std::getenv("DSBENCH_IMAGE") : testenv::BusyboxImage();

  const std::string docker_socket(absl::StripPrefix(testenv::DockerEndpoint(), "unix://"));
  std::optional<pid_t> dockerd = ListenerOf(docker_socket);
  if (!dockerd) {
    std::fprintf(stderr, "density_bench: no process listens on %s\n", docker_socket.c_str());
    return 1;
  }
  std::string tmpl = "/var/tmp/dsdensity.XXXXXX";
  if (!::mkdtemp(tmpl.data())) return 1;
  const std::string dir = tmpl;
  log_root = dir + "/logs";

  std::vector<std::unique_ptr<Runtime>> runtimes;
  std::unique_ptr<testsupport::ShimProcess> own_shim;
  auto add = [&](const std::string& name, const std::string& endpoint, pid_t pid) {
    auto r = std::make_unique<Runtime>();
    r->name = name;
    r->endpoint = endpoint;
    r->pid = pid;
    auto channel = grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials());
    r->rt = v1::RuntimeService::NewStub(channel);
    r->img = v1::ImageService::NewStub(channel);
    runtimes.push_back(std::move(r));
  };
  if (const char* endpoints = std::getenv("DSBENCH_ENDPOINTS"); endpoints && *endpoints) {
    for (absl::string_view item : absl::StrSplit(endpoints, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      std::optional<pid_t> pid = RuntimeServing(std::string(absl::StripPrefix(kv.second, "unix://")));
      if (kv.second.empty() || !pid) {
        std::fprintf(stderr, "density_bench: %s: want name=unix:///path.sock with a process listening there\n",
                     std::string(item).c_str());
        return 2;
      }
      add(kv.first, kv.second, *pid);
    }
    // DSBENCH_METRICS=name=http://host:port/metrics: that runtime's Docker requests, read
    // in its network namespace (a runtime started in a private one, as the bench's own).
    if (const char* metrics = std::getenv("DSBENCH_METRICS"); metrics && *metrics) {
      std::pair<std::string, std::string> kv = absl::StrSplit(metrics, absl::MaxSplits('=', 1));
      for (auto& r : runtimes) {
        if (r->name != kv.first) continue;
        r->metrics_url = kv.second;
        r->metrics_netns_pid = r->pid;
      }
    }
  } else {
    auto run = testsupport::PrepareLoadRun(DOCKERSHIM_BINARY, dir, kNamespace, "dsdens0", 1);
    if (!run.ok()) {
      std::fprintf(stderr, "density_bench: %s\n", run.status().ToString().c_str());
      return 1;
    }
    constexpr char kMetrics[] = "127.0.0.1:19391";  // in the shim's own network namespace
    for (const char* arg : {"--log-level=warn", "--metrics-bind-addr"}) run->launch.args.push_back(arg);
    run->launch.args.push_back(kMetrics);
    auto shim = testsupport::ShimProcess::Start(run->launch);
    if (!shim.ok()) {
      std::fprintf(stderr, "density_bench: %s\n", shim.status().ToString().c_str());
      return 1;
    }
    own_shim = std::move(*shim);
    add("dockershim", "unix://" + run->launch.socket_path, own_shim->pid());
    runtimes.back()->metrics_url = absl::StrCat("http://", kMetrics, "/metrics");
    runtimes.back()->metrics_netns_pid = own_shim->pid();
  }

  std::printf("density_bench: %d pods, %d s steady, exec probe every %d s, dockerd pid %d on %s\n", n, steady_s,
              probe_period_s, *dockerd, docker_socket.c_str());
  std::vector<Result> results;
  for (auto& r : runtimes) {
    std::printf("\n==> %s (pid %d) at %s\n", r->name.c_str(), r->pid, r->endpoint.c_str());
    std::fflush(stdout);
    results.push_back(RunOne(*r, n, probe_period_s, steady_s, *dockerd));
  }

  std::printf("\nDensity: %d pods (mcores = thousandths of a CPU, averaged over %d s of steady state)\n", n, steady_s);
  std::printf("  %-40s", "");
  for (const Result& res : results) std::printf(" %14s", res.name.c_str());
  std::printf("\n");
  auto row = [&](const char* label, auto value, const char* fmt) {
    std::printf("  %-40s", label);
    for (const Result& res : results) std::printf(fmt, value(res));
    std::printf("\n");
  };
  row("all running (s)", [](const Result& r) { return r.to_running_s; }, " %14.1f");
  row("calls refused while starting", [](const Result& r) { return Refused(r.start_calls); }, " %14d");
  row("calls failed while starting", [](const Result& r) { return Failed(r.start_calls); }, " %14d");
  row("calls failed in steady state", [](const Result& r) { return Failed(r.steady_calls); }, " %14d");
  row("runtime CPU, own (mcores)", [](const Result& r) { return r.runtime_mc; }, " %14.1f");
  row("runtime CPU, children (mcores)", [](const Result& r) { return r.runtime_children_mc; }, " %14.1f");
  row("dockerd CPU (mcores)", [](const Result& r) { return r.dockerd_mc; }, " %14.1f");
  row("containerd + runc shims CPU (mcores)", [](const Result& r) { return r.containerd_mc; }, " %14.1f");
  row("  containerd processes", [](const Result& r) { return r.shims; }, " %14d");
  row("runtime + dockerd per pod (mcores)", [n](const Result& r) { return (r.runtime_mc + r.dockerd_mc) / n; },
      " %14.3f");
  row("runtime RSS (MB)", [](const Result& r) { return r.runtime_rss; }, " %14.1f");
  row("dockerd RSS (MB)", [](const Result& r) { return r.dockerd_rss; }, " %14.1f");
  row("all removed (s)", [](const Result& r) { return r.to_removed_s; }, " %14.1f");
  row("calls refused while removing", [](const Result& r) { return Refused(r.remove_calls); }, " %14d");
  row("calls failed while removing", [](const Result& r) { return Failed(r.remove_calls); }, " %14d");
  for (const Result& res : results) {
    std::printf("\nCalls to %s\n", res.name.c_str());
    PrintCalls("starting", res.start_calls, std::max(1.0, res.to_running_s));
    PrintCalls("steady state", res.steady_calls, steady_s);
    PrintCalls("removing", res.remove_calls, std::max(1.0, res.to_removed_s));
    if (!res.steady_docker_requests.empty()) {
      std::printf("  its Docker requests in steady state (its /metrics):\n");
      for (const auto& [key, n] : res.steady_docker_requests)
        std::printf("    %-60s %7.0f (%6.2f/s)\n", key.c_str(), n, n / steady_s);
    }
  }

  if (own_shim) (void)own_shim->Stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

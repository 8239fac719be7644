// A day of a node in an hour: the real dockershim binary driven over its CRI socket as a
// kubelet drives it, while it is killed and its dockerd restarted.
//
//   - `--deployments` long-running pods (one container each) that must always run, now
//     and then rolled out: a new pod is started, then the old one stopped and removed;
//   - `--pods` CronJob-like pods (a container that runs 1-2 s and exits 0) started by
//     `--workers` workers at once, each watched (ContainerStatus) until its container
//     exited, its CRI log checked for the job's last line, then removed: StopContainer,
//     the kubelet's removal of the container's log files, RemoveContainer,
//     StopPodSandbox, RemovePodSandbox, the pod's log directory;
//   - as the kubelet, a failed step is retried a second later; a RunPodSandbox or
//     CreateContainer that failed is retried as a new attempt; a sandbox found not ready
//     (dockerd stopped it) is stopped and replaced, an exited container restarted
//     (restartPolicy Always for deployments, OnFailure for jobs); the garbage collector
//     lists the soak's pods and containers (label filter) every `--gc-period` s and
//     removes those of removed pods and older attempts, and removed pods' log directories;
//     the relist runs every second, runtime status every 5 s, the stats lists every 10 s;
//   - disruptions at seeded random points, one every `--chaos-every` pods (the seed is
//     printed; `--seed` repeats the schedule): kill -9 of the shim and a start of it with
//     the same flags `--restart-delay` s later (systemd's Restart=always, RestartSec=2s),
//     or a restart of the engine's dockerd (DOCKERSHIM_TEST_ENGINE_CTL restart <engine>,
//     the private engines only, not the system's 20). The workers carry on through them. None in the last
//     `--tail` pods: `--warmup` pods after the last disruption, the churn is paused (no
//     job in flight, the deployments only) and the shim's footprint read: the baseline.
//
// Printed: each disruption, how long until the shim answered (Version; RuntimeReady
// after a dockerd restart) and the deployments were all back (READY, RUNNING, an IP);
// the shim's RSS, fds and threads every `--footprint-every` pods; calls per RPC with
// latencies and failures by code, those during a disruption (from its start until
// `--grace` s after the pods were back) apart from the others, which are bugs.
//
// Checks, each PASS or FAIL (the exit code is 1 on any FAIL):
//   - every deployment runs before the final removal (READY, RUNNING, an IP);
//   - no call failed and no container restart or new sandbox was needed outside the
//     disruptions; every job exited 0 and its CRI log held its last line;
//   - after the removal through the CRI: nothing of the soak listed by the shim, no
//     container of its namespace in Docker, no host-local IP reservation, no CNI cache
//     file, no checkpoint, no netns left (Docker's netns files and nsfs mounts made during
//     the soak; namespaces the shim holds by fd or by a thread);
//   - logs: the kubelet removes container log files and pod log directories itself (as
//     this soak does), the runtime only stops writing them: no fd of the shim into the
//     log directory, no deleted file it keeps open, nothing under the log directory
//     (a file there is one the shim wrote again after its pod was removed);
//   - the same process and the same state (the deployments running, no job): at the end
//     no more fds than at the baseline, no more threads but testsupport::kThreadSlack,
//     RSS within 10%;
//   - the shim exits 0 on SIGTERM.
//
// The shim runs in a network namespace the bench holds (its CNI bridge dssoak0 and the
// pods' veths survive its restarts); IPAM state, CNI cache, root, logs and each start's
// stdout/stderr (shim.<n>/) are in a temp dir, kept after a FAIL or with --keep.
// Needs root, the engine and the test images (scripts/test-env.sh).
//   soak_bench [--pods 1000] [--workers 6] [--deployments 10] [--seed N] [--chaos-every 50-150]
//              [--no-engine-restarts] [--shim build/shim/dockershim] [--shim-arg=...] ...
//   DSSOAK_PODS=100 soak_bench           the number of jobs, as --pods
//   soak_bench --benchmark_min_time=x    (scripts/test.sh BENCH=1): 16 jobs, 3 deployments
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/cri.h"
#include "common/context.h"
#include "dockerclient/docker_client_impl.h"
#include "tests/bench/bench_common.h"
#include "tests/integration/env.h"
#include "tests/support/footprint.h"
#include "tests/support/load_driver.h"
#include "tests/support/shim_process.h"

namespace {

namespace v1 = runtime::v1;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using RuntimeStub = v1::RuntimeService::Stub;
using ImageStub = v1::ImageService::Stub;

constexpr char kNamespace[] = "dssoak";
constexpr char kSoakLabel[] = "dssoak";     // =1 on every pod and container of the soak
constexpr char kUidLabel[] = "dssoak.uid";  // the pod's UID, on its containers too
constexpr int64_t kStopTimeoutSeconds = 10;
// A job or a removal that has not succeeded after this long is given up (an incident).
constexpr auto kGiveUp = std::chrono::minutes(10);
// The shim keeps up to 16 Docker connections idle (HttpTransport's max_idle_connections),
// each a socket with an io_context of its own: an epoll, an eventfd and a timerfd. More of
// them at the end than at the baseline is the pool grown to a higher concurrency.
constexpr int kDockerPoolMax = 16;
const char* const kDockerConnectionFds[] = {"socket", "anon_inode:[eventpoll]", "anon_inode:[eventfd]",
                                            "anon_inode:[timerfd]"};

struct Settings {
  int pods = 1000, workers = 6, deployments = 10;
  uint32_t seed = 0;
  int chaos_min = 50, chaos_max = 150;
  int tail = -1;
  int warmup = 20;
  int rollout_min = 10, rollout_max = 30;
  int footprint_every = 50;
  double gc_period_s = 10, restart_delay_s = 2, grace_s = 10, settle_s = 5;
  std::string engine_restart;  // the command; empty: no dockerd restarts
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string CodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

// ---------------------------------------------------------------------------
// Every CRI call of the soak: latency per RPC, and each failure with when it ran.

class Cri {
 public:
  struct Failure {
    Clock::time_point start, end;
    std::string rpc;
    grpc::StatusCode code;
    std::string message;
  };

  explicit Cri(const std::string& socket_path) {
    // The kubelet's connection: 16 MiB messages, reconnects 100 ms to 3 s apart.
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 3000);
    auto channel = grpc::CreateCustomChannel("unix://" + socket_path, grpc::InsecureChannelCredentials(), args);
    runtime_ = v1::RuntimeService::NewStub(channel);
    images_ = v1::ImageService::NewStub(channel);
  }

  template <typename Stub, typename Req, typename Resp>
  grpc::Status Call(const std::string& rpc, grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
                    const Req& req, Resp* resp) {
    Stub* stub;
    if constexpr (std::is_same_v<Stub, ImageStub>) {
      stub = images_.get();
    } else {
      stub = runtime_.get();
    }
    const auto t0 = Clock::now();
    grpc::Status s = (stub->*method)(bench::RpcContext(seconds(120)).get(), req, resp);
    const auto t1 = Clock::now();
    std::lock_guard lock(mu_);
    latencies_ms_[rpc].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (!s.ok()) failures_.push_back({t0, t1, rpc, s.error_code(), s.error_message()});
    return s;
  }

  // Read once the soak is over.
  const std::map<std::string, std::vector<double>>& latencies_ms() const { return latencies_ms_; }
  const std::vector<Failure>& failures() const { return failures_; }

 private:
  std::unique_ptr<RuntimeStub> runtime_;
  std::unique_ptr<ImageStub> images_;
  std::mutex mu_;
  std::map<std::string, std::vector<double>> latencies_ms_;
  std::vector<Failure> failures_;
};

// ---------------------------------------------------------------------------
// Disruptions, and what went wrong when.

struct Disruption {
  std::string kind;
  int at_pod = 0;
  Clock::time_point start;
  std::optional<Clock::time_point> answered, back;
  int failed_starts = 0;  // shim starts that did not serve (systemd starts it again)
  std::string note;
};

// Something the kubelet had to repair (a sandbox replaced, a container restarted), or a
// failure of the runtime's that no call reported (a job's log line missing).
struct Incident {
  Clock::time_point at;
  std::string kind;  // for the counts: "new sandbox", "new container", ...
  std::string what;
  bool expected_in_disruptions = true;  // false: a bug whenever it happens
};

class Record {
 public:
  void Add(Disruption d) {
    std::lock_guard lock(mu_);
    disruptions_.push_back(std::move(d));
  }
  void Note(std::string kind, std::string what, bool expected_in_disruptions = true) {
    std::lock_guard lock(mu_);
    incidents_.push_back({Clock::now(), std::move(kind), std::move(what), expected_in_disruptions});
  }
  // Index of the disruption whose window [start, back + grace] meets [t0, t1]; -1 when none.
  int During(Clock::time_point t0, Clock::time_point t1, Clock::duration grace) const {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < disruptions_.size(); ++i) {
      const Disruption& d = disruptions_[i];
      const Clock::time_point end = d.back ? *d.back + grace : Clock::time_point::max();
      if (t1 >= d.start && t0 <= end) return static_cast<int>(i);
    }
    return -1;
  }
  std::vector<Disruption> disruptions() const {
    std::lock_guard lock(mu_);
    return disruptions_;
  }
  std::vector<Incident> incidents() const {
    std::lock_guard lock(mu_);
    return incidents_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<Disruption> disruptions_;
  std::vector<Incident> incidents_;
};

// ---------------------------------------------------------------------------
// The kubelet's side.

struct PodState {
  PodState(std::string name_, std::string uid_, bool deployment_, int job_ms_ = 0)
      : name(std::move(name_)), uid(std::move(uid_)), deployment(deployment_), job_ms(job_ms_) {}
  const std::string name, uid;
  const bool deployment;
  const int job_ms;  // how long a job's container runs
  // Read by the garbage collector: what is older than these is not wanted any more.
  std::atomic<int> sandbox_attempt{0}, container_attempt{0};
  // Written by the pod's own thread only (which reads them without the lock).
  std::string sandbox_id, container_id;

  void SetIds(std::string sandbox, std::string container) {
    std::lock_guard lock(mu);
    sandbox_id = std::move(sandbox);
    container_id = std::move(container);
  }
  std::pair<std::string, std::string> Ids() const {
    std::lock_guard lock(mu);
    return {sandbox_id, container_id};
  }

 private:
  mutable std::mutex mu;
};

class Kubelet {
 public:
  enum class Phase { kPending, kRunning, kSucceeded };

  Kubelet(Cri& cri, Record& record, std::string image, std::string log_root)
      : cri_(cri), record_(record), image_(std::move(image)), log_root_(std::move(log_root)) {}

  std::string PodLogDir(const PodState& pod) const {
    return absl::StrCat(log_root_, "/", kNamespace, "_", pod.name, "_", pod.uid);
  }

  void Register(PodState* pod) {
    std::lock_guard lock(mu_);
    live_[pod->uid] = pod;
  }
  void Unregister(const PodState& pod, bool removed) {
    std::lock_guard lock(mu_);
    live_.erase(pod.uid);
    if (removed) removed_.insert(pod.uid);
  }

  // Repeats `step` (true when done) a second apart, as the kubelet's pod workers retry a
  // sync; false when it is still failing after kGiveUp.
  static bool Retry(const std::function<bool()>& step) {
    const auto until = Clock::now() + kGiveUp;
    while (!step()) {
      if (Clock::now() > until) return false;
      std::this_thread::sleep_for(seconds(1));
    }
    return true;
  }

  // One sync of the pod (the kubelet's SyncPod): what it found, after what it did.
  // `exited` gets a job's container status once it succeeded.
  Phase Sync(PodState& pod, v1::ContainerStatus* exited = nullptr) {
    std::optional<v1::ContainerStatus> container;
    if (!pod.container_id.empty()) {
      v1::ContainerStatusRequest req;
      req.set_container_id(pod.container_id);
      v1::ContainerStatusResponse resp;
      grpc::Status s = cri_.Call("ContainerStatus", &RuntimeStub::ContainerStatus, req, &resp);
      if (s.ok()) {
        container = resp.status();
      } else if (s.error_code() != grpc::StatusCode::NOT_FOUND) {
        return Phase::kPending;
      }
    }
    // A job that succeeded needs no sandbox any more (restartPolicy OnFailure).
    if (container && !pod.deployment && container->state() == v1::CONTAINER_EXITED && container->exit_code() == 0) {
      if (exited) *exited = *container;
      return Phase::kSucceeded;
    }
    if (!pod.sandbox_id.empty()) {
      v1::PodSandboxStatusRequest req;
      req.set_pod_sandbox_id(pod.sandbox_id);
      v1::PodSandboxStatusResponse resp;
      grpc::Status s = cri_.Call("PodSandboxStatus", &RuntimeStub::PodSandboxStatus, req, &resp);
      if (!s.ok() && s.error_code() != grpc::StatusCode::NOT_FOUND) return Phase::kPending;
      if (!s.ok() || resp.status().state() != v1::SANDBOX_READY) {
        // The kubelet kills the pod, so that the old sandbox's network goes, then makes
        // a new sandbox and new containers (the old ones are the garbage collector's).
        if (container && container->state() == v1::CONTAINER_RUNNING && !StopContainer(pod.container_id))
          return Phase::kPending;
        if (!StopPodSandbox(pod.sandbox_id)) return Phase::kPending;
        record_.Note("new sandbox", absl::StrCat(pod.name, ": sandbox ", Short(pod.sandbox_id),
                                                 s.ok() ? " not ready" : " gone", ", a new one"));
        ++pod.sandbox_attempt;
        ++pod.container_attempt;
        pod.SetIds("", "");
        container.reset();
      }
    }
    if (pod.sandbox_id.empty()) {
      v1::RunPodSandboxRequest req;
      *req.mutable_config() = SandboxConfig(pod);
      v1::RunPodSandboxResponse resp;
      if (!cri_.Call("RunPodSandbox", &RuntimeStub::RunPodSandbox, req, &resp).ok()) {
        ++pod.sandbox_attempt;  // retried as a new attempt
        return Phase::kPending;
      }
      pod.SetIds(resp.pod_sandbox_id(), "");
    }
    if (container && container->state() == v1::CONTAINER_RUNNING) return Phase::kRunning;
    if (!pod.container_id.empty()) {
      // Exited (a job that failed, any deployment's), never started, or gone: a new one.
      record_.Note("new container", absl::StrCat(pod.name, ": container ", Short(pod.container_id), " ",
                                                 !container ? "gone"
                                                 : container->state() == v1::CONTAINER_EXITED
                                                     ? absl::StrCat("exited with ", container->exit_code(), " (",
                                                                    container->reason(), ")")
                                                     : v1::ContainerState_Name(container->state()),
                                                 ", a new one"));
      ++pod.container_attempt;
      pod.SetIds(pod.sandbox_id, "");
    }
    // EnsureImageExists (IfNotPresent), then create and start.
    v1::ImageStatusRequest image_req;
    image_req.mutable_image()->set_image(image_);
    v1::ImageStatusResponse image_resp;
    if (!cri_.Call("ImageStatus", &ImageStub::ImageStatus, image_req, &image_resp).ok()) return Phase::kPending;
    v1::CreateContainerRequest create;
    create.set_pod_sandbox_id(pod.sandbox_id);
    *create.mutable_sandbox_config() = SandboxConfig(pod);
    *create.mutable_config() = ContainerConfig(pod);
    v1::CreateContainerResponse created;
    if (!cri_.Call("CreateContainer", &RuntimeStub::CreateContainer, create, &created).ok()) {
      ++pod.container_attempt;  // it may exist under this attempt's name
      return Phase::kPending;
    }
    pod.SetIds(pod.sandbox_id, created.container_id());
    v1::StartContainerRequest start;
    start.set_container_id(pod.container_id);
    v1::StartContainerResponse started;
    cri_.Call("StartContainer", &RuntimeStub::StartContainer, start, &started);
    return Phase::kPending;  // the next sync sees how it runs
  }

  // The kubelet's end of a pod: kill (StopContainer), then what its garbage collector
  // does: the container's log files, RemoveContainer, StopPodSandbox, RemovePodSandbox,
  // the pod's log directory. Each step retried; false when one was given up.
  bool KillAndRemove(PodState& pod) {
    bool ok = true;
    if (!pod.container_id.empty()) {
      ok = ok && Retry([&] { return StopContainer(pod.container_id); });
      ok = ok && Retry([&] { return RemoveContainerLogs(pod.container_id); });
      ok = ok && Retry([&] { return RemoveContainer(pod.container_id); });
    }
    if (!pod.sandbox_id.empty()) {
      ok = ok && Retry([&] { return StopPodSandbox(pod.sandbox_id); });
      ok = ok && Retry([&] { return RemovePodSandbox(pod.sandbox_id); });
    }
    if (ok) {
      std::error_code ec;
      fs::remove_all(PodLogDir(pod), ec);
    } else {
      record_.Note("removal given up", absl::StrCat(pod.name, ": removal given up after ", kGiveUp.count(), " min"),
                   false);
    }
    return ok;
  }

  // One pass of the kubelet's garbage collection: containers and sandboxes of pods no
  // longer live or of their older attempts, and the log directories of removed pods.
  void CollectGarbage() {
    std::lock_guard pass(gc_mu_);
    v1::ListContainersRequest list_containers;
    (*list_containers.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListContainersResponse containers;
    if (!cri_.Call("ListContainers", &RuntimeStub::ListContainers, list_containers, &containers).ok()) return;
    v1::ListPodSandboxRequest list_sandboxes;
    (*list_sandboxes.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListPodSandboxResponse sandboxes;
    if (!cri_.Call("ListPodSandbox", &RuntimeStub::ListPodSandbox, list_sandboxes, &sandboxes).ok()) return;
    std::vector<std::string> log_dirs;
    std::error_code ec;
    for (fs::directory_iterator it(log_root_, ec), end; !ec && it != end; it.increment(ec))
      log_dirs.push_back(it->path().filename().string());
    // Who is live is read after the lists: a pod is registered before anything of it
    // exists and its attempts only grow, so nothing listed can be wanted and unseen.
    std::map<std::string, std::pair<int, int>> live;  // UID -> sandbox, container attempt
    std::set<std::string> removed;
    {
      std::lock_guard lock(mu_);
      for (const auto& [uid, pod] : live_) live[uid] = {pod->sandbox_attempt.load(), pod->container_attempt.load()};
      removed = removed_;
    }
    auto wanted = [&](const google::protobuf::Map<std::string, std::string>& labels, uint32_t attempt, bool sandbox) {
      auto uid = labels.find(kUidLabel);
      if (uid == labels.end()) return false;
      auto it = live.find(uid->second);
      if (it == live.end()) return false;
      return static_cast<int>(attempt) >= (sandbox ? it->second.first : it->second.second);
    };
    for (const v1::Container& c : containers.containers()) {
      if (wanted(c.labels(), c.metadata().attempt(), false)) continue;
      if (c.state() == v1::CONTAINER_RUNNING && !StopContainer(c.id())) continue;
      if (RemoveContainerLogs(c.id()) && RemoveContainer(c.id())) ++gc_containers_;
    }
    for (const v1::PodSandbox& s : sandboxes.items()) {
      if (wanted(s.labels(), s.metadata().attempt(), true)) continue;
      if (StopPodSandbox(s.id()) && RemovePodSandbox(s.id())) ++gc_sandboxes_;
    }
    for (const std::string& dir : log_dirs) {
      const std::string uid = dir.substr(dir.rfind('_') + 1);
      if (live.count(uid)) continue;
      if (removed.count(uid)) {
        // Its pod's removal deleted it: something wrote there again.
        record_.Note("log directory back",
                     absl::StrCat("log directory ", dir, " of a removed pod came back: ",
                                  absl::StrJoin(FilesUnder(log_root_ + "/" + dir), ", ")),
                     false);
      }
      fs::remove_all(log_root_ + "/" + dir, ec);
      ++gc_log_dirs_;
    }
  }

  int gc_containers() const { return gc_containers_; }
  int gc_sandboxes() const { return gc_sandboxes_; }
  int gc_log_dirs() const { return gc_log_dirs_; }

  static std::vector<std::string> FilesUnder(const std::string& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      files.push_back(it->path().lexically_relative(dir).string());
    return files;
  }

  static std::string JobLastLine(const PodState& pod) { return absl::StrCat("soak job ", pod.uid, " done"); }

  bool StopContainer(const std::string& id) {
    v1::StopContainerRequest req;
    req.set_container_id(id);
    req.set_timeout(kStopTimeoutSeconds);
    v1::StopContainerResponse resp;
    return cri_.Call("StopContainer", &RuntimeStub::StopContainer, req, &resp).ok();
  }
  bool RemoveContainer(const std::string& id) {
    v1::RemoveContainerRequest req;
    req.set_container_id(id);
    v1::RemoveContainerResponse resp;
    return cri_.Call("RemoveContainer", &RuntimeStub::RemoveContainer, req, &resp).ok();
  }
  bool StopPodSandbox(const std::string& id) {
    v1::StopPodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    v1::StopPodSandboxResponse resp;
    return cri_.Call("StopPodSandbox", &RuntimeStub::StopPodSandbox, req, &resp).ok();
  }
  bool RemovePodSandbox(const std::string& id) {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    v1::RemovePodSandboxResponse resp;
    return cri_.Call("RemovePodSandbox", &RuntimeStub::RemovePodSandbox, req, &resp).ok();
  }
  // The kubelet's log manager before RemoveContainer: the file at the status's log path
  // and its rotated siblings (<path>*).
  bool RemoveContainerLogs(const std::string& id) {
    v1::ContainerStatusRequest req;
    req.set_container_id(id);
    v1::ContainerStatusResponse resp;
    grpc::Status s = cri_.Call("ContainerStatus", &RuntimeStub::ContainerStatus, req, &resp);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) return true;
    if (!s.ok()) return false;
    const fs::path path = resp.status().log_path();
    if (path.empty()) return true;
    std::error_code ec;
    for (fs::directory_iterator it(path.parent_path(), ec), end; !ec && it != end; it.increment(ec))
      if (absl::StartsWith(it->path().filename().string(), path.filename().string())) fs::remove(it->path(), ec);
    return true;
  }

 private:
  static std::string Short(const std::string& id) { return id.substr(0, 12); }

  v1::PodSandboxConfig SandboxConfig(const PodState& pod) const {
    v1::PodSandboxConfig config = bench::KubeletLikePodConfig(pod.name, kNamespace, pod.uid, kSoakLabel);
    config.mutable_metadata()->set_attempt(pod.sandbox_attempt);
    (*config.mutable_labels())[kUidLabel] = pod.uid;
    config.set_log_directory(PodLogDir(pod));
    return config;
  }

  v1::ContainerConfig ContainerConfig(const PodState& pod) const {
    const std::string name = pod.deployment ? "app" : "job";
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_metadata()->set_attempt(pod.container_attempt);
    c.mutable_image()->set_image(image_);
    // A deployment's ends at once on SIGTERM (a shell as PID 1 ignores it otherwise).
    const std::string script =
        pod.deployment ? "trap 'exit 0' TERM; while :; do echo alive; sleep 10; done & wait"
                       : absl::StrCat("echo soak job ", pod.uid, " start; usleep ", pod.job_ms * 1000, "; echo ",
                                      JobLastLine(pod));
    for (const std::string& part : {std::string("sh"), std::string("-c"), script}) c.add_command(part);
    c.set_log_path(absl::StrCat(name, "/", pod.container_attempt.load(), ".log"));
    (*c.mutable_labels())[kSoakLabel] = "1";
    (*c.mutable_labels())[kUidLabel] = pod.uid;
    c.mutable_linux();
    return c;
  }

  Cri& cri_;
  Record& record_;
  const std::string image_, log_root_;
  std::mutex mu_;
  std::map<std::string, PodState*> live_;  // by UID
  std::set<std::string> removed_;          // UIDs of pods removed whole
  std::mutex gc_mu_;                       // one garbage collection at a time
  std::atomic<int> gc_containers_{0}, gc_sandboxes_{0}, gc_log_dirs_{0};
};

// ---------------------------------------------------------------------------
// The shim binary, killed and started again as systemd would.

class Shim {
 public:
  Shim(testsupport::ShimLaunch launch, std::string dir, double restart_delay_s)
      : launch_(std::move(launch)), dir_(std::move(dir)), restart_delay_(restart_delay_s) {}

  // Its n-th start, its stdout and stderr in <dir>/shim.<n>/.
  absl::Status Start() {
    std::lock_guard lock(mu_);
    return StartLocked();
  }
  // When it ended by itself, starts it again after the restart delay (Restart=always)
  // and returns what happened; nullopt while it runs (or between a kill and its start).
  std::optional<std::string> ReviveIfExited() {
    std::lock_guard lock(mu_);
    if (!process_) return std::nullopt;
    const std::optional<int> code = process_->Exited();
    if (!code) return std::nullopt;
    const std::string log = process_->Stderr();
    std::string what = absl::StrCat("the shim (start #", starts_.load(), ") exited by itself with ", *code,
                                    "; the end of its stderr: ", log.substr(log.size() > 600 ? log.size() - 600 : 0));
    pid_ = -1;
    process_.reset();
    std::this_thread::sleep_for(restart_delay_);
    if (absl::Status started = StartLocked(); !started.ok()) absl::StrAppend(&what, "; not started again: ", started.message());
    return what;
  }
  void KillNine() {
    std::lock_guard lock(mu_);
    pid_ = -1;
    process_.reset();  // SIGKILL, and reaped
  }
  absl::StatusOr<int> Stop() {
    std::lock_guard lock(mu_);
    if (!process_) return absl::FailedPreconditionError("not running");
    pid_ = -1;
    return process_->Stop();
  }
  pid_t pid() const { return pid_; }
  int starts() const { return starts_; }

 private:
  absl::Status StartLocked() {
    launch_.output_dir = absl::StrCat(dir_, "/shim.", ++starts_);
    std::error_code ec;
    fs::create_directories(launch_.output_dir, ec);
    ::unlink(launch_.socket_path.c_str());
    auto started = testsupport::ShimProcess::Start(launch_);
    if (!started.ok()) return started.status();
    process_ = std::move(*started);
    pid_ = process_->pid();
    return absl::OkStatus();
  }

  std::mutex mu_;
  testsupport::ShimLaunch launch_;
  const std::string dir_;
  const std::chrono::duration<double> restart_delay_;
  std::unique_ptr<testsupport::ShimProcess> process_;
  std::atomic<pid_t> pid_{-1};
  std::atomic<int> starts_{0};
};

// ---------------------------------------------------------------------------
// The soak.

struct Slot {
  int index = 0, generation = 0;
  std::mutex mu;  // guards `pod` (replaced by a rollout) for the observers
  std::unique_ptr<PodState> pod;
  std::atomic<bool> rollout{false};
  int rollouts = 0;
};

struct Sample {
  double at_s = 0;
  int pods = 0, shim_start = 0;
  pid_t pid = -1;
  std::optional<testsupport::Footprint> footprint;
  std::map<std::string, int> open_files;  // by kind (OpenFileKind); for the comparison readings only
};

// An open file's kind: "socket", "pipe", "anon_inode:[eventfd]" ..., "a CRI log", "a Docker json log", or its path.
std::string OpenFileKind(const std::string& target) {
  if (absl::StartsWith(target, "anon_inode:")) return target;
  if (target.empty() || target.front() != '/') return target.substr(0, target.find(':'));
  if (absl::EndsWith(target, "-json.log")) return "a Docker json log";
  if (absl::StrContains(target, "/logs/") && absl::EndsWith(target, ".log")) return "a CRI log";
  return target;
}

// How many lines of `path` contain `needle`.
int CountLines(const std::string& path, const std::string& needle) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += absl::StrContains(line, needle);
  return n;
}

class Soak {
 public:
  Soak(const Settings& settings, Cri& cri, Shim& shim, dockerclient::DockerClient& docker, std::string image,
       std::string log_root)
      : s_(settings), cri_(cri), shim_(shim), docker_(docker), kubelet_(cri, record_, std::move(image), log_root),
        log_root_(std::move(log_root)), t0_(Clock::now()) {}

  Kubelet& kubelet() { return kubelet_; }
  Record& record() { return record_; }
  double Elapsed() const { return Seconds(Clock::now() - t0_); }

  // The deployments, each kept running by its own pod worker; true once all run.
  bool StartDeployments() {
    slots_.resize(s_.deployments);
    for (int i = 0; i < s_.deployments; ++i) {
      slots_[i] = std::make_unique<Slot>();
      slots_[i]->index = i;
      threads_.emplace_back([this, i] { RunSlot(*slots_[i]); });
    }
    for (auto until = Clock::now() + std::chrono::minutes(5); Clock::now() < until;) {
      if (DeploymentsUp(nullptr)) return true;
      std::this_thread::sleep_for(milliseconds(500));
    }
    return false;
  }

  // Every deployment's current pod: its sandbox READY, its container RUNNING (as the
  // relist sees them) and an IP (PodSandboxStatus). `why` gets the first that is not.
  // `probe`: the calls of a disruption's watch, counted apart.
  bool DeploymentsUp(std::string* why, bool probe = false) {
    const std::string suffix = probe ? " (probe)" : "";
    auto fail = [why](std::string reason) {
      if (why) *why = std::move(reason);
      return false;
    };
    v1::ListPodSandboxRequest list_sandboxes;
    (*list_sandboxes.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListPodSandboxResponse sandboxes;
    grpc::Status s = cri_.Call("ListPodSandbox" + suffix, &RuntimeStub::ListPodSandbox, list_sandboxes, &sandboxes);
    if (!s.ok()) return fail("ListPodSandbox: " + s.error_message());
    v1::ListContainersRequest list_containers;
    (*list_containers.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListContainersResponse containers;
    s = cri_.Call("ListContainers" + suffix, &RuntimeStub::ListContainers, list_containers, &containers);
    if (!s.ok()) return fail("ListContainers: " + s.error_message());
    std::map<std::string, v1::PodSandboxState> sandbox_state;
    for (const v1::PodSandbox& p : sandboxes.items()) sandbox_state[p.id()] = p.state();
    std::map<std::string, v1::ContainerState> container_state;
    for (const v1::Container& c : containers.containers()) container_state[c.id()] = c.state();
    for (const auto& slot : slots_) {
      std::pair<std::string, std::string> ids;
      {
        std::lock_guard lock(slot->mu);
        if (!slot->pod) return fail(absl::StrCat("deployment ", slot->index, ": no pod yet"));
        ids = slot->pod->Ids();
      }
      const std::string name = absl::StrCat("deployment ", slot->index);
      auto sandbox = sandbox_state.find(ids.first);
      if (ids.first.empty() || sandbox == sandbox_state.end() || sandbox->second != v1::SANDBOX_READY)
        return fail(name + ": no ready sandbox listed");
      auto container = container_state.find(ids.second);
      if (ids.second.empty() || container == container_state.end() || container->second != v1::CONTAINER_RUNNING)
        return fail(name + ": no running container listed");
      v1::PodSandboxStatusRequest req;
      req.set_pod_sandbox_id(ids.first);
      v1::PodSandboxStatusResponse resp;
      s = cri_.Call("PodSandboxStatus" + suffix, &RuntimeStub::PodSandboxStatus, req, &resp);
      if (!s.ok()) return fail(name + ": PodSandboxStatus: " + s.error_message());
      if (resp.status().network().ip().empty()) return fail(name + ": no IP");
    }
    return true;
  }

  // The deployments' current sandbox IDs.
  std::vector<std::string> DeploymentSandboxes() {
    std::vector<std::string> ids;
    for (const auto& slot : slots_) {
      std::lock_guard lock(slot->mu);
      if (slot->pod) ids.push_back(slot->pod->Ids().first);
    }
    return ids;
  }

  // Workers, garbage collection, the kubelet's periodic lists, the footprint timeline,
  // rollouts and the disruptions; returns once every job is done and the footprint at
  // the end is read.
  void Churn() {
    std::vector<std::thread> churn;
    for (int w = 0; w < s_.workers; ++w) churn.emplace_back([this] { RunWorker(); });
    threads_.emplace_back([this] { Every(std::chrono::duration<double>(s_.gc_period_s), [this] { kubelet_.CollectGarbage(); }); });
    threads_.emplace_back([this] { Housekeeping(); });
    std::thread monitor([this] { Monitor(); });
    std::thread chaos([this] { Chaos(); });
    for (auto& t : churn) t.join();
    chaos.join();
    {
      std::lock_guard lock(mu_);
      jobs_over_ = true;
    }
    cv_.notify_all();
    monitor.join();
    end_ = Quiesce("end");
  }

  // Stops the deployments' workers and removes their pods through the CRI, then the
  // garbage collector's last pass (nothing is live any more).
  void RemoveEverything() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
    for (const auto& slot : slots_) {
      std::lock_guard lock(slot->mu);
      if (!slot->pod) continue;
      CheckCopiedLog(*slot->pod);
      kubelet_.Unregister(*slot->pod, kubelet_.KillAndRemove(*slot->pod));
    }
    kubelet_.CollectGarbage();
  }

  const std::optional<Sample>& baseline() const { return baseline_; }
  const std::optional<Sample>& end() const { return end_; }
  int baseline_pods() const { return baseline_pods_; }
  int baseline_start() const { return baseline_start_; }
  int jobs_succeeded() const { return jobs_succeeded_; }
  int logs_compared() const { return logs_compared_; }
  int lines_compared() const { return lines_compared_; }
  int rollouts() const {
    int n = 0;
    for (const auto& slot : slots_) n += slot->rollouts;
    return n;
  }
  std::vector<Sample> samples() {
    std::lock_guard lock(samples_mu_);
    return samples_;
  }

 private:
  // Runs `fn` every `period` until the soak stops.
  void Every(std::chrono::duration<double> period, const std::function<void()>& fn) {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      fn();
      lock.lock();
      cv_.wait_for(lock, period, [this] { return stopping_; });
    }
  }

  // Sleeps `d` unless the soak stops first; false when it stops.
  bool Nap(std::chrono::duration<double> d) {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, d, [this] { return stopping_; });
  }

  void RunSlot(Slot& slot) {
    auto fresh = [&] {
      auto pod = std::make_unique<PodState>(absl::StrCat("web-", slot.index, "-", slot.generation),
                                            absl::StrCat("web-", slot.index, "-", slot.generation, "-", ::getpid()),
                                            /*deployment=*/true);
      ++slot.generation;
      kubelet_.Register(pod.get());
      return pod;
    };
    {
      std::lock_guard lock(slot.mu);
      slot.pod = fresh();
    }
    for (;;) {
      const Kubelet::Phase phase = kubelet_.Sync(*slot.pod);
      if (phase == Kubelet::Phase::kRunning && slot.rollout) {
        // maxSurge 1, maxUnavailable 0: the new pod runs before the old one goes.
        std::unique_ptr<PodState> next = fresh();
        while (kubelet_.Sync(*next) != Kubelet::Phase::kRunning)
          if (!Nap(seconds(1))) break;
        std::unique_ptr<PodState> old;
        {
          std::lock_guard lock(slot.mu);
          old = std::exchange(slot.pod, std::move(next));
        }
        CheckCopiedLog(*old);
        kubelet_.Unregister(*old, kubelet_.KillAndRemove(*old));
        ++slot.rollouts;
        slot.rollout = false;
        cv_.notify_all();
      }
      if (!Nap(phase == Kubelet::Phase::kRunning ? seconds(2) : seconds(1))) return;
    }
  }

  // A deployment's container, before it goes: its CRI log holds each line Docker logged
  // (its json file), once, whatever kills and restarts it lived through. The copy may
  // lag a moment behind: looked at for up to 10 s (a line comes every 10 s).
  void CheckCopiedLog(const PodState& pod) {
    if (pod.container_id.empty()) return;
    v1::ContainerStatusRequest req;
    req.set_container_id(pod.container_id);
    v1::ContainerStatusResponse resp;
    auto inspect = docker_.InspectContainer(common::Context::WithTimeout(absl::Seconds(30)), pod.container_id);
    if (!cri_.Call("ContainerStatus", &RuntimeStub::ContainerStatus, req, &resp).ok() || !inspect.ok() ||
        resp.status().state() != v1::CONTAINER_RUNNING)
      return;  // not running (an outage's), nothing to compare
    int copied = 0, logged = 0;
    for (const auto until = Clock::now() + seconds(10); Clock::now() < until;) {
      copied = CountLines(resp.status().log_path(), " stdout F alive");
      logged = CountLines(inspect->log_path, R"("log":"alive\n")");
      if (copied == logged) {
        ++logs_compared_;
        lines_compared_ += copied;
        return;
      }
      std::this_thread::sleep_for(milliseconds(250));
    }
    record_.Note("CRI log differs", absl::StrCat(pod.name, ": its CRI log ", resp.status().log_path(), " holds ",
                                                 copied, " lines, Docker's ", inspect->log_path, " ", logged));
  }

  void RunWorker() {
    for (;;) {
      int i;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [this] { return !paused_; });
        if (next_job_ >= s_.pods) return;
        i = next_job_++;
        ++in_flight_;
      }
      RunJob(i);
      {
        std::lock_guard lock(mu_);
        --in_flight_;
        ++completed_;
      }
      cv_.notify_all();
    }
  }

  void RunJob(int i) {
    std::mt19937 rng(s_.seed + 1000 + i);
    PodState pod(absl::StrCat("job-", i), absl::StrCat("job-", i, "-", ::getpid()), /*deployment=*/false,
                 1000 + static_cast<int>(rng() % 1000));
    kubelet_.Register(&pod);
    const auto until = Clock::now() + kGiveUp;
    v1::ContainerStatus exited;
    Kubelet::Phase phase;
    while ((phase = kubelet_.Sync(pod, &exited)) != Kubelet::Phase::kSucceeded && Clock::now() < until)
      std::this_thread::sleep_for(phase == Kubelet::Phase::kRunning ? milliseconds(500) : seconds(1));
    if (phase == Kubelet::Phase::kSucceeded) {
      ++jobs_succeeded_;
      // Its status said exited: the CRI log is complete.
      std::ifstream in(exited.log_path());
      std::stringstream log;
      log << in.rdbuf();
      if (!absl::StrContains(log.str(), absl::StrCat(" stdout F ", Kubelet::JobLastLine(pod), "\n")))
        record_.Note("last line missing",
                     absl::StrCat(pod.name, ": its CRI log ", exited.log_path(), " lacks its last line; it holds: \"",
                                  log.str().substr(0, 400), "\""),
                     false);
    } else {
      record_.Note("job given up", absl::StrCat(pod.name, ": given up after ", kGiveUp.count(), " min"), false);
    }
    kubelet_.Unregister(pod, kubelet_.KillAndRemove(pod));
  }

  // The kubelet's periodic calls: relist every second, runtime status every 5 s, the
  // stats lists every 10 s. And systemd's part: a shim that ended by itself is a bug,
  // started again.
  void Housekeeping() {
    int tick = 0;
    Every(seconds(1), [&] {
      if (std::optional<std::string> crash = shim_.ReviveIfExited()) record_.Note("shim crash", *crash, false);
      v1::ListPodSandboxResponse sandboxes;
      cri_.Call("ListPodSandbox", &RuntimeStub::ListPodSandbox, v1::ListPodSandboxRequest(), &sandboxes);
      v1::ListContainersResponse containers;
      cri_.Call("ListContainers", &RuntimeStub::ListContainers, v1::ListContainersRequest(), &containers);
      if (tick % 5 == 0) {
        v1::StatusResponse status;
        cri_.Call("Status", &RuntimeStub::Status, v1::StatusRequest(), &status);
      }
      if (tick % 10 == 0) {
        v1::ListPodSandboxStatsResponse pod_stats;
        cri_.Call("ListPodSandboxStats", &RuntimeStub::ListPodSandboxStats, v1::ListPodSandboxStatsRequest(),
                  &pod_stats);
        v1::ListContainerStatsResponse container_stats;
        cri_.Call("ListContainerStats", &RuntimeStub::ListContainerStats, v1::ListContainerStatsRequest(),
                  &container_stats);
      }
      ++tick;
    });
  }

  Sample TakeSample() {
    Sample sample;
    sample.at_s = Elapsed();
    {
      std::lock_guard lock(mu_);
      sample.pods = completed_;
    }
    sample.pid = shim_.pid();
    sample.shim_start = shim_.starts();
    if (sample.pid > 0)
      if (auto f = testsupport::ReadFootprint(sample.pid); f.ok()) sample.footprint = *f;
    return sample;
  }

  static void PrintSample(const Sample& s, const char* what) {
    if (s.footprint) {
      std::printf("  %7.0f s %6d pods  shim #%d pid %-7d RSS %6.1f MB (anon %6.1f) %5d fds %4d threads  %s\n", s.at_s,
                  s.pods, s.shim_start, s.pid, s.footprint->rss_kb / 1024.0, s.footprint->anon_kb / 1024.0,
                  s.footprint->fds, s.footprint->threads, what);
    } else {
      std::printf("  %7.0f s %6d pods  shim #%d down  %s\n", s.at_s, s.pods, s.shim_start, what);
    }
    std::fflush(stdout);
  }

  // The footprint timeline and the rollouts, as the jobs complete. No rollout starts
  // while the churn is paused: Quiesce waits for those under way.
  void Monitor() {
    std::mt19937 rng(s_.seed + 1);
    auto gap = [&] { return s_.rollout_min + static_cast<int>(rng() % (s_.rollout_max - s_.rollout_min + 1)); };
    int next_sample = s_.footprint_every, next_rollout = gap();
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] {
        return jobs_over_ || completed_ >= next_sample || (completed_ >= next_rollout && !paused_);
      });
      if (jobs_over_) return;
      for (; completed_ >= next_rollout && !paused_; next_rollout += gap())
        if (!slots_.empty()) slots_[rng() % slots_.size()]->rollout = true;
      const int done = completed_;
      lock.unlock();
      for (; done >= next_sample; next_sample += s_.footprint_every) {
        const Sample sample = TakeSample();
        PrintSample(sample, "");
        AddSample(sample);
      }
      lock.lock();
    }
  }

  void AddSample(const Sample& sample) {
    std::lock_guard lock(samples_mu_);
    samples_.push_back(sample);
  }

  // Waits until `completed_` reaches `n` (or every job is done); the count then.
  int AwaitCompleted(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return completed_ >= n || completed_ >= s_.pods; });
    return completed_;
  }

  // The disruptions at their seeded points, then the footprint baseline.
  void Chaos() {
    std::mt19937 rng(s_.seed + 2);
    const int tail = s_.tail >= 0 ? s_.tail : std::max(s_.pods / 4, s_.warmup + 30);
    std::vector<std::pair<int, bool>> plan;  // at pod, engine restart
    for (int at = 0;;) {
      at += s_.chaos_min + static_cast<int>(rng() % (s_.chaos_max - s_.chaos_min + 1));
      if (at >= s_.pods - tail) break;
      plan.emplace_back(at, !s_.engine_restart.empty() && rng() % 2 == 1);
    }
    // Both kinds when there are two disruptions or more.
    if (plan.size() >= 2 && !s_.engine_restart.empty() && plan[0].second == plan[1].second)
      plan[1].second = !plan[0].second;
    std::vector<std::string> described;
    for (const auto& [at, engine] : plan) described.push_back(absl::StrCat(engine ? "dockerd restart" : "kill -9", " at pod ", at));
    std::printf("soak_bench: disruptions: %s\n", plan.empty() ? "none" : absl::StrJoin(described, ", ").c_str());
    std::fflush(stdout);

    int last = 0;
    for (const auto& [at, engine] : plan) {
      if (AwaitCompleted(at) >= s_.pods) break;
      Disruption d = engine ? RestartEngine() : KillShim();
      last = AwaitCompleted(0);
      PrintDisruption(d);
      record_.Add(std::move(d));
    }
    if (AwaitCompleted(last + s_.warmup) >= s_.pods) {
      std::printf("soak_bench: every job was done before the baseline (%d pods after the last disruption): "
                  "no footprint comparison\n", s_.warmup);
      return;
    }
    baseline_pods_ = AwaitCompleted(0);
    baseline_start_ = shim_.starts();
    baseline_ = Quiesce("baseline");
  }

  // Pauses the churn: no job in flight, no rollout; one garbage collection; then, after
  // `settle_s`, the shim's footprint.
  std::optional<Sample> Quiesce(const char* what) {
    std::unique_lock lock(mu_);
    paused_ = true;
    cv_.wait(lock, [this] {
      return in_flight_ == 0 &&
             std::none_of(slots_.begin(), slots_.end(), [](const auto& slot) { return slot->rollout.load(); });
    });
    lock.unlock();
    kubelet_.CollectGarbage();
    std::this_thread::sleep_for(std::chrono::duration<double>(s_.settle_s));
    Sample sample = TakeSample();
    if (auto files = testsupport::OpenFiles(sample.pid); sample.pid > 0 && files.ok())
      for (const std::string& f : *files) ++sample.open_files[OpenFileKind(f)];
    PrintSample(sample, absl::StrCat("<- ", what, " (no job in flight, the deployments running)").c_str());
    AddSample(sample);
    lock.lock();
    paused_ = false;
    lock.unlock();
    cv_.notify_all();
    return sample;
  }

  // Polls `ok` every `period` for up to `limit`; when it held.
  static std::optional<Clock::time_point> Until(const std::function<bool()>& ok, milliseconds period,
                                                Clock::duration limit) {
    for (const auto until = Clock::now() + limit; Clock::now() < until;) {
      if (ok()) return Clock::now();
      std::this_thread::sleep_for(period);
    }
    return std::nullopt;
  }
  std::optional<Clock::time_point> Answered(const std::function<bool()>& ok) {
    return Until(ok, milliseconds(100), std::chrono::minutes(5));
  }
  std::optional<Clock::time_point> PodsBack() {
    return Until([this] { return DeploymentsUp(nullptr, /*probe=*/true); }, milliseconds(250), std::chrono::minutes(10));
  }

  bool Answers() {
    v1::VersionResponse resp;
    return cri_.Call("Version (probe)", &RuntimeStub::Version, v1::VersionRequest(), &resp).ok();
  }
  bool RuntimeReady() {
    v1::StatusResponse resp;
    if (!cri_.Call("Status (probe)", &RuntimeStub::Status, v1::StatusRequest(), &resp).ok()) return false;
    for (const v1::RuntimeCondition& c : resp.status().conditions())
      if (c.type() == "RuntimeReady") return c.status();
    return false;
  }

  Disruption KillShim() {
    Disruption d;
    d.kind = "kill -9 shim";
    d.at_pod = AwaitCompleted(0);
    d.start = Clock::now();
    shim_.KillNine();
    for (const auto until = d.start + std::chrono::minutes(5);;) {
      std::this_thread::sleep_for(std::chrono::duration<double>(s_.restart_delay_s));  // RestartSec
      absl::Status started = shim_.Start();
      if (started.ok()) break;
      ++d.failed_starts;
      d.note = std::string(started.message().substr(0, 300));
      if (Clock::now() > until) return d;
    }
    d.answered = Answered([this] { return Answers(); });
    d.back = PodsBack();
    return d;
  }

  Disruption RestartEngine() {
    Disruption d;
    d.kind = "dockerd restart";
    d.at_pod = AwaitCompleted(0);
    d.start = Clock::now();
    const int code = std::system(s_.engine_restart.c_str());
    if (code != 0) d.note = absl::StrCat("`", s_.engine_restart, "` exited with ", code);
    d.answered = Answered([this] { return RuntimeReady(); });
    d.back = PodsBack();
    return d;
  }

  void PrintDisruption(const Disruption& d) {
    auto after = [&](const std::optional<Clock::time_point>& t) {
      return t ? absl::StrFormat("%.1f s", Seconds(*t - d.start)) : std::string("never");
    };
    std::printf("  %7.0f s %6d pods  %s: shim answered after %s, deployments back after %s%s%s\n",
                Seconds(d.start - t0_), d.at_pod, d.kind.c_str(), after(d.answered).c_str(), after(d.back).c_str(),
                d.note.empty() ? "" : "; ", d.note.c_str());
    std::fflush(stdout);
  }

  const Settings& s_;
  Cri& cri_;
  Shim& shim_;
  dockerclient::DockerClient& docker_;
  Record record_;
  Kubelet kubelet_;
  const std::string log_root_;
  const Clock::time_point t0_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::thread> threads_;  // deployments, garbage collection, housekeeping
  std::mutex samples_mu_;
  std::vector<Sample> samples_;  // guarded by samples_mu_
  std::atomic<int> jobs_succeeded_{0};
  std::atomic<int> logs_compared_{0}, lines_compared_{0};
  std::optional<Sample> baseline_, end_;
  int baseline_pods_ = 0, baseline_start_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  int next_job_ = 0, in_flight_ = 0, completed_ = 0;  // guarded by mu_
  bool paused_ = false, jobs_over_ = false, stopping_ = false;
};

// ---------------------------------------------------------------------------
// What is left on the node.

std::set<std::string> EntriesOf(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.insert(it->path().filename().string());
  return names;
}

// Mount points of nsfs mounts (bind-mounted namespaces) under one of `dirs`.
std::set<std::string> NsfsMountsUnder(const std::vector<std::string>& dirs) {
  std::set<std::string> mounts;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "id parent major:minor root mount-point options ... - fstype source super-options"
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end() || *(dash + 1) != "nsfs") continue;
    for (const std::string& dir : dirs)
      if (!dir.empty() && absl::StartsWith(f[4], dir + "/")) mounts.insert(f[4]);
  }
  return mounts;
}

std::string NetnsOf(const std::string& proc_path) {
  std::error_code ec;
  return fs::read_symlink(proc_path, ec).string();
}

// Network namespaces the process keeps alive besides its own: by an open fd, or by a
// thread that entered one and stayed.
std::vector<std::string> ForeignNetns(pid_t pid) {
  const std::string own = NetnsOf(absl::StrCat("/proc/", pid, "/ns/net"));
  std::vector<std::string> held;
  if (auto files = testsupport::OpenFiles(pid); files.ok())
    for (const std::string& f : *files)
      if (absl::StartsWith(f, "net:[") && f != own) held.push_back("fd " + f);
  std::error_code ec;
  for (fs::directory_iterator it(absl::StrCat("/proc/", pid, "/task"), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ns = NetnsOf(it->path().string() + "/ns/net");
    if (!ns.empty() && ns != own) held.push_back(absl::StrCat("thread ", it->path().filename().string(), " in ", ns));
  }
  return held;
}

struct Check {
  std::string name;
  bool pass;
  std::string detail;
};

std::string Joined(const std::vector<std::string>& v, size_t max = 5) {
  std::vector<std::string> head(v.begin(), v.begin() + std::min(v.size(), max));
  return absl::StrJoin(head, "; ") + (v.size() > max ? absl::StrCat("; ... (", v.size(), " in all)") : "");
}

}  // namespace

int main(int argc, char** argv) {
  // The kubelet's Go client reads each connection on a goroutine of its own. A C++
  // client with no call in flight (they fail at once while the shim is down) reads a new
  // connection's SETTINGS only when its backup poller runs, every 5 s by default: the
  // client's delay, counted as the shim's. Set before gRPC starts.
  ::setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", /*overwrite=*/0);
  Settings s;
  s.pods = bench::EnvInt("DSSOAK_PODS", s.pods);
  std::string chaos_every = "50-150", rollout_every = "10-30";
  bool no_engine_restarts = false, keep = false;
  int64_t seed = -1;
  std::string shim_binary = DOCKERSHIM_BINARY;
  std::vector<std::string> shim_args;
  CLI::App app{"soak_bench: a node's day of pod churn on the dockershim binary, with kills and dockerd restarts"};
  app.add_option("--pods", s.pods, "CronJob-like pods to churn (env DSSOAK_PODS)")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--workers", s.workers, "jobs run at once")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--deployments", s.deployments, "long-running pods")->capture_default_str()->check(CLI::Range(0, 500));
  app.add_option("--seed", seed, "the disruptions' and rollouts' schedule (default: random, printed)");
  app.add_option("--chaos-every", chaos_every, "pods between two disruptions, MIN-MAX")->capture_default_str();
  app.add_option("--rollout-every", rollout_every, "pods between two rollouts, MIN-MAX")->capture_default_str();
  app.add_option("--tail", s.tail, "pods at the end without disruptions (default: max(pods/4, warmup+30))");
  app.add_option("--warmup", s.warmup, "pods after the last disruption before the footprint baseline")->capture_default_str();
  app.add_option("--footprint-every", s.footprint_every, "pods between two footprint lines")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--gc-period", s.gc_period_s, "seconds between garbage collections")->capture_default_str();
  app.add_option("--restart-delay", s.restart_delay_s, "seconds from a kill to the next start (RestartSec)")->capture_default_str();
  app.add_option("--grace", s.grace_s, "seconds after the pods are back that still count as the disruption")->capture_default_str();
  app.add_option("--settle", s.settle_s, "seconds before a footprint comparison reading")->capture_default_str();
  app.add_flag("--no-engine-restarts", no_engine_restarts, "only kill the shim");
  app.add_flag("--keep", keep, "keep the temp dir (the shim's logs are in it) also after a PASS");
  app.add_option("--shim", shim_binary, "the dockershim binary")->capture_default_str();
  app.add_option("--shim-arg", shim_args, "an extra flag for the shim (repeatable)");
  std::string brief;
  app.add_option("--benchmark_min_time", brief, "any value: a brief run (scripts/test.sh BENCH=1)");
  CLI11_PARSE(app, argc, argv);
  auto range = [](const std::string& text, int* lo, int* hi) {
    std::pair<std::string, std::string> p = absl::StrSplit(text, absl::MaxSplits('-', 1));
    return absl::SimpleAtoi(p.first, lo) && absl::SimpleAtoi(p.second, hi) && *lo >= 1 && *hi >= *lo;
  };
  if (!range(chaos_every, &s.chaos_min, &s.chaos_max) || !range(rollout_every, &s.rollout_min, &s.rollout_max)) {
    std::fprintf(stderr, "soak_bench: --chaos-every and --rollout-every take MIN-MAX, e.g. 50-150\n");
    return 2;
  }
  if (!brief.empty()) {
    s.pods = 16, s.workers = 3, s.deployments = 3, s.chaos_min = 3, s.chaos_max = 4, s.warmup = 3, s.tail = 7;
    s.rollout_min = 4, s.rollout_max = 6, s.footprint_every = 4, s.settle_s = 2;
  }
  s.seed = seed >= 0 ? static_cast<uint32_t>(seed) : std::random_device{}();
  if (!no_engine_restarts) s.engine_restart = testenv::EngineCtlCommand("restart");

  std::string tmpl = "/var/tmp/dssoak.XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    std::perror("soak_bench: mkdtemp");
    return 2;
  }
  const std::string dir = tmpl;
  if (!s.engine_restart.empty()) s.engine_restart += " >>" + dir + "/engine-ctl.log 2>&1";
  auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
  auto netns = testsupport::NetworkNamespace::Create();
  auto run = testsupport::PrepareLoadRun(shim_binary, dir, kNamespace, "dssoak0", 1);
  for (const absl::Status& st : {docker.status(), netns.status(), run.status()}) {
    if (!st.ok()) {
      std::fprintf(stderr, "soak_bench: %s\n", st.ToString().c_str());
      return 2;
    }
  }
  auto remove_ours = [&] {
    bench::RemoveContainersNamed(
        **docker, [](std::string_view name) { return name.find(std::string("_") + kNamespace + "_") != std::string_view::npos; },
        "soak_bench");
  };
  remove_ours();  // a killed earlier run

  run->launch.netns_fd = (*netns)->fd();
  run->launch.ready_timeout = absl::Minutes(2);  // the start-up clean-up comes first
  run->launch.args.insert(run->launch.args.end(), shim_args.begin(), shim_args.end());
  const std::string log_root = run->options.log_directory;
  Shim shim(run->launch, dir, s.restart_delay_s);
  if (absl::Status started = shim.Start(); !started.ok()) {
    std::fprintf(stderr, "soak_bench: %s\n", started.ToString().c_str());
    return 2;
  }
  std::string loadavg;
  std::getline(std::ifstream("/proc/loadavg"), loadavg);
  std::printf("soak_bench: seed %u; %d jobs by %d workers, %d deployments; a disruption every %d-%d pods (%s); "
              "rollouts every %d-%d pods\n  shim %s (pid %d) on %s, dir %s\n  machine: %u CPUs, load average %s\n",
              s.seed, s.pods, s.workers, s.deployments, s.chaos_min, s.chaos_max,
              s.engine_restart.empty() ? "kill -9 of the shim only" : "kill -9 of the shim or a dockerd restart",
              s.rollout_min, s.rollout_max, shim_binary.c_str(), shim.pid(), testenv::DockerEndpoint().c_str(),
              dir.c_str(), std::thread::hardware_concurrency(), loadavg.c_str());
  std::fflush(stdout);

  Cri cri(run->launch.socket_path);
  Soak soak(s, cri, shim, **docker, testenv::BusyboxImage(), log_root);
  std::vector<Check> checks;
  const auto t_start = Clock::now();

  if (!soak.StartDeployments()) {
    std::string why;
    soak.DeploymentsUp(&why);
    checks.push_back({"the deployments start", false, why});
  }
  // Docker's netns directory (from a sandbox's SandboxKey) and what is in it that is not
  // the soak's: what must be all that is left at the end.
  std::string netns_dir;
  std::set<std::string> netns_before, nsfs_before;
  const std::vector<std::string> sandboxes = soak.DeploymentSandboxes();
  std::set<std::string> ours;
  for (const std::string& id : sandboxes) {
    auto inspect = (*docker)->InspectContainer(common::Context::WithTimeout(absl::Seconds(30)), id);
    if (!inspect.ok()) continue;
    const std::string key = inspect->raw.value(nlohmann::json::json_pointer("/NetworkSettings/SandboxKey"), std::string());
    if (key.empty()) continue;
    netns_dir = fs::path(key).parent_path().string();
    ours.insert(key);
  }
  for (const std::string& name : EntriesOf(netns_dir))
    if (!ours.count(netns_dir + "/" + name)) netns_before.insert(name);
  for (const std::string& m : NsfsMountsUnder({netns_dir, dir}))
    if (!ours.count(m)) nsfs_before.insert(m);
  std::printf("soak_bench: Docker's netns files in %s; footprint every %d pods:\n",
              netns_dir.empty() ? "(unknown: no sandbox inspected)" : netns_dir.c_str(), s.footprint_every);
  std::fflush(stdout);

  if (checks.empty()) soak.Churn();
  const double churn_s = Seconds(Clock::now() - t_start);

  // Before the final removal: every deployment runs.
  {
    std::string why;
    const bool up = checks.empty() && soak.DeploymentsUp(&why);
    checks.push_back({absl::StrCat("all ", s.deployments, " deployments RUNNING with an IP before the removal"), up, why});
  }
  soak.RemoveEverything();
  std::this_thread::sleep_for(seconds(3));  // whatever the shim would write again, written

  // Nothing of the soak listed by the shim.
  {
    v1::ListPodSandboxRequest list_sandboxes;
    (*list_sandboxes.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListPodSandboxResponse sandboxes_left;
    v1::ListContainersRequest list_containers;
    (*list_containers.mutable_filter()->mutable_label_selector())[kSoakLabel] = "1";
    v1::ListContainersResponse containers_left;
    const bool listed =
        cri.Call("ListPodSandbox", &RuntimeStub::ListPodSandbox, list_sandboxes, &sandboxes_left).ok() &&
        cri.Call("ListContainers", &RuntimeStub::ListContainers, list_containers, &containers_left).ok();
    checks.push_back({"the shim lists no pod or container of the soak",
                      listed && sandboxes_left.items_size() == 0 && containers_left.containers_size() == 0,
                      absl::StrCat(sandboxes_left.items_size(), " pods, ", containers_left.containers_size(),
                                   " containers", listed ? "" : " (a list failed)")});
  }
  if (auto left = testsupport::CountLeftovers(run->places); left.ok()) {
    checks.push_back({"no container or sandbox of the soak in Docker", left->containers == 0, absl::StrCat(left->containers)});
    checks.push_back({"no IP reservation (host-local)", left->ip_allocations == 0, absl::StrCat(left->ip_allocations)});
    checks.push_back({"no CNI cache file", left->cni_cache_files == 0, absl::StrCat(left->cni_cache_files)});
    checks.push_back({"no checkpoint", left->checkpoints == 0, absl::StrCat(left->checkpoints)});
    checks.push_back({"no creation marker", left->creation_markers == 0, absl::StrCat(left->creation_markers)});
  } else {
    checks.push_back({"leftovers counted", false, left.status().ToString()});
  }
  {
    // Docker unmounts a sandbox's namespace when it goes and deletes the empty file later
    // (libnetwork's clean-up of unmounted paths runs every 60 s): a file still mounted is
    // a namespace left, an empty one is not.
    std::vector<std::string> netns_left;
    const std::set<std::string> mounted = NsfsMountsUnder({netns_dir, dir});
    for (const std::string& m : mounted)
      if (!nsfs_before.count(m)) netns_left.push_back("nsfs mount " + m);
    int unmounted = 0;
    for (const std::string& name : EntriesOf(netns_dir))
      unmounted += !netns_before.count(name) && !mounted.count(netns_dir + "/" + name);
    if (shim.pid() > 0)
      for (const std::string& held : ForeignNetns(shim.pid())) netns_left.push_back("the shim's " + held);
    checks.push_back({"no netns left (nsfs mounts in Docker's netns directory, held by the shim)",
                      !netns_dir.empty() && netns_left.empty(),
                      netns_dir.empty() ? "Docker's netns directory unknown"
                      : netns_left.empty()
                          ? absl::StrCat(unmounted, " unmounted files in ", netns_dir, " wait for Docker's periodic removal")
                          : Joined(netns_left)});
  }
  {
    std::vector<std::string> open_logs, deleted;
    if (auto files = testsupport::OpenFiles(shim.pid()); files.ok()) {
      for (const std::string& f : *files) {
        if (absl::StartsWith(f, log_root + "/")) open_logs.push_back(f);
        if (absl::EndsWith(f, " (deleted)")) deleted.push_back(f);
      }
    } else {
      open_logs.push_back(files.status().ToString());
    }
    checks.push_back({"no log file the shim holds open", open_logs.empty(), Joined(open_logs)});
    checks.push_back({"no deleted file the shim holds open", deleted.empty(), Joined(deleted)});
    const std::vector<std::string> logs_left = Kubelet::FilesUnder(log_root);
    checks.push_back({"no CRI log file or directory left", logs_left.empty(), Joined(logs_left)});
  }
  const std::optional<testsupport::Footprint> base = soak.baseline() ? soak.baseline()->footprint : std::nullopt;
  const std::optional<testsupport::Footprint> end = soak.end() ? soak.end()->footprint : std::nullopt;
  if (base && end && shim.starts() == soak.baseline_start()) {
    std::map<std::string, int> grew;  // open files by kind: how many more at the end
    for (const auto& [kind, n] : soak.end()->open_files) {
      auto it = soak.baseline()->open_files.find(kind);
      const int before = it == soak.baseline()->open_files.end() ? 0 : it->second;
      if (n > before) grew[kind] = n - before;
    }
    int pooled = kDockerPoolMax;
    for (const char* kind : kDockerConnectionFds) pooled = std::min(pooled, grew[kind]);
    std::vector<std::string> more;
    for (const auto& [kind, n] : grew) {
      const bool pool_part = std::find_if(std::begin(kDockerConnectionFds), std::end(kDockerConnectionFds),
                                          [&kind](const char* k) { return kind == k; }) != std::end(kDockerConnectionFds);
      if (n - (pool_part ? pooled : 0) > 0) more.push_back(absl::StrCat(kind, " +", n - (pool_part ? pooled : 0)));
    }
    const int unexplained = end->fds - base->fds - 4 * pooled;
    const std::string when = absl::StrCat(" (baseline after pod ", soak.baseline_pods(), ", shim start #", soak.baseline_start(), ")");
    checks.push_back({"no fd left over" + when, unexplained <= 0,
                      absl::StrCat(base->fds, " -> ", end->fds,
                                   pooled > 0 ? absl::StrCat("; ", pooled, " more idle Docker connections (4 fds each)") : "",
                                   more.empty() ? "" : "; more: ", Joined(more, 10))});
    checks.push_back({"no thread left over" + when, end->threads <= base->threads + testsupport::kThreadSlack,
                      absl::StrCat(base->threads, " -> ", end->threads)});
    checks.push_back({"RSS within 10%" + when, end->rss_kb <= base->rss_kb * 11 / 10 && end->rss_kb >= base->rss_kb * 9 / 10,
                      absl::StrFormat("%.1f MB -> %.1f MB (%+.1f%%)", base->rss_kb / 1024.0, end->rss_kb / 1024.0,
                                      100.0 * (end->rss_kb - base->rss_kb) / base->rss_kb)});
  } else {
    checks.push_back({"footprint compared", false, "no baseline or end reading of the same process"});
  }

  // Calls and incidents: in a disruption's window or not.
  const std::vector<Disruption> disruptions = soak.record().disruptions();
  const auto grace = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s.grace_s));
  std::map<std::string, std::map<grpc::StatusCode, int>> failed_during, failed_outside;
  std::vector<int> failed_per_disruption(disruptions.size());
  std::map<std::pair<std::string, grpc::StatusCode>, std::string> first_during;  // the first message of each
  std::vector<std::string> bugs;
  for (const Cri::Failure& f : cri.failures()) {
    const int d = soak.record().During(f.start, f.end, grace);
    if (d >= 0) {
      ++failed_during[f.rpc][f.code];
      ++failed_per_disruption[d];
      first_during.emplace(std::make_pair(f.rpc, f.code), f.message);
    } else {
      ++failed_outside[f.rpc][f.code];
      bugs.push_back(absl::StrFormat("%.1f s: %s: %s: %s", Seconds(f.start - t_start), f.rpc, CodeName(f.code), f.message));
    }
  }
  std::vector<std::string> incidents_during, incidents_outside;
  std::map<std::string, int> kinds_during;
  for (const Incident& i : soak.record().incidents()) {
    const std::string line = absl::StrFormat("%.1f s: %s", Seconds(i.at - t_start), i.what);
    if (i.expected_in_disruptions && soak.record().During(i.at, i.at, grace) >= 0) {
      incidents_during.push_back(line);
      ++kinds_during[i.kind];
    } else {
      incidents_outside.push_back(line);
    }
  }
  checks.push_back({"no call failed outside the disruptions", bugs.empty(), Joined(bugs)});
  checks.push_back({"no repair or lost log line outside the disruptions", incidents_outside.empty(), Joined(incidents_outside)});
  checks.push_back({"every job exited 0", soak.jobs_succeeded() == s.pods, absl::StrCat(soak.jobs_succeeded(), " of ", s.pods)});
  const bool all_back = std::all_of(disruptions.begin(), disruptions.end(), [](const Disruption& d) { return d.back.has_value(); });
  checks.push_back({"the deployments came back after every disruption", all_back, ""});

  {
    auto code = shim.Stop();
    checks.push_back({"the shim exits 0 on SIGTERM", code.ok() && *code == 0,
                      code.ok() ? absl::StrCat("exit ", *code) : code.status().ToString()});
  }

  // Figures.
  std::getline(std::ifstream("/proc/loadavg"), loadavg);
  std::printf("\nsoak_bench: %d jobs in %.0f s (%.2f pods/s), %d rollouts, %d shim starts; load average at the end %s\n",
              s.pods, churn_s, s.pods / std::max(1.0, churn_s), soak.rollouts(), shim.starts(), loadavg.c_str());
  std::printf("  garbage collection removed %d containers, %d sandboxes, %d pod log directories\n",
              soak.kubelet().gc_containers(), soak.kubelet().gc_sandboxes(), soak.kubelet().gc_log_dirs());
  std::printf("  %d jobs exited 0, each one's CRI log looked at for its last line; %d deployment containers' CRI logs "
              "matched Docker's (%d lines)\n",
              soak.jobs_succeeded(), soak.logs_compared(), soak.lines_compared());
  std::printf("\nDisruptions (seed %u)\n  %3s %-16s %8s %8s %14s %14s %8s %s\n", s.seed, "#", "kind", "at pod", "at s",
              "answered (s)", "pods back (s)", "failed", "");
  for (size_t i = 0; i < disruptions.size(); ++i) {
    const Disruption& d = disruptions[i];
    auto after = [&](const std::optional<Clock::time_point>& t) { return t ? Seconds(*t - d.start) : -1.0; };
    std::printf("  %3zu %-16s %8d %8.0f %14.1f %14.1f %8d %s\n", i + 1, d.kind.c_str(), d.at_pod,
                Seconds(d.start - t_start), after(d.answered), after(d.back), failed_per_disruption[i],
                d.failed_starts ? absl::StrCat(d.failed_starts, " failed starts: ", d.note).c_str() : d.note.c_str());
  }
  auto codes = [](const std::map<grpc::StatusCode, int>& m) {
    std::vector<std::string> parts;
    for (const auto& [code, n] : m) parts.push_back(absl::StrCat(n, " ", CodeName(code)));
    return parts.empty() ? std::string("-") : absl::StrJoin(parts, ", ");
  };
  std::printf("\nCalls (ms; failures in a disruption's window apart from the others)\n  %-22s %7s %8s %8s %8s  %-36s %s\n",
              "RPC", "calls", "p50", "p99", "max", "failed in disruptions", "failed outside");
  for (const auto& [rpc, ms] : cri.latencies_ms()) {
    std::printf("  %-22s %7zu %8.1f %8.1f %8.1f  %-36s %s\n", rpc.c_str(), ms.size(), bench::Percentile(ms, 50),
                bench::Percentile(ms, 99), bench::Percentile(ms, 100), codes(failed_during[rpc]).c_str(),
                codes(failed_outside[rpc]).c_str());
  }
  std::printf("  the first message of each in disruptions:\n");
  for (const auto& [key, message] : first_during)
    std::printf("    %s %s: %s\n", key.first.c_str(), CodeName(key.second).c_str(), message.substr(0, 240).c_str());
  std::vector<std::string> kind_counts;
  for (const auto& [kind, n] : kinds_during) kind_counts.push_back(absl::StrCat(n, " ", kind));
  std::printf("\nRepairs during disruptions: %s\n",
              kind_counts.empty() ? "none" : absl::StrJoin(kind_counts, ", ").c_str());
  for (size_t i = 0; i < std::min<size_t>(incidents_during.size(), 10); ++i)
    std::printf("  %s\n", incidents_during[i].c_str());
  if (incidents_during.size() > 10) std::printf("  ...\n");
  if (!bugs.empty() || !incidents_outside.empty()) {
    std::printf("\nOutside the disruptions\n");
    for (size_t i = 0; i < std::min<size_t>(bugs.size(), 40); ++i) std::printf("  %s\n", bugs[i].c_str());
    for (const std::string& line : incidents_outside) std::printf("  %s\n", line.c_str());
  }
  std::printf("\nShim footprint (RSS MB, anon MB, fds, threads)\n");
  for (const Sample& sample : soak.samples()) {
    if (!sample.footprint) continue;
    std::printf("  %7.0f s %6d pods  start #%d  %6.1f %6.1f %5d %4d\n", sample.at_s, sample.pods, sample.shim_start,
                sample.footprint->rss_kb / 1024.0, sample.footprint->anon_kb / 1024.0, sample.footprint->fds,
                sample.footprint->threads);
  }

  std::printf("\nThe shim's log (WARN and ERROR lines per start; the first ERROR lines)\n");
  for (int n = 1; n <= shim.starts(); ++n) {
    std::ifstream in(absl::StrCat(dir, "/shim.", n, "/stderr"));
    int warn = 0, error = 0;
    std::vector<std::string> errors;
    for (std::string line; std::getline(in, line);) {
      warn += absl::StrContains(line, " WARN ");
      if (absl::StrContains(line, " ERROR ") && ++error <= 3) errors.push_back(line.substr(0, 300));
    }
    std::printf("  start #%d: %d WARN, %d ERROR\n", n, warn, error);
    for (const std::string& e : errors) std::printf("    %s\n", e.c_str());
  }

  std::printf("\nChecks\n");
  bool pass = true;
  for (const Check& c : checks) {
    pass = pass && c.pass;
    std::printf("  %s  %s%s%s\n", c.pass ? "PASS" : "FAIL", c.name.c_str(), c.detail.empty() ? "" : ": ", c.detail.c_str());
  }
  remove_ours();
  if (keep || !pass) {
    std::printf("kept %s\n", dir.c_str());
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::printf("\nsoak_bench: %s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}

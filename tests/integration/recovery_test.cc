// The shim binary losing its state and its Docker: kill -9 with pods running (CNI
// networking, log copies), kill -9 in the middle of a burst of RunPodSandbox calls,
// and dockerd going away and coming back under a running shim.
#include <grpcpp/grpcpp.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/cri.h"
#include "shim/checkpoint_store.h"
#include "tests/integration/cri_client.h"
#include "tests/integration/env.h"
#include "tests/integration/logs_env.h"
#include "tests/integration/event_watch.h"
#include "tests/integration/shell.h"
#include "tests/integration/daemon.h"
#include "tests/integration/unix_proxy.h"

namespace {

namespace fs = std::filesystem;
namespace v1 = runtime::v1;
using ::testing::HasSubstr;
using testenv::Sh;
using testenv::Daemon;
using testenv::ReadFile;
using Clock = std::chrono::steady_clock;

std::map<std::string, std::string> AsMap(const google::protobuf::Map<std::string, std::string>& m) {
  return {m.begin(), m.end()};
}

std::unique_ptr<grpc::ClientContext> Ctx(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  return ctx;
}

// The lines of a CRI log file's stdout entries.
std::vector<std::string> LogTexts(const std::string& log) {
  std::vector<std::string> texts;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    const size_t at = line.find(" stdout F ");
    texts.push_back(at == absl::string_view::npos ? "<not a CRI line> " + std::string(line)
                                                  : std::string(line.substr(at + 10)));
  }
  return texts;
}

// "" when `texts` is line-0, line-1, ... line-(n-1) each once in order; else what is wrong.
std::string CheckNumbered(const std::vector<std::string>& texts) {
  for (size_t i = 0; i < texts.size(); ++i)
    if (texts[i] != absl::StrCat("line-", i)) return absl::StrCat("entry ", i, " is \"", texts[i], "\"");
  return "";
}

// A shim on CNI (bridge dsbr<N>, host-local in the test's dir) under a root directory
// that survives restarts of the binary.
class RecoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int next = 0;
    n_ = 210 + (next++ % 10);
    bridge_ = absl::StrCat("dsbr", n_);
    network_ = absl::StrCat("dstest-recnet-", n_);
    std::mt19937 rng{std::random_device{}()};
    namespace_ = absl::StrCat("dstest-rec-", n_, "-", rng() % 100000);
    Sh("docker ps -aq --filter name=_dstest-rec-" + std::to_string(n_) + "- | xargs -r docker rm -f");
    Sh("ip link del " + bridge_);
    dir_ = fs::temp_directory_path() / absl::StrCat("dsrecovery-", getpid(), "-", n_);
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "net.d");
    std::ofstream(dir_ / "net.d" / "10-rec.conflist") << absl::StrCat(
        R"({"cniVersion": "1.0.0", "name": ")", network_, R"(", "plugins": [{"type": "bridge", "bridge": ")", bridge_,
        R"(", "isGateway": true, "ipMasq": false, "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.)", n_,
        R"(.0/24"}]], "dataDir": ")", (dir_ / "ipam").string(), R"("}}]})");
    socket_ = (dir_ / "shim.sock").string();
  }
  void TearDown() override {
    shim_.reset();
    // App containers first: a shell as PID 1 ignores SIGTERM and would cost each stop its grace period.
    Sh("docker ps -q --filter name=_" + namespace_ + "_ --filter label=io.kubernetes.docker.type=container | xargs -r docker kill");
    if (!pods_.empty()) {
      Daemon d(dir_, ServeArgs());
      if (WaitForSocket()) {
        // Best effort: the docker rm -f below removes what is left. All at once, as for
        // the stops in the test.
        std::vector<std::thread> removers;
        for (const std::string& id : pods_) removers.emplace_back([&, id] { (void)cri_->RemovePodSandbox(id); });
        for (std::thread& t : removers) t.join();
      }
    }
    Sh("docker ps -aq --filter name=_" + namespace_ + "_ | xargs -r docker rm -f");
    Sh("ip link del " + bridge_);
    fs::remove_all(dir_);
    Mark("torn down");
  }

  std::vector<std::string> ServeArgs(const std::string& docker_endpoint = testenv::DockerEndpoint()) {
    return {"--container-runtime-endpoint", "unix://" + socket_, "--docker-endpoint", docker_endpoint,
            "--network-plugin", "cni", "--cni-bin-dir", testenv::CniBinDir(), "--cni-conf-dir",
            (dir_ / "net.d").string(), "--cni-cache-dir", (dir_ / "cache").string(), "--root-directory",
            (dir_ / "root").string(), "--pod-infra-container-image", testenv::PauseImage(), "--log-level", "debug",
            testenv::LogsFromFilesFlag()};
  }
  void StartShim(const std::string& docker_endpoint = testenv::DockerEndpoint()) {
    ::unlink(socket_.c_str());
    const auto t0 = Clock::now();
    shim_ = std::make_unique<Daemon>(dir_, ServeArgs(docker_endpoint));
    ASSERT_TRUE(WaitForSocket()) << shim_->Stderr();
    std::printf("shim serving %lld ms after its start\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  }
  bool WaitForSocket() {
    // 30 s: the start-up clean-up runs before the socket appears.
    if (!testenv::WaitForSocket(socket_, std::chrono::seconds(30))) return false;
    cri_.emplace(socket_, std::chrono::seconds(60));
    return true;
  }

  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_metadata()->set_namespace_(namespace_);
    pod.mutable_metadata()->set_uid("uid-" + name);
    (*pod.mutable_labels())["app"] = name;
    (*pod.mutable_annotations())["recovery/pod"] = "annotation of " + name;
    pod.set_log_directory((dir_ / "logs" / name).string());
    pod.mutable_linux();
    return pod;
  }
  // RunPodSandbox; "" on failure (reported).
  std::string RunPod(const v1::PodSandboxConfig& pod) {
    std::string id;
    if (grpc::Status s = cri_->RunPodSandbox(pod, &id); !s.ok()) {
      ADD_FAILURE() << "RunPodSandbox " << pod.metadata().name() << ": " << s.error_message();
      return "";
    }
    pods_.push_back(id);
    return id;
  }
  // A running busybox container in the pod running `script`, its log at <pod log dir>/<name>.log.
  std::string RunContainer(const std::string& pod_id, const v1::PodSandboxConfig& pod, const std::string& name,
                           const std::string& script) {
    v1::ContainerConfig c = testenv::BusyboxContainer(name, {"sh", "-c", script});
    c.set_log_path(name + ".log");
    (*c.mutable_labels())["container-label"] = name;
    (*c.mutable_annotations())["recovery/container"] = "annotation of " + name;
    std::string id;
    if (grpc::Status s = cri_->CreateAndStartContainer(pod_id, pod, c, &id); !s.ok()) {
      ADD_FAILURE() << s.error_message();
      return "";
    }
    return id;
  }
  absl::StatusOr<v1::PodSandboxStatus> PodStatus(const std::string& id) {
    v1::PodSandboxStatusRequest req;
    req.set_pod_sandbox_id(id);
    v1::PodSandboxStatusResponse resp;
    grpc::Status s = cri_->runtime().PodSandboxStatus(Ctx().get(), req, &resp);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return resp.status();
  }
  // A failed call's code and message, and the end of the running shim's log.
  std::string Why(const grpc::Status& s) const {
    const std::string log = shim_ ? shim_->Stderr() : "";
    return absl::StrCat("code ", s.error_code(), ": ", s.error_message(), "\nend of the shim's log:\n",
                        log.substr(log.size() > 4000 ? log.size() - 4000 : 0));
  }
  fs::path IpFile(const std::string& ip) const { return dir_ / "ipam" / network_ / ip; }
  // host-local's allocations: IP -> container ID.
  std::map<std::string, std::string> Allocations() const {
    std::map<std::string, std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_ / "ipam" / network_, ec)) {
      const std::string name = e.path().filename().string();
      if (!absl::StartsWith(name, "10.99.")) continue;
      std::string text = ReadFile(e.path());
      out[name] = text.substr(0, text.find_first_of("\r\n"));
    }
    return out;
  }
  std::vector<std::string> Files(const fs::path& dir) const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  // docker ps -a of this test's infra containers: ID -> state.
  std::map<std::string, std::string> InfraContainers() const {
    std::map<std::string, std::string> out;
    const std::string ps = Sh("docker ps -a --no-trunc --filter name=_" + namespace_ +
                              "_ --filter label=io.kubernetes.docker.type=podsandbox --format '{{.ID}} {{.State}}'");
    for (absl::string_view line : absl::StrSplit(ps, '\n', absl::SkipEmpty())) {
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() == 2) out[f[0]] = f[1];
    }
    return out;
  }

  // Prints the test's time so far and the step's since the last mark: where the time
  // goes on a slow machine (an emulated VM).
  void Mark(const std::string& step) {
    const auto now = Clock::now();
    const auto ms = [](Clock::duration d) {
      return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
    };
    std::printf("[ step %7.1f s ] %s (%lld ms)\n", ms(now - started_) / 1000.0, step.c_str(), ms(now - last_mark_));
    std::fflush(stdout);
    last_mark_ = now;
  }

  const Clock::time_point started_ = Clock::now();
  Clock::time_point last_mark_ = started_;
  int n_ = 0;
  std::string bridge_, network_, namespace_, socket_;
  fs::path dir_;
  std::unique_ptr<Daemon> shim_;
  std::optional<testenv::CriClient> cri_;  // on the socket of the shim that runs
  std::vector<std::string> pods_;  // removed in TearDown
};

TEST_F(RecoveryTest, KillNineWithTwentyPodsLosesNoPodNoAddressAndNoLogLine) {
  constexpr int kPods = 20;
  // Ten lines a second, five at a time: lines are in flight at the kill, during the restart
  // and after it. A usleep after every line (1000 forks a second for the 20 pods) was
  // what the test cost in an emulated VM: pods took 41-72 s each to start from the sixth
  // on, instead of 10 s. 15 minutes of lines at most (9000): a writer outlives a test
  // that ctest kills, and would load the tests after it.
  const std::string writer =
      "i=0; while [ $i -lt 9000 ]; do for j in 1 2 3 4 5; do echo line-$i; i=$((i+1)); done; usleep 500000; done; "
      "sleep 600";
  // Lines that reach the CRI logs after the restart, besides those of before: the copies
  // resumed. Waited for rather than slept on: 5 s of lines on the host.
  constexpr size_t kLinesAfterRestart = 50;
  ASSERT_NO_FATAL_FAILURE(StartShim());
  struct Before {
    v1::PodSandboxConfig config;
    std::string pod_id, container_id, ip;
  };
  std::vector<Before> pods;
  for (int i = 0; i < kPods; ++i) {
    Before b;
    b.config = Pod(absl::StrCat("p", i));
    b.pod_id = RunPod(b.config);
    ASSERT_FALSE(b.pod_id.empty());
    b.container_id = RunContainer(b.pod_id, b.config, "app", writer);
    ASSERT_FALSE(b.container_id.empty());
    auto status = PodStatus(b.pod_id);
    ASSERT_TRUE(status.ok()) << status.status();
    b.ip = status->network().ip();
    ASSERT_TRUE(absl::StartsWith(b.ip, absl::StrCat("10.99.", n_, "."))) << b.ip;
    ASSERT_TRUE(fs::exists(IpFile(b.ip)));
    pods.push_back(b);
    Mark(absl::StrCat("pod ", i, " and its writer running"));
  }
  const auto log_of = [&](const Before& b) { return dir_ / "logs" / b.config.metadata().name() / "app.log"; };
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (const Before& b : pods) ASSERT_GT(LogTexts(ReadFile(log_of(b))).size(), 0u) << "no log copy before the kill";

  Mark("every log copy under way");
  shim_.reset();  // SIGKILL
  // While it is down, pod 0 loses its containers behind its back.
  const Before& vanished = pods[0];
  Sh("docker rm -f " + vanished.container_id + " " + vanished.pod_id);
  std::map<std::string, size_t> lines_at_restart;
  for (const Before& b : pods) lines_at_restart[b.pod_id] = LogTexts(ReadFile(log_of(b))).size();
  std::this_thread::sleep_for(std::chrono::seconds(1));

  Mark("killed; pod 0 removed behind its back");
  ASSERT_NO_FATAL_FAILURE(StartShim());
  Mark("restarted");
  v1::ListPodSandboxRequest list;
  v1::ListPodSandboxResponse listed;
  grpc::Status listing = cri_->runtime().ListPodSandbox(Ctx().get(), list, &listed);
  ASSERT_TRUE(listing.ok()) << Why(listing);
  std::map<std::string, v1::PodSandbox> by_id;
  for (const auto& p : listed.items()) by_id[p.id()] = p;
  v1::ListContainersRequest list_containers;
  v1::ListContainersResponse containers;
  listing = cri_->runtime().ListContainers(Ctx().get(), list_containers, &containers);
  ASSERT_TRUE(listing.ok()) << Why(listing);
  std::map<std::string, v1::Container> container_by_id;
  for (const auto& c : containers.containers()) container_by_id[c.id()] = c;

  for (const Before& b : pods) {
    SCOPED_TRACE(b.config.metadata().name());
    ASSERT_TRUE(by_id.count(b.pod_id)) << "pod not listed after the restart";
    const v1::PodSandbox& listed_pod = by_id[b.pod_id];
    EXPECT_EQ(listed_pod.metadata().uid(), b.config.metadata().uid());
    if (b.pod_id == vanished.pod_id) {
      EXPECT_EQ(listed_pod.state(), v1::SANDBOX_NOTREADY);
      EXPECT_FALSE(container_by_id.count(b.container_id));
      continue;
    }
    EXPECT_EQ(listed_pod.state(), v1::SANDBOX_READY);
    EXPECT_EQ(AsMap(listed_pod.labels()).at("app"), b.config.metadata().name());
    EXPECT_EQ(AsMap(listed_pod.annotations()), AsMap(b.config.annotations()));
    auto status = PodStatus(b.pod_id);
    ASSERT_TRUE(status.ok()) << status.status();
    EXPECT_EQ(status->state(), v1::SANDBOX_READY);
    EXPECT_EQ(status->network().ip(), b.ip);
    ASSERT_TRUE(container_by_id.count(b.container_id));
    const v1::Container& c = container_by_id[b.container_id];
    EXPECT_EQ(c.state(), v1::CONTAINER_RUNNING);
    EXPECT_EQ(c.pod_sandbox_id(), b.pod_id);
    EXPECT_EQ(AsMap(c.labels()).at("container-label"), "app");
    EXPECT_EQ(AsMap(c.annotations()).at("recovery/container"), "annotation of app");
  }

  Mark("pods and containers listed and checked");
  // Log copies resumed: new lines arrive; once the writers stop, each CRI log holds
  // exactly what Docker logged, each line once.
  for (const Before& b : pods) {
    if (b.pod_id == vanished.pod_id) continue;
    for (auto until = Clock::now() + std::chrono::seconds(120); Clock::now() < until;) {
      if (LogTexts(ReadFile(log_of(b))).size() > lines_at_restart[b.pod_id] + kLinesAfterRestart) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  Mark("new lines in every log copy");
  // All at once, as the kubelet stops the containers of different pods: one after the
  // other took 11.5 s each on Docker 29 in an emulated VM, 218 s for the 19.
  std::vector<grpc::Status> stops(pods.size());
  std::vector<std::thread> stoppers;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i].pod_id == vanished.pod_id) continue;
    stoppers.emplace_back([&, i] { stops[i] = cri_->StopContainer(pods[i].container_id, 0); });
  }
  for (std::thread& t : stoppers) t.join();
  for (const grpc::Status& stopped : stops) ASSERT_TRUE(stopped.ok()) << Why(stopped);
  Mark("writers stopped");
  for (const Before& b : pods) {
    if (b.pod_id == vanished.pod_id) continue;
    SCOPED_TRACE(b.config.metadata().name());
    const std::string docker_log = Sh("docker logs " + b.container_id + " 2>/dev/null");
    const size_t logged = std::count(docker_log.begin(), docker_log.end(), '\n');
    std::vector<std::string> texts;
    for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until;) {
      texts = LogTexts(ReadFile(log_of(b)));
      if (texts.size() >= logged) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(texts.size(), logged);
    EXPECT_EQ(CheckNumbered(texts), "");
    EXPECT_GT(texts.size(), lines_at_restart[b.pod_id] + kLinesAfterRestart)
        << "lines written after the restart did not arrive";
  }

  Mark("log copies compared with docker logs");
  // The vanished pod's address is still allocated until the kubelet stops it.
  ASSERT_TRUE(fs::exists(IpFile(vanished.ip)));
  grpc::Status s = cri_->StopPodSandbox(vanished.pod_id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(fs::exists(IpFile(vanished.ip))) << "host-local still holds " << vanished.ip;
  EXPECT_TRUE(fs::exists(dir_ / "root" / "sandbox" / vanished.pod_id));
  grpc::Status removed = cri_->RemovePodSandbox(vanished.pod_id);
  ASSERT_TRUE(removed.ok()) << Why(removed);
  EXPECT_FALSE(fs::exists(dir_ / "root" / "sandbox" / vanished.pod_id));
  EXPECT_FALSE(fs::exists(dir_ / "cache" / "results" / (network_ + "-" + vanished.pod_id + "-eth0")));
  // The others keep theirs.
  for (const Before& b : pods) {
    if (b.pod_id != vanished.pod_id) {
      EXPECT_TRUE(fs::exists(IpFile(b.ip))) << b.ip;
    }
  }
  Mark("the vanished pod stopped and removed");
}

TEST_F(RecoveryTest, KillNineDuringABurstOfRunPodSandboxLeavesNothingHalfCreatedAfterTheNextStart) {
  ASSERT_NO_FATAL_FAILURE(StartShim());
  // A pod that will vanish entirely (container and checkpoint) while the shim is down:
  // its address and CNI cache entry are then nobody's.
  const std::string orphan = RunPod(Pod("orphan"));
  ASSERT_FALSE(orphan.empty());
  auto orphan_status = PodStatus(orphan);
  ASSERT_TRUE(orphan_status.ok());
  const std::string orphan_ip = orphan_status->network().ip();

  constexpr int kBurst = 12;
  std::vector<std::thread> callers;
  std::atomic<int> succeeded{0};
  for (int i = 0; i < kBurst; ++i) {
    callers.emplace_back([this, i, &succeeded, channel = cri_->channel()] {
      auto stub = v1::RuntimeService::NewStub(channel);
      v1::RunPodSandboxRequest run;
      *run.mutable_config() = Pod(absl::StrCat("burst", i));
      v1::RunPodSandboxResponse ran;
      if (stub->RunPodSandbox(Ctx().get(), run, &ran).ok()) ++succeeded;
    });
  }
  // Kill once a few are complete, the others still under way.
  for (auto until = Clock::now() + std::chrono::seconds(30); Clock::now() < until;) {
    if (succeeded.load() >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  shim_.reset();  // SIGKILL
  for (auto& t : callers) t.join();
  Sh("docker rm -f " + orphan);
  fs::remove(dir_ / "root" / "sandbox" / orphan);
  // More artefacts by hand: an infra container created and never started, a pending
  // checkpoint of a container that does not exist, and a corrupt checkpoint set aside long ago.
  const std::string never_started(absl::StripAsciiWhitespace(Sh(absl::StrCat(
      "docker create --label io.kubernetes.docker.type=podsandbox --label io.kubernetes.container.name=POD --name k8s_POD_hand_",
      namespace_, "_uid-hand_0 ", testenv::PauseImage()))));
  ASSERT_EQ(never_started.size(), 64u) << never_started;
  // What RunPodSandbox leaves for its own until the checkpoint is written.
  fs::create_directories(dir_ / "root" / "creating");
  std::ofstream(dir_ / "root" / "creating" / ("k8s_POD_hand_" + namespace_ + "_uid-hand_0"));
  shim::SandboxCheckpoint pending;
  pending.sandbox_id = std::string(64, 'a');
  pending.name = "ghost";
  pending.namespace_ = namespace_;
  pending.uid = "uid-ghost";
  pending.network_plugin = "cni";
  pending.pending = true;
  std::ofstream(dir_ / "root" / "sandbox" / pending.sandbox_id) << shim::EncodeCheckpoint(pending);
  const fs::path corrupt = dir_ / "root" / "sandbox" / (std::string(64, 'b') + ".corrupt");
  std::ofstream(corrupt) << "{";
  fs::last_write_time(corrupt, fs::file_time_type::clock::now() - std::chrono::hours(8 * 24));

  const std::map<std::string, std::string> infra_before = InfraContainers();
  const std::map<std::string, std::string> allocations_before = Allocations();
  std::printf("after the kill: %d of %d RunPodSandbox calls had succeeded; %zu infra containers (", succeeded.load(),
              kBurst, infra_before.size());
  for (const auto& [id, state] : infra_before) std::printf("%s ", state.c_str());
  std::printf("), %zu checkpoints, %zu addresses allocated, %zu CNI cache entries\n",
              Files(dir_ / "root" / "sandbox").size(), allocations_before.size(),
              Files(dir_ / "cache" / "results").size());
  ASSERT_TRUE(allocations_before.count(orphan_ip));

  ASSERT_NO_FATAL_FAILURE(StartShim());
  const std::map<std::string, std::string> infra = InfraContainers();
  v1::ListPodSandboxRequest list;
  v1::ListPodSandboxResponse listed;
  grpc::Status listing = cri_->runtime().ListPodSandbox(Ctx().get(), list, &listed);
  ASSERT_TRUE(listing.ok()) << Why(listing);
  std::set<std::string> ready;
  for (const auto& p : listed.items()) {
    if (p.metadata().namespace_() != namespace_) continue;
    EXPECT_EQ(p.state(), v1::SANDBOX_READY) << p.id() << " is listed but not ready";
    ready.insert(p.id());
    pods_.push_back(p.id());
  }
  std::printf("after the restart: %zu infra containers, %zu ready pods, %zu checkpoints, %zu addresses, %zu cache entries\n",
              infra.size(), ready.size(), Files(dir_ / "root" / "sandbox").size(), Allocations().size(),
              Files(dir_ / "cache" / "results").size());
  for (const auto& [id, state] : infra) {
    EXPECT_EQ(state, "running") << id;
    EXPECT_TRUE(ready.count(id)) << id << " has an infra container but is not a ready pod";
  }
  EXPECT_FALSE(infra.count(never_started));
  for (const std::string& name : Files(dir_ / "root" / "sandbox")) {
    EXPECT_TRUE(ready.count(name)) << "checkpoint " << name << " of no ready pod";
    shim::CheckpointStore store((dir_ / "root").string());
    auto c = store.Read(name);
    if (c.ok()) {
      EXPECT_FALSE(c->pending) << name;
    }
  }
  for (const auto& [ip, id] : Allocations()) EXPECT_TRUE(ready.count(id)) << ip << " is still allocated to " << id;
  for (const std::string& name : Files(dir_ / "cache" / "results")) {
    bool ours = std::any_of(ready.begin(), ready.end(), [&](const std::string& id) { return absl::StrContains(name, id); });
    EXPECT_TRUE(ours) << "CNI cache entry " << name << " of no ready pod";
  }
  EXPECT_FALSE(fs::exists(corrupt));
  // The pods that made it are whole: each has its address.
  for (const std::string& id : ready) {
    auto status = PodStatus(id);
    ASSERT_TRUE(status.ok());
    EXPECT_TRUE(fs::exists(IpFile(status->network().ip()))) << id;
  }
}

// Whether `watch` got an event of `type` about container `id` (it waits up to 60 s).
bool Saw(testenv::EventWatch& watch, const std::string& id, v1::ContainerEventType type) {
  const auto has = [type](const std::vector<v1::ContainerEventResponse>& events) {
    return std::any_of(events.begin(), events.end(), [type](const auto& e) { return e.container_event_type() == type; });
  };
  return has(watch.Of(id, has));
}

// What the kubelet sees while dockerd is away and after it returns; `take_down` and
// `bring_back` do it, `endpoint` is what the shim was given.
class DockerOutageTest : public RecoveryTest {
 protected:
  void RunOutage(const std::string& endpoint, const std::function<void()>& take_down,
                 const std::function<void()>& bring_back) {
    ASSERT_NO_FATAL_FAILURE(StartShim(endpoint));
    v1::PodSandboxConfig pod = Pod("outage");
    const std::string pod_id = RunPod(pod);
    ASSERT_FALSE(pod_id.empty());
    testenv::EventWatch events(cri_->channel());
    const std::string before = RunContainer(pod_id, pod, "before", "sleep 600");
    ASSERT_FALSE(before.empty());
    ASSERT_TRUE(Saw(events, before, v1::CONTAINER_STARTED_EVENT));
    v1::VersionResponse version;  // as the kubelet asks at its start
    ASSERT_TRUE(cri_->runtime().Version(Ctx(std::chrono::seconds(5)).get(), v1::VersionRequest(), &version).ok());
    const std::string docker_version = version.runtime_version();
    ASSERT_FALSE(docker_version.empty());

    take_down();
    const std::string socket_path = endpoint.substr(endpoint.find("://") + 3);
    // Status: RuntimeReady=false with the reason, within 1 s.
    auto t0 = Clock::now();
    v1::StatusResponse status;
    grpc::Status s = cri_->runtime().Status(Ctx(std::chrono::seconds(1)).get(), v1::StatusRequest(), &status);
    const auto status_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_GE(status.status().conditions_size(), 1);
    EXPECT_EQ(status.status().conditions(0).type(), "RuntimeReady");
    EXPECT_FALSE(status.status().conditions(0).status());
    EXPECT_EQ(status.status().conditions(0).reason(), "DockerDaemonNotReady");
    // Version answers (the kubelet and crictl call it first), with Docker's version from
    // before the outage.
    s = cri_->runtime().Version(Ctx(std::chrono::seconds(1)).get(), v1::VersionRequest(), &version);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(version.runtime_name(), "docker");
    EXPECT_EQ(version.runtime_version(), docker_version) << "the last version Docker told";
    // A call that asks Docker fails fast, UNAVAILABLE, naming the endpoint. (Not a
    // relist: answered from memory until the events stream has seen the outage, which
    // may be a few ms after Status did.)
    t0 = Clock::now();
    v1::ListImagesResponse listed;
    s = cri_->images().ListImages(Ctx(std::chrono::seconds(1)).get(), v1::ListImagesRequest(), &listed);
    const auto list_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(socket_path));
    std::printf("dockerd down: Status answered in %lld ms (%s), ListImages failed in %lld ms: %s\n",
                static_cast<long long>(status_ms), status.status().conditions(0).message().c_str(),
                static_cast<long long>(list_ms), s.error_message().c_str());

    bring_back();
    t0 = Clock::now();
    bool ready = false;
    while (!ready && Clock::now() - t0 < std::chrono::seconds(60)) {
      v1::StatusResponse again;
      ready = cri_->runtime().Status(Ctx(std::chrono::seconds(5)).get(), v1::StatusRequest(), &again).ok() &&
              again.status().conditions(0).status();
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(ready) << "RuntimeReady stayed false after dockerd came back\n" << shim_->Stderr();
    std::printf("dockerd back: RuntimeReady=true after %lld ms\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
    // The stream opened before the outage goes on with the containers made after it.
    EXPECT_FALSE(events.Ended());
    v1::PodSandboxConfig pod2 = Pod("after");
    const std::string pod2_id = RunPod(pod2);
    ASSERT_FALSE(pod2_id.empty());
    const std::string after = RunContainer(pod2_id, pod2, "after", "sleep 600");
    ASSERT_FALSE(after.empty());
    t0 = Clock::now();
    EXPECT_TRUE(Saw(events, after, v1::CONTAINER_CREATED_EVENT));
    EXPECT_TRUE(Saw(events, after, v1::CONTAINER_STARTED_EVENT));
    std::printf("events: the new container's events came %lld ms after it started\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count()));
  }
};

TEST_F(DockerOutageTest, ThroughAProxyThatRefusesAndCutsConnectionsTheSameShimRecovers) {
  const std::string engine = testenv::DockerEndpoint();
  const std::string upstream = absl::StartsWith(engine, "unix://") ? engine.substr(7) : engine;
  // A short path: sun_path holds 108 bytes.
  const std::string proxy_path = absl::StrCat("/tmp/dsrec-proxy-", getpid(), ".sock");
  testenv::UnixProxy proxy(proxy_path, upstream);
  ASSERT_TRUE(proxy.Open());
  RunOutage("unix://" + proxy_path, [&] { proxy.Shut(); }, [&] { ASSERT_TRUE(proxy.Open()); });
  shim_.reset();  // before the proxy goes
  ::unlink(proxy_path.c_str());
}

TEST_F(DockerOutageTest, ARealRestartOfTheEngine) {
  // scripts/docker-engines.sh for the private engines (26, 28, 28c, 29); the system's
  // dockerd (20) is not the test's to restart.
  const std::string stop = testenv::EngineCtlCommand("stop"), start = testenv::EngineCtlCommand("start");
  if (stop.empty())
    GTEST_SKIP() << "the engine under test (" << testenv::DockerEndpoint()
                 << ") cannot be restarted by the test: set DOCKERSHIM_TEST_ENGINE to one that "
                    "scripts/docker-engines.sh starts and DOCKERSHIM_TEST_ENGINE_CTL to that script";
  RunOutage(
      testenv::DockerEndpoint(), [&] { ASSERT_TRUE(testenv::ShOk(stop)); }, [&] { ASSERT_TRUE(testenv::ShOk(start)); });
}

}  // namespace

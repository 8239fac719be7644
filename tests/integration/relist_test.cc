// Relists from memory on a real dockerd: a pod and a container that the docker CLI
// creates, starts, kills and removes behind the shim's back show in ListPodSandbox
// and ListContainers within a second (the view follows Docker's events; the measured
// delays are printed), and what the view lists is what Docker lists; what was
// removed (through the shim or behind its back) is not listed again once the shim
// knows.
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "dockerclient/docker_client_impl.h"
#include "dockerclient/forwarding_docker_client.h"
#include "shim/cri_service.h"
#include "shim/events/event_hub.h"
#include "shim/network/docker_bridge.h"
#include "shim/view/view_client.h"
#include "tests/integration/env.h"
#include "tests/integration/shell.h"

namespace shim {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kShownWithin = absl::Seconds(1);

std::string SocketPath(const std::string& endpoint) {
  return std::string(absl::StripPrefix(endpoint, "unix://"));
}

// The view's Docker client: holds the answer to one inspect of a chosen container
// (taken from Docker, not yet returned) until released, as a dockerd or a thread
// slow at the wrong moment would. An ordering of a removal with a read under way then
// happens on a real engine when the test wants it.
class HeldReads final : public dockerclient::ForwardingDockerClient {
 public:
  using ForwardingDockerClient::ForwardingDockerClient;

  // The next inspect of `id` is held once answered.
  void HoldNext(const std::string& id) {
    std::lock_guard lock(mu_);
    id_ = id;
    held_ = released_ = false;
  }
  bool AwaitHeld(absl::Duration timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), [this] { return held_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    id_.clear();
    cv_.notify_all();
  }

  absl::StatusOr<dockerclient::ContainerInspect> InspectContainer(const common::Context& ctx,
                                                                  const std::string& id) override {
    absl::StatusOr<dockerclient::ContainerInspect> answer = inner_.InspectContainer(ctx, id);
    std::unique_lock lock(mu_);
    if (id_.empty() || id != id_ || held_) return answer;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    return answer;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::string id_;  // whose next inspect to hold; guarded by mu_
  bool held_ = false, released_ = false;  // guarded by mu_
};

class RelistIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    testenv::Sh("docker ps -aq --filter name=_dsrelist_ | xargs -r docker rm -f");
    root_ = fs::temp_directory_path() / ("dsrelist-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    auto docker = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(docker.ok()) << docker.status();
    docker_ = *std::move(docker);
    held_ = std::make_unique<HeldReads>(*docker_);
    view_ = std::make_unique<view::ContainerView>(*held_);
    viewed_ = std::make_unique<view::ViewClient>(*docker_, *view_);
    network_ = std::make_unique<network::DockerBridgeNetwork>(*docker_);
    Options o;
    o.root_directory = root_.string();
    o.pod_infra_image = testenv::PauseImage();
    service_ = std::make_unique<CriService>(o, *viewed_, *network_);
    ASSERT_TRUE(service_->Init().ok());
    events::HubOptions hub;
    hub.docker_socket_path = SocketPath(testenv::DockerEndpoint());
    hub_ = std::make_unique<events::EventHub>(
        *docker_, hub,
        [this](const events::CriEvent& e) {
          if (on_event_) on_event_(e);
          return v1::ContainerEventResponse();
        },
        view_.get());
    for (int i = 0; i < 500 && !view_->Live(); ++i) absl::SleepFor(absl::Milliseconds(10));
    ASSERT_TRUE(view_->Live()) << "the view did not list Docker's containers";
    uid_ = absl::StrCat("u", ::getpid());
  }
  void TearDown() override {
    held_->Release();  // a test that failed while a read was held
    hub_.reset();
    service_.reset();
    testenv::Sh("docker ps -aq --filter name=_dsrelist_ | xargs -r docker rm -f");
    fs::remove_all(root_);
  }

  // Polls `shown` until it holds; returns how long that took, or nullopt after 5 s.
  static std::optional<absl::Duration> Until(const std::function<bool()>& shown) {
    const absl::Time start = absl::Now();
    while (absl::Now() - start < absl::Seconds(5)) {
      if (shown()) return absl::Now() - start;
      absl::SleepFor(absl::Milliseconds(2));
    }
    return std::nullopt;
  }
  // Runs `command` behind the shim's back, then polls; reports the delay.
  void ExpectShown(const std::string& what, const std::string& command, const std::function<bool()>& shown) {
    int code = -1;
    const std::string out = testenv::Sh(command, &code);
    ASSERT_EQ(code, 0) << command << ": " << out;
    std::optional<absl::Duration> delay = Until(shown);
    ASSERT_TRUE(delay.has_value()) << what << ": not shown after 5 s";
    std::printf("[ relist   ] %-40s shown after %s\n", what.c_str(), absl::FormatDuration(*delay).c_str());
    EXPECT_LE(*delay, kShownWithin) << what;
  }

  // The state of the pod or container `id` as listed ("" when not listed).
  std::string PodState(const std::string& id) {
    auto resp = service_->ListPodSandbox(ctx_, v1::ListPodSandboxRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (resp.ok()) {
      for (const auto& p : resp->items())
        if (p.id() == id) return v1::PodSandboxState_Name(p.state());
    }
    return "";
  }
  std::string ContainerState(const std::string& id) {
    auto resp = service_->ListContainers(ctx_, v1::ListContainersRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (resp.ok()) {
      for (const auto& c : resp->containers())
        if (c.id() == id) return v1::ContainerState_Name(c.state());
    }
    return "";
  }

  fs::path root_;
  std::string uid_;
  // The kubelet's bound on a CRI call (--runtime-request-timeout, 2 min): the removals
  // stop containers, which takes Docker seconds each in an emulated VM.
  static common::Context Ctx() { return common::Context::WithTimeout(absl::Minutes(2)); }

  struct Pod {
    std::string id;
    std::vector<std::string> containers;
  };
  // A pod `name` (host network, labelled dsrelist-run=<uid_>) with `containers`
  // running containers.
  void RunPod(const std::string& name, int containers, Pod& pod) {
    v1::RunPodSandboxRequest run;
    v1::PodSandboxConfig& config = *run.mutable_config();
    config.mutable_metadata()->set_name(name);
    config.mutable_metadata()->set_namespace_("dsrelist");
    config.mutable_metadata()->set_uid(absl::StrCat(uid_, "-", name));
    (*config.mutable_labels())["dsrelist-run"] = uid_;
    config.mutable_linux()->mutable_security_context()->mutable_namespace_options()->set_network(v1::NODE);
    auto ran = service_->RunPodSandbox(Ctx(), run);
    ASSERT_TRUE(ran.ok()) << ran.status();
    pod.id = ran->pod_sandbox_id();
    for (int k = 0; k < containers; ++k) {
      v1::CreateContainerRequest create;
      create.set_pod_sandbox_id(pod.id);
      *create.mutable_sandbox_config() = config;
      create.mutable_config()->mutable_metadata()->set_name(absl::StrCat("c", k));
      create.mutable_config()->mutable_image()->set_image(testenv::BusyboxImage());
      // Ends at once on SIGTERM (a shell as PID 1 ignores it otherwise).
      for (const char* part : {"sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"})
        create.mutable_config()->add_command(part);
      create.mutable_config()->mutable_linux();
      auto created = service_->CreateContainer(Ctx(), create);
      ASSERT_TRUE(created.ok()) << created.status();
      pod.containers.push_back(created->container_id());
      v1::StartContainerRequest start;
      start.set_container_id(created->container_id());
      ASSERT_TRUE(service_->StartContainer(Ctx(), start).ok());
    }
  }
  absl::Status StopContainer(const std::string& id) {
    v1::StopContainerRequest req;
    req.set_container_id(id);
    req.set_timeout(2);
    return service_->StopContainer(Ctx(), req).status();
  }
  absl::Status RemoveContainer(const std::string& id) {
    v1::RemoveContainerRequest req;
    req.set_container_id(id);
    return service_->RemoveContainer(Ctx(), req).status();
  }
  absl::Status RemovePod(const std::string& id) {
    v1::RemovePodSandboxRequest req;
    req.set_pod_sandbox_id(id);
    return service_->RemovePodSandbox(Ctx(), req).status();
  }
  // docker rm -f, behind the shim's back.
  static void RemoveWithCli(const std::string& ids) {
    int code = -1;
    testenv::Sh("docker rm -f " + ids, &code);
    EXPECT_EQ(code, 0) << "docker rm -f " << ids;
  }

  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::unique_ptr<HeldReads> held_;
  std::unique_ptr<view::ContainerView> view_;
  std::unique_ptr<view::ViewClient> viewed_;
  std::unique_ptr<network::DockerBridgeNetwork> network_;
  std::unique_ptr<CriService> service_;
  std::unique_ptr<events::EventHub> hub_;
  // Each CRI event the hub passes on (after the view has read it), while subscribed;
  // set before subscribing.
  std::function<void(const events::CriEvent&)> on_event_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(60));
};

TEST_F(RelistIntegration, WhatDockerDoesBehindTheShimsBackShowsWithinASecond) {
  const std::string pod_labels = absl::StrCat("--label io.kubernetes.docker.type=podsandbox ",
                                              "--label io.kubernetes.pod.name=stale ",
                                              "--label io.kubernetes.pod.namespace=dsrelist --label io.kubernetes.pod.uid=",
                                              uid_);
  const std::string pod_name = absl::StrCat("k8s_POD_stale_dsrelist_", uid_, "_0");
  int code = -1;
  std::string pod = std::string(absl::StripAsciiWhitespace(
      testenv::Sh(absl::StrCat("docker create --network none ", pod_labels, " --name ", pod_name, " ", testenv::PauseImage()),
                  &code)));
  ASSERT_EQ(code, 0);
  std::optional<absl::Duration> delay = Until([&] { return PodState(pod) == "SANDBOX_NOTREADY"; });
  ASSERT_TRUE(delay.has_value());
  std::printf("[ relist   ] %-40s shown after %s\n", "pod created", absl::FormatDuration(*delay).c_str());
  EXPECT_LE(*delay, kShownWithin);

  ExpectShown("pod started", "docker start " + pod, [&] { return PodState(pod) == "SANDBOX_READY"; });

  const std::string ctr_name = absl::StrCat("k8s_app_stale_dsrelist_", uid_, "_0");
  std::string ctr = std::string(absl::StripAsciiWhitespace(testenv::Sh(
      absl::StrCat("docker create --network container:", pod, " --label io.kubernetes.docker.type=container --label io.kubernetes.sandbox.id=", pod,
                   " --label io.kubernetes.container.name=app ", pod_labels.substr(pod_labels.find("--label io.kubernetes.pod.name")),
                   " --name ", ctr_name, " ", testenv::BusyboxImage(), " sleep 600"),
      &code)));
  ASSERT_EQ(code, 0);
  delay = Until([&] { return ContainerState(ctr) == "CONTAINER_CREATED"; });
  ASSERT_TRUE(delay.has_value());
  std::printf("[ relist   ] %-40s shown after %s\n", "container created", absl::FormatDuration(*delay).c_str());
  EXPECT_LE(*delay, kShownWithin);

  ExpectShown("container started", "docker start " + ctr, [&] { return ContainerState(ctr) == "CONTAINER_RUNNING"; });
  ExpectShown("container killed", "docker kill " + ctr, [&] { return ContainerState(ctr) == "CONTAINER_EXITED"; });

  // Served from memory all along, and the same as Docker's own list.
  EXPECT_TRUE(view_->Live());
  v1::ListContainersRequest mine;
  mine.mutable_filter()->set_pod_sandbox_id(pod);
  auto from_view = service_->ListContainers(ctx_, mine);
  CriService direct(service_->options(), *docker_, *network_);
  auto from_docker = direct.ListContainers(ctx_, mine);
  ASSERT_TRUE(from_view.ok() && from_docker.ok());
  ASSERT_EQ(from_view->containers_size(), 1);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*from_view, *from_docker))
      << from_view->ShortDebugString() << "\nvs\n" << from_docker->ShortDebugString();

  ExpectShown("container removed", "docker rm " + ctr, [&] { return ContainerState(ctr).empty(); });
  ExpectShown("pod killed", "docker kill " + pod, [&] { return PodState(pod) == "SANDBOX_NOTREADY"; });
  ExpectShown("pod removed", "docker rm " + pod, [&] { return PodState(pod).empty(); });
}

// The two orderings that brought removed containers back into the view, forced on a
// real engine by holding one of the view's reads (HeldReads):
//   - the hub is behind (its thread still re-reads a container's `die`) when docker
//     rm -f removes the container and then its pod, and the kubelet's RemoveContainer and
//     RemovePodSandbox find them gone: a list after they returned shows neither;
//   - the shim re-reads a container it stopped and has its answer when docker rm -f
//     removes it and a ContainerStatus finds it gone; that answer, which still shows
//     the container, comes afterwards and does not bring it back. (The same with the
//     destroy event instead of the status call is a unit test: here the hub's thread
//     may wait for the held read, to re-read another test's container.)
TEST_F(RelistIntegration, ARemovalRacingTheViewsReadsStaysRemoved) {
  std::mutex mu;
  std::set<std::pair<std::string, int>> seen;  // container ID, CRI event type
  on_event_ = [&](const events::CriEvent& e) {
    std::lock_guard lock(mu);
    seen.emplace(e.container_id, e.type);
  };
  std::shared_ptr<events::Subscription> subscription = hub_->Subscribe([] {});
  absl::Cleanup stop_hub = [&] {
    held_->Release();
    hub_.reset();  // its builder thread calls on_event_, which reads this test's locals
  };
  // Once the view has read the event of `id` (the hub passes it on only then).
  auto Seen = [&](const std::string& id, v1::ContainerEventType type) {
    return Until([&] {
      while (subscription->Pop().event) {
      }
      std::lock_guard lock(mu);
      return seen.contains({id, type});
    }).has_value();
  };
  auto Listed = [&](const std::string& id) { return !ContainerState(id).empty() || !PodState(id).empty(); };
  Pod pod;
  ASSERT_NO_FATAL_FAILURE(RunPod("racing", 2, pod));
  const std::string behind = pod.containers[0], stale = pod.containers[1];

  // A stale answer after the removal. The container has stopped first (and the view
  // read its die): the second stop only re-reads it.
  ASSERT_TRUE(StopContainer(stale).ok());
  ASSERT_TRUE(Seen(stale, v1::CONTAINER_STOPPED_EVENT));
  held_->HoldNext(stale);
  std::thread stopping([&] { EXPECT_TRUE(StopContainer(stale).ok()); });
  ASSERT_TRUE(held_->AwaitHeld(absl::Seconds(5))) << "StopContainer did not re-read the container";
  RemoveWithCli(stale);
  v1::ContainerStatusRequest status;
  status.set_container_id(stale);
  EXPECT_TRUE(absl::IsNotFound(service_->ContainerStatus(Ctx(), status).status()));
  held_->Release();
  stopping.join();
  EXPECT_FALSE(Listed(stale)) << "a read from before the removal brought it back";

  // The hub behind: held in its re-read of `behind`'s die, it has not read the destroy
  // events when the kubelet removes what it still lists.
  held_->HoldNext(behind);
  RemoveWithCli(behind);
  ASSERT_TRUE(held_->AwaitHeld(absl::Seconds(5))) << "the view did not re-read the container at its die event";
  RemoveWithCli(pod.id);  // one at a time: the CLI removes several at once
  ASSERT_TRUE(RemoveContainer(behind).ok());
  EXPECT_FALSE(Listed(behind)) << "listed after RemoveContainer returned";
  ASSERT_TRUE(RemovePod(pod.id).ok());
  EXPECT_FALSE(Listed(pod.id)) << "listed after RemovePodSandbox returned";
  held_->Release();
  EXPECT_TRUE(Seen(behind, v1::CONTAINER_DELETED_EVENT) && Seen(pod.id, v1::CONTAINER_DELETED_EVENT));
  EXPECT_FALSE(Listed(behind) || Listed(pod.id));
}

// Pods and containers removed through the shim and behind its back (docker rm -f),
// several at once and round after round, while a client relists every 100 ms (the
// kubelet's PLEG, ten times as often) and asks the status of everything it lists, as
// the kubelet does. What the shim knows is removed is never listed again by a list
// that began after it knew:
//   - through the shim: once RemoveContainer / RemovePodSandbox returned (each is
//     followed at once by a relist, besides the client's);
//   - behind its back: once the hub passed on the CONTAINER_DELETED_EVENT of
//     Docker's destroy event, which it does only after the view has read it. That is
//     the grace: before, the shim cannot know (it lasts as long as Docker's event
//     takes to reach the shim, printed below), a list may show the container and its
//     status is NOT_FOUND, as from containerd; the kubelet skips a NotFound between
//     its list and the status call. Such an answer also counts as knowing.
// Statuses of what is listed never fail otherwise.
TEST_F(RelistIntegration, NothingTheShimKnowsRemovedIsListedAgain) {
  constexpr int kRounds = 4;
  constexpr int kContainersPerPod = 2;
  // One pod per way of removing it, in each round, all at once.
  enum Way { kContainersThenPod, kPodAtOnce, kStopThenPod, kCliThenShim, kCliWhileShimStops, kWays };

  std::mutex mu;
  uint64_t clock = 0;                    // orders what the test saw
  std::set<std::string> ours;            // pods and containers of this test
  std::map<std::string, uint64_t> gone;  // ID -> when the shim first knew it removed
  std::map<std::string, absl::Time> cli_removed, deleted_seen;
  std::vector<std::string> violations;
  int lists = 0, statuses = 0, not_found = 0;
  auto MarkGone = [&](const std::string& id) {
    std::lock_guard lock(mu);
    gone.emplace(id, ++clock);
  };
  on_event_ = [&](const events::CriEvent& e) {
    if (e.type != v1::CONTAINER_DELETED_EVENT) return;
    std::lock_guard lock(mu);
    gone.emplace(e.container_id, ++clock);
    deleted_seen.emplace(e.container_id, absl::Now());
  };
  std::shared_ptr<events::Subscription> subscription = hub_->Subscribe([] {});

  // Asks the status of `id`, listed by a list that began at `began`.
  auto Check = [&](const std::string& id, bool pod, uint64_t began) {
    {
      std::lock_guard lock(mu);
      if (!ours.contains(id)) return;  // other tests share the engine
      if (auto it = gone.find(id); it != gone.end() && it->second < began)
        violations.push_back(absl::StrCat(pod ? "pod " : "container ", id, " listed after the shim knew it removed"));
    }
    absl::Status s;
    if (pod) {
      v1::PodSandboxStatusRequest req;
      req.set_pod_sandbox_id(id);
      s = service_->PodSandboxStatus(Ctx(), req).status();
    } else {
      v1::ContainerStatusRequest req;
      req.set_container_id(id);
      s = service_->ContainerStatus(Ctx(), req).status();
    }
    std::lock_guard lock(mu);
    ++statuses;
    if (absl::IsNotFound(s)) {
      ++not_found;
      gone.emplace(id, ++clock);
    } else if (!s.ok()) {
      violations.push_back(absl::StrCat("status of ", id, ": ", s.ToString()));
    }
  };
  // The kubelet's relist; pods by this test's label, as its per-pod status path lists
  // them (a pod listed only from its checkpoint is not asked about).
  auto Relist = [&] {
    uint64_t began;
    {
      std::lock_guard lock(mu);
      began = ++clock;
      ++lists;
    }
    v1::ListPodSandboxRequest list_pods;
    (*list_pods.mutable_filter()->mutable_label_selector())["dsrelist-run"] = uid_;
    auto pods = service_->ListPodSandbox(Ctx(), list_pods);
    auto containers = service_->ListContainers(Ctx(), v1::ListContainersRequest());
    ASSERT_TRUE(pods.ok() && containers.ok()) << pods.status() << " " << containers.status();
    for (const auto& p : pods->items()) Check(p.id(), true, began);
    for (const auto& c : containers->containers()) Check(c.id(), false, began);
  };

  std::atomic<bool> stop{false};
  std::thread relister([&] {
    while (!stop) {
      Relist();
      while (subscription->Pop().event) {
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  // Also when an assertion ends the test early: the hub's builder thread calls
  // on_event_, which reads this test's locals.
  absl::Cleanup stop_all = [&] {
    stop = true;
    if (relister.joinable()) relister.join();
    hub_.reset();
  };

  auto Mine = [&](const Pod& pod) {
    std::lock_guard lock(mu);
    ours.insert(pod.id);
    ours.insert(pod.containers.begin(), pod.containers.end());
  };
  // A removal that failed did not tell the shim anything: what it lists afterwards is
  // still there, not a violation.
  auto Removed = [&](const std::string& id, const absl::Status& s) {
    EXPECT_TRUE(s.ok()) << id << ": " << s;
    if (s.ok()) MarkGone(id);
    Relist();
  };
  std::map<std::string, absl::Duration> slowest;  // RPC -> its slowest call
  auto Timed = [&](const std::string& rpc, const std::function<absl::Status()>& call) {
    const absl::Time t0 = absl::Now();
    absl::Status s = call();
    const absl::Duration took = absl::Now() - t0;
    std::lock_guard lock(mu);
    slowest[rpc] = std::max(slowest[rpc], took);
    if (!s.ok()) s = common::Annotate(s, absl::StrCat(rpc, " failed after ", absl::FormatDuration(took)));
    return s;
  };
  auto RemovePodOf = [&](const Pod& pod) {
    absl::Status s = Timed("RemovePodSandbox", [&] { return RemovePod(pod.id); });
    if (s.ok())
      for (const std::string& c : pod.containers) MarkGone(c);
    Removed(pod.id, s);
  };
  auto CliRemove = [&](const Pod& pod) {
    RemoveWithCli(absl::StrJoin(pod.containers, " ") + " " + pod.id);
    const absl::Time now = absl::Now();
    std::lock_guard lock(mu);
    for (const std::string& c : pod.containers) cli_removed.emplace(c, now);
    cli_removed.emplace(pod.id, now);
  };

  const absl::Time test_start = absl::Now();
  for (int round = 0; round < kRounds; ++round) {
    const absl::Time round_start = absl::Now();
    std::vector<Pod> pods(kWays);
    for (int way = 0; way < kWays; ++way) {
      ASSERT_NO_FATAL_FAILURE(RunPod(absl::StrCat("gone", round, "-", way), kContainersPerPod, pods[way]));
      Mine(pods[way]);
    }
    const absl::Duration ran = absl::Now() - round_start;
    std::vector<std::thread> removers;
    for (int way = 0; way < kWays; ++way) {
      removers.emplace_back([&, way, pod = pods[way]] {
        switch (way) {
          case kContainersThenPod:
            for (const std::string& c : pod.containers)
              Removed(c, Timed("RemoveContainer", [&] { return RemoveContainer(c); }));
            RemovePodOf(pod);
            break;
          case kPodAtOnce:
            RemovePodOf(pod);
            break;
          case kStopThenPod: {
            v1::StopPodSandboxRequest req;
            req.set_pod_sandbox_id(pod.id);
            absl::Status stopped =
                Timed("StopPodSandbox", [&] { return service_->StopPodSandbox(Ctx(), req).status(); });
            EXPECT_TRUE(stopped.ok()) << stopped;
            RemovePodOf(pod);
            break;
          }
          case kCliThenShim:
            // The kubelet then removes what it still knows of, finding it gone.
            CliRemove(pod);
            for (const std::string& c : pod.containers) Removed(c, RemoveContainer(c));
            RemovePodOf(pod);
            break;
          case kCliWhileShimStops: {
            // The shim re-reads the containers it stops while Docker removes them.
            std::atomic<bool> removed{false};
            // A stop every 20 ms is in flight when the removal lands (docker rm -f takes
            // 100 ms and more); a loop without a pause only starved the other removals of
            // Docker's time under emulation.
            std::thread stopper([&] {
              while (!removed) {
                for (const std::string& c : pod.containers) (void)StopContainer(c);  // may race the removal and fail
                absl::SleepFor(absl::Milliseconds(20));
              }
            });
            CliRemove(pod);
            removed = true;
            stopper.join();
            break;
          }
        }
      });
    }
    for (std::thread& t : removers) t.join();
    // Every removal behind the shim's back reaches it (and ends its grace).
    std::optional<absl::Duration> all_seen = Until([&] {
      std::lock_guard lock(mu);
      return std::all_of(cli_removed.begin(), cli_removed.end(),
                         [&](const auto& entry) { return deleted_seen.contains(entry.first); });
    });
    ASSERT_TRUE(all_seen.has_value()) << "destroy events of docker rm -f not seen after 5 s";
    RemovePodOf(pods[kCliWhileShimStops]);  // its checkpoint
    std::printf("[ relist   ] round %d: its pods ran in %s, were removed in %s (%s so far)\n", round,
                absl::FormatDuration(ran).c_str(), absl::FormatDuration(absl::Now() - round_start - ran).c_str(),
                absl::FormatDuration(absl::Now() - test_start).c_str());
    std::fflush(stdout);
  }
  stop = true;
  relister.join();
  Relist();
  std::move(stop_all).Invoke();

  absl::Duration grace;
  for (const auto& [id, at] : cli_removed) grace = std::max(grace, deleted_seen.at(id) - at);
  std::printf("[ relist   ] %d rounds of %d pods x %d containers: %d relists, %d statuses (%d NOT_FOUND, "
              "listed before the shim knew), %zu removed with docker rm -f: destroy seen at most %s "
              "after it returned\n",
              kRounds, static_cast<int>(kWays), kContainersPerPod, lists, statuses, not_found, cli_removed.size(),
              absl::FormatDuration(grace).c_str());
  for (const auto& [rpc, took] : slowest)
    std::printf("[ relist   ] slowest %s: %s\n", rpc.c_str(), absl::FormatDuration(took).c_str());
  EXPECT_THAT(violations, ::testing::IsEmpty());
}

}  // namespace
}  // namespace shim

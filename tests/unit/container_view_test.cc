// The container view (shim/view/) on the fake Docker client: lists answered from
// memory exactly as Docker's, the shim's own calls shown at once, other changes
// applied from events, Docker asked while the view is not live, and a reconcile
// reporting what changed unseen.
#include "shim/view/container_view.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/view/view_client.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim::view {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

class ContainerViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/container_view_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    Options o;
    o.root_directory = root_;
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    // Both services share Docker and the state directory; only `viewed_` knows the view.
    direct_ = std::make_unique<CriService>(o, docker_, network_);
    o.container_view = &view_;
    viewed_ = std::make_unique<CriService>(o, client_, network_);
    ASSERT_TRUE(direct_->Init().ok());
    ASSERT_TRUE(viewed_->Init().ok());
  }
  void TearDown() override {
    viewed_.reset();
    direct_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_metadata()->set_namespace_("ns");
    pod.mutable_metadata()->set_uid("uid-" + name);
    (*pod.mutable_labels())["app"] = name;
    pod.mutable_linux();
    return pod;
  }
  std::string RunPod(CriService& service, const std::string& name) {
    v1::RunPodSandboxRequest req;
    *req.mutable_config() = Pod(name);
    auto resp = service.RunPodSandbox(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->pod_sandbox_id() : "";
  }
  std::string CreateContainer(CriService& service, const std::string& pod_id, const std::string& pod,
                              const std::string& name, const std::string& tier = "web") {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod_id);
    req.mutable_config()->mutable_metadata()->set_name(name);
    req.mutable_config()->mutable_image()->set_image(kBusybox);
    (*req.mutable_config()->mutable_labels())["tier"] = tier;
    req.mutable_config()->mutable_linux();
    *req.mutable_sandbox_config() = Pod(pod);
    auto resp = service.CreateContainer(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->container_id() : "";
  }
  void Start(CriService& service, const std::string& id) {
    v1::StartContainerRequest req;
    req.set_container_id(id);
    ASSERT_TRUE(service.StartContainer(ctx_, req).ok());
  }

  // "<name> <state>" of what `service` lists.
  std::vector<std::string> Containers(CriService& service, const v1::ContainerFilter& filter = {}) {
    v1::ListContainersRequest req;
    *req.mutable_filter() = filter;
    const int lists = DockerLists();
    auto resp = service.ListContainers(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (&service == viewed_.get() && view_.Live()) {
      EXPECT_EQ(DockerLists(), lists) << "listed from memory";
    }
    std::vector<std::string> out;
    if (resp.ok()) {
      for (const auto& c : resp->containers()) {
        out.push_back(absl::StrCat(c.metadata().name(), " ", v1::ContainerState_Name(c.state())));
      }
    }
    return out;
  }
  std::vector<std::string> Pods(CriService& service) {
    const int lists = DockerLists();
    auto resp = service.ListPodSandbox(ctx_, v1::ListPodSandboxRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (&service == viewed_.get() && view_.Live()) {
      EXPECT_EQ(DockerLists(), lists) << "listed from memory";
    }
    std::vector<std::string> out;
    if (resp.ok()) {
      for (const auto& p : resp->items()) {
        out.push_back(absl::StrCat(p.metadata().name(), " ", v1::PodSandboxState_Name(p.state())));
      }
    }
    return out;
  }
  int DockerLists() const { return docker_.CallCount("ListContainers"); }
  int DockerInspects() const { return docker_.CallCount("InspectContainer"); }
  absl::StatusOr<v1::ContainerStatus> Status(const std::string& id) {
    v1::ContainerStatusRequest req;
    req.set_container_id(id);
    ASSIGN_OR_RETURN(v1::ContainerStatusResponse resp, viewed_->ContainerStatus(ctx_, req));
    return resp.status();
  }
  // A pod "a" with a container, in the live view by Docker's list alone (no inspect
  // held: made before the shim restarted, say), that docker rm -f removed; the view has
  // not read their destroy events.
  void RemoveBehindTheViewsBack(std::string& pod, std::string& c) {
    pod = RunPod(*direct_, "a");
    c = CreateContainer(*direct_, pod, "a", "app");
    ASSERT_TRUE(view_.Reconcile().ok());
    ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
    ASSERT_TRUE(docker_.RemoveContainer(ctx_, pod, true).ok());
  }

  static dockerclient::DockerEvent Event(const std::string& id, const std::string& action) {
    dockerclient::DockerEvent e;
    e.type = "container";
    e.action = action;
    e.id = id;
    return e;
  }
  static std::vector<std::string> Actions(const std::vector<dockerclient::DockerEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(absl::StrCat(e.attributes.at("name"), " ", e.action));
    return out;
  }

  std::string root_;
  testing_fakes::FakeDockerClient docker_;
  testing_fakes::FakeNetwork network_;
  ContainerView view_{docker_};
  ViewClient client_{docker_, view_};
  std::unique_ptr<CriService> direct_, viewed_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
};

TEST_F(ContainerViewTest, AsksDockerUntilTheFirstList) {
  const std::string pod = RunPod(*direct_, "a");
  dockerclient::ListContainersOptions cri;
  cri.label_keys = {kContainerTypeLabel};
  EXPECT_FALSE(view_.Live());
  EXPECT_FALSE(view_.List(cri).has_value());
  const int lists = DockerLists();
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_READY"));
  EXPECT_EQ(DockerLists(), lists + 1);

  ASSERT_TRUE(view_.Reconcile().ok());
  EXPECT_TRUE(view_.Live());
  ASSERT_TRUE(view_.List(cri).has_value());
  EXPECT_EQ(view_.List(cri)->size(), 1u);
  // Containers without the CRI type label are not held: such lists still go to Docker.
  dockerclient::ListContainersOptions any;
  EXPECT_FALSE(view_.List(any).has_value());
}

TEST_F(ContainerViewTest, ListsAndFiltersExactlyAsDocker) {
  const std::string a = RunPod(*direct_, "a"), b = RunPod(*direct_, "b");
  const std::string running = CreateContainer(*direct_, a, "a", "run", "web");
  Start(*direct_, running);
  const std::string exited = CreateContainer(*direct_, a, "a", "done", "db");
  Start(*direct_, exited);
  ASSERT_TRUE(docker_.StopContainer(ctx_, exited, {}).ok());
  CreateContainer(*direct_, b, "b", "new", "web");
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(b);
  ASSERT_TRUE(direct_->StopPodSandbox(ctx_, stop).ok());
  ASSERT_TRUE(view_.Reconcile().ok());

  std::vector<v1::ContainerFilter> container_filters(8);
  container_filters[1].set_id(running);
  container_filters[2].mutable_state()->set_state(v1::CONTAINER_EXITED);
  container_filters[3].set_pod_sandbox_id(a.substr(0, 10));
  (*container_filters[4].mutable_label_selector())["tier"] = "web";
  (*container_filters[5].mutable_label_selector())["tier"] = "none";
  container_filters[6].set_pod_sandbox_id(b);
  container_filters[6].mutable_state()->set_state(v1::CONTAINER_CREATED);
  container_filters[7].set_id(running.substr(20));  // the ID filter is a prefix
  std::vector<std::size_t> counts;
  for (const v1::ContainerFilter& f : container_filters) {
    v1::ListContainersRequest req;
    *req.mutable_filter() = f;
    auto want = direct_->ListContainers(ctx_, req);
    const int lists = DockerLists();
    auto got = viewed_->ListContainers(ctx_, req);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(DockerLists(), lists) << "listed from memory";
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*got, *want)) << f.ShortDebugString();
    counts.push_back(got->containers_size());
  }
  EXPECT_THAT(counts, ElementsAre(3, 1, 1, 2, 2, 0, 1, 0));

  std::vector<v1::PodSandboxFilter> pod_filters(6);
  pod_filters[1].set_id(b);
  pod_filters[2].mutable_state()->set_state(v1::SANDBOX_READY);
  (*pod_filters[3].mutable_label_selector())["app"] = "b";
  pod_filters[4].mutable_state()->set_state(v1::SANDBOX_NOTREADY);
  pod_filters[5].set_id(b.substr(20));
  counts.clear();
  for (const v1::PodSandboxFilter& f : pod_filters) {
    v1::ListPodSandboxRequest req;
    *req.mutable_filter() = f;
    auto want = direct_->ListPodSandbox(ctx_, req);
    const int lists = DockerLists();
    auto got = viewed_->ListPodSandbox(ctx_, req);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(DockerLists(), lists) << "listed from memory";
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*got, *want)) << f.ShortDebugString();
    counts.push_back(got->items_size());
  }
  EXPECT_THAT(counts, ElementsAre(2, 1, 1, 1, 1, 0));
}

TEST_F(ContainerViewTest, TheShimsOwnCallsShowAtOnce) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const int lists = DockerLists();  // the lists below assert they asked Docker nothing
  const std::string pod = RunPod(*viewed_, "a");
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_READY"));
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_CREATED"));
  Start(*viewed_, c);
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_RUNNING"));
  v1::StopContainerRequest stop;
  stop.set_container_id(c);
  ASSERT_TRUE(viewed_->StopContainer(ctx_, stop).ok());
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_EXITED"));
  v1::RemoveContainerRequest remove;
  remove.set_container_id(c);
  ASSERT_TRUE(viewed_->RemoveContainer(ctx_, remove).ok());
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
  v1::StopPodSandboxRequest stop_pod;
  stop_pod.set_pod_sandbox_id(pod);
  ASSERT_TRUE(viewed_->StopPodSandbox(ctx_, stop_pod).ok());
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_NOTREADY"));
  v1::RemovePodSandboxRequest remove_pod;
  remove_pod.set_pod_sandbox_id(pod);
  ASSERT_TRUE(viewed_->RemovePodSandbox(ctx_, remove_pod).ok());
  EXPECT_THAT(Pods(*viewed_), IsEmpty());
  EXPECT_GT(DockerLists(), lists);  // Stop/RemovePodSandbox list the pod's containers by their sandbox label
}

TEST_F(ContainerViewTest, EventsBringInWhatOthersDid) {
  ASSERT_TRUE(view_.Reconcile().ok());
  EXPECT_THAT(Pods(*viewed_), IsEmpty());
  const std::string pod = RunPod(*direct_, "a");  // behind the view's back
  const std::string c = CreateContainer(*direct_, pod, "a", "app");
  // Served from memory, which no event reached yet: the pod shows only by its
  // checkpoint (NOTREADY, as a pod whose infra container is gone), its container not at all.
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_NOTREADY"));
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
  view_.OnEvent(Event(pod, "create"));
  view_.OnEvent(Event(pod, "start"));
  view_.OnEvent(Event(c, "create"));
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_READY"));
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_CREATED"));
  ASSERT_TRUE(docker_.StartContainer(ctx_, c).ok());
  view_.OnEvent(Event(c, "exec_create: sh"));  // changes nothing a list shows: not read
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_CREATED"));
  view_.OnEvent(Event(c, "start"));
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_RUNNING"));
  ASSERT_TRUE(docker_.StopContainer(ctx_, c, {}).ok());
  view_.OnEvent(Event(c, "die"));
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_EXITED"));
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
  view_.OnEvent(Event(c, "destroy"));
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, TheVersionMovesWithWhatAListShowsAndNothingElse) {
  EXPECT_EQ(view_.Version(), std::nullopt);  // not live before the first list
  ASSERT_TRUE(view_.Reconcile().ok());
  std::optional<uint64_t> version = view_.Version();
  ASSERT_TRUE(version.has_value());
  auto moved = [&] {
    std::optional<uint64_t> now = view_.Version();
    const bool changed = now != version;
    version = now;
    return changed;
  };
  const std::string pod = RunPod(*viewed_, "a");
  EXPECT_TRUE(moved());
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  EXPECT_TRUE(moved());
  ASSERT_TRUE(Status(c).ok());  // a status read keeps its inspect: no list shows it
  view_.OnEvent(Event(c, "exec_create: sh"));
  EXPECT_FALSE(moved());
  ASSERT_TRUE(docker_.StartContainer(ctx_, c).ok());
  view_.OnEvent(Event(c, "start"));
  EXPECT_TRUE(moved());
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
  view_.OnEvent(Event(c, "destroy"));
  EXPECT_TRUE(moved());
  view_.OnStreamDown();
  EXPECT_EQ(view_.Version(), std::nullopt);
}

TEST_F(ContainerViewTest, AListMadeWhileDockerCouldNotSayAnImagesLabelsIsNotKept) {
  auto busybox = docker_.InspectImage(ctx_, kBusybox);
  ASSERT_TRUE(busybox.ok());
  docker_.SetImageLabels(busybox->id, {{"vendor", "acme"}, {"tier", "from-image"}});
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  CreateContainer(*viewed_, pod, "a", "app");
  auto labels = [&] {
    v1::ListContainersRequest req;
    auto resp = viewed_->ListContainers(ctx_, req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    std::vector<std::string> out;
    if (resp.ok() && resp->containers_size() == 1)
      for (const auto& [k, v] : resp->containers(0).labels()) out.push_back(k + "=" + v);
    std::sort(out.begin(), out.end());
    return out;
  };
  // Docker does not answer for the image: its labels cannot be told apart.
  docker_.FailOperation("InspectImage", absl::UnavailableError("docker is busy"));
  EXPECT_THAT(labels(), ElementsAre("tier=web", "vendor=acme"));
  // Nothing changed in the view since, but that list was not kept.
  docker_.ClearFailures();
  EXPECT_THAT(labels(), ElementsAre("tier=web"));
  v1::ContainerFilter from_image;
  (*from_image.mutable_label_selector())["vendor"] = "acme";
  EXPECT_THAT(Containers(*viewed_, from_image), IsEmpty());
}

TEST_F(ContainerViewTest, RelistsShareOneAnswerUntilTheViewChanges) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  auto first = viewed_->SharedListContainers(ctx_, v1::ListContainersRequest());
  auto again = viewed_->SharedListContainers(ctx_, v1::ListContainersRequest());
  ASSERT_TRUE(first.ok() && again.ok());
  ASSERT_NE(first->wire, nullptr);
  EXPECT_EQ(first->message, again->message);
  EXPECT_EQ(first->wire, again->wire);
  auto pods = viewed_->SharedListPodSandbox(ctx_, v1::ListPodSandboxRequest());
  auto pods_again = viewed_->SharedListPodSandbox(ctx_, v1::ListPodSandboxRequest());
  ASSERT_TRUE(pods.ok() && pods_again.ok());
  ASSERT_NE(pods->wire, nullptr);
  EXPECT_EQ(pods->message, pods_again->message);
  // A filter that leaves something out gets an answer of its own.
  v1::ListContainersRequest running;
  running.mutable_filter()->mutable_state()->set_state(v1::CONTAINER_RUNNING);
  auto filtered = viewed_->SharedListContainers(ctx_, running);
  ASSERT_TRUE(filtered.ok());
  EXPECT_EQ(filtered->wire, nullptr);
  EXPECT_EQ(filtered->message->containers_size(), 0);
  // A filter that leaves nothing out shares the whole answer.
  v1::ListContainersRequest of_pod;
  of_pod.mutable_filter()->set_pod_sandbox_id(pod);
  auto whole = viewed_->SharedListContainers(ctx_, of_pod);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->message, first->message);
  Start(*viewed_, c);
  auto after = viewed_->SharedListContainers(ctx_, v1::ListContainersRequest());
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->message, first->message);
  EXPECT_NE(after->wire, first->wire);
  ASSERT_EQ(after->message->containers_size(), 1);
  EXPECT_EQ(after->message->containers(0).state(), v1::CONTAINER_RUNNING);
}

TEST_F(ContainerViewTest, AsksDockerWhileTheStreamIsDown) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  view_.OnStreamDown();
  const std::string c = CreateContainer(*direct_, pod, "a", "app");
  const int lists = DockerLists();
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_CREATED"));
  EXPECT_EQ(DockerLists(), lists + 1);
  // Nothing is read into a view that is not trusted; the next list brings it all.
  const int inspects = docker_.CallCount("InspectContainer");
  view_.Refresh(ctx_, c);
  EXPECT_EQ(docker_.CallCount("InspectContainer"), inspects);
  ASSERT_TRUE(view_.Reconcile().ok());
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_CREATED"));
  EXPECT_EQ(DockerLists(), lists + 2);  // the reconcile's, none for the relist
}

TEST_F(ContainerViewTest, AFailedListLeavesTheViewUntrusted) {
  ASSERT_TRUE(view_.Reconcile().ok());
  docker_.FailOperation("ListContainers", absl::UnavailableError("docker is restarting"));
  EXPECT_TRUE(absl::IsUnavailable(view_.Reconcile().status()));
  EXPECT_FALSE(view_.Live());
  docker_.ClearFailures();
  auto missed = view_.Reconcile();
  ASSERT_TRUE(missed.ok());
  EXPECT_THAT(*missed, IsEmpty());
  EXPECT_TRUE(view_.Live());
}

TEST_F(ContainerViewTest, AReconcileReportsWhatChangedUnseen) {
  const std::string pod = RunPod(*direct_, "a");
  const std::string dies = CreateContainer(*direct_, pod, "a", "dies");
  Start(*direct_, dies);
  const std::string gone = CreateContainer(*direct_, pod, "a", "gone");
  Start(*direct_, gone);
  const std::string same = CreateContainer(*direct_, pod, "a", "same");
  auto first = view_.Reconcile();
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(*first, IsEmpty()) << "nothing was known before: nothing was missed";

  view_.OnStreamDown();
  ASSERT_TRUE(docker_.StopContainer(ctx_, dies, {}).ok());
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, gone, true).ok());
  const std::string added = CreateContainer(*direct_, pod, "a", "added");
  Start(*direct_, added);
  const std::string pod2 = RunPod(*direct_, "b");
  const absl::Time before = absl::Now();
  auto missed = view_.Reconcile();
  ASSERT_TRUE(missed.ok());
  EXPECT_THAT(Actions(*missed),
              UnorderedElementsAre("k8s_dies_a_ns_uid-a_0 die", "k8s_gone_a_ns_uid-a_0 die",
                                   "k8s_gone_a_ns_uid-a_0 destroy", "k8s_added_a_ns_uid-a_0 create",
                                   "k8s_added_a_ns_uid-a_0 start", "k8s_POD_b_ns_uid-b_0 create",
                                   "k8s_POD_b_ns_uid-b_0 start"));
  for (const auto& e : *missed) {
    EXPECT_GE(e.time_nano, absl::ToUnixNanos(before));
    EXPECT_TRUE(e.attributes.contains(kContainerTypeLabel));
    EXPECT_NE(e.id, same);
  }
  auto again = view_.Reconcile();
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, IsEmpty());
}

// Orderings of a removal with a read of Docker under way (an inspect or the list),
// which took its answer before the removal and stores it after: nothing removed may
// come back, or a relist shows what ContainerStatus then finds gone.

// Runs `action` once, when the next ListContainers, or InspectContainer of `asked`,
// has taken its answer from the fake Docker and before it returns it.
void WhileRead(testing_fakes::FakeDockerClient& docker, const std::string& op, const std::string& asked,
               std::function<void()> action) {
  docker.after_read = [op, asked, action, done = false](const std::string& read, const std::string& of) mutable {
    if (done || read != op || of != asked) return;
    done = true;
    action();
  };
}

TEST_F(ContainerViewTest, ADestroyWhileAReReadIsOnItsWayKeepsTheContainerRemoved) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  // The shim re-reads `c` (after a stop, say); docker rm -f and its destroy event
  // come while the inspect's answer, which still shows it, is on its way.
  WhileRead(docker_, "InspectContainer", c, [&] {
    ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
    view_.OnEvent(Event(c, "destroy"));
  });
  view_.Refresh(ctx_, c);
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, ARemovalWhileTheReopenedStreamListsKeepsTheContainerRemoved) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  view_.OnStreamDown();
  // RemoveContainer returns while the list taken as the stream reopens, which still
  // shows `c`, is on its way.
  WhileRead(docker_, "ListContainers", "", [&] {
    v1::RemoveContainerRequest remove;
    remove.set_container_id(c);
    ASSERT_TRUE(viewed_->RemoveContainer(ctx_, remove).ok());
  });
  ASSERT_TRUE(view_.Reconcile().ok());
  EXPECT_TRUE(view_.Live());
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_READY"));
}

TEST_F(ContainerViewTest, AStatusCallWhileTheViewListsKeepsWhatItFoundGoneRemoved) {
  const std::string pod = RunPod(*direct_, "a");
  const std::string c = CreateContainer(*direct_, pod, "a", "app");
  ASSERT_TRUE(view_.Reconcile().ok());  // known by the list: its status asks Docker
  // The minute's list is on its way when docker rm -f removes `c`, and a
  // ContainerStatus finds it gone before its destroy event is read.
  WhileRead(docker_, "ListContainers", "", [&] {
    ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
    v1::ContainerStatusRequest status;
    status.set_container_id(c);
    EXPECT_TRUE(absl::IsNotFound(viewed_->ContainerStatus(ctx_, status).status()));
  });
  ASSERT_TRUE(view_.Reconcile().ok());
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, WhatAStatusCallFindsGoneLeavesTheLists) {
  std::string pod, c;
  ASSERT_NO_FATAL_FAILURE(RemoveBehindTheViewsBack(pod, c));
  v1::ContainerStatusRequest status;
  status.set_container_id(c);
  EXPECT_TRUE(absl::IsNotFound(viewed_->ContainerStatus(ctx_, status).status()));
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
  v1::PodSandboxStatusRequest pod_status;
  pod_status.set_pod_sandbox_id(pod);
  EXPECT_TRUE(absl::IsNotFound(viewed_->PodSandboxStatus(ctx_, pod_status).status()));
  // Only its checkpoint is left, until RemovePodSandbox.
  EXPECT_THAT(Pods(*viewed_), ElementsAre("a SANDBOX_NOTREADY"));
}

TEST_F(ContainerViewTest, ARemovalOfWhatDockerAlreadyRemovedLeavesTheLists) {
  std::string pod, c;
  ASSERT_NO_FATAL_FAILURE(RemoveBehindTheViewsBack(pod, c));
  // The kubelet removes them too: its inspect finds them gone, nothing to remove.
  v1::RemoveContainerRequest remove;
  remove.set_container_id(c);
  ASSERT_TRUE(viewed_->RemoveContainer(ctx_, remove).ok());
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
  v1::RemovePodSandboxRequest remove_pod;
  remove_pod.set_pod_sandbox_id(pod);
  ASSERT_TRUE(viewed_->RemovePodSandbox(ctx_, remove_pod).ok());
  EXPECT_THAT(Pods(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, ARemovalWhoseReReadFailsStillLeavesTheLists) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  docker_.FailOperation("InspectContainer", absl::DeadlineExceededError("the caller's deadline passed"));
  ASSERT_TRUE(client_.RemoveContainer(ctx_, c, true).ok());
  docker_.ClearFailures();
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, StatusCallsAreAnsweredFromMemoryWhileTheViewIsLive) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  Start(*viewed_, c);
  const int inspects = DockerInspects();
  auto running = Status(c);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(running->labels().at("tier"), "web");
  v1::PodSandboxStatusRequest pod_status;
  pod_status.set_pod_sandbox_id(pod);
  auto ready = viewed_->PodSandboxStatus(ctx_, pod_status);
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status().state(), v1::SANDBOX_READY);
  EXPECT_EQ(DockerInspects(), inspects) << "answered from memory";
  // The verbose info's HostConfig is Docker's raw answer, which the view does not keep.
  pod_status.set_verbose(true);
  auto verbose = viewed_->PodSandboxStatus(ctx_, pod_status);
  ASSERT_TRUE(verbose.ok()) << verbose.status();
  EXPECT_THAT(verbose->info().at("info"), ::testing::HasSubstr(R"("hostConfig":{)"));
  EXPECT_EQ(DockerInspects(), inspects + 1) << "the verbose status reads Docker";

  // It exits on its own: the die event reads it again, once.
  docker_.EditContainer(c, [](dockerclient::ContainerInspect& i) {
    i.state.running = false;
    i.state.status = "exited";
    i.state.exit_code = 3;
    i.state.finished_at = "2026-12-04T08:00:00Z";
  });
  EXPECT_EQ(Status(c)->state(), v1::CONTAINER_RUNNING) << "what the last event showed, as the lists";
  view_.OnEvent(Event(c, "die"));
  auto exited = Status(c);
  ASSERT_TRUE(exited.ok());
  EXPECT_EQ(exited->state(), v1::CONTAINER_EXITED);
  EXPECT_EQ(exited->exit_code(), 3);
  EXPECT_EQ(DockerInspects(), inspects + 2);
}

TEST_F(ContainerViewTest, UpdatedResourcesShowInTheNextStatus) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  Start(*viewed_, c);
  v1::UpdateContainerResourcesRequest update;
  update.set_container_id(c);
  update.mutable_linux()->set_memory_limit_in_bytes(64 << 20);
  ASSERT_TRUE(viewed_->UpdateContainerResources(ctx_, update).ok());
  const int inspects = DockerInspects();
  auto status = Status(c);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->resources().linux().memory_limit_in_bytes(), 64 << 20);
  EXPECT_EQ(DockerInspects(), inspects);
  // docker update behind the shim's back: its "update" event reads it again.
  ASSERT_TRUE(docker_.UpdateContainer(ctx_, c, {{"Memory", 32 << 20}}).ok());
  view_.OnEvent(Event(c, "update"));
  EXPECT_EQ(Status(c)->resources().linux().memory_limit_in_bytes(), 32 << 20);
}

TEST_F(ContainerViewTest, AStatusFromMemoryShowsARemovedContainerUntilItsDestroyEvent) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());  // docker rm -f
  // As a list would show it until the event (within milliseconds with the hub).
  EXPECT_EQ(Status(c)->state(), v1::CONTAINER_CREATED);
  view_.OnEvent(Event(c, "destroy"));
  EXPECT_TRUE(absl::IsNotFound(Status(c).status()));
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, AReconcileThatFindsTheStateChangedReadsTheStatusAgain) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  const std::string same = CreateContainer(*viewed_, pod, "a", "same");
  view_.OnStreamDown();
  ASSERT_TRUE(docker_.StartContainer(ctx_, c).ok());  // its start event was lost
  ASSERT_TRUE(view_.Reconcile().ok());
  const int inspects = DockerInspects();
  EXPECT_EQ(Status(c)->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(DockerInspects(), inspects + 1) << "the held inspect showed another state";
  EXPECT_EQ(Status(c)->state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(Status(same)->state(), v1::CONTAINER_CREATED);
  EXPECT_EQ(DockerInspects(), inspects + 1) << "then from memory, as the unchanged one";
}

TEST_F(ContainerViewTest, StatusCallsAskDockerWhileTheStreamIsDown) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  view_.OnStreamDown();
  const int inspects = DockerInspects();
  ASSERT_TRUE(Status(c).ok());
  ASSERT_TRUE(Status(c).ok());
  EXPECT_EQ(DockerInspects(), inspects + 2);
}

TEST_F(ContainerViewTest, CallsThatActOnAContainerAskDockerNotTheHeldInspect) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  Start(*viewed_, c);
  // It exited behind the view's back; the die event is not read yet. A status shows
  // what a list shows, but a stop must go by Docker's state now.
  docker_.EditContainer(c, [](dockerclient::ContainerInspect& i) {
    i.state.running = false;
    i.state.status = "exited";
  });
  EXPECT_EQ(Status(c)->state(), v1::CONTAINER_RUNNING);
  int inspects = DockerInspects();
  v1::StopContainerRequest stop;
  stop.set_container_id(c);
  ASSERT_TRUE(viewed_->StopContainer(ctx_, stop).ok());
  EXPECT_GT(DockerInspects(), inspects) << "StopContainer went by the held inspect";

  // Removed behind its back: the removal finds it gone in Docker, and it leaves the lists.
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
  inspects = DockerInspects();
  v1::RemoveContainerRequest remove;
  remove.set_container_id(c);
  ASSERT_TRUE(viewed_->RemoveContainer(ctx_, remove).ok());
  EXPECT_GT(DockerInspects(), inspects) << "RemoveContainer went by the held inspect";
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST_F(ContainerViewTest, ExecSyncFindsItsContainerInMemoryAndDockerRefusesAStoppedOne) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  Start(*viewed_, c);
  ASSERT_TRUE(Status(c).ok());  // the view holds its inspect
  v1::ExecSyncRequest exec;
  exec.set_container_id(c);
  exec.add_cmd("true");
  const int inspects = DockerInspects();
  ASSERT_TRUE(viewed_->ExecSync(ctx_, exec).ok());
  EXPECT_EQ(DockerInspects(), inspects) << "an exec probe inspected its container";

  // Stopped behind the view's back: Docker's own refusal is the answer.
  docker_.EditContainer(c, [](dockerclient::ContainerInspect& i) {
    i.state.running = false;
    i.state.status = "exited";
  });
  absl::StatusOr<v1::ExecSyncResponse> refused = viewed_->ExecSync(ctx_, exec);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();

  // Not a Kubernetes container (the pod's infra container) even when the view knows it.
  exec.set_container_id(pod);
  EXPECT_EQ(viewed_->ExecSync(ctx_, exec).status().code(), absl::StatusCode::kNotFound);
}

// Runs `action` on another thread as `running` and waits up to 5 s for it: false if it
// did not finish (it waits for the read under way; `running` must outlive that read).
bool DoneAtOnce(std::future<void>& running, std::function<void()> action) {
  running = std::async(std::launch::async, std::move(action));
  return running.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
}

TEST_F(ContainerViewTest, AReadThatBeganLaterWinsOverOneThatReturnsAfterIt) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  Start(*viewed_, c);
  // A re-read of `c` has its answer (running) on its way when `c` exits and the view
  // reads its die event: the die's read does not wait for it, and stays.
  std::future<void> die;
  WhileRead(docker_, "InspectContainer", c, [&] {
    docker_.EditContainer(c, [](dockerclient::ContainerInspect& i) {
      i.state.running = false;
      i.state.status = "exited";
    });
    EXPECT_TRUE(DoneAtOnce(die, [&] { view_.OnEvent(Event(c, "die")); })) << "the die's read waited for the other";
  });
  view_.Refresh(ctx_, c);
  EXPECT_THAT(Containers(*viewed_), ElementsAre("app CONTAINER_EXITED"));
}

TEST_F(ContainerViewTest, AReadOfOneContainerDoesNotHoldUpAnother) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string a = CreateContainer(*viewed_, pod, "a", "one");
  const std::string b = CreateContainer(*viewed_, pod, "a", "two");
  // Docker answers an inspect of a starting container only once it started: the
  // shim's start of another container must not wait for that.
  std::future<void> start;
  WhileRead(docker_, "InspectContainer", a, [&] {
    EXPECT_TRUE(DoneAtOnce(start, [&] { Start(*viewed_, b); })) << "waited for the read of another container";
  });
  view_.OnEvent(Event(a, "start"));
  EXPECT_THAT(Containers(*viewed_), UnorderedElementsAre("one CONTAINER_CREATED", "two CONTAINER_RUNNING"));
}

TEST_F(ContainerViewTest, AReadFromBeforeAListDoesNotBringBackWhatTheListLeftOut) {
  ASSERT_TRUE(view_.Reconcile().ok());
  const std::string pod = RunPod(*viewed_, "a");
  const std::string c = CreateContainer(*viewed_, pod, "a", "app");
  // An event's re-read that still shows `c` is on its way when docker rm -f removes it,
  // the stream breaks (its destroy event lost) and reopens with a list without it.
  std::future<void> list;
  WhileRead(docker_, "InspectContainer", c, [&] {
    ASSERT_TRUE(docker_.RemoveContainer(ctx_, c, true).ok());
    view_.OnStreamDown();
    EXPECT_TRUE(DoneAtOnce(list, [&] { EXPECT_TRUE(view_.Reconcile().ok()); }));
  });
  view_.OnEvent(Event(c, "rename"));
  EXPECT_THAT(Containers(*viewed_), IsEmpty());
}

TEST(EventsBetweenTest, StepsThroughTheLifecycle) {
  auto In = [](const std::string& state) {
    dockerclient::ContainerSummary c;
    c.id = "c1";
    c.names = {"/k8s_x"};
    c.state = state;
    return std::optional<dockerclient::ContainerSummary>(c);
  };
  auto Actions = [](const std::vector<dockerclient::DockerEvent>& events) {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.action);
    return out;
  };
  const std::nullopt_t none = std::nullopt;
  EXPECT_THAT(Actions(EventsBetween(none, In("created"), 1)), ElementsAre("create"));
  EXPECT_THAT(Actions(EventsBetween(none, In("running"), 1)), ElementsAre("create", "start"));
  EXPECT_THAT(Actions(EventsBetween(none, In("exited"), 1)), ElementsAre("create", "start", "die"));
  EXPECT_THAT(Actions(EventsBetween(In("created"), In("running"), 1)), ElementsAre("start"));
  EXPECT_THAT(Actions(EventsBetween(In("created"), In("exited"), 1)), ElementsAre("start", "die"));
  EXPECT_THAT(Actions(EventsBetween(In("running"), In("exited"), 1)), ElementsAre("die"));
  EXPECT_THAT(Actions(EventsBetween(In("running"), In("paused"), 1)), IsEmpty());
  EXPECT_THAT(Actions(EventsBetween(In("exited"), In("running"), 1)), ElementsAre("start"));
  EXPECT_THAT(Actions(EventsBetween(In("running"), none, 1)), ElementsAre("die", "destroy"));
  EXPECT_THAT(Actions(EventsBetween(In("created"), none, 1)), ElementsAre("destroy"));
  EXPECT_THAT(Actions(EventsBetween(In("exited"), none, 1)), ElementsAre("destroy"));
  EXPECT_THAT(Actions(EventsBetween(none, none, 1)), IsEmpty());
  const auto e = EventsBetween(none, In("created"), 42);
  EXPECT_EQ(e[0].time_nano, 42);
  EXPECT_EQ(e[0].attributes.at("name"), "k8s_x");
}

}  // namespace
}  // namespace shim::view

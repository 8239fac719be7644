// The CRI server under a kubelet's bursts (issue 27): the real services, dispatcher and
// gRPC limits on a unix socket, the CriService on a fake Docker whose slow operations
// wait at gates the test opens. Short calls answer while hundreds of slow ones wait;
// no call is refused for lack of threads; queued calls that can no longer be useful
// are answered without running; a full queue says so; the shutdown answers what waits;
// a Docker that does not answer fails calls at their deadlines; clients that never
// read are dropped.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "observability/families.h"
#include "shim/cri_service.h"
#include "shim/dispatch/dispatcher.h"
#include "shim/grpc_limits.h"
#include "shim/grpc_services.h"
#include "tests/support/grpc_burst.h"
#include "tests/support/raw_h2_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/gated_docker_client.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using Code = grpc::StatusCode;
using testsupport::Burst;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

// "N x CODE: message" per code that is not OK, for failure messages.
std::string NotOk(const std::vector<Burst::Outcome>& outcomes) {
  std::map<std::string, int> by;
  for (const auto& o : outcomes)
    if (!o.status.ok()) ++by[absl::StrCat(o.rpc, " ", o.status.error_code(), ": ", o.status.error_message())];
  std::string out;
  for (const auto& [what, n] : by) absl::StrAppend(&out, n, " x ", what, "\n");
  return out;
}

int CountCode(const std::vector<Burst::Outcome>& outcomes, Code code) {
  int n = 0;
  for (const auto& o : outcomes) n += o.status.error_code() == code;
  return n;
}

int64_t Queued(dispatch::Lane lane) {
  return observability::Metrics().cri_queued.With({dispatch::LaneName(lane)}).Value();
}

// Calls of `lane` that a worker took (answered at once, a call never reaches one).
uint64_t Dispatched(dispatch::Lane lane) {
  return observability::Metrics().cri_queue_wait.With({dispatch::LaneName(lane)}).Read().cumulative.back();
}

// Waits until `lane` holds `n` queued calls; whether it did within 5 s.
bool AwaitQueued(dispatch::Lane lane, int64_t n) {
  for (absl::Time end = absl::Now() + absl::Seconds(5); absl::Now() < end; absl::SleepFor(absl::Milliseconds(5)))
    if (Queued(lane) == n) return true;
  return false;
}

class GrpcServerLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/grpc_server_load_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
  }

  void TearDown() override {
    docker_.OpenAll();
    if (server_) StopServing(*server_, *dispatcher_, absl::Seconds(5));
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // The server as main.cc builds it, on a unix socket, with `limits` for its lanes.
  void StartServer(dispatch::Limits limits = dispatch::DefaultLimits(), ConnectionLimits connections = {}) {
    dispatcher_ = std::make_unique<dispatch::Dispatcher>(limits);
    runtime_ = std::make_unique<RuntimeServiceImpl>(*service_, GrpcOptions{}, *dispatcher_);
    images_ = std::make_unique<ImageServiceImpl>(*service_, GrpcOptions{}, *dispatcher_);
    const std::string address = "unix://" + socket_path();
    grpc::ServerBuilder builder;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials());
    builder.RegisterService(runtime_.get());
    builder.RegisterService(images_.get());
    ApplyGrpcLimits(builder, connections);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    runtime_stub_ = v1::RuntimeService::NewStub(channel);
    image_stub_ = v1::ImageService::NewStub(channel);
  }

  std::string socket_path() const { return root_ + "/cri.sock"; }

  // `pods` pods with `per_pod` running containers each, made directly on the service.
  void MakePods(int pods, int per_pod) {
    const common::Context ctx = common::Context::WithTimeout(absl::Seconds(10));
    for (int p = 0; p < pods; ++p) {
      v1::PodSandboxConfig pod;
      pod.mutable_metadata()->set_name(absl::StrCat("pod", p));
      pod.mutable_metadata()->set_namespace_("load");
      pod.mutable_metadata()->set_uid(absl::StrCat("uid-", p));
      pod.mutable_linux();
      v1::RunPodSandboxRequest run;
      *run.mutable_config() = pod;
      auto sandbox = service_->RunPodSandbox(ctx, run);
      ASSERT_TRUE(sandbox.ok()) << sandbox.status();
      sandboxes_.push_back(sandbox->pod_sandbox_id());
      for (int c = 0; c < per_pod; ++c) {
        v1::CreateContainerRequest create;
        create.set_pod_sandbox_id(sandbox->pod_sandbox_id());
        create.mutable_config()->mutable_metadata()->set_name(absl::StrCat("c", c));
        create.mutable_config()->mutable_image()->set_image(kBusybox);
        *create.mutable_sandbox_config() = pod;
        auto created = service_->CreateContainer(ctx, create);
        ASSERT_TRUE(created.ok()) << created.status();
        v1::StartContainerRequest start;
        start.set_container_id(created->container_id());
        ASSERT_TRUE(service_->StartContainer(ctx, start).ok());
        containers_.push_back(created->container_id());
      }
    }
  }

  // Issues one StopContainer of containers_[i], waiting up to `timeout`.
  grpc::ClientContext& Stop(Burst& burst, std::size_t i, absl::Duration timeout) {
    v1::StopContainerRequest req;
    req.set_container_id(containers_[i]);
    req.set_timeout(30);
    return burst.Issue<v1::StopContainerResponse>("StopContainer", req, timeout, [this](auto... a) {
      runtime_stub_->async()->StopContainer(a...);
    });
  }

  // The short calls of a kubelet's relist and status polls, `rounds` times each.
  void IssueShortCalls(Burst& burst, int rounds, absl::Duration timeout) {
    for (int i = 0; i < rounds; ++i) {
      burst.Issue<v1::VersionResponse>("Version", v1::VersionRequest(), timeout,
                                       [this](auto... a) { runtime_stub_->async()->Version(a...); });
      burst.Issue<v1::StatusResponse>("Status", v1::StatusRequest(), timeout,
                                      [this](auto... a) { runtime_stub_->async()->Status(a...); });
      burst.Issue<v1::ListPodSandboxResponse>("ListPodSandbox", v1::ListPodSandboxRequest(), timeout,
                                              [this](auto... a) { runtime_stub_->async()->ListPodSandbox(a...); });
      v1::PodSandboxStatusRequest status;
      status.set_pod_sandbox_id(sandboxes_[i % sandboxes_.size()]);
      burst.Issue<v1::PodSandboxStatusResponse>("PodSandboxStatus", status, timeout, [this](auto... a) {
        runtime_stub_->async()->PodSandboxStatus(a...);
      });
      burst.Issue<v1::ListContainersResponse>("ListContainers", v1::ListContainersRequest(), timeout,
                                              [this](auto... a) { runtime_stub_->async()->ListContainers(a...); });
    }
  }

  std::string root_;
  testing_fakes::GatedDockerClient docker_;
  testing_fakes::FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  std::unique_ptr<dispatch::Dispatcher> dispatcher_;
  std::unique_ptr<RuntimeServiceImpl> runtime_;
  std::unique_ptr<ImageServiceImpl> images_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::RuntimeService::Stub> runtime_stub_;
  std::unique_ptr<v1::ImageService::Stub> image_stub_;
  std::vector<std::string> sandboxes_, containers_;
};

// Issue 27: 300 slow calls (stops, execs, removals and pulls, each waiting inside
// Docker until released) and, meanwhile, 250 short calls, all on one connection.
TEST_F(GrpcServerLoadTest, ShortCallsAnswerWhile300SlowCallsWaitAndNoCallIsRefused) {
  MakePods(50, 5);  // 250 containers: 100 to stop, 100 to exec in, 50 to remove
  for (int i = 0; i < 50; ++i) docker_.AddPullableImage(absl::StrCat("registry.local/app", i, ":1"));
  StartServer();
  for (const char* op : {"StopContainer", "RunExec", "RemoveContainer", "PullImage"}) docker_.Close(op);

  Burst slow;
  const absl::Duration kSlowTimeout = absl::Seconds(120);
  for (std::size_t i = 0; i < 100; ++i) Stop(slow, i, kSlowTimeout);
  for (std::size_t i = 100; i < 200; ++i) {
    v1::ExecSyncRequest req;
    req.set_container_id(containers_[i]);
    req.add_cmd("true");
    slow.Issue<v1::ExecSyncResponse>("ExecSync", req, kSlowTimeout,
                                     [this](auto... a) { runtime_stub_->async()->ExecSync(a...); });
  }
  for (std::size_t i = 200; i < 250; ++i) {
    v1::RemoveContainerRequest req;
    req.set_container_id(containers_[i]);
    slow.Issue<v1::RemoveContainerResponse>("RemoveContainer", req, kSlowTimeout,
                                            [this](auto... a) { runtime_stub_->async()->RemoveContainer(a...); });
  }
  for (int i = 0; i < 50; ++i) {
    v1::PullImageRequest req;
    req.mutable_image()->set_image(absl::StrCat("registry.local/app", i, ":1"));
    slow.Issue<v1::PullImageResponse>("PullImage", req, kSlowTimeout,
                                      [this](auto... a) { image_stub_->async()->PullImage(a...); });
  }
  // Every worker of the lifecycle and pull lanes waits inside Docker.
  ASSERT_TRUE(docker_.AwaitWaiting("RemoveContainer", 32, absl::Seconds(10)));
  ASSERT_TRUE(docker_.AwaitWaiting("PullImage", 16, absl::Seconds(10)));

  Burst quick;
  const absl::Duration kShortTimeout = absl::Seconds(2);
  IssueShortCalls(quick, 50, kShortTimeout);
  std::vector<Burst::Outcome> answered;
  ASSERT_TRUE(quick.Await(absl::Seconds(10), &answered));
  ASSERT_EQ(answered.size(), 250u);
  EXPECT_EQ(NotOk(answered), "");
  absl::Duration slowest;
  for (const auto& o : answered) slowest = std::max(slowest, o.latency);
  EXPECT_LT(slowest, kShortTimeout);
  EXPECT_EQ(docker_.Waiting("StopContainer") + docker_.Waiting("RunExec"), 200)
      << "every stop and exec waits on a worker of its own (the process lane has 256)";

  docker_.OpenAll();
  std::vector<Burst::Outcome> finished;
  ASSERT_TRUE(slow.Await(absl::Seconds(60), &finished));
  ASSERT_EQ(finished.size(), 300u);
  EXPECT_EQ(CountCode(finished, Code::RESOURCE_EXHAUSTED), 0);
  EXPECT_EQ(NotOk(finished), "");
  EXPECT_EQ(docker_.Entered("StopContainer"), 100);
  EXPECT_EQ(docker_.Entered("RunExec"), 100);
  EXPECT_EQ(docker_.Entered("RemoveContainer"), 50);
  EXPECT_EQ(docker_.Entered("PullImage"), 50);
}

// The kubelet's polls that memory answers are answered where gRPC hands them over: a
// Version whose Docker version is cached needs no worker, even while Docker hangs; one
// that must ask Docker, and a ContainerStatus that must inspect (no container view
// here), go to a worker and get Docker's answer, asked once.
TEST_F(GrpcServerLoadTest, WhatMemoryAnswersNeedsNoWorkerAndWhatNeedsDockerGetsOne) {
  MakePods(1, 1);
  StartServer();
  auto version = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::VersionResponse resp;
    grpc::Status s = runtime_stub_->Version(&ctx, v1::VersionRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.runtime_version();
  };
  const uint64_t health_before = Dispatched(dispatch::Lane::kHealth);
  const std::string first = version();  // asks Docker: on a worker
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(Dispatched(dispatch::Lane::kHealth), health_before + 1);
  EXPECT_EQ(docker_.Entered("Version"), 1) << "the attempt at once did not reach Docker";

  docker_.Close("Version");  // a cached answer does not need it
  for (int i = 0; i < 20; ++i) EXPECT_EQ(version(), first);
  EXPECT_EQ(Dispatched(dispatch::Lane::kHealth), health_before + 1) << "20 answered at once";
  EXPECT_EQ(docker_.Entered("Version"), 1);
  docker_.OpenAll();

  const uint64_t short_before = Dispatched(dispatch::Lane::kShort);
  const int inspects_before = docker_.Entered("InspectContainer");
  grpc::ClientContext ctx;
  v1::ContainerStatusRequest req;
  req.set_container_id(containers_[0]);
  v1::ContainerStatusResponse resp;
  grpc::Status s = runtime_stub_->ContainerStatus(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.status().id(), containers_[0]);
  EXPECT_EQ(resp.status().state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(Dispatched(dispatch::Lane::kShort), short_before + 1) << "it needed Docker: a worker ran it";
  EXPECT_EQ(docker_.Entered("InspectContainer"), inspects_before + 1) << "asked once, by the worker";
}

TEST_F(GrpcServerLoadTest, AQueuedCallWhoseDeadlinePassesIsAnsweredWithoutRunning) {
  MakePods(1, 2);
  dispatch::Limits limits = dispatch::DefaultLimits();
  limits[static_cast<std::size_t>(dispatch::Lane::kProcess)] = {1, 8};
  StartServer(limits);
  docker_.Close("StopContainer");
  Burst running, expiring;
  Stop(running, 0, absl::Seconds(60));
  ASSERT_TRUE(docker_.AwaitWaiting("StopContainer", 1, absl::Seconds(5)));
  Stop(expiring, 1, absl::Milliseconds(300));
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(expiring.Await(absl::Seconds(5), &outcomes));
  EXPECT_EQ(outcomes[0].status.error_code(), Code::DEADLINE_EXCEEDED);
  EXPECT_TRUE(AwaitQueued(dispatch::Lane::kProcess, 0)) << "the server dropped it from the queue at its deadline";

  docker_.OpenAll();
  ASSERT_TRUE(running.Await(absl::Seconds(5), &outcomes));
  EXPECT_TRUE(outcomes[0].status.ok()) << outcomes[0].status.error_message();
  absl::SleepFor(absl::Milliseconds(100));  // a worker that took the expired call would have reached Docker by now
  EXPECT_EQ(docker_.Entered("StopContainer"), 1) << "the expired call never ran";
}

TEST_F(GrpcServerLoadTest, AQueuedCallWhoseClientCancelsIsDroppedAtOnceWithoutRunning) {
  MakePods(1, 2);
  dispatch::Limits limits = dispatch::DefaultLimits();
  limits[static_cast<std::size_t>(dispatch::Lane::kProcess)] = {1, 8};
  StartServer(limits);
  docker_.Close("StopContainer");
  Burst running, cancelled;
  Stop(running, 0, absl::Seconds(60));
  ASSERT_TRUE(docker_.AwaitWaiting("StopContainer", 1, absl::Seconds(5)));
  grpc::ClientContext& ctx = Stop(cancelled, 1, absl::Seconds(60));
  ASSERT_TRUE(AwaitQueued(dispatch::Lane::kProcess, 1));
  ctx.TryCancel();
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(cancelled.Await(absl::Seconds(5), &outcomes));
  EXPECT_EQ(outcomes[0].status.error_code(), Code::CANCELLED);
  EXPECT_TRUE(AwaitQueued(dispatch::Lane::kProcess, 0)) << "withdrawn while the worker is still busy";

  docker_.OpenAll();
  ASSERT_TRUE(running.Await(absl::Seconds(5), &outcomes));
  EXPECT_TRUE(outcomes[0].status.ok()) << outcomes[0].status.error_message();
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(docker_.Entered("StopContainer"), 1) << "the cancelled call never ran";
}

TEST_F(GrpcServerLoadTest, AFullQueueAnswersResourceExhaustedSayingTheQueueIsFull) {
  MakePods(1, 4);
  dispatch::Limits limits = dispatch::DefaultLimits();
  limits[static_cast<std::size_t>(dispatch::Lane::kProcess)] = {1, 2};
  StartServer(limits);
  docker_.Close("StopContainer");
  Burst accepted, refused;
  Stop(accepted, 0, absl::Seconds(60));
  ASSERT_TRUE(docker_.AwaitWaiting("StopContainer", 1, absl::Seconds(5)));
  Stop(accepted, 1, absl::Seconds(60));
  Stop(accepted, 2, absl::Seconds(60));
  ASSERT_TRUE(AwaitQueued(dispatch::Lane::kProcess, 2));
  Stop(refused, 3, absl::Seconds(60));
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(refused.Await(absl::Seconds(5), &outcomes));
  EXPECT_EQ(outcomes[0].status.error_code(), Code::RESOURCE_EXHAUSTED);
  EXPECT_THAT(outcomes[0].status.error_message(), HasSubstr("queue of process calls is full"));
  EXPECT_THAT(outcomes[0].status.error_message(), Not(HasSubstr("hread")));

  docker_.OpenAll();
  ASSERT_TRUE(accepted.Await(absl::Seconds(5), &outcomes));
  EXPECT_EQ(NotOk(outcomes), "");
  EXPECT_EQ(docker_.Entered("StopContainer"), 3);
}

// SIGTERM with calls queued: they are answered UNAVAILABLE at once; the running one
// ends within the grace period, and the workers are joined.
TEST_F(GrpcServerLoadTest, ShutdownAnswersQueuedCallsUnavailableAndLetsTheRunningOneFinish) {
  MakePods(1, 3);
  dispatch::Limits limits = dispatch::DefaultLimits();
  limits[static_cast<std::size_t>(dispatch::Lane::kProcess)] = {1, 8};
  StartServer(limits);
  docker_.Close("StopContainer");
  Burst running, queued;
  Stop(running, 0, absl::Seconds(60));
  ASSERT_TRUE(docker_.AwaitWaiting("StopContainer", 1, absl::Seconds(5)));
  Stop(queued, 1, absl::Seconds(60));
  Stop(queued, 2, absl::Seconds(60));
  ASSERT_TRUE(AwaitQueued(dispatch::Lane::kProcess, 2));

  std::thread stopping([this] { StopServing(*server_, *dispatcher_, absl::Seconds(10)); });
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(queued.Await(absl::Seconds(5), &outcomes));
  for (const auto& o : outcomes) {
    EXPECT_EQ(o.status.error_code(), Code::UNAVAILABLE);
    EXPECT_THAT(o.status.error_message(), HasSubstr("shutting down"));
  }
  EXPECT_EQ(docker_.Waiting("StopContainer"), 1) << "the running call goes on";
  docker_.OpenAll();
  ASSERT_TRUE(running.Await(absl::Seconds(5), &outcomes));
  EXPECT_TRUE(outcomes[0].status.ok()) << outcomes[0].status.error_message();
  stopping.join();
  server_.reset();
  EXPECT_EQ(docker_.Entered("StopContainer"), 1);
}

TEST_F(GrpcServerLoadTest, ShutdownCancelsACallStillRunningWhenTheGracePeriodEnds) {
  MakePods(1, 1);
  StartServer();
  docker_.Close("StopContainer");
  Burst running;
  Stop(running, 0, absl::Seconds(60));
  ASSERT_TRUE(docker_.AwaitWaiting("StopContainer", 1, absl::Seconds(5)));
  const absl::Time start = absl::Now();
  StopServing(*server_, *dispatcher_, absl::Milliseconds(300));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "the grace period bounds the shutdown";
  server_.reset();
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(running.Await(absl::Seconds(5), &outcomes));
  EXPECT_FALSE(outcomes[0].status.ok());
  EXPECT_EQ(docker_.Waiting("StopContainer"), 0);
}

// A dockerd that accepts and does not answer (here for a few seconds rather than a
// minute): calls fail at their deadlines and nothing stays queued, Version and Status
// still answer, and the shim serves again as soon as Docker does.
TEST_F(GrpcServerLoadTest, WhileDockerHangsCallsFailAtTheirDeadlinesAndTheShimRecovers) {
  MakePods(4, 2);
  StartServer();
  {
    grpc::ClientContext ctx;
    v1::VersionResponse version;
    ASSERT_TRUE(runtime_stub_->Version(&ctx, v1::VersionRequest(), &version).ok());
    ASSERT_EQ(version.runtime_version(), docker_.version.version);
  }
  for (const char* op : {"Ping", "Version", "Info", "ListContainers", "InspectContainer", "ListImages"})
    docker_.Close(op);

  Burst hung;
  const absl::Duration kTimeout = absl::Milliseconds(800);
  for (int i = 0; i < 40; ++i) {
    hung.Issue<v1::ListContainersResponse>("ListContainers", v1::ListContainersRequest(), kTimeout,
                                           [this](auto... a) { runtime_stub_->async()->ListContainers(a...); });
    v1::ContainerStatusRequest status;
    status.set_container_id(containers_[i % containers_.size()]);
    hung.Issue<v1::ContainerStatusResponse>("ContainerStatus", status, kTimeout, [this](auto... a) {
      runtime_stub_->async()->ContainerStatus(a...);
    });
    hung.Issue<v1::ListImagesResponse>("ListImages", v1::ListImagesRequest(), kTimeout,
                                       [this](auto... a) { image_stub_->async()->ListImages(a...); });
  }
  // Meanwhile the runtime's health is still told.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    v1::VersionResponse version;
    grpc::Status s = runtime_stub_->Version(&ctx, v1::VersionRequest(), &version);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(version.runtime_version(), docker_.version.version) << "the last known one";
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    v1::StatusResponse status;
    grpc::Status s = runtime_stub_->Status(&ctx, v1::StatusRequest(), &status);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(status.status().conditions(0).status());
    EXPECT_EQ(status.status().conditions(0).reason(), "DockerDaemonNotReady");
    EXPECT_THAT(status.status().conditions(0).message(), HasSubstr("did not answer"));
  }
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(hung.Await(absl::Seconds(10), &outcomes));
  for (const auto& o : outcomes) {
    EXPECT_EQ(o.status.error_code(), Code::DEADLINE_EXCEEDED) << o.rpc << ": " << o.status.error_message();
    EXPECT_LT(o.latency, kTimeout + absl::Seconds(1)) << o.rpc;
  }
  EXPECT_TRUE(AwaitQueued(dispatch::Lane::kShort, 0)) << "nothing stays queued";

  docker_.OpenAll();
  Burst after;
  IssueShortCalls(after, 4, absl::Seconds(2));
  ASSERT_TRUE(after.Await(absl::Seconds(10), &outcomes));
  EXPECT_EQ(NotOk(outcomes), "");
  grpc::ClientContext ctx;
  v1::StatusResponse status;
  ASSERT_TRUE(runtime_stub_->Status(&ctx, v1::StatusRequest(), &status).ok());
  EXPECT_TRUE(status.status().conditions(0).status()) << "ready again";
}

// Clients that open calls and never read a byte (no window for answers, no ping
// answered): a normal client is still served meanwhile, and the keepalive drops them.
TEST_F(GrpcServerLoadTest, ClientsThatNeverReadAreDroppedAndOthersAreServed) {
  MakePods(2, 2);
  ConnectionLimits connections;
  connections.keepalive_time = absl::Milliseconds(300);
  connections.keepalive_timeout = absl::Milliseconds(300);
  StartServer(dispatch::DefaultLimits(), connections);
  std::string list;
  v1::ListContainersRequest().SerializeToString(&list);
  std::vector<std::unique_ptr<testsupport::RawH2Connection>> flood;
  for (int i = 0; i < 200; ++i) {
    auto conn = testsupport::RawH2Connection::Open(socket_path(), /*initial_window=*/0);
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE((*conn)->Call("/runtime.v1.RuntimeService/ListContainers", list, /*complete=*/true).ok());
    ASSERT_TRUE((*conn)->Call("/runtime.v1.RuntimeService/ListContainers", list, /*complete=*/false).ok());
    ASSERT_TRUE((*conn)->Call("/runtime.v1.RuntimeService/Version", "", /*complete=*/true).ok());
    flood.push_back(*std::move(conn));
  }

  Burst normal;
  IssueShortCalls(normal, 4, absl::Seconds(2));
  std::vector<Burst::Outcome> outcomes;
  ASSERT_TRUE(normal.Await(absl::Seconds(10), &outcomes));
  EXPECT_EQ(NotOk(outcomes), "");

  int closed = 0;
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end && closed < 200;
       absl::SleepFor(absl::Milliseconds(50))) {
    closed = 0;
    for (auto& c : flood) closed += c->ClosedByServer();
  }
  EXPECT_EQ(closed, 200) << "every client that answers no ping is dropped";
  Burst after;
  IssueShortCalls(after, 1, absl::Seconds(2));
  ASSERT_TRUE(after.Await(absl::Seconds(10), &outcomes));
  EXPECT_EQ(NotOk(outcomes), "") << "a client that answers pings stays";
}

}  // namespace
}  // namespace shim

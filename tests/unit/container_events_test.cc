// The GetContainerEvents payload (CriService::BuildContainerEvent) on the fake Docker
// client: the pod's status and its containers' statuses as the event left them; and
// the RPC through the gRPC adapter's callback reactor.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "shim/cri_service.h"
#include "shim/events/cri_event.h"
#include "shim/events/event_hub.h"
#include "shim/grpc_services.h"
#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/test_http_server.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::UnorderedElementsAre;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

class ContainerEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/container_events_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
    pod_.mutable_metadata()->set_name("web");
    pod_.mutable_metadata()->set_namespace_("prod");
    pod_.mutable_metadata()->set_uid("uid-7");
    pod_.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod_;
    auto sandbox = service_->RunPodSandbox(ctx_, run);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status();
    sandbox_id_ = sandbox->pod_sandbox_id();
  }
  void TearDown() override {
    service_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::string RunContainer(const std::string& name) {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(sandbox_id_);
    req.mutable_config()->mutable_metadata()->set_name(name);
    req.mutable_config()->mutable_image()->set_image(kBusybox);
    req.mutable_config()->mutable_linux();
    *req.mutable_sandbox_config() = pod_;
    auto created = service_->CreateContainer(ctx_, req);
    EXPECT_TRUE(created.ok()) << created.status();
    v1::StartContainerRequest start;
    start.set_container_id(created->container_id());
    EXPECT_TRUE(service_->StartContainer(ctx_, start).ok());
    return created->container_id();
  }

  events::CriEvent Event(const std::string& id, v1::ContainerEventType type, bool is_sandbox = false) {
    events::CriEvent e;
    e.container_id = id;
    e.sandbox_id = sandbox_id_;
    e.is_sandbox = is_sandbox;
    e.type = type;
    e.created_at = 1234;
    return e;
  }

  static std::vector<std::string> Names(const v1::ContainerEventResponse& resp) {
    std::vector<std::string> names;
    for (const auto& c : resp.containers_statuses()) names.push_back(c.metadata().name());
    return names;
  }

  std::string root_;
  testing_fakes::FakeDockerClient docker_;
  testing_fakes::FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  v1::PodSandboxConfig pod_;
  std::string sandbox_id_;
};

TEST_F(ContainerEventsTest, CarriesThePodAndItsContainers) {
  const std::string app = RunContainer("app");
  RunContainer("sidecar");
  v1::ContainerEventResponse resp =
      service_->BuildContainerEvent(ctx_, Event(app, v1::CONTAINER_STARTED_EVENT));
  EXPECT_EQ(resp.container_id(), app);
  EXPECT_EQ(resp.container_event_type(), v1::CONTAINER_STARTED_EVENT);
  EXPECT_EQ(resp.created_at(), 1234);
  EXPECT_EQ(resp.pod_sandbox_status().id(), sandbox_id_);
  EXPECT_EQ(resp.pod_sandbox_status().metadata().uid(), "uid-7");
  EXPECT_EQ(resp.pod_sandbox_status().state(), v1::SANDBOX_READY);
  EXPECT_THAT(Names(resp), UnorderedElementsAre("app", "sidecar"));
  for (const auto& c : resp.containers_statuses()) EXPECT_EQ(c.state(), v1::CONTAINER_RUNNING);
}

TEST_F(ContainerEventsTest, ADeletedContainerIsNoLongerAmongThePods) {
  const std::string app = RunContainer("app");
  RunContainer("sidecar");
  v1::RemoveContainerRequest remove;
  remove.set_container_id(app);
  ASSERT_TRUE(service_->RemoveContainer(ctx_, remove).ok());
  v1::ContainerEventResponse resp = service_->BuildContainerEvent(ctx_, Event(app, v1::CONTAINER_DELETED_EVENT));
  EXPECT_EQ(resp.pod_sandbox_status().id(), sandbox_id_);
  EXPECT_THAT(Names(resp), UnorderedElementsAre("sidecar"));
}

TEST_F(ContainerEventsTest, ADeletedPodKeepsItsIdAndMetadata) {
  const std::string app = RunContainer("app");
  v1::StopPodSandboxRequest stop;
  stop.set_pod_sandbox_id(sandbox_id_);
  ASSERT_TRUE(service_->StopPodSandbox(ctx_, stop).ok());
  v1::RemovePodSandboxRequest remove;
  remove.set_pod_sandbox_id(sandbox_id_);
  ASSERT_TRUE(service_->RemovePodSandbox(ctx_, remove).ok());

  events::CriEvent deleted = Event(sandbox_id_, v1::CONTAINER_DELETED_EVENT, /*is_sandbox=*/true);
  deleted.attributes = {{"name", "k8s_POD_web_prod_uid-7_0"}, {kContainerTypeLabel, kContainerTypeSandbox}};
  v1::ContainerEventResponse resp = service_->BuildContainerEvent(ctx_, deleted);
  EXPECT_EQ(resp.container_id(), sandbox_id_);
  EXPECT_EQ(resp.pod_sandbox_status().id(), sandbox_id_);
  EXPECT_EQ(resp.pod_sandbox_status().state(), v1::SANDBOX_NOTREADY);
  EXPECT_EQ(resp.pod_sandbox_status().metadata().name(), "web");
  EXPECT_EQ(resp.pod_sandbox_status().metadata().namespace_(), "prod");
  EXPECT_EQ(resp.pod_sandbox_status().metadata().uid(), "uid-7");
  EXPECT_EQ(resp.containers_statuses_size(), 0);

  // An app container's event that comes after its pod is gone has no pod status:
  // the kubelet skips it.
  v1::ContainerEventResponse late = service_->BuildContainerEvent(ctx_, Event(app, v1::CONTAINER_DELETED_EVENT));
  EXPECT_FALSE(late.has_pod_sandbox_status());
  EXPECT_EQ(late.containers_statuses_size(), 0);
}

// Docker's events for the pod's container, one chunk per event, after `go`.
void ServeEvents(int fd, const std::atomic<bool>& go, const std::string& sandbox, const std::string& id) {
  std::string buffer;
  if (!testhttp::ReadRequest(fd, buffer)) return;
  testhttp::WriteAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
  while (!go) absl::SleepFor(absl::Milliseconds(1));
  const int64_t base = absl::ToUnixNanos(absl::Now()) + 1000;
  int i = 0;
  for (const char* action : {"create", "start", "die"}) {
    const std::string line = absl::StrCat(R"({"Type":"container","Action":")", action, R"(","Actor":{"ID":")", id,
                                          R"(","Attributes":{"io.kubernetes.docker.type":"container",)",
                                          R"("io.kubernetes.sandbox.id":")", sandbox, R"("}},"timeNano":)", base + i++,
                                          "}\n");
    std::ostringstream chunk;
    chunk << std::hex << line.size() << "\r\n" << line << "\r\n";
    testhttp::WriteAll(fd, chunk.str());
  }
  char c;
  while (::read(fd, &c, 1) > 0) {
  }
}

TEST_F(ContainerEventsTest, StreamsOverGrpcToEachClientUntilCancelledOrStopped) {
  docker_.version.api_version = "1.41";
  const std::string app = RunContainer("app");
  std::atomic<bool> go{false};
  testhttp::UnixHttpServer dockerd([&](int fd, int) { ServeEvents(fd, go, sandbox_id_, app); });
  events::HubOptions options;
  options.docker_socket_path = dockerd.path();
  events::EventHub hub(docker_, options,
                       [this](const events::CriEvent& e) { return service_->BuildContainerEvent(ctx_, e); });
  dispatch::Dispatcher dispatcher;
  RuntimeServiceImpl runtime(*service_, GrpcOptions{}, dispatcher, &hub);
  grpc::ServerBuilder builder;
  builder.RegisterService(&runtime);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::RuntimeService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));

  grpc::ClientContext reading, leaving;
  auto reader = stub->GetContainerEvents(&reading, v1::GetEventsRequest());
  auto leaver = stub->GetContainerEvents(&leaving, v1::GetEventsRequest());
  reader->WaitForInitialMetadata();
  leaver->WaitForInitialMetadata();
  leaving.TryCancel();  // unsubscribes; the other stream goes on
  EXPECT_EQ(leaver->Finish().error_code(), grpc::StatusCode::CANCELLED);
  go = true;

  std::vector<v1::ContainerEventType> types;
  v1::ContainerEventResponse event;
  while (types.size() < 3 && reader->Read(&event)) {
    types.push_back(event.container_event_type());
    EXPECT_EQ(event.container_id(), app);
    EXPECT_EQ(event.pod_sandbox_status().id(), sandbox_id_);
    EXPECT_EQ(event.containers_statuses_size(), 1);
  }
  EXPECT_THAT(types, ::testing::ElementsAre(v1::CONTAINER_CREATED_EVENT, v1::CONTAINER_STARTED_EVENT,
                                            v1::CONTAINER_STOPPED_EVENT));
  hub.Stop();  // as on SIGTERM: the open stream ends
  EXPECT_FALSE(reader->Read(&event));
  grpc::Status end = reader->Finish();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::UNAVAILABLE) << end.error_message();
  server->Shutdown();
}

TEST_F(ContainerEventsTest, WithoutAHubTheRpcIsUnimplemented) {
  dispatch::Dispatcher dispatcher;
  RuntimeServiceImpl runtime(*service_, GrpcOptions{}, dispatcher);
  grpc::ServerBuilder builder;
  builder.RegisterService(&runtime);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = v1::RuntimeService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  grpc::ClientContext context;
  auto reader = stub->GetContainerEvents(&context, v1::GetEventsRequest());
  v1::ContainerEventResponse event;
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  server->Shutdown();
}

}  // namespace
}  // namespace shim

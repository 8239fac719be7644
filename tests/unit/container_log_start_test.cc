// A container that Docker starts without a StartContainer gets its CRI log: the shim
// was killed during StartContainer, and its successor found the container only
// created (its log copy starts with the start) while dockerd went on starting it.
// Docker's start event, seen by the event hub, starts the copy. With and without the
// container view, as --relist-from-memory chooses.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/files.h"
#include "shim/cri_service.h"
#include "shim/events/event_hub.h"
#include "shim/logs/log_copier.h"
#include "shim/view/container_view.h"
#include "shim/view/view_client.h"
#include "tests/unit/eventually.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"
#include "tests/unit/test_http_server.h"

namespace shim {
namespace {

using testutil::Eventually;

namespace fs = std::filesystem;
namespace v1 = runtime::v1;

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:latest";

std::string ReadFile(const std::string& path) { return common::ReadWholeFile(path).value_or(""); }

class StartedWithoutStartContainerTest : public ::testing::TestWithParam<bool /*relist from memory*/> {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/container_log_start_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    docker_.version.api_version = "1.41";
    docker_.AddImage({kPause});
    docker_.AddImage({kBusybox});
  }
  void TearDown() override {
    go_ = true;  // a test that failed early must not leave the script waiting
    if (hub_) hub_->Stop();
    service_.reset();
    if (copier_) copier_->Stop();
    server_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  Options ServiceOptions() {
    Options o;
    o.root_directory = root_ + "/state";
    o.pod_infra_image = kPause;
    o.oom_score_adj_floor = -1000;
    return o;
  }

  // The killed shim: the pod and the container, created, never started by it.
  void CreateAsTheKilledShim() {
    CriService killed(ServiceOptions(), docker_, network_);
    ASSERT_TRUE(killed.Init().ok());
    v1::PodSandboxConfig pod;
    pod.mutable_metadata()->set_name("job");
    pod.mutable_metadata()->set_namespace_("soak");
    pod.mutable_metadata()->set_uid("uid-407");
    pod.set_log_directory(root_ + "/pods/soak_job_uid-407");
    pod.mutable_linux();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod;
    auto sandbox = killed.RunPodSandbox(ctx_, run);
    ASSERT_TRUE(sandbox.ok()) << sandbox.status();
    sandbox_id_ = sandbox->pod_sandbox_id();
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(sandbox_id_);
    req.mutable_config()->mutable_metadata()->set_name("app");
    req.mutable_config()->mutable_image()->set_image(kBusybox);
    req.mutable_config()->set_log_path("app/0.log");
    req.mutable_config()->mutable_linux();
    *req.mutable_sandbox_config() = pod;
    auto created = killed.CreateContainer(ctx_, req);
    ASSERT_TRUE(created.ok()) << created.status();
    container_id_ = created->container_id();
    cri_log_ = root_ + "/pods/soak_job_uid-407/app/0.log";
    json_log_ = root_ + "/docker/" + container_id_ + "-json.log";
    fs::create_directories(root_ + "/docker");
  }

  // The new shim, wired as main.cc does: the hub follows Docker before Init lists.
  // Docker's events: once `go_`, the container's start.
  void StartTheNewShim() {
    server_ = std::make_unique<testhttp::UnixHttpServer>([this](int fd, int) {
      std::string buffer;
      auto request = testhttp::ReadRequest(fd, buffer);
      if (!request) return;
      if (request->target.find("/events") == std::string::npos) {
        testhttp::WriteAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        return;
      }
      testhttp::WriteAll(fd, testhttp::kChunkedOk);
      while (!go_) absl::SleepFor(absl::Milliseconds(1));
      testhttp::WriteAll(fd, testhttp::Chunk(StartEvent()));
      char c;
      while (::read(fd, &c, 1) > 0) {
      }
    });
    logs::CopierOptions copier_options;
    copier_options.docker_socket_path = server_->path();
    copier_ = std::make_unique<logs::LogCopier>(docker_, copier_options);
    Options o = ServiceOptions();
    o.log_copier = copier_.get();
    const bool relist_from_memory = GetParam();
    if (relist_from_memory) o.container_view = &view_;
    service_ = std::make_unique<CriService>(
        o, relist_from_memory ? static_cast<dockerclient::DockerClient&>(viewed_) : docker_, network_);
    events::HubOptions hub_options;
    hub_options.docker_socket_path = server_->path();
    hub_ = std::make_unique<events::EventHub>(
        docker_, hub_options, [](const events::CriEvent&) { return v1::ContainerEventResponse(); },
        relist_from_memory ? &view_ : nullptr,
        [this](const events::CriEvent& event) { service_->OnContainerEvent(event); });
    ASSERT_TRUE(service_->Init().ok());
  }

  // What Docker sends: the container's labels and name as attributes.
  std::string StartEvent() {
    const dockerclient::ContainerInspect c = docker_.Containers().at(container_id_).inspect;
    nlohmann::json attributes(c.labels);
    attributes["name"] = c.name;
    return nlohmann::json{{"Type", "container"},
                          {"Action", "start"},
                          {"Actor", {{"ID", c.id}, {"Attributes", attributes}}},
                          {"timeNano", absl::ToUnixNanos(absl::Now())}}
               .dump() +
           "\n";
  }

  // dockerd finishes the start that the killed shim asked for; json-file, as Docker's
  // inspect reports its default log driver.
  void DockerStartsIt() {
    ASSERT_TRUE(docker_.StartContainer(ctx_, container_id_).ok());
    docker_.EditContainer(container_id_, [&](dockerclient::ContainerInspect& c) {
      c.log_path = json_log_;
      c.log_driver = "json-file";
    });
  }

  void ContainerWrites(const std::string& json_lines) {
    std::ofstream out(json_log_, std::ios::app);
    out << json_lines;
  }

  std::string root_, sandbox_id_, container_id_, cri_log_, json_log_;
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(10));
  testing_fakes::FakeDockerClient docker_;
  testing_fakes::FakeNetwork network_;
  view::ContainerView view_{docker_};
  view::ViewClient viewed_{docker_, view_};
  std::atomic<bool> go_{false};
  std::unique_ptr<testhttp::UnixHttpServer> server_;
  std::unique_ptr<logs::LogCopier> copier_;
  std::unique_ptr<CriService> service_;
  std::unique_ptr<events::EventHub> hub_;
};

TEST_P(StartedWithoutStartContainerTest, ItsOutputReachesTheCriLogFromDockersStartEvent) {
  ASSERT_NO_FATAL_FAILURE(CreateAsTheKilledShim());
  ASSERT_NO_FATAL_FAILURE(StartTheNewShim());
  ASSERT_TRUE(fs::exists(cri_log_));
  EXPECT_EQ(copier_->Stats().containers, 0);  // only created: no copy yet
  ASSERT_NO_FATAL_FAILURE(DockerStartsIt());
  ContainerWrites(R"({"log":"job 407 started\n","stream":"stdout","time":"2026-12-06T09:26:25.000000001Z"})" "\n"
                  R"({"log":"warming up\n","stream":"stderr","time":"2026-12-06T09:26:25.000000002Z"})" "\n");
  go_ = true;
  const std::string first = "2026-12-06T09:26:25.000000001Z stdout F job 407 started\n"
                            "2026-12-06T09:26:25.000000002Z stderr F warming up\n";
  EXPECT_TRUE(Eventually([&] { return ReadFile(cri_log_) == first; })) << ReadFile(cri_log_);
  // Followed from then on, once: a later line comes once.
  ContainerWrites(R"({"log":"job 407 done\n","stream":"stdout","time":"2026-12-06T09:26:26.000000001Z"})" "\n");
  EXPECT_TRUE(Eventually([&] {
    return ReadFile(cri_log_) == first + "2026-12-06T09:26:26.000000001Z stdout F job 407 done\n";
  })) << ReadFile(cri_log_);
  EXPECT_EQ(copier_->Stats().containers, 1);
}

INSTANTIATE_TEST_SUITE_P(RelistFromMemory, StartedWithoutStartContainerTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "WithTheView" : "WithoutTheView"; });

}  // namespace
}  // namespace shim

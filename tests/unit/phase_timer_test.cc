// common::PhaseSink and ScopedPhase, and the phases CriService (RunPodSandbox,
// CreateContainer, StartContainer) and CniNetwork (each plugin run, the cache write)
// record through it, on the fake Docker client, the fake network and a fake plugin
// executor. The pod start-up bench (tests/bench/pod_startup_bench.cc) reads these names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/phase_timer.h"
#include "shim/cri_service.h"
#include "shim/naming.h"
#include "shim/network/cni_network.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using json = nlohmann::json;

class RecordingSink : public common::PhaseSink {
 public:
  void Record(std::string_view phase, absl::Duration elapsed) override {
    std::lock_guard lock(mu_);
    phases.emplace_back(phase);
    durations.push_back(elapsed);
  }
  std::vector<std::string> phases;
  std::vector<absl::Duration> durations;

 private:
  std::mutex mu_;
};

TEST(ScopedPhaseTest, RecordsOnceAtStopOrAtTheEndOfItsScope) {
  RecordingSink sink;
  {
    common::ScopedPhase a(&sink, "a");
    common::ScopedPhase b(&sink, "b");
    b.Stop();
    b.Stop();  // a second Stop does nothing
  }
  EXPECT_THAT(sink.phases, ElementsAre("b", "a"));
  for (absl::Duration d : sink.durations) EXPECT_GE(d, absl::ZeroDuration());
}

TEST(ScopedPhaseTest, WithoutASinkNothingHappens) {
  common::ScopedPhase a(nullptr, "a");
  a.Stop();  // no sink to call: nothing to see, nothing crashes
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/phase_timer_test.XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

constexpr char kPause[] = "registry.k8s.io/pause:3.10";
constexpr char kBusybox[] = "busybox:1.36";

TEST(CriServicePhasesTest, RunCreateStartRecordTheirPhasesInOrder) {
  TempDir dir;
  testing_fakes::FakeDockerClient docker;
  testing_fakes::FakeNetwork network;
  docker.AddImage({kPause});
  docker.AddImage({kBusybox});
  RecordingSink sink;
  shim::Options o;
  o.root_directory = dir.path() + "/root";
  o.pod_infra_image = kPause;
  o.oom_score_adj_floor = -1000;
  o.phase_sink = &sink;
  shim::CriService service(o, docker, network);
  ASSERT_TRUE(service.Init().ok());
  const common::Context ctx = common::Context::WithTimeout(absl::Seconds(10));

  shim::v1::RunPodSandboxRequest run;
  auto* md = run.mutable_config()->mutable_metadata();
  md->set_name("web");
  md->set_namespace_("prod");
  md->set_uid("uid-1");
  run.mutable_config()->set_log_directory(dir.path() + "/logs");
  auto ran = service.RunPodSandbox(ctx, run);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_THAT(sink.phases, ElementsAre("RunPodSandbox: checks and create body", "RunPodSandbox: pause image check",
                                       "RunPodSandbox: creation marker", "RunPodSandbox: infra create",
                                       "RunPodSandbox: checkpoint write (pending)", "RunPodSandbox: infra start",
                                       "RunPodSandbox: netns lookup (inspect)",
                                       "RunPodSandbox: network SetUp (CNI ADD chain + cache)",
                                       "RunPodSandbox: checkpoint write (final)"));

  sink.phases.clear();
  shim::v1::CreateContainerRequest create;
  create.set_pod_sandbox_id(ran->pod_sandbox_id());
  create.mutable_config()->mutable_metadata()->set_name("app");
  create.mutable_config()->mutable_image()->set_image(kBusybox);
  create.mutable_config()->set_log_path("app/0.log");
  *create.mutable_sandbox_config() = run.config();
  auto created = service.CreateContainer(ctx, create);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_THAT(sink.phases, ElementsAre("CreateContainer: sandbox inspect",
                                       "CreateContainer: create body (info, features, mounts)",
                                       "CreateContainer: image check", "CreateContainer: create",
                                       "CreateContainer: log file"));

  sink.phases.clear();
  shim::v1::StartContainerRequest start;
  start.set_container_id(created->container_id());
  ASSERT_TRUE(service.StartContainer(ctx, start).ok());
  EXPECT_THAT(sink.phases, ElementsAre("StartContainer: inspect", "StartContainer: start",
                                       "StartContainer: log copy follow", "StartContainer: cgroup files"));
}

TEST(CriServicePhasesTest, NoSinkNoPhases) {
  TempDir dir;
  testing_fakes::FakeDockerClient docker;
  testing_fakes::FakeNetwork network;
  docker.AddImage({kPause});
  shim::Options o;
  o.root_directory = dir.path() + "/root";
  o.pod_infra_image = kPause;
  o.oom_score_adj_floor = -1000;
  shim::CriService service(o, docker, network);
  ASSERT_TRUE(service.Init().ok());
  shim::v1::RunPodSandboxRequest run;
  run.mutable_config()->mutable_metadata()->set_name("web");
  run.mutable_config()->mutable_metadata()->set_namespace_("prod");
  run.mutable_config()->mutable_metadata()->set_uid("uid-1");
  EXPECT_TRUE(service.RunPodSandbox(common::Context::WithTimeout(absl::Seconds(10)), run).ok());
}

// Passes prevResult on; the first plugin answers with an address.
class ChainExecutor : public network::PluginExecutor {
 public:
  absl::StatusOr<std::string> Exec(const common::Context&, const std::string&, const network::PluginRequest& req,
                                   const std::string& stdin_config) override {
    if (req.command != "ADD") return std::string();
    json config = json::parse(stdin_config);
    if (config.contains("prevResult")) return config["prevResult"].dump();
    return json({{"cniVersion", "1.0.0"},
                 {"interfaces", {{{"name", "eth0"}, {"sandbox", "/proc/1/ns/net"}}}},
                 {"ips", {{{"address", "10.1.0.5/24"}, {"interface", 0}}}}})
        .dump();
  }
};

TEST(CniNetworkPhasesTest, EachPluginRunAndTheCacheWriteAreRecorded) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/net.d");
  std::ofstream(dir.path() + "/net.d/10-podnet.conflist") << R"({"cniVersion":"1.0.0","name":"podnet","plugins":[
    {"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.1.0.0/24"}},
    {"type":"portmap","capabilities":{"portMappings":true}},
    {"type":"loopback"}]})";
  RecordingSink sink;
  network::CniOptions options;
  options.conf_dir = dir.path() + "/net.d";
  options.cache_dir = dir.path() + "/cache";
  options.phase_sink = &sink;
  network::CniNetwork cni(options, std::make_unique<ChainExecutor>());
  network::PodNetworkRequest req;
  req.pod_name = "web";
  req.pod_namespace = "prod";
  req.pod_uid = "uid-1";
  req.sandbox_id = "0123456789abcdef";
  req.netns_path = "/proc/1/ns/net";
  const common::Context ctx = common::Context::WithTimeout(absl::Seconds(10));
  auto up = cni.SetUp(ctx, req);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->ip, "10.1.0.5");
  EXPECT_THAT(sink.phases,
              ElementsAre("cni ADD bridge", "cni ADD portmap", "cni ADD loopback", "cni: cache file write"));

  sink.phases.clear();
  ASSERT_TRUE(cni.TearDown(ctx, req, "podnet").ok());
  EXPECT_THAT(sink.phases, ElementsAre("cni DEL loopback", "cni DEL portmap", "cni DEL bridge"));
}

}  // namespace

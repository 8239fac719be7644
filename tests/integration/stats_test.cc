// The stats and metrics RPCs on a real dockerd, with real CNI pods: the figures come
// from the host's cgroup files and /proc (this machine: cgroup v1, cgroupfs). Each pod
// gets a cgroup parent of its own, as the kubelet gives one, so the pod's own cgroup
// is read; TearDown removes those cgroups once Docker has removed the containers.
// The Stream* forms are the same lists sent by the gRPC adapter (tests/unit/stats_rpcs_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "shim/stats/writable_layers.h"
#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers
using ::testing::Ge;
using ::testing::Gt;
using ::testing::Le;

constexpr uint64_t kMiB = 1 << 20;
constexpr char kCgroupPrefix[] = "dstest-stats-";

class StatsIntegration : public PodIntegration {
 protected:
  StatsIntegration() : PodIntegration({"dstest-stat-", "dstest-statnet-", 120, 139, "stats_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    // The fixture's service again, with a writable-layer collector that measures often.
    Options options;
    options.root_directory = root_;
    options.pod_infra_image = testenv::PauseImage();
    options.network_plugin = network_->Name();
    options.writable_layers = &layers_;
    service_ = std::make_unique<CriService>(options, *docker_, *network_);
    absl::Status init = service_->Init();
    ASSERT_TRUE(init.ok()) << init;
    cgroup_parent_ = absl::StrCat("/", kCgroupPrefix, RandomHex());
  }

  void TearDown() override {
    PodIntegration::TearDown();
    // The pods' cgroup parents (runc makes them and leaves them); deepest first.
    Sh(absl::StrCat("find /sys/fs/cgroup -maxdepth 3 -depth -type d -path '*/", kCgroupPrefix,
                    "*' -exec rmdir {} + 2>/dev/null"));
  }

  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig config = BaseConfig(name);
    config.mutable_linux()->set_cgroup_parent(absl::StrCat(cgroup_parent_, "/", name));
    (*config.mutable_labels())["stats-test"] = namespace_;
    return config;
  }

  v1::ContainerConfig Busybox(const std::string& name, const std::string& script) {
    v1::ContainerConfig c;
    c.mutable_metadata()->set_name(name);
    c.mutable_image()->set_image(testenv::BusyboxImage());
    c.add_command("sh");
    c.add_command("-c");
    c.add_command(script);
    (*c.mutable_labels())["stats-test"] = name;
    c.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(256 * kMiB);
    return c;
  }

  absl::StatusOr<std::string> RunContainer(const std::string& pod_id, const v1::PodSandboxConfig& pod,
                                           const v1::ContainerConfig& config, bool start = true) {
    v1::CreateContainerRequest req;
    req.set_pod_sandbox_id(pod_id);
    *req.mutable_config() = config;
    *req.mutable_sandbox_config() = pod;
    ASSIGN_OR_RETURN(v1::CreateContainerResponse created, service_->CreateContainer(ctx_, req));
    if (start) {
      v1::StartContainerRequest start_req;
      start_req.set_container_id(created.container_id());
      RETURN_IF_ERROR(service_->StartContainer(ctx_, start_req).status());
    }
    return created.container_id();
  }

  // A ready pod with one running container.
  struct PodWith {
    std::string pod_id, container_id;
    v1::PodSandboxConfig pod;
  };
  absl::StatusOr<PodWith> RunPodWith(const std::string& pod_name, const v1::ContainerConfig& container) {
    PodWith out;
    out.pod = Pod(pod_name);
    ASSIGN_OR_RETURN(out.pod_id, Run(out.pod));
    ASSIGN_OR_RETURN(out.container_id, RunContainer(out.pod_id, out.pod, container));
    return out;
  }

  absl::StatusOr<v1::ContainerStats> Stats(const std::string& id) {
    v1::ContainerStatsRequest req;
    req.set_container_id(id);
    ASSIGN_OR_RETURN(v1::ContainerStatsResponse resp, service_->ContainerStats(ctx_, req));
    return resp.stats();
  }
  absl::StatusOr<v1::PodSandboxStats> PodStats(const std::string& id) {
    v1::PodSandboxStatsRequest req;
    req.set_pod_sandbox_id(id);
    ASSIGN_OR_RETURN(v1::PodSandboxStatsResponse resp, service_->PodSandboxStats(ctx_, req));
    return resp.stats();
  }

  // Polls `stats_of` until `done` holds of its answer, for up to `total`.
  template <typename Stats, typename Done>
  absl::StatusOr<Stats> WaitFor(const std::function<absl::StatusOr<Stats>()>& stats_of, Done done,
                                absl::Duration total = absl::Seconds(20)) {
    const absl::Time deadline = absl::Now() + total;
    for (;;) {
      absl::StatusOr<Stats> stats = stats_of();
      if (!stats.ok() || done(*stats) || absl::Now() >= deadline) return stats;
      absl::SleepFor(absl::Milliseconds(200));
    }
  }

  // The container's cgroup as Docker made it under its pod's parent (cgroupfs, v1).
  std::string MemoryCgroupFile(const std::string& pod_name, const std::string& id, const std::string& file) {
    return absl::StrCat("/sys/fs/cgroup/memory", cgroup_parent_, "/", pod_name, "/", id, "/", file);
  }

  stats::WritableLayerCollector layers_{stats::LayerCollectorOptions{absl::Milliseconds(200), absl::Minutes(1)}};
  std::string cgroup_parent_;
};

TEST_F(StatsIntegration, SixtyFourMiBShowInTheWorkingSet) {
  // tmpfs pages are memory of the cgroup that wrote them, and never inactive_file.
  auto p = RunPodWith("mem", Busybox("fill", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 && touch /tmp/done; "
                                             "sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  auto stats = WaitFor<v1::ContainerStats>([&] { return Stats(p->container_id); },
                                           [](const v1::ContainerStats& s) {
                                             return s.memory().working_set_bytes().value() >= 64 * kMiB;
                                           });
  ASSERT_TRUE(stats.ok()) << stats.status();
  const v1::MemoryUsage& memory = stats->memory();
  EXPECT_THAT(memory.working_set_bytes().value(), Ge(64 * kMiB));
  EXPECT_THAT(memory.working_set_bytes().value(), Le(100 * kMiB)) << "busybox and a 64 MiB file, not more";
  EXPECT_THAT(memory.usage_bytes().value(), Ge(memory.working_set_bytes().value()));
  EXPECT_EQ(memory.available_bytes().value(), 256 * kMiB - memory.working_set_bytes().value())
      << "limit - working set";
  EXPECT_THAT(memory.page_faults().value(), Gt(0u));
  EXPECT_GT(memory.timestamp(), 0);
  EXPECT_EQ(stats->attributes().id(), p->container_id);
  EXPECT_EQ(stats->attributes().metadata().name(), "fill");

  // The figure is the cgroup file's, not Docker's: the same within what the shell adds.
  const uint64_t usage_file = std::stoull(ReadFile(MemoryCgroupFile("mem", p->container_id, "memory.usage_in_bytes")));
  EXPECT_NEAR(static_cast<double>(usage_file), static_cast<double>(memory.usage_bytes().value()), 8.0 * kMiB);

  // The pod's own cgroup holds the container's memory and its processes.
  auto pod = PodStats(p->pod_id);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_THAT(pod->linux().memory().working_set_bytes().value(), Ge(64 * kMiB));
  EXPECT_THAT(pod->linux().process().process_count().value(), Ge(2u)) << "pause and sleep (sh execs it)";
  ASSERT_EQ(pod->linux().containers_size(), 1);
  EXPECT_EQ(pod->linux().containers(0).attributes().id(), p->container_id);
}

TEST_F(StatsIntegration, BusyLoopIsAboutOneCore) {
  auto p = RunPodWith("cpu", Busybox("spin", "while :; do :; done"));
  ASSERT_TRUE(p.ok()) << p.status();
  auto first = Stats(p->container_id);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->has_cpu());
  absl::SleepFor(absl::Seconds(2));
  auto second = Stats(p->container_id);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->cpu().has_usage_nano_cores()) << second->DebugString();
  const double cores = static_cast<double>(second->cpu().usage_nano_cores().value()) / 1e9;
  EXPECT_GE(cores, 0.5);
  EXPECT_LE(cores, 1.5);
  EXPECT_GT(second->cpu().usage_core_nano_seconds().value(), first->cpu().usage_core_nano_seconds().value());
  EXPECT_GT(second->cpu().timestamp(), first->cpu().timestamp());

  // The pod's cgroup has the same rate (pause adds nothing), on its own series.
  auto pod_first = PodStats(p->pod_id);
  ASSERT_TRUE(pod_first.ok()) << pod_first.status();
  absl::SleepFor(absl::Seconds(2));
  auto pod_second = PodStats(p->pod_id);
  ASSERT_TRUE(pod_second.ok()) << pod_second.status();
  ASSERT_TRUE(pod_second->linux().cpu().has_usage_nano_cores()) << pod_second->DebugString();
  const double pod_cores = static_cast<double>(pod_second->linux().cpu().usage_nano_cores().value()) / 1e9;
  EXPECT_GE(pod_cores, 0.5);
  EXPECT_LE(pod_cores, 1.5);
}

TEST_F(StatsIntegration, PodNetworkCountersGrowWithTraffic) {
  v1::ContainerConfig httpd = Busybox("httpd", "");
  httpd.clear_command();
  httpd.mutable_image()->set_image(kHttpdImage);
  auto p = RunPodWith("net", httpd);
  ASSERT_TRUE(p.ok()) << p.status();
  auto status = Status(p->pod_id);
  ASSERT_TRUE(status.ok()) << status.status();
  ASSERT_TRUE(HttpGet(status->network().ip(), 80).ok());

  auto before = PodStats(p->pod_id);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(before->linux().has_network()) << before->DebugString();
  const v1::NetworkInterfaceUsage& eth0_before = before->linux().network().default_interface();
  EXPECT_EQ(eth0_before.name(), "eth0");
  for (const auto& i : before->linux().network().interfaces()) EXPECT_NE(i.name(), "lo");

  for (int i = 0; i < 20; ++i) {
    auto body = HttpGet(status->network().ip(), 80);
    ASSERT_TRUE(body.ok()) << body.status();
  }
  auto after = PodStats(p->pod_id);
  ASSERT_TRUE(after.ok()) << after.status();
  const v1::NetworkInterfaceUsage& eth0_after = after->linux().network().default_interface();
  // 20 requests of ~80 bytes in, 20 pages of ~100 bytes out, with TCP's own packets.
  EXPECT_GE(eth0_after.rx_bytes().value(), eth0_before.rx_bytes().value() + 20 * 80);
  EXPECT_GE(eth0_after.tx_bytes().value(), eth0_before.tx_bytes().value() + 20 * 100);
  EXPECT_GT(after->linux().network().timestamp(), before->linux().network().timestamp());
}

TEST_F(StatsIntegration, StoppedContainerIsListedWithoutCpuOrMemory) {
  auto p = RunPodWith("stop", Busybox("running", "sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  auto done = RunContainer(p->pod_id, p->pod, Busybox("done", "echo bye > /written; exit 0"));
  ASSERT_TRUE(done.ok()) << done.status();
  auto created = RunContainer(p->pod_id, p->pod, Busybox("created", "true"), /*start=*/false);
  ASSERT_TRUE(created.ok()) << created.status();
  // Until "done" has exited.
  for (int i = 0; i < 100 && Inspect(*done)->state.running; ++i) absl::SleepFor(absl::Milliseconds(100));

  v1::ListContainerStatsRequest req;
  req.mutable_filter()->set_pod_sandbox_id(p->pod_id);
  auto listed = service_->ListContainerStats(ctx_, req);
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::map<std::string, v1::ContainerStats> by_id;
  for (const auto& s : listed->stats()) by_id[s.attributes().id()] = s;
  ASSERT_EQ(by_id.size(), 3u) << listed->DebugString();
  EXPECT_TRUE(by_id[p->container_id].has_cpu());
  EXPECT_TRUE(by_id[p->container_id].has_memory());
  for (const std::string& id : {*done, *created}) {
    EXPECT_FALSE(by_id[id].has_cpu()) << id;
    EXPECT_FALSE(by_id[id].has_memory()) << id;
  }
  EXPECT_EQ(by_id[*done].attributes().metadata().name(), "done");
  EXPECT_EQ(AsMap(by_id[*done].attributes().labels()).at("stats-test"), "done");

  // Filters: label selector and ID (a prefix, as Docker matches it).
  v1::ListContainerStatsRequest by_label;
  (*by_label.mutable_filter()->mutable_label_selector())["stats-test"] = "running";
  listed = service_->ListContainerStats(ctx_, by_label);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->stats_size(), 1);
  EXPECT_EQ(listed->stats(0).attributes().id(), p->container_id);
  v1::ListContainerStatsRequest by_id_prefix;
  by_id_prefix.mutable_filter()->set_id(done->substr(0, 16));
  listed = service_->ListContainerStats(ctx_, by_id_prefix);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->stats_size(), 1);
  EXPECT_EQ(listed->stats(0).attributes().id(), *done);

  // Unknown IDs.
  EXPECT_EQ(Stats("0123456789abcdef0123").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(PodStats("0123456789abcdef0123").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StatsIntegration, WritableLayerIsMeasuredInTheBackground) {
  auto p = RunPodWith("disk", Busybox("writer", "dd if=/dev/zero of=/blob bs=1M count=4 && sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  const int64_t started = absl::ToUnixNanos(absl::Now());
  auto stats = WaitFor<v1::ContainerStats>([&] { return Stats(p->container_id); },
                                           [](const v1::ContainerStats& s) {
                                             return s.writable_layer().used_bytes().value() >= 4 * kMiB;
                                           });
  ASSERT_TRUE(stats.ok()) << stats.status();
  const v1::FilesystemUsage& layer = stats->writable_layer();
  EXPECT_THAT(layer.used_bytes().value(), Ge(4 * kMiB)) << stats->DebugString();
  EXPECT_THAT(layer.used_bytes().value(), Le(5 * kMiB));
  EXPECT_THAT(layer.inodes_used().value(), Ge(2u)) << "the layer's root and /blob";
  EXPECT_EQ(layer.fs_id().mountpoint(), Sh("docker info -f '{{.DockerRootDir}}' | tr -d '\\n'"));
  EXPECT_GE(layer.timestamp(), started - absl::ToInt64Nanoseconds(absl::Seconds(5)));
}

TEST_F(StatsIntegration, ListPodSandboxStatsFiltersAndCarriesContainers) {
  auto a = RunPodWith("pa", Busybox("a", "sleep 600"));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = RunPodWith("pb", Busybox("b", "sleep 600"));
  ASSERT_TRUE(b.ok()) << b.status();

  v1::ListPodSandboxStatsRequest req;
  (*req.mutable_filter()->mutable_label_selector())["stats-test"] = namespace_;
  auto listed = service_->ListPodSandboxStats(ctx_, req);
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::map<std::string, v1::PodSandboxStats> by_id;
  for (const auto& s : listed->stats()) by_id[s.attributes().id()] = s;
  ASSERT_EQ(by_id.size(), 2u);
  for (const PodWith* p : {&*a, &*b}) {
    const v1::PodSandboxStats& s = by_id[p->pod_id];
    EXPECT_EQ(s.attributes().metadata().name(), p->pod.metadata().name());
    EXPECT_TRUE(s.linux().has_cpu());
    EXPECT_TRUE(s.linux().has_memory());
    EXPECT_TRUE(s.linux().has_network());
    ASSERT_EQ(s.linux().containers_size(), 1);
    EXPECT_EQ(s.linux().containers(0).attributes().id(), p->container_id);
  }

  v1::ListPodSandboxStatsRequest by_id_req;
  by_id_req.mutable_filter()->set_id(b->pod_id);
  listed = service_->ListPodSandboxStats(ctx_, by_id_req);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->stats_size(), 1);
  EXPECT_EQ(listed->stats(0).attributes().id(), b->pod_id);
}

TEST_F(StatsIntegration, MetricsAreNamedAsCadvisorNamesThem) {
  auto p = RunPodWith("metrics", Busybox("app", "sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();

  auto descriptors = service_->ListMetricDescriptors(ctx_, v1::ListMetricDescriptorsRequest());
  ASSERT_TRUE(descriptors.ok()) << descriptors.status();
  std::set<std::string> names;
  for (const auto& d : descriptors->descriptors()) names.insert(d.name());
  for (const char* name : {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                           "container_network_receive_bytes_total", "container_network_transmit_bytes_total"})
    EXPECT_TRUE(names.count(name)) << name;

  auto metrics = service_->ListPodSandboxMetrics(ctx_, v1::ListPodSandboxMetricsRequest());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const v1::PodSandboxMetrics* pod = nullptr;
  for (const auto& m : metrics->pod_metrics())
    if (m.pod_sandbox_id() == p->pod_id) pod = &m;
  ASSERT_NE(pod, nullptr);
  // Label values follow the descriptor's keys: pod, namespace, container, id, image, extras.
  std::map<std::string, std::vector<std::string>> pod_series;
  for (const auto& m : pod->metrics()) pod_series[m.name()] = {m.label_values().begin(), m.label_values().end()};
  ASSERT_TRUE(pod_series.count("container_network_receive_bytes_total"));
  EXPECT_THAT(pod_series["container_network_receive_bytes_total"],
              ElementsAre("metrics", namespace_, "", p->pod_id, "", "eth0"));
  EXPECT_TRUE(pod_series.count("container_memory_working_set_bytes"));
  ASSERT_EQ(pod->container_metrics_size(), 1);
  const v1::ContainerMetrics& app = pod->container_metrics(0);
  EXPECT_EQ(app.container_id(), p->container_id);
  std::map<std::string, const v1::Metric*> app_series;
  for (const auto& m : app.metrics()) app_series[m.name()] = &m;
  ASSERT_TRUE(app_series.count("container_memory_working_set_bytes"));
  EXPECT_GT(app_series["container_memory_working_set_bytes"]->value().value(), 0u);
  EXPECT_EQ(app_series["container_memory_working_set_bytes"]->label_values(2), "app");
  ASSERT_TRUE(app_series.count("container_cpu_usage_seconds_total"));
  EXPECT_EQ(app_series["container_cpu_usage_seconds_total"]->metric_type(), v1::COUNTER);
}

TEST_F(StatsIntegration, UpdatePodSandboxResourcesIsShownInVerboseStatus) {
  auto p = RunPodWith("resize", Busybox("app", "sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  v1::UpdatePodSandboxResourcesRequest req;
  req.set_pod_sandbox_id(p->pod_id);
  req.mutable_resources()->set_cpu_shares(512);
  req.mutable_resources()->set_memory_limit_in_bytes(128 * kMiB);
  auto updated = service_->UpdatePodSandboxResources(ctx_, req);
  ASSERT_TRUE(updated.ok()) << updated.status();

  v1::PodSandboxStatusRequest status_req;
  status_req.set_pod_sandbox_id(p->pod_id);
  status_req.set_verbose(true);
  auto status = service_->PodSandboxStatus(ctx_, status_req);
  ASSERT_TRUE(status.ok()) << status.status();
  const nlohmann::json info = nlohmann::json::parse(status->info().at("info"));
  EXPECT_EQ(info["podResources"]["resources"]["cpu_shares"], "512");
  EXPECT_EQ(info["podResources"]["resources"]["memory_limit_in_bytes"], "134217728");

  req.mutable_resources()->set_memory_limit_in_bytes(-1);
  auto bad = service_->UpdatePodSandboxResources(ctx_, req);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("memory_limit_in_bytes"));
  req.set_pod_sandbox_id("0123456789abcdef0123");
  req.mutable_resources()->set_memory_limit_in_bytes(128 * kMiB);
  EXPECT_EQ(service_->UpdatePodSandboxResources(ctx_, req).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace shim

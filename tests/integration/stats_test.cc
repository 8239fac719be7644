// The stats and metrics RPCs on a real dockerd, with real CNI pods: the figures come
// from the node's cgroup files and /proc. Each pod gets a cgroup parent of its own, as the
// kubelet gives one (a cgroupfs path, or with Docker's systemd driver the pod's slice
// name), so the pod's own cgroup is read; TearDown removes those cgroups once Docker has
// removed the containers. Both layouts run: cgroup v1 with cgroupfs here, cgroup v2 with
// systemd in scripts/vm.sh, where the V2 tests compare every figure with the files.
// The Stream* forms are the same lists sent by the gRPC adapter (tests/unit/stats_rpcs_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "shim/stats/writable_layers.h"
#include "tests/integration/cgroup_node.h"
#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers
using ::testing::Ge;
using ::testing::Gt;
using ::testing::Le;

constexpr uint64_t kMiB = 1 << 20;

// --- cgroup v2 files as the tests read them (apart from the shim's own parsing) ---------

// The files of one v2 cgroup that the figures come from; a missing one reads as "".
constexpr const char* kV2Files[] = {"cpu.stat",         "cpu.pressure",        "memory.current",  "memory.max",
                                    "memory.stat",      "memory.swap.current", "memory.swap.max", "memory.pressure",
                                    "io.pressure",      "pids.current"};
using Files = std::map<std::string, std::string>;

Files ReadV2Files(const std::string& dir) {
  Files files;
  for (const char* name : kV2Files) files[name] = ReadFile(absl::StrCat(dir, "/", name));
  return files;
}

uint64_t Number(const std::string& text) { return std::stoull(text); }

// The value of `key` in a flat-keyed file ("key value" lines: cpu.stat, memory.stat).
uint64_t KeyedValue(const std::string& text, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() == 2 && fields[0] == key) return Number(fields[1]);
  }
  ADD_FAILURE() << "no " << key << " in:\n" << text;
  return 0;
}

// A pressure file's "some" or "full" line: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0".
struct PsiLine {
  double avg10 = 0, avg60 = 0, avg300 = 0;
  uint64_t total_us = 0;
};
std::optional<PsiLine> PressureOf(const std::string& text, const std::string& kind) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    PsiLine l;
    unsigned long long total;  // NOLINT(runtime/int): sscanf's %llu
    if (absl::StartsWith(line, kind + " ") &&
        std::sscanf(std::string(line.substr(kind.size())).c_str(), " avg10=%lf avg60=%lf avg300=%lf total=%llu",
                    &l.avg10, &l.avg60, &l.avg300, &total) == 4) {
      l.total_us = total;
      return l;
    }
  }
  return std::nullopt;
}

// The shim's PsiStats are the file's lines: Total in nanoseconds (the file counts
// microseconds); a file or line that is not there is unset.
void ExpectPsiOfFile(const std::string& file, bool has_psi, const v1::PsiStats& psi, const std::string& what) {
  SCOPED_TRACE(what);
  if (file.empty()) {
    EXPECT_FALSE(has_psi);
    return;
  }
  ASSERT_TRUE(has_psi);
  for (const std::string kind : {"some", "full"}) {
    std::optional<PsiLine> line = PressureOf(file, kind);
    const bool has = kind == "some" ? psi.has_some() : psi.has_full();
    const v1::PsiData& data = kind == "some" ? psi.some() : psi.full();
    ASSERT_EQ(has, line.has_value()) << kind << " in:\n" << file;
    if (!line) continue;
    EXPECT_EQ(data.total(), line->total_us * 1000) << kind;
    EXPECT_EQ(data.avg10(), line->avg10) << kind;
    EXPECT_EQ(data.avg60(), line->avg60) << kind;
    EXPECT_EQ(data.avg300(), line->avg300) << kind;
  }
}

// CPU and memory figures (a container's or a pod's) against its cgroup's files.
void ExpectFiguresOfFiles(const Files& f, const v1::CpuUsage& cpu, const v1::MemoryUsage& memory) {
  EXPECT_EQ(cpu.usage_core_nano_seconds().value(), KeyedValue(f.at("cpu.stat"), "usage_usec") * 1000);
  ExpectPsiOfFile(f.at("cpu.pressure"), cpu.has_psi(), cpu.psi(), "cpu.pressure");
  const uint64_t usage = Number(f.at("memory.current"));
  const uint64_t inactive_file = KeyedValue(f.at("memory.stat"), "inactive_file");
  const uint64_t working_set = usage > inactive_file ? usage - inactive_file : 0;
  EXPECT_EQ(memory.usage_bytes().value(), usage);
  EXPECT_EQ(memory.working_set_bytes().value(), working_set);
  EXPECT_EQ(memory.rss_bytes().value(), KeyedValue(f.at("memory.stat"), "anon"));
  EXPECT_EQ(memory.page_faults().value(), KeyedValue(f.at("memory.stat"), "pgfault"));
  EXPECT_EQ(memory.major_page_faults().value(), KeyedValue(f.at("memory.stat"), "pgmajfault"));
  if (absl::StartsWith(f.at("memory.max"), "max")) {
    EXPECT_FALSE(memory.has_available_bytes());
  } else {
    EXPECT_EQ(memory.available_bytes().value(), Number(f.at("memory.max")) - working_set);
  }
  ExpectPsiOfFile(f.at("memory.pressure"), memory.has_psi(), memory.psi(), "memory.pressure");
}

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
    cgroup_prefix_ = absl::StrCat("dsteststats", RandomHex());
  }

  void TearDown() override {
    PodIntegration::TearDown();
    testenv::RemoveTestCgroups(cgroup_prefix_);
  }

  // The pod's cgroup parent as a kubelet gives it: "/<prefix>/pod<name>" for cgroupfs,
  // "<prefix>-pod<name>.slice" for systemd.
  std::string PodParent(const std::string& pod_name) { return testenv::PodCgroupParent(cgroup_prefix_, pod_name); }
  // The pod's own cgroup directory, and that of its container `id`; `controller` picks
  // the v1 hierarchy.
  std::string PodCgroupDir(const std::string& pod_name, const std::string& controller) {
    return testenv::CgroupDir(testenv::CgroupParentPath(PodParent(pod_name)), controller);
  }
  std::string ContainerCgroupDir(const std::string& pod_name, const std::string& id, const std::string& controller) {
    return testenv::ContainerCgroupDir(PodParent(pod_name), id, controller);
  }

  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig config = BaseConfig(name);
    config.mutable_linux()->set_cgroup_parent(PodParent(name));
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

  // Reads `dir`'s files, asks `stats_of`, reads them again, until both readings agree
  // (an idle cgroup's figures settle between the kernel's updates): the answer was made
  // of those files.
  template <typename Stats>
  absl::StatusOr<std::pair<Files, Stats>> SettledStats(const std::string& dir,
                                                       const std::function<absl::StatusOr<Stats>()>& stats_of) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      Files before = ReadV2Files(dir);
      absl::StatusOr<Stats> stats = stats_of();
      if (!stats.ok()) return stats.status();
      if (ReadV2Files(dir) == before) return std::pair{std::move(before), std::move(*stats)};
      absl::SleepFor(absl::Milliseconds(100));
    }
    return absl::DeadlineExceededError(absl::StrCat("the files of ", dir, " kept changing"));
  }

  stats::WritableLayerCollector layers_{stats::LayerCollectorOptions{absl::Milliseconds(200), absl::Minutes(1), absl::Milliseconds(200)}};
  std::string cgroup_prefix_;
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
  const uint64_t usage_file =
      std::stoull(ReadFile(absl::StrCat(ContainerCgroupDir("mem", p->container_id, "memory"), "/",
                                        testenv::CgroupV2() ? "memory.current" : "memory.usage_in_bytes")));
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

// The shim keeps a running container's cgroup files open between samples; a container
// restarted behind its back (Docker's restart policy, `docker restart`) has a new cgroup
// of the same name, whose figures the next sample reads.
TEST_F(StatsIntegration, ARestartedContainersFiguresComeFromItsNewCgroup) {
  auto p = RunPodWith("restart", Busybox("again", "sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  for (int i = 0; i < 2; ++i) {
    auto before = Stats(p->container_id);
    ASSERT_TRUE(before.ok()) << before.status();
    ASSERT_TRUE(before->has_cpu() && before->has_memory()) << before->DebugString();
  }
  const int old_pid = Inspect(p->container_id)->state.pid;
  ASSERT_TRUE(docker_->StopContainer(ctx_, p->container_id, {.timeout_seconds = 0}).ok());
  ASSERT_TRUE(docker_->StartContainer(ctx_, p->container_id).ok());
  ASSERT_NE(Inspect(p->container_id)->state.pid, old_pid);

  auto after = Stats(p->container_id);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(after->has_cpu() && after->has_memory()) << "the first sample after the restart: "
                                                       << after->DebugString();
  const uint64_t usage_file =
      std::stoull(ReadFile(absl::StrCat(ContainerCgroupDir("restart", p->container_id, "memory"), "/",
                                        testenv::CgroupV2() ? "memory.current" : "memory.usage_in_bytes")));
  EXPECT_NEAR(static_cast<double>(usage_file), static_cast<double>(after->memory().usage_bytes().value()), 4.0 * kMiB);
}

// The directory of a running container's writable layer as the kernel mounted it: the
// upperdir of its root's overlay mount (graph driver and containerd store alike).
std::string UpperDirOfRunning(int pid) {
  for (absl::string_view line : absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/mountinfo")), '\n')) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 5 || fields[4] != "/") continue;
    for (absl::string_view option : absl::StrSplit(line.substr(line.find(" - ")), ',')) {
      if (absl::ConsumePrefix(&option, "upperdir=")) return std::string(option);
    }
  }
  return "";
}

// du's figures for `dir` (-x: its own file system), bytes allocated and inodes.
std::pair<uint64_t, uint64_t> Du(const std::string& dir) {
  const std::string bytes = testenv::Sh("du -sx -B1 " + dir + " | cut -f1");
  const std::string inodes = testenv::Sh("du -sx --inodes " + dir + " | cut -f1");
  return {std::stoull(bytes.empty() ? "0" : bytes), std::stoull(inodes.empty() ? "0" : inodes)};
}

TEST_F(StatsIntegration, WritableLayerIsMeasuredInTheBackgroundAsDuAndDockerMeasureIt) {
  auto p = RunPodWith("disk", Busybox("writer", "dd if=/dev/zero of=/blob bs=1M count=20 && sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  const int64_t started = absl::ToUnixNanos(absl::Now());
  auto stats = WaitFor<v1::ContainerStats>([&] { return Stats(p->container_id); },
                                           [](const v1::ContainerStats& s) {
                                             return s.writable_layer().used_bytes().value() >= 20 * kMiB;
                                           });
  ASSERT_TRUE(stats.ok()) << stats.status();
  const v1::FilesystemUsage& layer = stats->writable_layer();
  EXPECT_THAT(layer.inodes_used().value(), Ge(2u)) << "the layer's root and /blob";
  EXPECT_GE(layer.timestamp(), started - absl::ToInt64Nanoseconds(absl::Seconds(5)));
  // The file system ImageFsInfo names for containers.
  auto fs = service_->ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ(layer.fs_id().mountpoint(), fs->container_filesystems(0).fs_id().mountpoint());

  // du of the directory the kernel mounted as the container's upper layer.
  auto inspect = Inspect(p->container_id);
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  const std::string upper = UpperDirOfRunning(inspect->state.pid);
  ASSERT_FALSE(upper.empty()) << "no overlay root in /proc/" << inspect->state.pid << "/mountinfo";
  const auto [du_bytes, du_inodes] = Du(upper);
  EXPECT_EQ(layer.used_bytes().value(), du_bytes) << upper;
  EXPECT_EQ(layer.inodes_used().value(), du_inodes) << upper;
  // Docker's figure (docker ps -s): the logical size of what the container changed.
  const uint64_t docker_rw = std::stoull(testenv::Sh("docker inspect --size -f '{{.SizeRw}}' " + p->container_id));
  std::printf("writable layer of 20 MiB written: shim %llu bytes / %llu inodes, du %llu / %llu (%s), docker SizeRw %llu\n",
              static_cast<unsigned long long>(layer.used_bytes().value()),
              static_cast<unsigned long long>(layer.inodes_used().value()), static_cast<unsigned long long>(du_bytes),
              static_cast<unsigned long long>(du_inodes), upper.c_str(), static_cast<unsigned long long>(docker_rw));
  EXPECT_THAT(docker_rw, Ge(20 * kMiB));
  EXPECT_THAT(layer.used_bytes().value(), Ge(docker_rw)) << "allocated blocks hold at least the bytes";
  EXPECT_THAT(layer.used_bytes().value(), Le(docker_rw + kMiB));

  // A stopped container keeps its layer, and its figure.
  v1::StopContainerRequest stop;
  stop.set_container_id(p->container_id);
  ASSERT_TRUE(service_->StopContainer(ctx_, stop).ok());
  auto stopped = Stats(p->container_id);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->writable_layer().used_bytes().value(), du_bytes) << stopped->DebugString();
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

// --- cgroup v2 (scripts/vm.sh) ----------------------------------------------------------

// Every figure of a container and of its pod is what its cgroup's files say, read as the
// shim answered; the pod's cgroup is the kubelet's slice, expanded as systemd does.
TEST_F(StatsIntegration, V2FiguresAreThoseOfTheCgroupFiles) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  auto p = RunPodWith("files", Busybox("idle", "dd if=/dev/zero of=/dev/shm/f bs=1M count=8 && sleep 600"));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(WaitFor<v1::ContainerStats>([&] { return Stats(p->container_id); },
                                          [](const v1::ContainerStats& s) {
                                            return s.memory().working_set_bytes().value() >= 8 * kMiB;
                                          })
                  .ok());
  const std::string container_dir = ContainerCgroupDir("files", p->container_id, "");
  const std::string pod_dir = PodCgroupDir("files", "");
  if (testenv::SystemdDriver()) {
    EXPECT_EQ(pod_dir, absl::StrCat("/sys/fs/cgroup/", cgroup_prefix_, ".slice/", cgroup_prefix_, "-podfiles.slice"));
    EXPECT_EQ(container_dir, absl::StrCat(pod_dir, "/docker-", p->container_id, ".scope"));
  }
  ASSERT_TRUE(std::filesystem::is_directory(container_dir)) << container_dir;
  // PSI is on in this kernel (scripts/vm.sh boots with psi=1): its files are there to compare.
  for (const char* name : {"cpu.pressure", "memory.pressure", "io.pressure"})
    EXPECT_TRUE(std::filesystem::exists(absl::StrCat(container_dir, "/", name))) << name;

  auto container = SettledStats<v1::ContainerStats>(container_dir, [&] { return Stats(p->container_id); });
  ASSERT_TRUE(container.ok()) << container.status();
  {
    SCOPED_TRACE("container " + container_dir);
    const auto& [files, stats] = *container;
    ExpectFiguresOfFiles(files, stats.cpu(), stats.memory());
    EXPECT_EQ(stats.memory().available_bytes().value(), 256 * kMiB - stats.memory().working_set_bytes().value());
    ExpectPsiOfFile(files.at("io.pressure"), stats.has_io(), stats.io().psi(), "io.pressure");
    if (files.at("memory.swap.current").empty()) {
      EXPECT_FALSE(stats.has_swap());
    } else {
      const uint64_t swap = Number(files.at("memory.swap.current"));
      EXPECT_EQ(stats.swap().swap_usage_bytes().value(), swap);
      if (absl::StartsWith(files.at("memory.swap.max"), "max")) {
        EXPECT_FALSE(stats.swap().has_swap_available_bytes());
      } else {
        EXPECT_EQ(stats.swap().swap_available_bytes().value(), Number(files.at("memory.swap.max")) - swap);
      }
    }
  }

  auto pod = SettledStats<v1::PodSandboxStats>(pod_dir, [&] { return PodStats(p->pod_id); });
  ASSERT_TRUE(pod.ok()) << pod.status();
  {
    SCOPED_TRACE("pod " + pod_dir);
    const auto& [files, stats] = *pod;
    ExpectFiguresOfFiles(files, stats.linux().cpu(), stats.linux().memory());
    ExpectPsiOfFile(files.at("io.pressure"), stats.linux().has_io(), stats.linux().io().psi(), "io.pressure");
    EXPECT_EQ(stats.linux().process().process_count().value(), Number(files.at("pids.current")));
    EXPECT_THAT(stats.linux().memory().working_set_bytes().value(), Ge(8 * kMiB)) << "the container's /dev/shm";
  }
}

// A busy loop held to a fifth of a CPU by its quota waits for the CPU most of the time:
// cpu.pressure grows by about that much, and so do the shim's PSI totals.
TEST_F(StatsIntegration, V2CpuQuotaShowsInCpuPressure) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  v1::ContainerConfig spin = Busybox("spin", "while :; do :; done");
  spin.mutable_linux()->mutable_resources()->set_cpu_period(100000);
  spin.mutable_linux()->mutable_resources()->set_cpu_quota(20000);
  auto p = RunPodWith("quota", spin);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string dir = ContainerCgroupDir("quota", p->container_id, "");
  const std::string file = dir + "/cpu.pressure";
  ASSERT_EQ(ReadFile(dir + "/cpu.max"), "20000 100000\n");

  auto some_total = [](const v1::CpuUsage& cpu) { return cpu.psi().some().total(); };
  const uint64_t file_before = PressureOf(ReadFile(file), "some").value_or(PsiLine{}).total_us;
  auto first = Stats(p->container_id);
  ASSERT_TRUE(first.ok()) << first.status();
  auto pod_first = PodStats(p->pod_id);
  ASSERT_TRUE(pod_first.ok()) << pod_first.status();
  absl::SleepFor(absl::Seconds(4));
  auto second = Stats(p->container_id);
  ASSERT_TRUE(second.ok()) << second.status();
  const uint64_t file_after = PressureOf(ReadFile(file), "some").value_or(PsiLine{}).total_us;
  auto pod_second = PodStats(p->pod_id);
  ASSERT_TRUE(pod_second.ok()) << pod_second.status();

  ASSERT_TRUE(second->cpu().psi().has_some()) << second->DebugString();
  EXPECT_GE(some_total(first->cpu()), file_before * 1000);
  EXPECT_LE(some_total(second->cpu()), file_after * 1000);
  // The loop may run a fifth of the time: it waits about 4/5 of it (at least half, in
  // nanoseconds), never more than all of it (the totals are not read with the timestamps).
  const double elapsed_ns = static_cast<double>(second->cpu().timestamp() - first->cpu().timestamp());
  const double waited = static_cast<double>(some_total(second->cpu()) - some_total(first->cpu()));
  EXPECT_GE(waited, 0.5 * elapsed_ns) << second->cpu().DebugString();
  EXPECT_LE(waited, elapsed_ns + 2e8);
  EXPECT_GT(second->cpu().psi().some().avg10(), 0.0);
  if (second->cpu().psi().has_full()) {  // Linux 5.13+: the loop is the cgroup's only task, so full = some
    EXPECT_GE(static_cast<double>(second->cpu().psi().full().total() - first->cpu().psi().full().total()),
              0.5 * elapsed_ns);
  }
  ASSERT_TRUE(second->cpu().has_usage_nano_cores());
  const double cores = static_cast<double>(second->cpu().usage_nano_cores().value()) / 1e9;
  EXPECT_GE(cores, 0.1);
  EXPECT_LE(cores, 0.3);
  // The pod's cgroup holds the waiting task too. Its total is not bounded by the
  // container's: the kernel weighs each CPU's stall by the group's own busy time (seen:
  // 0.44 of the elapsed time for the pod where the container had more than half).
  EXPECT_GT(some_total(pod_second->linux().cpu()), some_total(pod_first->linux().cpu()));
}

// A container that keeps reading a file twice its memory limit reclaims its own page
// cache all the time: memory.pressure (and, as the pages come back from disk, io.pressure)
// grows, and the shim's PSI totals are the files'.
TEST_F(StatsIntegration, V2MemoryPressureShowsInPsi) {
  DOCKERSHIM_REQUIRE_CGROUP_V2();
  v1::ContainerConfig thrash = Busybox(
      "thrash", "dd if=/dev/zero of=/big bs=1M count=64 && while :; do cat /big > /dev/null; done");
  thrash.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(32 * kMiB);
  auto p = RunPodWith("thrash", thrash);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string dir = ContainerCgroupDir("thrash", p->container_id, "");
  ASSERT_EQ(ReadFile(dir + "/memory.max"), absl::StrCat(32 * kMiB, "\n"));

  auto stalled = WaitFor<v1::ContainerStats>(
      [&] { return Stats(p->container_id); },
      [](const v1::ContainerStats& s) {
        return s.memory().psi().some().total() > 0 && s.io().psi().some().total() > 0;
      },
      absl::Seconds(90));
  ASSERT_TRUE(stalled.ok()) << stalled.status();
  EXPECT_GT(stalled->memory().psi().some().total(), 0u) << stalled->DebugString();
  EXPECT_GT(stalled->io().psi().some().total(), 0u) << stalled->DebugString();
  EXPECT_THAT(stalled->memory().working_set_bytes().value(), Le(32 * kMiB));

  // Against the files, read around the answer: totals only grow.
  for (const char* name : {"memory.pressure", "io.pressure"}) {
    SCOPED_TRACE(name);
    const std::string file = absl::StrCat(dir, "/", name);
    std::optional<PsiLine> before = PressureOf(ReadFile(file), "some");
    auto stats = Stats(p->container_id);
    ASSERT_TRUE(stats.ok()) << stats.status();
    std::optional<PsiLine> after = PressureOf(ReadFile(file), "some");
    ASSERT_TRUE(before && after);
    const v1::PsiStats& psi = std::string(name) == "io.pressure" ? stats->io().psi() : stats->memory().psi();
    EXPECT_GE(psi.some().total(), before->total_us * 1000);
    EXPECT_LE(psi.some().total(), after->total_us * 1000);
    EXPECT_EQ(psi.has_full(), PressureOf(ReadFile(file), "full").has_value());
  }
  // The pod's cgroup stalls with its container (not by as much: PSI weighs each CPU's
  // stall time by the group's own busy time there).
  auto pod = PodStats(p->pod_id);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_GT(pod->linux().memory().psi().some().total(), 0u) << pod->linux().memory().DebugString();
}

}  // namespace
}  // namespace shim

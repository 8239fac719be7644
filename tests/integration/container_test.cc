// Containers in pods through CriService on a real dockerd with real CNI: create,
// start, exec, logs, stop, remove. The pods' infra image is dockershim-test/pause,
// so whatever answers on the pod IP is the app container, which proves it joined
// the pod's network namespace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "dockerclient/api_version.h"
#include "shim/capabilities.h"
#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers

class ContainerIntegration : public PodIntegration {
 protected:
  ContainerIntegration() : PodIntegration({"dstest-ctr-", "dstest-ctrnet-", 60, 99, "container_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    ASSERT_NO_FATAL_FAILURE(BuildService(Plugin::kCni, testenv::PauseImage()));
    log_dir_ = dir_ + "/pod-logs";
  }

  // A pod as kubelet configures it (log directory included).
  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig config = BaseConfig(name);
    config.set_log_directory(log_dir_ + "/" + name);
    return config;
  }

  absl::StatusOr<v1::ExecSyncResponse> Exec(const std::string& id, std::vector<std::string> cmd, int64_t timeout = 10) {
    v1::ExecSyncRequest req;
    req.set_container_id(id);
    for (auto& part : cmd) req.add_cmd(part);
    req.set_timeout(timeout);
    return service_->ExecSync(ctx_, req);
  }
  // A running pod with one started container.
  struct PodWithContainer {
    std::string pod_id, container_id;
    v1::PodSandboxConfig pod;
  };
  absl::StatusOr<PodWithContainer> RunPodWith(v1::PodSandboxConfig pod, const v1::ContainerConfig& container) {
    PodWithContainer out;
    out.pod = std::move(pod);
    ASSIGN_OR_RETURN(out.pod_id, Run(out.pod));
    ASSIGN_OR_RETURN(out.container_id, Create(out.pod_id, out.pod, container));
    RETURN_IF_ERROR(Start(out.container_id));
    return out;
  }

  std::string log_dir_;
};

// This process's line of /proc/self/status, e.g. "CapBnd:\t000001fffeffffff".
std::string OwnStatusValue(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, key + ":")) return std::string(absl::StripAsciiWhitespace(line.substr(key.size() + 1)));
  }
  return "";
}

TEST_F(ContainerIntegration, AddingAllCapabilitiesGivesEveryOneTheHostCanGrant) {
  // On a host whose bounding set lacks some (this test machine lacks CAP_SYS_RESOURCE),
  // Docker before 23 would ask runc for them all and the start would fail.
  v1::ContainerConfig config = Busybox("allcaps", {"sleep", "600"});
  config.mutable_linux()->mutable_security_context()->mutable_capabilities()->add_add_capabilities("ALL");
  auto p = RunPodWith(Pod("allcaps"), config);
  ASSERT_TRUE(p.ok()) << p.status();
  auto caps = Exec(p->container_id, {"grep", "CapEff", "/proc/self/status"});
  ASSERT_TRUE(caps.ok()) << caps.status();
  // Docker 20.10's ALL stops at CAP_AUDIT_READ (bit 37); newer engines know more.
  uint64_t host = 0;
  ASSERT_TRUE(absl::SimpleHexAtoi(OwnStatusValue("CapBnd"), &host));
  if (!EngineGrantsAllCapabilitiesItself(docker_->Version(ctx_)->version)) host &= (uint64_t{1} << 38) - 1;
  EXPECT_EQ(caps->stdout(), absl::StrCat("CapEff:\t", absl::Hex(host, absl::kZeroPad16), "\n"));
}

TEST_F(ContainerIntegration, PrivilegedContainerManagesLinksAndMounts) {
  // On this test machine (no CAP_SYS_RESOURCE, Docker 20.10) Docker's privileged flag
  // would fail the start; the shim spells privileged out instead.
  v1::PodSandboxConfig pod = Pod("priv");
  pod.mutable_linux()->mutable_security_context()->set_privileged(true);
  v1::ContainerConfig config = Busybox("priv", {"sleep", "600"});
  config.mutable_linux()->mutable_security_context()->set_privileged(true);
  auto p = RunPodWith(pod, config);
  ASSERT_TRUE(p.ok()) << p.status();
  auto link = Exec(p->container_id, {"sh", "-c", "ip link add dstest0 type bridge && ip link show dstest0"});
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(link->exit_code(), 0) << link->stderr();
  EXPECT_THAT(link->stdout(), HasSubstr("dstest0"));
  auto mount = Exec(p->container_id, {"sh", "-c", "mkdir -p /mnt/t && mount -t tmpfs none /mnt/t && grep /mnt/t /proc/mounts"});
  ASSERT_TRUE(mount.ok()) << mount.status();
  EXPECT_EQ(mount->exit_code(), 0) << mount->stderr();
  EXPECT_THAT(mount->stdout(), HasSubstr("tmpfs"));
  // Unmasked /proc, as with Docker's flag.
  auto kcore = Exec(p->container_id, {"sh", "-c", "grep -c /proc/kcore /proc/mounts || true"});
  ASSERT_TRUE(kcore.ok()) << kcore.status();
  EXPECT_EQ(kcore->stdout(), "0\n");
}

// Kubernetes' mountPropagation: Bidirectional (rshared) lets a privileged container's
// mount reach the host and the other containers; HostToContainer (rslave) sees the host's
// and its neighbours' mounts; None (rprivate) sees neither.
TEST_F(ContainerIntegration, MountPropagationBidirectionalHostToContainerAndPrivate) {
  const std::string shared = dir_ + "/shared";
  ASSERT_TRUE(ShOk("mkdir -p " + shared + " && mount --bind " + shared + " " + shared + " && mount --make-rshared " +
                   shared));
  struct Unmount {
    std::string dir;
    ~Unmount() { Sh("umount -R " + dir); }
  } unmount{shared};

  v1::PodSandboxConfig pod = Pod("prop");
  pod.mutable_linux()->mutable_security_context()->set_privileged(true);
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  std::map<std::string, std::string> ids;
  for (const auto& [name, propagation] : {std::pair{"both", v1::PROPAGATION_BIDIRECTIONAL},
                                          std::pair{"fromhost", v1::PROPAGATION_HOST_TO_CONTAINER},
                                          std::pair{"none", v1::PROPAGATION_PRIVATE}}) {
    v1::ContainerConfig config = Busybox(name, {"sleep", "600"});
    config.mutable_linux()->mutable_security_context()->set_privileged(true);
    v1::Mount* m = config.add_mounts();
    m->set_host_path(shared);
    m->set_container_path("/shared");
    m->set_propagation(propagation);
    auto id = Create(*pod_id, pod, config);
    ASSERT_TRUE(id.ok()) << name << ": " << id.status();
    ASSERT_TRUE(Start(*id).ok()) << name;
    ids[name] = *id;
  }
  // What each container sees under /shared.
  auto sees = [&](const std::string& name, const std::string& path) {
    auto r = Exec(ids[name], {"sh", "-c", "grep -q ' /shared/" + path + " ' /proc/mounts"});
    return r.ok() && r->exit_code() == 0;
  };

  ASSERT_TRUE(ShOk("mkdir -p " + shared + "/byhost && mount -t tmpfs host-tmpfs " + shared + "/byhost"));
  EXPECT_TRUE(sees("both", "byhost"));
  EXPECT_TRUE(sees("fromhost", "byhost"));
  EXPECT_FALSE(sees("none", "byhost"));

  auto mounted = Exec(ids["both"], {"sh", "-c", "mkdir -p /shared/byctr && mount -t tmpfs ctr-tmpfs /shared/byctr"});
  ASSERT_TRUE(mounted.ok()) << mounted.status();
  ASSERT_EQ(mounted->exit_code(), 0) << mounted->stderr();
  EXPECT_THAT(Sh("grep ' " + shared + "/byctr ' /proc/mounts"), HasSubstr("ctr-tmpfs")) << "reached the host";
  EXPECT_TRUE(sees("fromhost", "byctr"));
  EXPECT_FALSE(sees("none", "byctr"));
}

TEST_F(ContainerIntegration, ContainerSeesThePodsHostnameAndDns) {
  v1::PodSandboxConfig pod = Pod("dns");
  pod.set_hostname("dns-test-host");
  pod.mutable_dns_config()->add_servers("10.96.0.10");
  pod.mutable_dns_config()->add_searches("svc.cluster.local");
  pod.mutable_dns_config()->add_options("ndots:5");
  auto p = RunPodWith(pod, Busybox("app", {"sleep", "600"}));
  ASSERT_TRUE(p.ok()) << p.status();

  auto hostname = Exec(p->container_id, {"hostname"});
  ASSERT_TRUE(hostname.ok()) << hostname.status();
  EXPECT_EQ(hostname->stdout(), "dns-test-host\n");
  EXPECT_EQ(hostname->stderr(), "");
  EXPECT_EQ(hostname->exit_code(), 0);

  auto resolv = Exec(p->container_id, {"cat", "/etc/resolv.conf"});
  ASSERT_TRUE(resolv.ok()) << resolv.status();
  EXPECT_THAT(resolv->stdout(), HasSubstr("nameserver 10.96.0.10"));
  EXPECT_THAT(resolv->stdout(), HasSubstr("search svc.cluster.local"));
  EXPECT_THAT(resolv->stdout(), HasSubstr("options ndots:5"));

  auto failing = Exec(p->container_id, {"sh", "-c", "echo to-err >&2; exit 4"});
  ASSERT_TRUE(failing.ok()) << failing.status();
  EXPECT_EQ(failing->stderr(), "to-err\n");
  EXPECT_EQ(failing->exit_code(), 4);
}

TEST_F(ContainerIntegration, AppContainerServesOnPodIpAndHostPort) {
  const int host_port = FreePort(31080);
  ASSERT_NE(host_port, 0);
  v1::PodSandboxConfig pod = Pod("web");
  auto* pm = pod.add_port_mappings();
  pm->set_container_port(80);
  pm->set_host_port(host_port);
  v1::ContainerConfig httpd = Busybox("httpd", {});
  httpd.mutable_image()->set_image(kHttpdImage);
  auto p = RunPodWith(pod, httpd);
  ASSERT_TRUE(p.ok()) << p.status();

  auto status = Status(p->pod_id);
  ASSERT_TRUE(status.ok()) << status.status();
  auto by_ip = HttpGet(status->network().ip(), 80);
  ASSERT_TRUE(by_ip.ok()) << by_ip.status();
  EXPECT_THAT(*by_ip, HasSubstr(kHttpdText));
  auto by_port = HttpGet("127.0.0.1", host_port);
  ASSERT_TRUE(by_port.ok()) << by_port.status();
  EXPECT_THAT(*by_port, HasSubstr(kHttpdText));
}

TEST_F(ContainerIntegration, StatusListAndLogsFollowTheLifecycle) {
  v1::PodSandboxConfig pod = Pod("life");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  v1::ContainerConfig config = Busybox("talker", {"sh", "-c", "echo hello-from-container; exec sleep 600"});
  (*config.mutable_labels())["role"] = "talker";
  (*config.mutable_annotations())["note"] = "kept";
  auto id = Create(*pod_id, pod, config);
  ASSERT_TRUE(id.ok()) << id.status();

  auto created = ContainerStatus(*id);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->state(), v1::CONTAINER_CREATED);
  EXPECT_EQ(created->metadata().name(), "talker");
  EXPECT_EQ(created->image().image(), testenv::BusyboxImage());
  EXPECT_THAT(AsMap(created->labels()), ElementsAre(Pair("role", "talker")));
  EXPECT_THAT(AsMap(created->annotations()), ElementsAre(Pair("note", "kept")));
  const std::string log_path = pod.log_directory() + "/talker/0.log";
  EXPECT_EQ(created->log_path(), log_path);

  ASSERT_TRUE(Start(*id).ok());
  auto running = ContainerStatus(*id);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(running->state(), v1::CONTAINER_RUNNING);
  EXPECT_GT(running->started_at(), running->created_at());

  // The shim writes the CRI log path in the CRI format.
  std::string log;
  for (int i = 0; i < 50 && !absl::StrContains(log, "hello-from-container"); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    log = ReadFile(log_path);
  }
  EXPECT_THAT(log, AllOf(StartsWith("20"), HasSubstr("Z stdout F hello-from-container\n"))) << "<RFC3339Nano> stdout F";

  v1::ListContainersRequest list;
  list.mutable_filter()->set_pod_sandbox_id(*pod_id);
  auto listed = service_->ListContainers(ctx_, list);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->containers_size(), 1);
  EXPECT_EQ(listed->containers(0).id(), *id);
  EXPECT_EQ(listed->containers(0).state(), v1::CONTAINER_RUNNING);
  EXPECT_EQ(listed->containers(0).pod_sandbox_id(), *pod_id);

  v1::StopContainerRequest stop;
  stop.set_container_id(*id);
  stop.set_timeout(5);  // sleep shares the pod's PID namespace (mode POD), so SIGTERM ends it
  ASSERT_TRUE(service_->StopContainer(ctx_, stop).ok());
  auto exited = ContainerStatus(*id);
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_EQ(exited->state(), v1::CONTAINER_EXITED);
  EXPECT_EQ(exited->exit_code(), 143);
  EXPECT_EQ(exited->reason(), "Error");
  EXPECT_GE(exited->finished_at(), exited->started_at());
  EXPECT_EQ(Exec(*id, {"true"}).status().code(), absl::StatusCode::kFailedPrecondition);

  v1::RemoveContainerRequest remove;
  remove.set_container_id(*id);
  ASSERT_TRUE(service_->RemoveContainer(ctx_, remove).ok());
  // The kubelet removes the log files of the containers it garbage-collects.
  EXPECT_EQ(ReadFile(log_path), log);
  EXPECT_EQ(ContainerStatus(*id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(service_->RemoveContainer(ctx_, remove).ok());
}

TEST_F(ContainerIntegration, ContainerThatCannotRunSaysWhy) {
  v1::PodSandboxConfig pod = Pod("broken");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  auto id = Create(*pod_id, pod, Busybox("broken", {"/no/such/binary"}));
  ASSERT_TRUE(id.ok()) << id.status();
  const absl::Status started = Start(*id);
  EXPECT_FALSE(started.ok());
  EXPECT_THAT(started.message(), HasSubstr("/no/such/binary"));
  auto status = ContainerStatus(*id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_NE(status->state(), v1::CONTAINER_RUNNING);
  EXPECT_THAT(status->message(), HasSubstr("/no/such/binary"));
}

TEST_F(ContainerIntegration, UpdateResourcesReachesTheContainersCgroup) {
  v1::ContainerConfig config = Busybox("app", {"sleep", "600"});
  config.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(64 << 20);
  auto p = RunPodWith(Pod("resize"), config);
  ASSERT_TRUE(p.ok()) << p.status();
  v1::UpdateContainerResourcesRequest req;
  req.set_container_id(p->container_id);
  req.mutable_linux()->set_memory_limit_in_bytes(96 << 20);
  req.mutable_linux()->set_cpu_shares(256);
  auto updated = service_->UpdateContainerResources(ctx_, req);
  ASSERT_TRUE(updated.ok()) << updated.status();
  auto status = ContainerStatus(p->container_id);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->resources().linux().memory_limit_in_bytes(), 96 << 20);
  EXPECT_EQ(status->resources().linux().cpu_shares(), 256);
  // What the kernel enforces (cgroup v2 or v1), read from inside the container.
  auto limit = Exec(p->container_id, {"sh", "-c",
                                      "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                                      "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"});
  ASSERT_TRUE(limit.ok()) << limit.status();
  EXPECT_EQ(limit->stdout(), absl::StrCat(96 << 20, "\n"));
}

TEST_F(ContainerIntegration, ExecTimeoutIsDeadlineExceeded) {
  auto p = RunPodWith(Pod("slow"), Busybox("app", {"sleep", "600"}));
  ASSERT_TRUE(p.ok()) << p.status();
  const absl::Time start = absl::Now();
  const absl::Status status = Exec(p->container_id, {"sleep", "31"}, 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Docker leaves a timed-out exec running; the shim kills it.
  std::string processes;
  for (int i = 0; i < 20; ++i) {
    auto ps = Exec(p->container_id, {"ps"});
    ASSERT_TRUE(ps.ok()) << ps.status();
    processes = ps->stdout();
    if (!absl::StrContains(processes, "sleep 31")) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_THAT(processes, Not(HasSubstr("sleep 31")));
}

// The `-id` of every containerd runc shim running on this machine: the container that
// started it (its group's first).
std::set<std::string> RuncShimIds() {
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    if (argv.empty() || !absl::EndsWith(argv[0], "containerd-shim-runc-v2")) continue;
    for (size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "-id") ids.insert(argv[i + 1]);
    }
  }
  return ids;
}

TEST_F(ContainerIntegration, ContainersShareTheInfraContainersShimWhereTheEngineCan) {
  auto api = docker_->Ping(ctx_);
  ASSERT_TRUE(api.ok()) << api.status();
  auto p = RunPodWith(Pod("oneshim"), Busybox("app", {"sleep", "600"}));
  ASSERT_TRUE(p.ok()) << p.status();
  const std::set<std::string> shims = RuncShimIds();
  EXPECT_THAT(shims, Contains(p->pod_id));
  if (dockerclient::ApiAtLeast(*api, 1, 43)) {
    EXPECT_THAT(shims, Not(Contains(p->container_id))) << "the app container has a runc shim of its own";
  } else {  // Docker 20.10 cannot pass the annotation: a shim per container
    EXPECT_THAT(shims, Contains(p->container_id));
  }
  auto echoed = Exec(p->container_id, {"sh", "-c", "echo up"});
  ASSERT_TRUE(echoed.ok()) << echoed.status();
  EXPECT_EQ(echoed->stdout(), "up\n");
}

TEST_F(ContainerIntegration, RemovePodSandboxRemovesItsContainers) {
  auto p = RunPodWith(Pod("gone"), Busybox("app", {"sleep", "600"}));
  ASSERT_TRUE(p.ok()) << p.status();
  Sh("docker kill " + p->container_id);
  ASSERT_TRUE(Remove(p->pod_id).ok());
  EXPECT_EQ(Inspect(p->container_id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Inspect(p->pod_id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Reservations(), IsEmpty());
}

}  // namespace
}  // namespace shim

#include "shim/sandbox_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/config_test_util.h"

namespace shim {
namespace {

using testutil::ExpectInvalid;
using testutil::TempFile;

using ::testing::HasSubstr;
using runtime::v1::NamespaceMode;
using runtime::v1::PodSandboxConfig;
using runtime::v1::SecurityProfile;

constexpr char kPause[] = "registry.k8s.io/pause:3.9";

PodSandboxConfig MinimalConfig() {
  PodSandboxConfig c;
  c.mutable_metadata()->set_name("nginx");
  c.mutable_metadata()->set_namespace_("default");
  c.mutable_metadata()->set_uid("0b7e1c2a-5d3f-4e0a-9c1b-1234567890ab");
  return c;
}

SandboxCreateParams Params(const std::string& network_mode = "none") {
  SandboxCreateParams p;
  p.image = kPause;
  p.cgroup_driver = "cgroupfs";
  p.network_mode = network_mode;
  p.oom_score_adj = -998;
  return p;
}

runtime::v1::LinuxSandboxSecurityContext* Sc(PodSandboxConfig& c) {
  return c.mutable_linux()->mutable_security_context();
}

nlohmann::json MustBody(const PodSandboxConfig& c, const SandboxCreateParams& p) {
  absl::StatusOr<nlohmann::json> body = MakeSandboxCreateBody(c, p);
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? *body : nlohmann::json::object();
}

// ---------------------------------------------------------------------------
// Basics

TEST(SandboxConfigBody, Minimal) {
  nlohmann::json b = MustBody(MinimalConfig(), Params());
  EXPECT_EQ(b["Image"], kPause);
  EXPECT_TRUE(b["Labels"].is_object());
  EXPECT_FALSE(b.contains("Hostname"));
  EXPECT_FALSE(b.contains("User"));
  EXPECT_FALSE(b.contains("ExposedPorts"));
  const nlohmann::json& h = b["HostConfig"];
  EXPECT_EQ(h["NetworkMode"], "none");
  EXPECT_EQ(h["IpcMode"], "shareable");
  EXPECT_EQ(h["OomScoreAdj"], -998);
  EXPECT_EQ(h["SecurityOpt"], nlohmann::json({"seccomp=unconfined"}));  // Kubernetes' meaning of unset
  for (const char* absent : {"PidMode", "CgroupParent", "Sysctls", "Runtime", "Privileged",
                             "ReadonlyRootfs", "GroupAdd", "PortBindings", "Dns", "DnsSearch", "DnsOptions",
                             "Memory", "CpuShares"}) {
    EXPECT_FALSE(h.contains(absent)) << absent;
  }
}

TEST(SandboxConfigBody, NoLinuxSectionUsesPluginNetworkMode) {
  PodSandboxConfig c = MinimalConfig();
  ASSERT_FALSE(c.has_linux());
  EXPECT_EQ(MustBody(c, Params("none"))["HostConfig"]["NetworkMode"], "none");
  EXPECT_EQ(MustBody(c, Params("bridge"))["HostConfig"]["NetworkMode"], "bridge");
  EXPECT_FALSE(IsHostNetwork(c));
}

TEST(SandboxConfigBody, MissingNetworkModeIsAnError) {
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(MinimalConfig(), Params(""));
  EXPECT_FALSE(b.ok());
  // Host-network pods do not need the plugin's mode.
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_namespace_options()->set_network(runtime::v1::NODE);
  EXPECT_TRUE(MakeSandboxCreateBody(c, Params("")).ok());
}

struct MetadataCase {
  std::string name;
  bool has_metadata;
  std::string pod_name, pod_namespace, uid;
  std::string error;  // empty: OK
};

class SandboxConfigMetadata : public ::testing::TestWithParam<MetadataCase> {};

TEST_P(SandboxConfigMetadata, Validates) {
  const MetadataCase& tc = GetParam();
  PodSandboxConfig c;
  if (tc.has_metadata) {
    c.mutable_metadata()->set_name(tc.pod_name);
    c.mutable_metadata()->set_namespace_(tc.pod_namespace);
    c.mutable_metadata()->set_uid(tc.uid);
  }
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (tc.error.empty()) {
    EXPECT_TRUE(b.ok()) << b.status();
  } else {
    ExpectInvalid(b.status(), tc.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigMetadata,
    ::testing::Values(MetadataCase{"ok", true, "a", "b", "c", ""},
                      MetadataCase{"nil", false, "", "", "", "pod sandbox config: metadata is required"},
                      MetadataCase{"no_name", true, "", "b", "c", "pod sandbox config: metadata.name is required"},
                      MetadataCase{"no_namespace", true, "a", "", "c",
                                   "pod sandbox config: metadata.namespace is required"},
                      MetadataCase{"no_uid", true, "a", "b", "", "pod sandbox config: metadata.uid is required"}),
    [](const auto& info) { return info.param.name; });

TEST(SandboxConfigBody, Hostname) {
  PodSandboxConfig c = MinimalConfig();
  c.set_hostname("web-0");
  EXPECT_EQ(MustBody(c, Params())["Hostname"], "web-0");
}

TEST(SandboxConfigBody, HostNetwork) {
  PodSandboxConfig c = MinimalConfig();
  c.set_hostname("node-1");
  Sc(c)->mutable_namespace_options()->set_network(runtime::v1::NODE);
  auto* pm = c.add_port_mappings();
  pm->set_container_port(80);
  pm->set_host_port(80);
  EXPECT_TRUE(IsHostNetwork(c));
  nlohmann::json b = MustBody(c, Params("bridge"));
  EXPECT_FALSE(b.contains("Hostname"));  // Docker rejects a hostname with network mode host
  EXPECT_FALSE(b.contains("ExposedPorts"));
  EXPECT_EQ(b["HostConfig"]["NetworkMode"], "host");
  EXPECT_FALSE(b["HostConfig"].contains("PortBindings"));
  EXPECT_EQ(b["HostConfig"]["IpcMode"], "shareable");
}

// ---------------------------------------------------------------------------
// Namespaces

struct NamespaceCase {
  std::string name;
  NamespaceMode network, pid, ipc;
  std::string pid_mode;  // expected HostConfig.PidMode; empty: absent
  std::string ipc_mode;
  std::string error;  // fragment; empty: OK
};

class SandboxConfigNamespaces : public ::testing::TestWithParam<NamespaceCase> {};

TEST_P(SandboxConfigNamespaces, Modes) {
  const NamespaceCase& tc = GetParam();
  PodSandboxConfig c = MinimalConfig();
  auto* ns = Sc(c)->mutable_namespace_options();
  ns->set_network(tc.network);
  ns->set_pid(tc.pid);
  ns->set_ipc(tc.ipc);
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  const nlohmann::json& h = (*b)["HostConfig"];
  if (tc.pid_mode.empty()) {
    EXPECT_FALSE(h.contains("PidMode"));
  } else {
    EXPECT_EQ(h["PidMode"], tc.pid_mode);
  }
  EXPECT_EQ(h["IpcMode"], tc.ipc_mode);
}

using runtime::v1::CONTAINER;
using runtime::v1::NODE;
using runtime::v1::POD;
using runtime::v1::TARGET;

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigNamespaces,
    ::testing::Values(
        NamespaceCase{"defaults", POD, POD, POD, "", "shareable", ""},
        NamespaceCase{"pid_container", POD, CONTAINER, POD, "", "shareable", ""},  // kubelet's default
        NamespaceCase{"host_pid", POD, NODE, POD, "host", "shareable", ""},
        NamespaceCase{"host_ipc", POD, POD, NODE, "", "host", ""},
        NamespaceCase{"all_host", NODE, NODE, NODE, "host", "host", ""},
        NamespaceCase{"network_target", TARGET, POD, POD, "", "", "namespace_options.network"},
        NamespaceCase{"network_container", CONTAINER, POD, POD, "", "", "namespace_options.network"},
        NamespaceCase{"pid_target", POD, TARGET, POD, "", "", "namespace_options.pid"},
        NamespaceCase{"ipc_container", POD, POD, CONTAINER, "", "", "namespace_options.ipc"},
        NamespaceCase{"ipc_target", POD, POD, TARGET, "", "", "namespace_options.ipc: mode TARGET"}),
    [](const auto& info) { return info.param.name; });

TEST(SandboxConfigNamespaces, UserNamespaces) {
  PodSandboxConfig c = MinimalConfig();
  auto* userns = Sc(c)->mutable_namespace_options()->mutable_userns_options();
  userns->set_mode(runtime::v1::NODE);  // hostUsers: true, what kubelets send today
  EXPECT_TRUE(MakeSandboxCreateBody(c, Params()).ok());
  userns->set_mode(runtime::v1::POD);  // hostUsers: false, with or without mappings
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(),
                "linux.security_context.namespace_options.userns_options.mode: POD (hostUsers: false) is not "
                "supported: Docker Engine has no per-pod user namespaces, only the daemon-wide userns-remap");
  auto* m = userns->add_uids();
  m->set_host_id(65536);
  m->set_length(65536);
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(), "userns_options.mode: POD");
}

// ---------------------------------------------------------------------------
// Sysctls

struct SysctlCase {
  std::string name;
  bool host_network, host_ipc;
  std::string sysctl;
  std::string error;  // fragment; empty: OK
};

class SandboxConfigSysctls : public ::testing::TestWithParam<SysctlCase> {};

TEST_P(SandboxConfigSysctls, Validates) {
  const SysctlCase& tc = GetParam();
  PodSandboxConfig c = MinimalConfig();
  auto* ns = Sc(c)->mutable_namespace_options();
  if (tc.host_network) ns->set_network(runtime::v1::NODE);
  if (tc.host_ipc) ns->set_ipc(runtime::v1::NODE);
  (*c.mutable_linux()->mutable_sysctls())[tc.sysctl] = "1";
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (tc.error.empty()) {
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)["HostConfig"]["Sysctls"][tc.sysctl], "1");
  } else {
    ExpectInvalid(b.status(), tc.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigSysctls,
    ::testing::Values(SysctlCase{"net_in_pod", false, false, "net.ipv4.ip_unprivileged_port_start", ""},
                      SysctlCase{"ipc_in_pod", false, false, "kernel.shm_rmid_forced", ""},
                      SysctlCase{"net_on_host_network", true, false, "net.ipv4.ip_forward",
                                 "net.ipv4.ip_forward cannot be set on a host-network pod"},
                      SysctlCase{"slashed_net_on_host_network", true, false, "net/ipv4/ip_forward",
                                 "host-network"},
                      SysctlCase{"ipc_on_host_network", true, false, "kernel.shmmax", ""},
                      SysctlCase{"ipc_on_host_ipc", false, true, "kernel.shmmax", "host IPC"},
                      SysctlCase{"mqueue_on_host_ipc", false, true, "fs.mqueue.msg_max", "host IPC"},
                      SysctlCase{"net_on_host_ipc", false, true, "net.core.somaxconn", ""}),
    [](const auto& info) { return info.param.name; });

TEST(SandboxConfigSysctls, Several) {
  PodSandboxConfig c = MinimalConfig();
  auto& sysctls = *c.mutable_linux()->mutable_sysctls();
  sysctls["net.core.somaxconn"] = "1024";
  sysctls["kernel.shm_rmid_forced"] = "1";
  nlohmann::json b = MustBody(c, Params());
  EXPECT_EQ(b["HostConfig"]["Sysctls"],
            nlohmann::json({{"net.core.somaxconn", "1024"}, {"kernel.shm_rmid_forced", "1"}}));
}

// ---------------------------------------------------------------------------
// cgroup parents

struct CgroupCase {
  std::string parent;
  std::string driver;
  std::string want;   // when error is empty
  std::string error;  // fragment; empty: OK
};

class SandboxConfigCgroupParent : public ::testing::TestWithParam<CgroupCase> {};

TEST_P(SandboxConfigCgroupParent, Converts) {
  const CgroupCase& tc = GetParam();
  absl::StatusOr<std::string> got = ConvertCgroupParent(tc.parent, tc.driver);
  if (tc.error.empty()) {
    ASSERT_TRUE(got.ok()) << tc.parent << " " << tc.driver << ": " << got.status();
    EXPECT_EQ(*got, tc.want) << tc.parent << " " << tc.driver;
  } else {
    ASSERT_FALSE(got.ok()) << tc.parent << " " << tc.driver << " gave " << *got;
    ExpectInvalid(got.status(), tc.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigCgroupParent,
    ::testing::Values(
        // No parent.
        CgroupCase{"", "cgroupfs", "", ""}, CgroupCase{"/", "cgroupfs", "", ""}, CgroupCase{"", "systemd", "", ""},
        CgroupCase{"/", "systemd", "", ""}, CgroupCase{"-.slice", "systemd", "", ""},
        CgroupCase{"-.slice", "cgroupfs", "", ""},
        // cgroupfs driver.
        CgroupCase{"/kubepods/burstable/pod12", "cgroupfs", "/kubepods/burstable/pod12", ""},
        CgroupCase{"/kubepods/burstable/pod12/", "cgroupfs", "/kubepods/burstable/pod12", ""},
        CgroupCase{"/kubepods/burstable/pod12", "", "/kubepods/burstable/pod12", ""},  // Docker's default
        CgroupCase{"kubepods-burstable-pod12.slice", "cgroupfs",
                   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice", ""},
        CgroupCase{"kubepods.slice", "cgroupfs", "/kubepods.slice", ""},
        CgroupCase{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice", "cgroupfs",
                   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice", ""},
        // systemd driver.
        CgroupCase{"/kubepods/burstable/pod12", "systemd", "kubepods-burstable-pod12.slice", ""},
        CgroupCase{"/kubepods/pod0b7e1c2a-5d3f", "systemd", "kubepods-pod0b7e1c2a_5d3f.slice", ""},
        CgroupCase{"/kubepods", "systemd", "kubepods.slice", ""},
        CgroupCase{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b7e1c2a_5d3f.slice", "systemd",
                   "kubepods-burstable-pod0b7e1c2a_5d3f.slice", ""},
        CgroupCase{"/kubepods.slice", "systemd", "kubepods.slice", ""},
        CgroupCase{"kubepods-besteffort-pod12.slice", "systemd", "kubepods-besteffort-pod12.slice", ""},
        // Errors.
        CgroupCase{"kubepods", "cgroupfs", "", "is relative"},
        CgroupCase{"kubepods/burstable", "systemd", "", "is relative"},
        CgroupCase{"kubepods/a.slice", "cgroupfs", "", "is relative"},
        CgroupCase{"/kubepods/../etc", "cgroupfs", "", "'..'"}, CgroupCase{"/kubepods/./x", "systemd", "", "'..'"},
        CgroupCase{"/kubepods//pod12", "cgroupfs", "", "empty path component"},
        CgroupCase{"a--b.slice", "cgroupfs", "", "empty component"},
        CgroupCase{"-a.slice", "systemd", "", "empty component"},
        CgroupCase{"a-.slice", "systemd", "", "empty component"},
        CgroupCase{".slice", "systemd", "", "empty slice name"},
        CgroupCase{"a b.slice", "systemd", "", "character systemd does not allow"},
        CgroupCase{"/kube pods/x", "systemd", "", "character systemd does not allow"},
        CgroupCase{"/foo.slice/bar.slice", "systemd", "", "not a systemd slice hierarchy"},
        CgroupCase{"/kubepods.slice/pod12", "systemd", "", "mixes systemd slice names"},
        CgroupCase{"/kubepods\n", "cgroupfs", "", "control character"},
        CgroupCase{"/kubepods", "lxc", "", "unknown Docker cgroup driver"}));

TEST(SandboxConfigCgroupParent, InBody) {
  PodSandboxConfig c = MinimalConfig();
  c.mutable_linux()->set_cgroup_parent("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice");
  SandboxCreateParams p = Params();
  p.cgroup_driver = "systemd";
  EXPECT_EQ(MustBody(c, p)["HostConfig"]["CgroupParent"], "kubepods-burstable-pod12.slice");
  p.cgroup_driver = "cgroupfs";
  EXPECT_EQ(MustBody(c, p)["HostConfig"]["CgroupParent"],
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12.slice");

  c.mutable_linux()->set_cgroup_parent("kubepods");
  ExpectInvalid(MakeSandboxCreateBody(c, p).status(), "linux.cgroup_parent: cgroup parent \"kubepods\"");
  c.mutable_linux()->set_cgroup_parent("/");
  EXPECT_FALSE(MustBody(c, p)["HostConfig"].contains("CgroupParent"));
}

// ---------------------------------------------------------------------------
// Security context

TEST(SandboxConfigSecurity, UserAndGroup) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_run_as_user()->set_value(65535);
  EXPECT_EQ(MustBody(c, Params())["User"], "65535");
  Sc(c)->mutable_run_as_group()->set_value(65534);
  EXPECT_EQ(MustBody(c, Params())["User"], "65535:65534");
  Sc(c)->mutable_run_as_user()->set_value(0);
  EXPECT_EQ(MustBody(c, Params())["User"], "0:65534");
}

TEST(SandboxConfigSecurity, GroupWithoutUserRejected) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_run_as_group()->set_value(1000);
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(), "run_as_group");
}

TEST(SandboxConfigSecurity, NegativeIdsRejected) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_run_as_user()->set_value(-1);
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(), "run_as_user: -1");
  c = MinimalConfig();
  Sc(c)->add_supplemental_groups(-5);
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(), "supplemental_groups: -5");
}

TEST(SandboxConfigSecurity, ReadonlyPrivilegedGroups) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->set_readonly_rootfs(true);
  Sc(c)->add_supplemental_groups(1000);
  Sc(c)->add_supplemental_groups(2000);
  nlohmann::json h = MustBody(c, Params())["HostConfig"];
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_FALSE(h.contains("Privileged"));
  EXPECT_EQ(h["GroupAdd"], nlohmann::json({"1000", "2000"}));

  c = MinimalConfig();
  Sc(c)->set_privileged(true);
  // Docker runs privileged containers unconfined: profiles are not looked at,
  // not even a missing one.
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  Sc(c)->mutable_seccomp()->set_localhost_ref("/nonexistent/profile.json");
  h = MustBody(c, Params())["HostConfig"];
  EXPECT_EQ(h["Privileged"], true);
  EXPECT_FALSE(h.contains("SecurityOpt"));
  EXPECT_FALSE(h.contains("CapAdd"));
  EXPECT_FALSE(h.contains("Devices"));

  // On a restricted host whose engine's flag would fail: spelled out (capabilities.h).
  const HostCapabilities host{{"CAP_NET_ADMIN"}, {"CAP_SYS_RESOURCE"}};
  SandboxCreateParams restricted = Params();
  restricted.restricted_capabilities = &host;
  h = MustBody(c, restricted)["HostConfig"];
  EXPECT_FALSE(h.contains("Privileged"));
  EXPECT_EQ(h["CapAdd"], nlohmann::json({"CAP_NET_ADMIN"}));
  EXPECT_EQ(h["SecurityOpt"], nlohmann::json({"seccomp=unconfined", "apparmor=unconfined"}));
}

struct ProfileCase {
  std::string name;
  SecurityProfile::ProfileType type;
  std::string ref;
  std::vector<std::string> want;  // SecurityOpt; empty: absent
  std::string error;
};

class SandboxConfigSeccomp : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(SandboxConfigSeccomp, Profiles) {
  const ProfileCase& tc = GetParam();
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(tc.type);
  Sc(c)->mutable_seccomp()->set_localhost_ref(tc.ref);
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  if (tc.want.empty()) {
    EXPECT_FALSE((*b)["HostConfig"].contains("SecurityOpt"));
  } else {
    EXPECT_EQ((*b)["HostConfig"]["SecurityOpt"], nlohmann::json(tc.want));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigSeccomp,
    ::testing::Values(ProfileCase{"runtime_default", SecurityProfile::RuntimeDefault, "", {}, ""},
                      ProfileCase{"unconfined", SecurityProfile::Unconfined, "", {"seccomp=unconfined"}, ""},
                      ProfileCase{"localhost_missing", SecurityProfile::Localhost, "/nonexistent/dir/p.json", {},
                                  "\"/nonexistent/dir/p.json\""},
                      ProfileCase{"localhost_empty", SecurityProfile::Localhost, "", {}, "localhost_ref"},
                      ProfileCase{"localhost_relative_no_root", SecurityProfile::Localhost, "p.json", {},
                                  "no seccomp profile root"}),
    [](const auto& info) { return info.param.name; });

constexpr char kProfile[] = R"({"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]})";

TEST(SandboxConfigSeccomp, LocalhostSendsFileContent) {
  TempFile f("sandbox_config_test_profile.json", kProfile);
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  Sc(c)->mutable_seccomp()->set_localhost_ref(f.path());
  EXPECT_EQ(MustBody(c, Params())["HostConfig"]["SecurityOpt"],
            nlohmann::json({std::string("seccomp=") + kProfile}));
}

TEST(SandboxConfigSeccomp, LocalhostRelativeToRoot) {
  TempFile f("sandbox_config_test_rel.json", kProfile);
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  Sc(c)->mutable_seccomp()->set_localhost_ref("sandbox_config_test_rel.json");
  SandboxCreateParams p = Params();
  p.seccomp_profile_root = f.dir() + "/";
  EXPECT_EQ(MustBody(c, p)["HostConfig"]["SecurityOpt"], nlohmann::json({std::string("seccomp=") + kProfile}));
  p.seccomp_profile_root = "/nonexistent-root";
  ExpectInvalid(MakeSandboxCreateBody(c, p).status(), "/nonexistent-root/sandbox_config_test_rel.json");
}

TEST(SandboxConfigSeccomp, LocalhostNotJson) {
  TempFile f("sandbox_config_test_bad.json", "not json {");
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  Sc(c)->mutable_seccomp()->set_localhost_ref(f.path());
  ExpectInvalid(MakeSandboxCreateBody(c, Params()).status(), f.path());
}

struct DeprecatedSeccompCase {
  std::string name;
  std::string path;  // "@" is replaced by the temp profile's path
  std::vector<std::string> want;
  std::string error;
};

class SandboxConfigSeccompPath : public ::testing::TestWithParam<DeprecatedSeccompCase> {};

TEST_P(SandboxConfigSeccompPath, DeprecatedField) {
  const DeprecatedSeccompCase& tc = GetParam();
  TempFile f("sandbox_config_test_dep.json", kProfile);
  std::string path = tc.path;
  if (auto at = path.find('@'); at != std::string::npos) path.replace(at, 1, f.path());
  std::vector<std::string> want = tc.want;
  for (std::string& w : want) {
    if (w == "@") w = std::string("seccomp=") + kProfile;
  }
  PodSandboxConfig c = MinimalConfig();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Sc(c)->set_seccomp_profile_path(path);
#pragma GCC diagnostic pop
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  if (want.empty()) {
    EXPECT_FALSE((*b)["HostConfig"].contains("SecurityOpt"));
  } else {
    EXPECT_EQ((*b)["HostConfig"]["SecurityOpt"], nlohmann::json(want));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigSeccompPath,
    ::testing::Values(DeprecatedSeccompCase{"empty", "", {"seccomp=unconfined"}, ""},
                      DeprecatedSeccompCase{"runtime_default", "runtime/default", {}, ""},
                      DeprecatedSeccompCase{"docker_default", "docker/default", {}, ""},
                      DeprecatedSeccompCase{"unconfined", "unconfined", {"seccomp=unconfined"}, ""},
                      DeprecatedSeccompCase{"localhost", "localhost/@", {"@"}, ""},
                      DeprecatedSeccompCase{"localhost_missing", "localhost//nope/p.json", {}, "\"/nope/p.json\""},
                      DeprecatedSeccompCase{"bogus", "mine", {}, "seccomp_profile_path"}),
    [](const auto& info) { return info.param.name; });

TEST(SandboxConfigSeccomp, NewFieldWinsOverDeprecated) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::RuntimeDefault);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Sc(c)->set_seccomp_profile_path("unconfined");
#pragma GCC diagnostic pop
  EXPECT_FALSE(MustBody(c, Params())["HostConfig"].contains("SecurityOpt"));
}

TEST(SandboxConfigSecurity, SELinux) {
  PodSandboxConfig c = MinimalConfig();
  auto* se = Sc(c)->mutable_selinux_options();
  se->set_user("system_u");
  se->set_role("system_r");
  se->set_type("container_t");
  se->set_level("s0:c1,c2");
  EXPECT_EQ(MustBody(c, Params())["HostConfig"]["SecurityOpt"],
            nlohmann::json({"label=user:system_u", "label=role:system_r", "label=type:container_t",
                            "label=level:s0:c1,c2", "seccomp=unconfined"}));
  se->Clear();
  se->set_level("s0:c5");
  EXPECT_EQ(MustBody(c, Params())["HostConfig"]["SecurityOpt"],
            nlohmann::json({"label=level:s0:c5", "seccomp=unconfined"}));
}

class SandboxConfigAppArmor : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(SandboxConfigAppArmor, Profiles) {
  const ProfileCase& tc = GetParam();
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::RuntimeDefault);  // no seccomp option
  Sc(c)->mutable_apparmor()->set_profile_type(tc.type);
  Sc(c)->mutable_apparmor()->set_localhost_ref(tc.ref);
  absl::StatusOr<nlohmann::json> b = MakeSandboxCreateBody(c, Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  if (tc.want.empty()) {
    EXPECT_FALSE((*b)["HostConfig"].contains("SecurityOpt"));
  } else {
    EXPECT_EQ((*b)["HostConfig"]["SecurityOpt"], nlohmann::json(tc.want));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigAppArmor,
    ::testing::Values(ProfileCase{"runtime_default", SecurityProfile::RuntimeDefault, "", {}, ""},
                      ProfileCase{"unconfined", SecurityProfile::Unconfined, "", {"apparmor=unconfined"}, ""},
                      ProfileCase{"localhost", SecurityProfile::Localhost, "k8s-deny-write",
                                  {"apparmor=k8s-deny-write"}, ""},
                      ProfileCase{"localhost_prefixed", SecurityProfile::Localhost, "localhost/k8s-deny-write",
                                  {"apparmor=k8s-deny-write"}, ""},
                      ProfileCase{"localhost_empty", SecurityProfile::Localhost, "", {}, "apparmor"}),
    [](const auto& info) { return info.param.name; });

TEST(SandboxConfigSecurity, AllOptionsTogether) {
  PodSandboxConfig c = MinimalConfig();
  Sc(c)->mutable_selinux_options()->set_type("spc_t");
  Sc(c)->mutable_apparmor()->set_profile_type(SecurityProfile::Unconfined);
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Unconfined);
  EXPECT_EQ(MustBody(c, Params())["HostConfig"]["SecurityOpt"],
            nlohmann::json({"label=type:spc_t", "apparmor=unconfined", "seccomp=unconfined"}));
}

// ---------------------------------------------------------------------------
// Ports

void AddPort(PodSandboxConfig& c, runtime::v1::Protocol proto, int container, int host, const std::string& ip = "") {
  auto* pm = c.add_port_mappings();
  pm->set_protocol(proto);
  pm->set_container_port(container);
  pm->set_host_port(host);
  pm->set_host_ip(ip);
}

TEST(SandboxConfigPorts, BridgePublishes) {
  PodSandboxConfig c = MinimalConfig();
  AddPort(c, runtime::v1::TCP, 80, 8080);
  AddPort(c, runtime::v1::TCP, 80, 8081, "127.0.0.1");
  AddPort(c, runtime::v1::UDP, 53, 5353);
  AddPort(c, runtime::v1::SCTP, 9000, 9000);
  AddPort(c, runtime::v1::TCP, 443, 0);  // no host port: nothing to publish
  nlohmann::json b = MustBody(c, Params("bridge"));
  EXPECT_EQ(b["ExposedPorts"], nlohmann::json::parse(R"({"80/tcp":{},"53/udp":{},"9000/sctp":{}})"));
  EXPECT_EQ(b["HostConfig"]["PortBindings"], nlohmann::json::parse(R"({
      "80/tcp":[{"HostIp":"","HostPort":"8080"},{"HostIp":"127.0.0.1","HostPort":"8081"}],
      "53/udp":[{"HostIp":"","HostPort":"5353"}],
      "9000/sctp":[{"HostIp":"","HostPort":"9000"}]})"));
}

TEST(SandboxConfigPorts, BridgeWithoutHostPorts) {
  PodSandboxConfig c = MinimalConfig();
  AddPort(c, runtime::v1::TCP, 80, 0);
  nlohmann::json b = MustBody(c, Params("bridge"));
  EXPECT_FALSE(b.contains("ExposedPorts"));
  EXPECT_FALSE(b["HostConfig"].contains("PortBindings"));
}

TEST(SandboxConfigPorts, NoneModeLeavesPortsToCni) {
  PodSandboxConfig c = MinimalConfig();
  AddPort(c, runtime::v1::TCP, 80, 8080);
  nlohmann::json b = MustBody(c, Params("none"));
  EXPECT_FALSE(b.contains("ExposedPorts"));
  EXPECT_FALSE(b["HostConfig"].contains("PortBindings"));
}

TEST(SandboxConfigPorts, ToPortMappings) {
  PodSandboxConfig c = MinimalConfig();
  AddPort(c, runtime::v1::TCP, 80, 8080, "10.0.0.1");
  AddPort(c, runtime::v1::UDP, 53, 0);
  AddPort(c, runtime::v1::SCTP, 65535, 65535);
  absl::StatusOr<std::vector<network::PortMapping>> got = ToPortMappings(c.port_mappings());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].protocol, "tcp");
  EXPECT_EQ((*got)[0].container_port, 80);
  EXPECT_EQ((*got)[0].host_port, 8080);
  EXPECT_EQ((*got)[0].host_ip, "10.0.0.1");
  EXPECT_EQ((*got)[1].protocol, "udp");
  EXPECT_EQ((*got)[1].host_port, 0);
  EXPECT_EQ((*got)[2].protocol, "sctp");
  EXPECT_EQ((*got)[2].container_port, 65535);
}

struct BadPortCase {
  std::string name;
  int protocol, container, host;
  std::string error;
};

class SandboxConfigBadPorts : public ::testing::TestWithParam<BadPortCase> {};

TEST_P(SandboxConfigBadPorts, Rejected) {
  const BadPortCase& tc = GetParam();
  PodSandboxConfig c = MinimalConfig();
  AddPort(c, runtime::v1::TCP, 80, 80);
  AddPort(c, static_cast<runtime::v1::Protocol>(tc.protocol), tc.container, tc.host);
  ExpectInvalid(ToPortMappings(c.port_mappings()).status(), tc.error);
  // The body validates ports whatever the network mode.
  ExpectInvalid(MakeSandboxCreateBody(c, Params("none")).status(), tc.error);
  ExpectInvalid(MakeSandboxCreateBody(c, Params("bridge")).status(), tc.error);
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigBadPorts,
    ::testing::Values(BadPortCase{"container_zero", 0, 0, 80, "port_mappings[1].container_port: 0"},
                      BadPortCase{"container_negative", 0, -1, 80, "container_port: -1"},
                      BadPortCase{"container_too_big", 0, 65536, 80, "container_port: 65536"},
                      BadPortCase{"host_negative", 1, 80, -2, "port_mappings[1].host_port: -2"},
                      BadPortCase{"host_too_big", 2, 80, 70000, "host_port: 70000"},
                      BadPortCase{"unknown_protocol", 7, 80, 80, "port_mappings[1].protocol"}),
    [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Runtime, OOM score, DNS

TEST(SandboxConfigBody, RuntimeHandlerAndOomScore) {
  SandboxCreateParams p = Params();
  p.docker_runtime = "runsc";
  p.oom_score_adj = -500;
  nlohmann::json h = MustBody(MinimalConfig(), p)["HostConfig"];
  EXPECT_EQ(h["Runtime"], "runsc");
  EXPECT_EQ(h["OomScoreAdj"], -500);
}

TEST(SandboxConfigDns, BodyFields) {
  PodSandboxConfig c = MinimalConfig();
  auto* dns = c.mutable_dns_config();
  dns->add_servers("10.96.0.10");
  dns->add_servers("fd00::10");
  dns->add_searches("default.svc.cluster.local");
  dns->add_searches("svc.cluster.local");
  dns->add_options("ndots:5");
  dns->add_options("edns0");
  nlohmann::json h = MustBody(c, Params())["HostConfig"];
  EXPECT_EQ(h["Dns"], nlohmann::json({"10.96.0.10", "fd00::10"}));
  EXPECT_EQ(h["DnsSearch"], nlohmann::json({"default.svc.cluster.local", "svc.cluster.local"}));
  EXPECT_EQ(h["DnsOptions"], nlohmann::json({"ndots:5", "edns0"}));
  EXPECT_EQ(MakeResolvConf(*dns),
            "nameserver 10.96.0.10\nnameserver fd00::10\n"
            "search default.svc.cluster.local svc.cluster.local\n"
            "options ndots:5 edns0\n");
}

TEST(SandboxConfigDns, ResolvConfTable) {
  runtime::v1::DNSConfig dns;
  EXPECT_EQ(MakeResolvConf(dns), "");
  dns.add_servers("1.1.1.1");
  EXPECT_EQ(MakeResolvConf(dns), "nameserver 1.1.1.1\n");
  dns.Clear();
  dns.add_options("ndots:5");
  EXPECT_EQ(MakeResolvConf(dns), "options ndots:5\n");
  dns.Clear();
  dns.add_searches("a");
  dns.add_searches("b");
  EXPECT_EQ(MakeResolvConf(dns), "search a b\n");
}

TEST(SandboxConfigDns, PartialConfigSetsOnlyGivenFields) {
  PodSandboxConfig c = MinimalConfig();
  c.mutable_dns_config()->add_servers("10.96.0.10");
  nlohmann::json h = MustBody(c, Params())["HostConfig"];
  EXPECT_EQ(h["Dns"], nlohmann::json({"10.96.0.10"}));
  EXPECT_FALSE(h.contains("DnsSearch"));
  EXPECT_FALSE(h.contains("DnsOptions"));
}

// ---------------------------------------------------------------------------
// Bandwidth

struct BandwidthCase {
  std::string quantity;
  int64_t want;       // bits/s, when error is empty
  std::string error;  // fragment; empty: OK
};

class SandboxConfigBandwidth : public ::testing::TestWithParam<BandwidthCase> {};

TEST_P(SandboxConfigBandwidth, Ingress) {
  const BandwidthCase& tc = GetParam();
  google::protobuf::Map<std::string, std::string> ann;
  ann["kubernetes.io/ingress-bandwidth"] = tc.quantity;
  auto got = BandwidthFromAnnotations(ann);
  if (tc.error.empty()) {
    ASSERT_TRUE(got.ok()) << tc.quantity << ": " << got.status();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->ingress_bits_per_second, tc.want) << tc.quantity;
    EXPECT_EQ((*got)->egress_bits_per_second, 0);
  } else {
    ASSERT_FALSE(got.ok()) << tc.quantity;
    ExpectInvalid(got.status(), tc.error);
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("kubernetes.io/ingress-bandwidth"));
  }
}

INSTANTIATE_TEST_SUITE_P(
    SandboxConfig, SandboxConfigBandwidth,
    ::testing::Values(
        BandwidthCase{"10M", 10000000, ""}, BandwidthCase{"1k", 1000, ""}, BandwidthCase{"1000", 1000, ""},
        BandwidthCase{"1G", 1000000000, ""}, BandwidthCase{"2T", 2000000000000, ""},
        BandwidthCase{"1P", 1000000000000000, ""}, BandwidthCase{"1Ki", 1024, ""},
        BandwidthCase{"100Mi", 104857600, ""}, BandwidthCase{"1Gi", 1073741824, ""},
        BandwidthCase{"1Ti", 1099511627776, ""}, BandwidthCase{"1.5M", 1500000, ""},
        BandwidthCase{"+2k", 2000, ""}, BandwidthCase{".5M", 500000, ""}, BandwidthCase{"5.M", 5000000, ""},
        BandwidthCase{"1e6", 1000000, ""}, BandwidthCase{"1E6", 1000000, ""},
        BandwidthCase{"2.5e+3", 2500, ""}, BandwidthCase{"1000000m", 1000, ""},
        BandwidthCase{"1000001m", 1001, ""},                      // rounds up, like Quantity.Value()
        BandwidthCase{"1.0000000000000000000001k", 1001, ""},   // more digits than fit: still rounds up
        BandwidthCase{"0.0000000000000000000001P", 0, "outside the supported range"},
        BandwidthCase{"999", 0, "outside the supported range"}, BandwidthCase{"0", 0, "outside the supported range"},
        BandwidthCase{"-1M", 0, "outside the supported range"}, BandwidthCase{"2P", 0, "outside the supported range"},
        BandwidthCase{"1Pi", 0, "outside the supported range"}, BandwidthCase{"1E", 0, "outside the supported range"},
        BandwidthCase{"1000000000000000001", 0, "outside the supported range"},
        BandwidthCase{"99999999999999999999999", 0, "out of range"}, BandwidthCase{"1e999", 0, "out of range"},
        BandwidthCase{"", 0, "not a valid quantity"}, BandwidthCase{"abc", 0, "not a valid quantity"},
        BandwidthCase{"10MB", 0, "unknown suffix"}, BandwidthCase{"10 M", 0, "unknown suffix"},
        BandwidthCase{"10mbit", 0, "unknown suffix"}, BandwidthCase{"1e", 0, "unknown suffix"},
        BandwidthCase{"1ex", 0, "bad exponent"}, BandwidthCase{"M", 0, "no number"},
        BandwidthCase{".", 0, "no number"}, BandwidthCase{"1..2M", 0, "not a valid quantity"}));

TEST(SandboxConfigBandwidth, Annotations) {
  google::protobuf::Map<std::string, std::string> ann;
  ann["unrelated"] = "x";
  auto none = BandwidthFromAnnotations(ann);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  ann["kubernetes.io/egress-bandwidth"] = "1M";
  auto egress = BandwidthFromAnnotations(ann);
  ASSERT_TRUE(egress.ok()) << egress.status();
  ASSERT_TRUE(egress->has_value());
  EXPECT_EQ((*egress)->ingress_bits_per_second, 0);
  EXPECT_EQ((*egress)->egress_bits_per_second, 1000000);

  ann["kubernetes.io/ingress-bandwidth"] = "2M";
  auto both = BandwidthFromAnnotations(ann);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)->ingress_bits_per_second, 2000000);
  EXPECT_EQ((*both)->egress_bits_per_second, 1000000);

  ann["kubernetes.io/egress-bandwidth"] = "lots";
  ExpectInvalid(BandwidthFromAnnotations(ann).status(), "kubernetes.io/egress-bandwidth");
}

}  // namespace
}  // namespace shim

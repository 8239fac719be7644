#include "shim/container_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "shim/naming.h"
#include "tests/unit/config_test_util.h"

namespace shim {
namespace {

using testutil::ExpectInvalid;
using testutil::TempFile;

using ::testing::HasSubstr;
using runtime::v1::ContainerConfig;
using runtime::v1::NamespaceMode;
using runtime::v1::PodSandboxConfig;
using runtime::v1::SecurityProfile;
using runtime::v1::CONTAINER;
using runtime::v1::NODE;
using runtime::v1::POD;
using runtime::v1::TARGET;
using json = nlohmann::json;

constexpr char kSandboxId[] = "5b1f0c2d9e8a";
constexpr char kImageId[] = "sha256:0d6c8ab0a8c4";

ContainerConfig MinimalConfig() {
  ContainerConfig c;
  c.mutable_metadata()->set_name("app");
  c.mutable_image()->set_image("busybox:1.36");
  return c;
}

PodSandboxConfig Sandbox() {
  PodSandboxConfig s;
  s.mutable_metadata()->set_name("web-0");
  s.mutable_metadata()->set_namespace_("default");
  s.mutable_metadata()->set_uid("0b7e1c2a-5d3f-4e0a-9c1b-1234567890ab");
  return s;
}

ContainerCreateParams Params() {
  ContainerCreateParams p;
  p.sandbox_id = kSandboxId;
  p.image = kImageId;
  p.cgroup_driver = "cgroupfs";
  return p;
}

// Params for an engine of `api_version`, with CDI enabled or not.
ContainerCreateParams ParamsFor(const std::string& api_version, bool cdi = false) {
  ContainerCreateParams p = Params();
  p.features.api_version = api_version;
  p.features.engine_version = api_version == "1.41" ? "20.10.24" : "28.5.2";
  p.features.recursive_read_only = api_version != "1.41";
  p.features.cdi = cdi;
  return p;
}

runtime::v1::LinuxContainerSecurityContext* Sc(ContainerConfig& c) {
  return c.mutable_linux()->mutable_security_context();
}

runtime::v1::LinuxContainerResources* Res(ContainerConfig& c) { return c.mutable_linux()->mutable_resources(); }

json MustBody(const ContainerConfig& c, const PodSandboxConfig& s = Sandbox(),
              const ContainerCreateParams& p = Params()) {
  absl::StatusOr<json> body = MakeContainerCreateBody(c, s, p);
  EXPECT_TRUE(body.ok()) << body.status();
  return body.ok() ? *body : json::object();
}

json MustHost(const ContainerConfig& c, const ContainerCreateParams& p = Params()) {
  return MustBody(c, Sandbox(), p)["HostConfig"];
}

absl::Status BodyStatus(const ContainerConfig& c, const ContainerCreateParams& p = Params()) {
  return MakeContainerCreateBody(c, Sandbox(), p).status();
}

// Expects `key` in `obj` to equal `want`, or to be absent when `want` is null.
void ExpectField(const json& obj, const std::string& key, const json& want) {
  if (want.is_null()) {
    EXPECT_FALSE(obj.contains(key)) << key << " = " << obj.value(key, json()).dump();
  } else {
    EXPECT_EQ(obj.value(key, json()), want) << key;
  }
}

// ---------------------------------------------------------------------------
// Basics

TEST(ContainerConfigBody, Minimal) {
  json b = MustBody(MinimalConfig());
  EXPECT_EQ(b["Image"], kImageId);
  EXPECT_EQ(b["Labels"], json({{"io.kubernetes.docker.type", "container"}, {"io.kubernetes.sandbox.id", kSandboxId}}));
  EXPECT_EQ(b["Tty"], false);
  EXPECT_EQ(b["OpenStdin"], false);
  EXPECT_EQ(b["StdinOnce"], false);
  EXPECT_EQ(b["Healthcheck"], json::parse(R"({"Test":["NONE"]})"));
  for (const char* absent : {"Entrypoint", "Cmd", "Env", "WorkingDir", "User", "StopSignal", "Hostname",
                             "Domainname", "ExposedPorts", "AttachStdin"}) {
    EXPECT_FALSE(b.contains(absent)) << absent;
  }
  const json& h = b["HostConfig"];
  EXPECT_EQ(h["NetworkMode"], "container:5b1f0c2d9e8a");
  EXPECT_EQ(h["IpcMode"], "container:5b1f0c2d9e8a");
  EXPECT_EQ(h["PidMode"], "container:5b1f0c2d9e8a");  // CRI's default pid mode is POD
  EXPECT_EQ(h["OomScoreAdj"], 0);
  for (const char* absent : {"UTSMode", "Binds", "Mounts", "Devices", "DeviceRequests", "CpuPeriod", "CpuQuota",
                             "CpuShares", "CpusetCpus", "CpusetMems", "Memory", "MemorySwap", "CgroupParent",
                             "Runtime", "CapAdd", "CapDrop", "GroupAdd", "Privileged",
                             "ReadonlyRootfs", "MaskedPaths", "ReadonlyPaths", "Dns", "DnsSearch", "DnsOptions",
                             "ExtraHosts", "PortBindings", "Sysctls", "LogConfig", "Annotations"}) {
    EXPECT_FALSE(h.contains(absent)) << absent;
  }
  // Kubernetes' unset seccomp profile means unconfined; Docker's default would confine.
  EXPECT_EQ(h["SecurityOpt"], json({"seccomp=unconfined"}));
}

// An engine that hands annotations to the runtime gets the pod's containers into the
// runc shim of the infra container (its ID is the shim's group); an older one gets nothing.
TEST(ContainerConfigBody, JoinsTheInfraContainersRuncShimWhereTheEngineCan) {
  ContainerCreateParams p = ParamsFor("1.43");
  p.features.annotations = true;
  EXPECT_EQ(MustHost(MinimalConfig(), p)["Annotations"], json({{"io.containerd.runc.v2.group", kSandboxId}}));
  p.features.annotations = false;
  ExpectField(MustHost(MinimalConfig(), p), "Annotations", json());
}

struct MetadataCase {
  std::string name;
  bool has_metadata;
  std::string container_name;
  std::string image;
  std::string error;  // fragment; empty: OK
};

class ContainerConfigMetadata : public ::testing::TestWithParam<MetadataCase> {};

TEST_P(ContainerConfigMetadata, Validates) {
  const MetadataCase& tc = GetParam();
  ContainerConfig c;
  if (tc.has_metadata) c.mutable_metadata()->set_name(tc.container_name);
  if (!tc.image.empty()) c.mutable_image()->set_image(tc.image);
  absl::Status s = BodyStatus(c);
  if (tc.error.empty()) {
    EXPECT_TRUE(s.ok()) << s;
  } else {
    ExpectInvalid(s, tc.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigMetadata,
    ::testing::Values(MetadataCase{"ok", true, "app", "busybox", ""},
                      MetadataCase{"nil", false, "", "busybox", "container config: metadata is required"},
                      MetadataCase{"no_name", true, "", "busybox", "container config: metadata.name is required"},
                      MetadataCase{"no_image", true, "app", "", "container config: image.image is required"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigBody, CallerMistakesAreInternal) {
  ContainerCreateParams p = Params();
  p.image.clear();
  EXPECT_EQ(BodyStatus(MinimalConfig(), p).code(), absl::StatusCode::kInternal);
  p = Params();
  p.sandbox_id.clear();
  EXPECT_EQ(BodyStatus(MinimalConfig(), p).code(), absl::StatusCode::kInternal);
}

TEST(ContainerConfigBody, SandboxMetadataIsNotNeeded) {
  EXPECT_TRUE(MakeContainerCreateBody(MinimalConfig(), PodSandboxConfig(), Params()).ok());
}

// ---------------------------------------------------------------------------
// Labels

TEST(ContainerConfigLabels, UserLabelsAnnotationsAndInternal) {
  ContainerConfig c = MinimalConfig();
  (*c.mutable_labels())["io.kubernetes.container.name"] = "app";
  (*c.mutable_labels())["io.kubernetes.pod.name"] = "web-0";
  (*c.mutable_labels())[kSandboxIdLabel] = "forged";
  (*c.mutable_annotations())["io.kubernetes.container.hash"] = "1a2b";
  ContainerCreateParams p = Params();
  p.log_path = "/var/log/pods/default_web-0_0b7e/app/0.log";
  EXPECT_EQ(MustBody(c, Sandbox(), p)["Labels"], json({
                                                     {"io.kubernetes.container.name", "app"},
                                                     {"io.kubernetes.pod.name", "web-0"},
                                                     {"annotation.io.kubernetes.container.hash", "1a2b"},
                                                     {"io.kubernetes.docker.type", "container"},
                                                     {"io.kubernetes.sandbox.id", kSandboxId},
                                                     {"io.kubernetes.container.logpath", p.log_path},
                                                 }));
}

// ---------------------------------------------------------------------------
// Process

TEST(ContainerConfigProcess, CommandArgsEnvWorkdirStdio) {
  ContainerConfig c = MinimalConfig();
  c.add_command("/bin/sh");
  c.add_command("-c");
  c.add_args("echo $GREETING");
  auto* e = c.add_envs();
  e->set_key("GREETING");
  e->set_value("héllo=wörld");
  e = c.add_envs();
  e->set_key("EMPTY");
  c.set_working_dir("/srv");
  c.set_tty(true);
  c.set_stdin(true);
  c.set_stdin_once(true);
  json b = MustBody(c);
  EXPECT_EQ(b["Entrypoint"], json({"/bin/sh", "-c"}));
  EXPECT_EQ(b["Cmd"], json({"echo $GREETING"}));
  EXPECT_EQ(b["Env"], json({"GREETING=héllo=wörld", "EMPTY="}));
  EXPECT_EQ(b["WorkingDir"], "/srv");
  EXPECT_EQ(b["Tty"], true);
  EXPECT_EQ(b["OpenStdin"], true);
  EXPECT_EQ(b["StdinOnce"], true);
}

TEST(ContainerConfigProcess, CommandWithoutArgsAndArgsWithoutCommand) {
  // Only what is given: Docker then drops the image's CMD for an Entrypoint
  // alone, and keeps the image's ENTRYPOINT for a Cmd alone.
  ContainerConfig c = MinimalConfig();
  c.add_command("/app");
  json b = MustBody(c);
  EXPECT_EQ(b["Entrypoint"], json({"/app"}));
  EXPECT_FALSE(b.contains("Cmd"));
  c = MinimalConfig();
  c.add_args("--port=80");
  b = MustBody(c);
  EXPECT_FALSE(b.contains("Entrypoint"));
  EXPECT_EQ(b["Cmd"], json({"--port=80"}));
}

TEST(ContainerConfigProcess, RelativeWorkingDir) {
  ContainerConfig c = MinimalConfig();
  c.set_working_dir("srv");
  ExpectInvalid(BodyStatus(c), "working_dir: \"srv\" is not an absolute path");
}

struct EnvCase {
  std::string name;
  std::string key, value;
  std::string error;  // fragment; empty: OK
};

class ContainerConfigEnv : public ::testing::TestWithParam<EnvCase> {};

TEST_P(ContainerConfigEnv, Validates) {
  const EnvCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* ok = c.add_envs();
  ok->set_key("A");
  ok->set_value("1");
  auto* e = c.add_envs();
  e->set_key(tc.key);
  e->set_value(tc.value);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (tc.error.empty()) {
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)["Env"][1], tc.key + "=" + tc.value);
  } else {
    ExpectInvalid(b.status(), tc.error);
  }
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigEnv,
    ::testing::Values(EnvCase{"ascii", "PATH", "/usr/bin:/bin", ""},
                      EnvCase{"two_byte", "K", "\xc3\xa9", ""},              // é
                      EnvCase{"three_byte", "K", "\xe2\x82\xac", ""},        // €
                      EnvCase{"four_byte", "K", "\xf0\x9f\x90\xb3", ""},     // 🐳
                      EnvCase{"empty_key", "", "x", "envs[1]: empty variable name"},
                      EnvCase{"equals_in_key", "A=B", "x", "envs[1]: variable name \"A=B\" contains '='"},
                      EnvCase{"nul_in_key", std::string("A\0B", 3), "x", "contains '=' or a NUL byte"},
                      EnvCase{"nul_in_value", "K", std::string("a\0b", 3), "envs[1]: the value of K"},
                      EnvCase{"latin1", "K", "caf\xe9", "not UTF-8 text"},
                      EnvCase{"lone_continuation", "K", "\x80", "not UTF-8 text"},
                      EnvCase{"truncated", "K", "\xe2\x82", "not UTF-8 text"},
                      EnvCase{"overlong", "K", "\xc0\xaf", "not UTF-8 text"},
                      EnvCase{"surrogate", "K", "\xed\xa0\x80", "not UTF-8 text"},
                      EnvCase{"beyond_unicode", "K", "\xf4\x90\x80\x80", "not UTF-8 text"},
                      EnvCase{"five_byte_lead", "K", "\xf8\x88\x80\x80\x80", "not UTF-8 text"}),
    [](const auto& info) { return info.param.name; });

struct StopSignalCase {
  std::string name;
  int signal;
  std::string want;   // empty: absent
  std::string error;  // fragment; empty: OK
};

class ContainerConfigStopSignal : public ::testing::TestWithParam<StopSignalCase> {};

TEST_P(ContainerConfigStopSignal, Maps) {
  const StopSignalCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  c.set_stop_signal(static_cast<runtime::v1::Signal>(tc.signal));
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField(*b, "StopSignal", tc.want.empty() ? json() : json(tc.want));
}

// By number: <signal.h> macros hide the enum's names (see api/cri.h).
INSTANTIATE_TEST_SUITE_P(ContainerConfig, ContainerConfigStopSignal,
                         ::testing::Values(StopSignalCase{"runtime_default", 0, "", ""},
                                           StopSignalCase{"sigterm", 23, "SIGTERM", ""},
                                           StopSignalCase{"sigquit", 18, "SIGQUIT", ""},
                                           StopSignalCase{"sigkill", 13, "SIGKILL", ""},
                                           StopSignalCase{"sigrtmin", 35, "SIGRTMIN", ""},
                                           StopSignalCase{"sigrtmin_plus_1", 36, "SIGRTMIN+1", ""},
                                           StopSignalCase{"sigrtmin_plus_15", 50, "SIGRTMIN+15", ""},
                                           StopSignalCase{"sigrtmax_minus_14", 51, "SIGRTMAX-14", ""},
                                           StopSignalCase{"sigrtmax_minus_1", 64, "SIGRTMAX-1", ""},
                                           StopSignalCase{"sigrtmax", 65, "SIGRTMAX", ""},
                                           StopSignalCase{"unknown", 99, "", "stop_signal: unknown signal 99"}),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Namespaces

struct NamespaceCase {
  std::string name;
  NamespaceMode pod_network, pod_ipc, pid;
  std::optional<std::string> target;
  std::string uts_mode, ipc_mode, pid_mode;  // expected; empty: absent
  std::string error;                         // fragment; empty: OK
};

class ContainerConfigNamespaces : public ::testing::TestWithParam<NamespaceCase> {};

TEST_P(ContainerConfigNamespaces, Modes) {
  const NamespaceCase& tc = GetParam();
  PodSandboxConfig s = Sandbox();
  auto* pod_ns = s.mutable_linux()->mutable_security_context()->mutable_namespace_options();
  pod_ns->set_network(tc.pod_network);
  pod_ns->set_ipc(tc.pod_ipc);
  ContainerConfig c = MinimalConfig();
  auto* ns = Sc(c)->mutable_namespace_options();
  ns->set_network(tc.pod_network);
  ns->set_ipc(tc.pod_ipc);
  ns->set_pid(tc.pid);
  ContainerCreateParams p = Params();
  p.pid_target_container_id = tc.target;
  absl::StatusOr<json> b = MakeContainerCreateBody(c, s, p);
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  const json& h = (*b)["HostConfig"];
  EXPECT_EQ(h["NetworkMode"], "container:5b1f0c2d9e8a");  // host network too: the sandbox holds it
  ExpectField(h, "UTSMode", tc.uts_mode.empty() ? json() : json(tc.uts_mode));
  ExpectField(h, "IpcMode", json(tc.ipc_mode));
  ExpectField(h, "PidMode", tc.pid_mode.empty() ? json() : json(tc.pid_mode));
  EXPECT_FALSE(b->contains("Hostname"));  // Docker refuses it with a container network mode
}

constexpr char kJoin[] = "container:5b1f0c2d9e8a";

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigNamespaces,
    ::testing::Values(
        NamespaceCase{"pod_pid", POD, POD, POD, std::nullopt, "", kJoin, kJoin, ""},
        NamespaceCase{"own_pid", POD, POD, CONTAINER, std::nullopt, "", kJoin, "", ""},
        NamespaceCase{"host_pid", POD, POD, NODE, std::nullopt, "", kJoin, "host", ""},
        NamespaceCase{"target_pid", POD, POD, TARGET, "9f8e7d6c5b4a", "", kJoin, "container:9f8e7d6c5b4a", ""},
        NamespaceCase{"host_network", NODE, POD, CONTAINER, std::nullopt, "host", kJoin, "", ""},
        NamespaceCase{"host_ipc", POD, NODE, CONTAINER, std::nullopt, "", "host", "", ""},
        NamespaceCase{"all_host", NODE, NODE, NODE, std::nullopt, "host", "host", "host", ""},
        NamespaceCase{"target_missing", POD, POD, TARGET, std::nullopt, "", "", "",
                      "namespace_options.pid: mode TARGET needs the target container"},
        NamespaceCase{"target_empty", POD, POD, TARGET, "", "", "", "", "mode TARGET needs the target container"},
        NamespaceCase{"pid_unknown", POD, POD, static_cast<NamespaceMode>(9), std::nullopt, "", "", "",
                      "namespace_options.pid: unknown mode 9"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigNamespaces, UserNamespaces) {
  ContainerConfig c = MinimalConfig();
  auto* userns = Sc(c)->mutable_namespace_options()->mutable_userns_options();
  userns->set_mode(NODE);
  EXPECT_TRUE(BodyStatus(c).ok());
  userns->set_mode(POD);
  ExpectInvalid(BodyStatus(c), "userns_options.mode: POD (hostUsers: false) is not supported: Docker Engine has no "
                               "per-pod user namespaces, only the daemon-wide userns-remap");
  auto* m = userns->add_uids();
  m->set_host_id(65536);
  m->set_length(65536);
  ExpectInvalid(BodyStatus(c), "hostUsers: false");
  userns->Clear();
  userns->set_mode(CONTAINER);
  ExpectInvalid(BodyStatus(c), "userns_options.mode: mode CONTAINER");
}

// ---------------------------------------------------------------------------
// Mounts

struct MountCase {
  std::string name;
  std::string host_path, container_path;
  bool readonly = false;
  bool selinux_relabel = false;
  int propagation = 0;
  bool container_has_selinux = false;
  json want_mount;         // expected HostConfig.Mounts[0]; null: none
  std::string want_bind;   // expected HostConfig.Binds[0]; empty: none
  std::string error;       // fragment; empty: OK
};

class ContainerConfigMounts : public ::testing::TestWithParam<MountCase> {};

TEST_P(ContainerConfigMounts, Translates) {
  const MountCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_host_path(tc.host_path);
  m->set_container_path(tc.container_path);
  m->set_readonly(tc.readonly);
  m->set_selinux_relabel(tc.selinux_relabel);
  m->set_propagation(static_cast<runtime::v1::MountPropagation>(tc.propagation));
  if (tc.container_has_selinux) Sc(c)->mutable_selinux_options()->set_level("s0:c1,c2");
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  const json& h = (*b)["HostConfig"];
  ExpectField(h, "Mounts", tc.want_mount.is_null() ? json() : json::array({tc.want_mount}));
  ExpectField(h, "Binds", tc.want_bind.empty() ? json() : json::array({tc.want_bind}));
}

json BindMount(const std::string& source, const std::string& target, const json& extra_options = json::object(),
               bool readonly = false) {
  json options = {{"CreateMountpoint", true}};
  options.update(extra_options);
  json m = {{"Type", "bind"}, {"Source", source}, {"Target", target}, {"BindOptions", options}};
  if (readonly) m["ReadOnly"] = true;
  return m;
}

constexpr int kPrivate = runtime::v1::PROPAGATION_PRIVATE;
constexpr int kHostToContainer = runtime::v1::PROPAGATION_HOST_TO_CONTAINER;
constexpr int kBidirectional = runtime::v1::PROPAGATION_BIDIRECTIONAL;

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigMounts,
    ::testing::Values(
        MountCase{"rw", "/var/lib/kubelet/pods/u/volumes/x", "/data", false, false, kPrivate, false,
                  BindMount("/var/lib/kubelet/pods/u/volumes/x", "/data"), "", ""},
        MountCase{"ro_non_recursive", "/etc/ssl", "/etc/ssl", true, false, kPrivate, false,
                  BindMount("/etc/ssl", "/etc/ssl", {{"ReadOnlyNonRecursive", true}}, true), "", ""},
        MountCase{"host_to_container", "/", "/host", true, false, kHostToContainer, false,
                  BindMount("/", "/host", {{"ReadOnlyNonRecursive", true}, {"Propagation", "rslave"}}, true), "",
                  ""},
        MountCase{"bidirectional", "/var/lib/kubelet", "/var/lib/kubelet", false, false, kBidirectional, false,
                  BindMount("/var/lib/kubelet", "/var/lib/kubelet", {{"Propagation", "rshared"}}), "", ""},
        // Relabelling needs the container's SELinux options; without them Docker
        // would lock the volume to one container's random MCS label.
        MountCase{"relabel_without_selinux_options", "/v/secret", "/secret", true, true, kPrivate, false,
                  BindMount("/v/secret", "/secret", {{"ReadOnlyNonRecursive", true}}, true), "", ""},
        MountCase{"relabel", "/v/empty", "/cache", false, true, kPrivate, true, json(), "/v/empty:/cache:Z", ""},
        MountCase{"relabel_ro", "/v/secret", "/secret", true, true, kPrivate, true, json(), "/v/secret:/secret:ro,Z",
                  ""},
        MountCase{"relabel_ro_rslave", "/v/a", "/a", true, true, kHostToContainer, true, json(), "/v/a:/a:ro,Z,rslave",
                  ""},
        MountCase{"relabel_rshared", "/v/a", "/a", false, true, kBidirectional, true, json(), "/v/a:/a:Z,rshared",
                  ""},
        MountCase{"colon_without_relabel", "/v/a:b", "/a:b", false, false, kPrivate, true,
                  BindMount("/v/a:b", "/a:b"), "", ""},
        // Errors.
        MountCase{"colon_with_relabel", "/v/a:b", "/a", false, true, kPrivate, true, json(), "",
                  "mounts[0]: paths of a mount to relabel for SELinux cannot contain ':'"},
        MountCase{"relative_container_path", "/v/a", "data", false, false, kPrivate, false, json(), "",
                  "mounts[0].container_path: \"data\" is not an absolute path"},
        MountCase{"empty_container_path", "/v/a", "", false, false, kPrivate, false, json(), "",
                  "mounts[0].container_path: \"\" is not an absolute path"},
        MountCase{"root_container_path", "/v/a", "//", false, false, kPrivate, false, json(), "",
                  "cannot mount over the container's root directory"},
        MountCase{"relative_host_path", "v/a", "/a", false, false, kPrivate, false, json(), "",
                  "mounts[0].host_path: \"v/a\" is not an absolute path"},
        MountCase{"empty_host_path", "", "/a", false, false, kPrivate, false, json(), "",
                  "mounts[0].host_path: \"\" is not an absolute path"},
        MountCase{"unknown_propagation", "/v/a", "/a", false, false, 7, false, json(), "",
                  "mounts[0].propagation: unknown mount propagation 7"}),
    [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// Image mounts

constexpr char kModelsId[] = "sha256:7e1f00000000000000000000000000000000000000000000000000000000abcd";

struct ImageMountCase {
  std::string name;
  std::string sub_path;
  std::string container_path = "/models";
  std::optional<ImageMountSource> source;  // unset: the caller resolved nothing
  json want_mount;                         // null: the create is refused
  std::string want_labels_value;           // kImageVolumesLabel; "" for none
  absl::StatusCode want_code = absl::StatusCode::kOk;
  std::string want_error;
};

class ContainerConfigImageMounts : public ::testing::TestWithParam<ImageMountCase> {};

TEST_P(ContainerConfigImageMounts, Translates) {
  const ImageMountCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_container_path(tc.container_path);
  m->mutable_image()->set_image("registry.example/models:v1");
  m->set_image_sub_path(tc.sub_path);
  m->set_readonly(false);  // image mounts are read-only whatever is asked
  m->set_propagation(runtime::v1::PROPAGATION_BIDIRECTIONAL);
  m->set_selinux_relabel(true);
  Sc(c)->mutable_selinux_options()->set_level("s0:c1,c2");
  ContainerCreateParams p = Params();
  if (tc.source) p.image_mount_sources[0] = *tc.source;
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), p);
  if (tc.want_code != absl::StatusCode::kOk) {
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), tc.want_code) << b.status();
    EXPECT_THAT(std::string(b.status().message()), HasSubstr(tc.want_error));
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)["HostConfig"]["Mounts"], json::array({tc.want_mount}));
  EXPECT_FALSE((*b)["HostConfig"].contains("Binds"));
  if (tc.want_labels_value.empty()) {
    EXPECT_FALSE((*b)["Labels"].contains(kImageVolumesLabel));
  } else {
    EXPECT_EQ((*b)["Labels"].value(kImageVolumesLabel, ""), tc.want_labels_value);
  }
}

const ImageMountSource kDockerMount{kModelsId, ""};
const ImageMountSource kUnpacked{kModelsId, "/var/lib/dockershim/image-volumes/7e1f/rootfs/weights"};

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigImageMounts,
    ::testing::Values(
        ImageMountCase{"DockerImageMount", "", "/models", kDockerMount,
                       {{"Type", "image"}, {"Source", kModelsId}, {"Target", "/models"}, {"ReadOnly", true}},
                       "", absl::StatusCode::kOk, ""},
        ImageMountCase{"DockerImageMountSubpath", "weights/v1", "/models", kDockerMount,
                       {{"Type", "image"},
                        {"Source", kModelsId},
                        {"Target", "/models"},
                        {"ReadOnly", true},
                        {"ImageOptions", {{"Subpath", "weights/v1"}}}},
                       "", absl::StatusCode::kOk, ""},
        ImageMountCase{"UnpackedTreeBind", "weights", "/models", kUnpacked,
                       {{"Type", "bind"}, {"Source", kUnpacked.host_path}, {"Target", "/models"}, {"ReadOnly", true}},
                       kModelsId, absl::StatusCode::kOk, ""},
        ImageMountCase{"SubpathEscapes", "weights/../../etc", "/models", kDockerMount, nullptr, "",
                       absl::StatusCode::kInvalidArgument,
                       "mounts[0].image_sub_path: \"weights/../../etc\" is not a relative path inside the image"},
        ImageMountCase{"SubpathAbsolute", "/etc", "/models", kDockerMount, nullptr, "",
                       absl::StatusCode::kInvalidArgument, "mounts[0].image_sub_path: \"/etc\""},
        ImageMountCase{"RelativeTarget", "", "models", kDockerMount, nullptr, "", absl::StatusCode::kInvalidArgument,
                       "mounts[0].container_path: \"models\" is not an absolute path"},
        ImageMountCase{"OverRoot", "", "/", kDockerMount, nullptr, "", absl::StatusCode::kInvalidArgument,
                       "cannot mount over the container's root directory"},
        ImageMountCase{"NotResolved", "", "/models", std::nullopt, nullptr, "", absl::StatusCode::kInternal,
                       "the image of mounts[0] was not resolved"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigImageMounts, LabelListsEachUnpackedImageOnce) {
  ContainerConfig c = MinimalConfig();
  ContainerCreateParams p = Params();
  const std::string other = "sha256:99" + std::string(62, '0');
  const std::vector<ImageMountSource> sources = {
      {kModelsId, "/iv/a/rootfs"}, {other, ""}, {kModelsId, "/iv/a/rootfs/sub"}, {other + "1", "/iv/b/rootfs"}};
  for (size_t i = 0; i < sources.size(); ++i) {
    auto* m = c.add_mounts();
    m->set_container_path("/m" + std::to_string(i));
    m->mutable_image()->set_image("img" + std::to_string(i));
    p.image_mount_sources[static_cast<int>(i)] = sources[i];
  }
  json b = MustBody(c, Sandbox(), p);
  EXPECT_EQ(b["Labels"][kImageVolumesLabel], absl::StrCat(kModelsId, ",", other, "1"));
  ASSERT_EQ(b["HostConfig"]["Mounts"].size(), 4u);
  EXPECT_EQ(b["HostConfig"]["Mounts"][1]["Type"], "image");
}

TEST(ContainerConfigMounts, UnsupportedKinds) {
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_container_path("/models");
  m->set_image_sub_path("weights");
  ExpectInvalid(BodyStatus(c), "mounts[0].image_sub_path: set without an image");
  m->clear_image_sub_path();
  m->set_host_path("/v/a");
  m->mutable_image();  // an empty image spec is no image
  EXPECT_TRUE(BodyStatus(c).ok());

  auto* idmap = m->add_uidmappings();
  idmap->set_host_id(100000);
  idmap->set_length(65536);
  ExpectInvalid(BodyStatus(c), "mounts[0]: ID-mapped mounts");
  m->clear_uidmappings();
  m->add_gidmappings()->set_length(1);
  ExpectInvalid(BodyStatus(c), "ID-mapped mounts");
  m->clear_gidmappings();
}

// recursive_read_only: CRI's rules on every engine, then what the engine can do.
struct RroCase {
  std::string name;
  std::string api_version;
  bool readonly = true;
  int propagation = runtime::v1::PROPAGATION_PRIVATE;
  bool relabel = false;  // selinux_relabel, with SELinux options on the container
  json want_mount;       // expected HostConfig.Mounts[0]
  std::string error;     // INVALID_ARGUMENT fragment; empty: OK
};

class ContainerConfigRecursiveReadOnly : public ::testing::TestWithParam<RroCase> {};

TEST_P(ContainerConfigRecursiveReadOnly, Translates) {
  const RroCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_host_path("/mnt/data");
  m->set_container_path("/data");
  m->set_readonly(tc.readonly);
  m->set_recursive_read_only(true);
  m->set_propagation(static_cast<runtime::v1::MountPropagation>(tc.propagation));
  if (tc.relabel) {
    m->set_selinux_relabel(true);
    Sc(c)->mutable_selinux_options()->set_level("s0:c1,c2");
  }
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), ParamsFor(tc.api_version));
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)["HostConfig"]["Mounts"], json::array({tc.want_mount}));
  ExpectField((*b)["HostConfig"], "Binds", json());
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigRecursiveReadOnly,
    ::testing::Values(
        RroCase{"forced_on_api_1_44", "1.44", true, kPrivate, false,
                BindMount("/mnt/data", "/data", {{"ReadOnlyForceRecursive", true}}, true), ""},
        RroCase{"forced_on_api_1_51", "1.51", true, kPrivate, false,
                BindMount("/mnt/data", "/data", {{"ReadOnlyForceRecursive", true}}, true), ""},
        RroCase{"old_engine", "1.41", true, kPrivate, false, json(),
                "mounts[0].recursive_read_only: Docker Engine 20.10.24 (API 1.41) cannot make recursive read-only "
                "mounts; they need API 1.44 (Docker 25) or later"},
        RroCase{"not_readonly", "1.51", false, kPrivate, false, json(),
                "mounts[0].recursive_read_only: needs readonly"},
        RroCase{"not_readonly_old_engine", "1.41", false, kPrivate, false, json(),
                "mounts[0].recursive_read_only: needs readonly"},
        RroCase{"host_to_container", "1.51", true, kHostToContainer, false, json(),
                "mounts[0].recursive_read_only: needs propagation PROPAGATION_PRIVATE, not "
                "PROPAGATION_HOST_TO_CONTAINER"},
        RroCase{"bidirectional_old_engine", "1.41", true, kBidirectional, false, json(),
                "needs propagation PROPAGATION_PRIVATE, not PROPAGATION_BIDIRECTIONAL"},
        // Binds, the only way to relabel, have no mode that forces rro.
        RroCase{"relabelled", "1.51", true, kPrivate, true, json(),
                "mounts[0].recursive_read_only: Docker Engine cannot make a mount it relabels for SELinux "
                "(selinux_relabel) recursively read-only"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigRecursiveReadOnly, RelabelIgnoredWithoutSELinuxOptionsKeepsRro) {
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_host_path("/mnt/data");
  m->set_container_path("/data");
  m->set_readonly(true);
  m->set_recursive_read_only(true);
  m->set_selinux_relabel(true);  // not done: the container has no SELinux options
  EXPECT_EQ(MustHost(c, ParamsFor("1.51"))["Mounts"],
            json::array({BindMount("/mnt/data", "/data", {{"ReadOnlyForceRecursive", true}}, true)}));
}

TEST(ContainerConfigRecursiveReadOnly, PlainReadOnlyStaysNonRecursiveOnEveryEngine) {
  ContainerConfig c = MinimalConfig();
  auto* m = c.add_mounts();
  m->set_host_path("/mnt/data");
  m->set_container_path("/data");
  m->set_readonly(true);
  for (const char* api : {"1.41", "1.51"}) {
    EXPECT_EQ(MustHost(c, ParamsFor(api))["Mounts"],
              json::array({BindMount("/mnt/data", "/data", {{"ReadOnlyNonRecursive", true}}, true)}))
        << api;
  }
}

TEST(ContainerConfigMounts, ManyKeepOrderAndIndexErrors) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_selinux_options()->set_type("container_t");
  for (const char* path : {"/a", "/b", "/c"}) {
    auto* m = c.add_mounts();
    m->set_host_path(std::string("/v") + path);
    m->set_container_path(path);
    m->set_selinux_relabel(std::string(path) == "/b");
  }
  json h = MustHost(c);
  EXPECT_EQ(h["Mounts"], json::array({BindMount("/v/a", "/a"), BindMount("/v/c", "/c")}));
  EXPECT_EQ(h["Binds"], json::array({"/v/b:/b:Z"}));
  c.mutable_mounts(2)->set_container_path("c");
  ExpectInvalid(BodyStatus(c), "mounts[2].container_path");
}

// ---------------------------------------------------------------------------
// Devices

TEST(ContainerConfigDevices, Translates) {
  ContainerConfig c = MinimalConfig();
  auto* d = c.add_devices();
  d->set_host_path("/dev/fuse");
  d->set_container_path("/dev/fuse");
  d->set_permissions("rw");
  d = c.add_devices();
  d->set_host_path("/dev/nvidia0");
  d->set_container_path("/dev/gpu0");
  json h = MustHost(c);
  EXPECT_EQ(h["Devices"], json::parse(R"([
      {"PathOnHost":"/dev/fuse","PathInContainer":"/dev/fuse","CgroupPermissions":"rw"},
      {"PathOnHost":"/dev/nvidia0","PathInContainer":"/dev/gpu0","CgroupPermissions":"rwm"}])"));
  ExpectField(h, "DeviceRequests", json());
}

// CDI devices, from CDI_devices and from older device plugins' cdi.k8s.io/ annotations.
struct CdiCase {
  std::string name;
  std::vector<std::string> devices;                 // CDI_devices
  std::map<std::string, std::string> annotations;  // container annotations
  bool engine_cdi = true;
  json want_ids;       // DeviceIDs of the one cdi request; null: no DeviceRequests
  std::string error;   // fragment; empty: OK
  absl::StatusCode code = absl::StatusCode::kInvalidArgument;
};

class ContainerConfigCdi : public ::testing::TestWithParam<CdiCase> {};

TEST_P(ContainerConfigCdi, Translates) {
  const CdiCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  for (const std::string& name : tc.devices) c.add_cdi_devices()->set_name(name);
  for (const auto& [k, v] : tc.annotations) (*c.mutable_annotations())[k] = v;
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), ParamsFor("1.51", tc.engine_cdi));
  if (!tc.error.empty()) {
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), tc.code) << b.status();
    EXPECT_THAT(std::string(b.status().message()), HasSubstr(tc.error));
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "DeviceRequests",
              tc.want_ids.is_null() ? json() : json::array({{{"Driver", "cdi"}, {"DeviceIDs", tc.want_ids}}}));
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigCdi,
    ::testing::Values(
        CdiCase{"none", {}, {}, true, json(), ""},
        CdiCase{"one_request_for_all", {"nvidia.com/gpu=0", "vendor.example/class=all"}, {}, true,
                json::array({"nvidia.com/gpu=0", "vendor.example/class=all"}), ""},
        CdiCase{"name_characters", {"Vendor-1.example_x/my_class-2=dev.0:part_1-a", "v.io/c=0"}, {}, true,
                json::array({"Vendor-1.example_x/my_class-2=dev.0:part_1-a", "v.io/c=0"}), ""},
        CdiCase{"annotations_after_field_each_once",
                {"nvidia.com/gpu=0"},
                {{"cdi.k8s.io/nvidia-device-plugin_abc", "nvidia.com/gpu=1,nvidia.com/gpu=0"},
                 {"cdi.k8s.io/another", "vendor.example/class=x"},
                 {"example.com/unrelated", "not a device"}},
                true,
                json::array({"nvidia.com/gpu=0", "vendor.example/class=x", "nvidia.com/gpu=1"}),
                ""},
        CdiCase{"bad_annotation",
                {},
                {{"cdi.k8s.io/plugin", "nvidia.com/gpu=0,gpu1"}},
                true,
                json(),
                "annotations[\"cdi.k8s.io/plugin\"]: \"gpu1\" is not a fully qualified CDI device name"},
        CdiCase{"engine_without_cdi", {"nvidia.com/gpu=0"}, {}, false, json(),
                "CDI devices (nvidia.com/gpu=0): Docker Engine 28.5.2 (API 1.51) has no CDI enabled; CDI needs "
                "Docker 25 or later (API 1.44), on by default from Docker 28.2",
                absl::StatusCode::kFailedPrecondition},
        CdiCase{"annotation_on_engine_without_cdi", {}, {{"cdi.k8s.io/p", "nvidia.com/gpu=0"}}, false, json(),
                "\"features\": {\"cdi\": true} in daemon.json", absl::StatusCode::kFailedPrecondition},
        // A bad name is the caller's mistake whatever the engine.
        CdiCase{"bad_name_on_engine_without_cdi", {"gpu0"}, {}, false, json(),
                "CDI_devices[0].name: \"gpu0\" is not a fully qualified CDI device name"}),
    [](const auto& info) { return info.param.name; });

struct DeviceCase {
  std::string name;
  std::string host_path, container_path, permissions;
  std::string error;
};

class ContainerConfigBadDevices : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(ContainerConfigBadDevices, Rejected) {
  const DeviceCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* d = c.add_devices();
  d->set_host_path(tc.host_path);
  d->set_container_path(tc.container_path);
  d->set_permissions(tc.permissions);
  ExpectInvalid(BodyStatus(c), tc.error);
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigBadDevices,
    ::testing::Values(DeviceCase{"relative_host", "dev/fuse", "/dev/fuse", "rw", "devices[0].host_path: \"dev/fuse\""},
                      DeviceCase{"empty_host", "", "/dev/fuse", "rw", "devices[0].host_path"},
                      DeviceCase{"relative_container", "/dev/fuse", "fuse", "rw", "devices[0].container_path"},
                      DeviceCase{"empty_container", "/dev/fuse", "", "rw", "devices[0].container_path"},
                      DeviceCase{"bad_permissions", "/dev/fuse", "/dev/fuse", "rwx",
                                 "devices[0].permissions: \"rwx\" is not a device cgroup access"}),
    [](const auto& info) { return info.param.name; });

class ContainerConfigBadCdi : public ::testing::TestWithParam<std::string> {};

TEST_P(ContainerConfigBadCdi, Rejected) {
  ContainerConfig c = MinimalConfig();
  c.add_cdi_devices()->set_name("nvidia.com/gpu=0");
  c.add_cdi_devices()->set_name(GetParam());
  ExpectInvalid(BodyStatus(c, ParamsFor("1.51", /*cdi=*/true)),
                "CDI_devices[1].name: \"" + GetParam() + "\" is not a fully qualified CDI device name");
}

// By the CDI parser's rules: vendor and class start with a letter, the class has no
// '.', the device may start with a digit; each ends with a letter or digit.
INSTANTIATE_TEST_SUITE_P(ContainerConfig, ContainerConfigBadCdi,
                         ::testing::Values("", "gpu0", "nvidia.com/gpu", "gpu=0", "/gpu=0", "nvidia.com/=0",
                                           "nvidia.com/gpu=", "a=b/c", "1vendor.com/gpu=0", "nvidia.com-/gpu=0",
                                           "nvidia.com/g.pu=0", "nvidia.com/2gpu=0", "nvidia.com/gpu=-0",
                                           "nvidia.com/gpu=0:", "nvidia.com/gpu=a b", "nvidia.com/gpu/x=0",
                                           "nvidia.com/gpu=0=1"));

// ---------------------------------------------------------------------------
// Resources

TEST(ContainerConfigResources, AllFields) {
  ContainerConfig c = MinimalConfig();
  auto* r = Res(c);
  r->set_cpu_period(100000);
  r->set_cpu_quota(50000);
  r->set_cpu_shares(512);
  r->set_cpuset_cpus("0-3");
  r->set_cpuset_mems("0");
  r->set_memory_limit_in_bytes(256 << 20);
  r->set_oom_score_adj(-997);
  auto* huge = r->add_hugepage_limits();  // no Docker field: the shim writes it (ShimCgroupFiles)
  huge->set_page_size("2MB");
  huge->set_limit(0);
  (*r->mutable_unified())["memory.high"] = "200M";  // no Docker field either
  (*r->mutable_unified())["pids.max"] = "100";      // Docker's PidsLimit
  json body = MustBody(c);
  json h = body["HostConfig"];
  EXPECT_EQ(h["CpuPeriod"], 100000);
  EXPECT_EQ(h["CpuQuota"], 50000);
  EXPECT_EQ(h["CpuShares"], 512);
  EXPECT_EQ(h["CpusetCpus"], "0-3");
  EXPECT_EQ(h["CpusetMems"], "0");
  EXPECT_EQ(h["Memory"], 256 << 20);
  EXPECT_EQ(h["MemorySwap"], 256 << 20);  // no swap unless asked, as cri-dockerd
  EXPECT_EQ(h["OomScoreAdj"], -997);
  EXPECT_EQ(h["PidsLimit"], 100);
  EXPECT_EQ(nlohmann::json::parse(body["Labels"][kCgroupFilesLabel].get<std::string>()),
            json({{"hugetlb.2MB.max", "0"}, {"memory.high", "200M"}}));
}

TEST(ContainerConfigResources, NoCgroupFilesLabelWithoutFiles) {
  ContainerConfig c = MinimalConfig();
  Res(c)->set_memory_limit_in_bytes(64 << 20);
  (*Res(c)->mutable_unified())["memory.swap.max"] = "0";  // Docker's MemorySwap beside a memory limit
  EXPECT_FALSE(MustBody(c)["Labels"].contains(kCgroupFilesLabel));
}

TEST(ContainerConfigResources, ShimCgroupFilesAreWhatDockerCannotSet) {
  runtime::v1::LinuxContainerResources r;
  auto* two = r.add_hugepage_limits();
  two->set_page_size("2MB");
  two->set_limit(4 << 21);
  auto* one = r.add_hugepage_limits();
  one->set_page_size("1GB");
  one->set_limit(0);
  (*r.mutable_unified())["memory.min"] = "1048576";
  (*r.mutable_unified())["memory.oom.group"] = "1";
  (*r.mutable_unified())["hugetlb.1GB.max"] = "1073741824";  // unified wins over the field, as in runc
  (*r.mutable_unified())["pids.max"] = "max";                // Docker's PidsLimit
  (*r.mutable_unified())["memory.swap.max"] = "0";           // no memory limit: Docker cannot set it
  absl::StatusOr<CgroupFileValues> files = ShimCgroupFiles(r);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (CgroupFileValues{{"hugetlb.2MB.max", "8388608"},
                                      {"hugetlb.1GB.max", "1073741824"},
                                      {"memory.min", "1048576"},
                                      {"memory.oom.group", "1"},
                                      {"memory.swap.max", "0"}}));
  EXPECT_EQ(CgroupFilesOfLabels({{kCgroupFilesLabel, CgroupFilesLabel(*files)}}), *files);
  EXPECT_TRUE(CgroupFilesOfLabels({{kCgroupFilesLabel, "not json"}}).empty());
  EXPECT_TRUE(CgroupFilesOfLabels({}).empty());
}

TEST(ContainerConfigResources, BadCgroupFilesAreInvalidNamingTheField) {
  ContainerConfig c = MinimalConfig();
  (*Res(c)->mutable_unified())["memory/../../x"] = "1";
  ExpectInvalid(BodyStatus(c), "linux.resources.unified[\"memory/../../x\"]: \"memory/../../x\" is not a cgroup v2");
  c = MinimalConfig();
  (*Res(c)->mutable_unified())["cgroup.procs"] = "1";
  ExpectInvalid(BodyStatus(c), "\"cgroup.procs\" is a core cgroup file");
  c = MinimalConfig();
  Res(c)->add_hugepage_limits()->set_page_size("2M");
  ExpectInvalid(BodyStatus(c), "linux.resources.hugepage_limits[0].page_size: \"2M\" is not a page size");
}

TEST(ContainerConfigResources, PidsMaxIsDockersPidsLimit) {
  for (const auto& [value, want] : std::vector<std::pair<std::string, json>>{{"max", -1}, {"50", 50}}) {
    runtime::v1::LinuxContainerResources r;
    (*r.mutable_unified())["pids.max"] = value;
    absl::StatusOr<json> limits = MakeResourceLimits(r);
    ASSERT_TRUE(limits.ok()) << limits.status();
    EXPECT_EQ((*limits)["PidsLimit"], want) << value;
  }
  for (const char* bad : {"0", "-1", "lots", ""}) {
    runtime::v1::LinuxContainerResources r;
    (*r.mutable_unified())["pids.max"] = bad;
    ExpectInvalid(MakeResourceLimits(r).status(), "linux.resources.unified[\"pids.max\"]");
  }
}

struct SwapCase {
  std::string name;
  int64_t memory, swap_limit;
  std::string swap_max;  // unified memory.swap.max; empty: unset
  json want;             // MemorySwap; null: absent
  std::string error;
};

class ContainerConfigSwap : public ::testing::TestWithParam<SwapCase> {};

TEST_P(ContainerConfigSwap, Translates) {
  const SwapCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  Res(c)->set_memory_limit_in_bytes(tc.memory);
  Res(c)->set_memory_swap_limit_in_bytes(tc.swap_limit);
  if (!tc.swap_max.empty()) (*Res(c)->mutable_unified())["memory.swap.max"] = tc.swap_max;
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "MemorySwap", tc.want);
}

constexpr int64_t kMiB = 1 << 20;

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigSwap,
    ::testing::Values(
        SwapCase{"unlimited", 0, 0, "", json(), ""},
        SwapCase{"no_swap", 100 * kMiB, 0, "", 100 * kMiB, ""},
        SwapCase{"v1_field", 100 * kMiB, 150 * kMiB, "", 150 * kMiB, ""},
        SwapCase{"v1_field_equal", 100 * kMiB, 100 * kMiB, "", 100 * kMiB, ""},
        SwapCase{"v2_no_swap", 100 * kMiB, 0, "0", 100 * kMiB, ""},
        SwapCase{"v2_limited", 100 * kMiB, 0, "52428800", 150 * kMiB, ""},
        SwapCase{"v2_max", 100 * kMiB, 0, "max", -1, ""},
        // Docker cannot cap swap without a memory limit.
        SwapCase{"v2_unlimited_memory", 0, 0, "0", json(), ""},
        SwapCase{"v1_field_without_memory", 0, 100 * kMiB, "", json(),
                 "memory_swap_limit_in_bytes: Docker Engine cannot limit swap without a memory limit"},
        SwapCase{"v1_field_below_memory", 100 * kMiB, 50 * kMiB, "", json(), "is below memory_limit_in_bytes"},
        SwapCase{"negative_memory", -1, 0, "", json(), "memory_limit_in_bytes: -1 is negative"},
        SwapCase{"negative_swap", 100 * kMiB, -1, "", json(), "memory_swap_limit_in_bytes: -1 is negative"},
        SwapCase{"v2_garbage", 100 * kMiB, 0, "lots", json(), "unified[\"memory.swap.max\"]: \"lots\""},
        SwapCase{"v2_signed", 100 * kMiB, 0, "-5", json(), "is not a byte count"},
        SwapCase{"v2_overflow", 100 * kMiB, 0, "9223372036854775807", json(), "is not a byte count"}),
    [](const auto& info) { return info.param.name; });

struct OomCase {
  std::string name;
  int64_t requested;
  int floor;
  int want;
  std::string error;
};

class ContainerConfigOomScore : public ::testing::TestWithParam<OomCase> {};

TEST_P(ContainerConfigOomScore, ClampsToFloor) {
  const OomCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  Res(c)->set_oom_score_adj(tc.requested);
  ContainerCreateParams p = Params();
  p.oom_score_adj_floor = tc.floor;
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), p);
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)["HostConfig"]["OomScoreAdj"], tc.want);
}

INSTANTIATE_TEST_SUITE_P(ContainerConfig, ContainerConfigOomScore,
                         ::testing::Values(OomCase{"guaranteed", -997, -1000, -997, ""},
                                           OomCase{"best_effort", 1000, -1000, 1000, ""},
                                           OomCase{"clamped", -997, -500, -500, ""},
                                           OomCase{"at_floor", -500, -500, -500, ""},
                                           OomCase{"above_floor", 300, -500, 300, ""},
                                           OomCase{"too_low", -1001, -1000, 0, "oom_score_adj: -1001 is outside"},
                                           OomCase{"too_high", 1001, -1000, 0, "oom_score_adj: 1001 is outside"}),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------
// cgroup parent and runtime

TEST(ContainerConfigCgroupParent, FromTheSandbox) {
  PodSandboxConfig s = Sandbox();
  s.mutable_linux()->set_cgroup_parent("/kubepods/burstable/pod0b7e1c2a-5d3f");
  ContainerConfig c = MinimalConfig();
  c.mutable_linux()->mutable_security_context();
  ContainerCreateParams p = Params();
  EXPECT_EQ(MustBody(c, s, p)["HostConfig"]["CgroupParent"], "/kubepods/burstable/pod0b7e1c2a-5d3f");
  p.cgroup_driver = "systemd";
  EXPECT_EQ(MustBody(c, s, p)["HostConfig"]["CgroupParent"], "kubepods-burstable-pod0b7e1c2a_5d3f.slice");
  s.mutable_linux()->set_cgroup_parent("/");
  EXPECT_FALSE(MustBody(c, s, p)["HostConfig"].contains("CgroupParent"));
  s.mutable_linux()->set_cgroup_parent("kubepods");
  ExpectInvalid(MakeContainerCreateBody(c, s, p).status(),
                "sandbox_config.linux.cgroup_parent: cgroup parent \"kubepods\" is relative");
  s.mutable_linux()->set_cgroup_parent("/kubepods");
  p.cgroup_driver = "lxc";
  ExpectInvalid(MakeContainerCreateBody(c, s, p).status(), "unknown Docker cgroup driver");
}

TEST(ContainerConfigBody, RuntimeHandler) {
  ContainerCreateParams p = Params();
  p.docker_runtime = "runsc";
  EXPECT_EQ(MustHost(MinimalConfig(), p)["Runtime"], "runsc");
}

// ---------------------------------------------------------------------------
// Security context

struct UserCase {
  std::string name;
  std::optional<int64_t> uid;
  std::string username;
  std::optional<int64_t> gid;
  std::string want;   // User; empty: absent
  std::string error;  // fragment; empty: OK
};

class ContainerConfigUser : public ::testing::TestWithParam<UserCase> {};

TEST_P(ContainerConfigUser, Translates) {
  const UserCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  if (tc.uid) Sc(c)->mutable_run_as_user()->set_value(*tc.uid);
  Sc(c)->set_run_as_username(tc.username);
  if (tc.gid) Sc(c)->mutable_run_as_group()->set_value(*tc.gid);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField(*b, "User", tc.want.empty() ? json() : json(tc.want));
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigUser,
    ::testing::Values(UserCase{"image_user", std::nullopt, "", std::nullopt, "", ""},
                      UserCase{"uid", 1000, "", std::nullopt, "1000", ""},
                      UserCase{"root", 0, "", std::nullopt, "0", ""},
                      UserCase{"uid_gid", 1000, "", 3000, "1000:3000", ""},
                      UserCase{"name", std::nullopt, "nginx", std::nullopt, "nginx", ""},
                      UserCase{"name_gid", std::nullopt, "nginx", 101, "nginx:101", ""},
                      UserCase{"group_without_user", std::nullopt, "", 3000, "",
                               "run_as_group: may only be set together with a user"},
                      UserCase{"uid_and_name", 1000, "nginx", std::nullopt, "",
                               "set either run_as_user or run_as_username, not both"},
                      UserCase{"negative_uid", -1, "", std::nullopt, "", "run_as_user: -1 is not a valid user ID"},
                      UserCase{"negative_gid", 1000, "", -2, "", "run_as_group: -2 is not a valid group ID"},
                      UserCase{"colon_in_name", std::nullopt, "nginx:root", std::nullopt, "",
                               "run_as_username: \"nginx:root\" is not a valid user name"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigSecurity, GroupsRootfsNoNewPrivs) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->add_supplemental_groups(2000);
  Sc(c)->add_supplemental_groups(0);
  Sc(c)->set_readonly_rootfs(true);
  Sc(c)->set_no_new_privs(true);
  json h = MustHost(c);
  EXPECT_EQ(h["GroupAdd"], json({"2000", "0"}));
  EXPECT_EQ(h["ReadonlyRootfs"], true);
  EXPECT_EQ(h["SecurityOpt"], json({"seccomp=unconfined", "no-new-privileges"}));
  EXPECT_FALSE(h.contains("Privileged"));

  Sc(c)->add_supplemental_groups(-3);
  ExpectInvalid(BodyStatus(c), "supplemental_groups: -3 is not a valid group ID");
}

TEST(ContainerConfigSecurity, SupplementalGroupsPolicy) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->set_supplemental_groups_policy(runtime::v1::Merge);  // what Docker does
  EXPECT_TRUE(BodyStatus(c).ok());
  Sc(c)->set_supplemental_groups_policy(runtime::v1::Strict);
  ExpectInvalid(BodyStatus(c), "supplemental_groups_policy: Strict is not supported");
}

struct CapCase {
  std::string name;
  std::vector<std::string> add, drop;
  json want_add, want_drop;  // null: absent
  std::string error;
};

class ContainerConfigCapabilities : public ::testing::TestWithParam<CapCase> {};

TEST_P(ContainerConfigCapabilities, Normalizes) {
  const CapCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  auto* caps = Sc(c)->mutable_capabilities();
  for (const auto& a : tc.add) caps->add_add_capabilities(a);
  for (const auto& d : tc.drop) caps->add_drop_capabilities(d);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "CapAdd", tc.want_add);
  ExpectField((*b)["HostConfig"], "CapDrop", tc.want_drop);
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigCapabilities,
    ::testing::Values(
        CapCase{"none", {}, {}, json(), json(), ""},
        CapCase{"kubernetes_names", {"NET_ADMIN", "SYS_TIME"}, {"MKNOD"}, json({"CAP_NET_ADMIN", "CAP_SYS_TIME"}),
                json({"CAP_MKNOD"}), ""},
        CapCase{"prefixed_and_lowercase", {"CAP_NET_RAW", "net_bind_service", "cap_chown"}, {},
                json({"CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_CHOWN"}), json(), ""},
        CapCase{"drop_all", {"NET_BIND_SERVICE"}, {"ALL"}, json({"CAP_NET_BIND_SERVICE"}), json({"ALL"}), ""},
        CapCase{"add_all", {"all"}, {"SYS_ADMIN"}, json({"ALL"}), json({"CAP_SYS_ADMIN"}), ""},
        CapCase{"empty", {""}, {}, json(), json(), "capabilities.add_capabilities[0]: \"\" is not a capability"},
        CapCase{"prefix_only", {}, {"NET_RAW", "CAP_"}, json(), json(),
                "capabilities.drop_capabilities[1]: \"CAP_\" is not a capability name"},
        CapCase{"space", {"NET ADMIN"}, {}, json(), json(), "\"NET ADMIN\" is not a capability name"},
        CapCase{"dash", {"net-admin"}, {}, json(), json(), "\"net-admin\" is not a capability name"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigSecurity, ARestrictedHostGetsWhatItCanGrant) {
  // Docker 20.10 on a host without CAP_SYS_RESOURCE in its bounding set.
  const HostCapabilities host{{"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_SYS_TIME"}, {"CAP_SYS_RESOURCE"}};
  ContainerCreateParams params = Params();
  params.restricted_capabilities = &host;
  ContainerConfig all = MinimalConfig();
  Sc(all)->mutable_capabilities()->add_add_capabilities("ALL");
  Sc(all)->mutable_capabilities()->add_drop_capabilities("NET_ADMIN");
  absl::StatusOr<json> b = MakeContainerCreateBody(all, Sandbox(), params);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)["HostConfig"]["CapAdd"], json({"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_SYS_TIME"}));
  EXPECT_EQ((*b)["HostConfig"]["CapDrop"], json({"CAP_NET_ADMIN"})) << "Docker drops after it adds";

  ContainerConfig named = MinimalConfig();
  Sc(named)->mutable_capabilities()->add_add_capabilities("SYS_RESOURCE");
  b = MakeContainerCreateBody(named, Sandbox(), params);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE((*b)["HostConfig"].contains("CapAdd")) << "a capability the host lacks is left out";
}

TEST(ContainerConfigSecurity, AmbientCapabilitiesIgnored) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_capabilities()->add_add_ambient_capabilities("NET_BIND_SERVICE");
  json h = MustHost(c);
  EXPECT_FALSE(h.contains("CapAdd"));
}

TEST(ContainerConfigSecurity, MaskedAndReadonlyPaths) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->add_masked_paths("/proc/kcore");
  Sc(c)->add_masked_paths("/sys/firmware");
  Sc(c)->add_readonly_paths("/proc/sys");
  json h = MustHost(c);
  EXPECT_EQ(h["MaskedPaths"], json({"/proc/kcore", "/sys/firmware"}));
  EXPECT_EQ(h["ReadonlyPaths"], json({"/proc/sys"}));
  // Empty lists leave Docker's defaults (a JSON [] would unmask everything).
  h = MustHost(MinimalConfig());
  EXPECT_FALSE(h.contains("MaskedPaths"));
  EXPECT_FALSE(h.contains("ReadonlyPaths"));
}

TEST(ContainerConfigSecurity, PrivilegedSkipsWhatDockerIgnores) {
  ContainerConfig c = MinimalConfig();
  auto* sc = Sc(c);
  sc->set_privileged(true);
  sc->mutable_capabilities()->add_add_capabilities("not a capability");
  sc->add_masked_paths("/proc/kcore");
  sc->add_readonly_paths("/proc/sys");
  sc->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  sc->mutable_seccomp()->set_localhost_ref("/nonexistent/profile.json");
  sc->mutable_apparmor()->set_profile_type(SecurityProfile::Localhost);
  sc->mutable_selinux_options()->set_type("spc_t");
  sc->set_no_new_privs(true);
  json h = MustHost(c);
  EXPECT_EQ(h["Privileged"], true);
  for (const char* absent : {"CapAdd", "CapDrop", "MaskedPaths", "ReadonlyPaths"}) {
    EXPECT_FALSE(h.contains(absent)) << absent;
  }
  EXPECT_EQ(h["SecurityOpt"], json({"label=type:spc_t", "no-new-privileges"}));
}

TEST(ContainerConfigSecurity, PrivilegedOnARestrictedHostIsSpelledOutWithoutTheFlag) {
  const HostCapabilities host{{"CAP_CHOWN", "CAP_SYS_ADMIN"}, {"CAP_SYS_RESOURCE"}};
  ContainerCreateParams params = Params();
  params.restricted_capabilities = &host;
  params.host_devices = {"/dev/fuse", "/dev/loop0"};
  ContainerConfig c = MinimalConfig();
  auto* sc = Sc(c);
  sc->set_privileged(true);
  sc->mutable_capabilities()->add_drop_capabilities("CHOWN");
  sc->add_masked_paths("/proc/kcore");
  sc->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  sc->mutable_seccomp()->set_localhost_ref("/nonexistent/profile.json");
  sc->set_no_new_privs(true);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), params);
  ASSERT_TRUE(b.ok()) << b.status();
  const json& h = (*b)["HostConfig"];
  EXPECT_FALSE(h.contains("Privileged"));
  EXPECT_FALSE(h.contains("CapDrop")) << "privileged keeps every capability, as Docker's flag does";
  EXPECT_EQ(h["CapAdd"], json({"CAP_CHOWN", "CAP_SYS_ADMIN"}));
  EXPECT_EQ(h["Devices"], json::parse(R"([
      {"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rwm"},
      {"PathOnHost": "/dev/loop0", "PathInContainer": "/dev/loop0", "CgroupPermissions": "rwm"}])"));
  EXPECT_EQ(h["DeviceCgroupRules"], json({"a *:* rwm"}));
  EXPECT_EQ(h["MaskedPaths"], json::array());
  EXPECT_EQ(h["ReadonlyPaths"], json::array());
  EXPECT_EQ(h["SecurityOpt"], json({"seccomp=unconfined", "apparmor=unconfined", "no-new-privileges"}));
}

TEST(HostDeviceNodes, ListsThisHostsDevicesButNotEveryContainersOwn) {
  const std::vector<std::string> devices = HostDeviceNodes();
  for (const char* own : {"/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx"}) {
    EXPECT_THAT(devices, ::testing::Not(::testing::Contains(own)));
  }
  for (const std::string& d : devices) EXPECT_FALSE(absl::StartsWith(d, "/dev/pts/")) << d;
}

TEST(ContainerConfigSecurity, AllOptionsTogether) {
  ContainerConfig c = MinimalConfig();
  auto* sc = Sc(c);
  auto* se = sc->mutable_selinux_options();
  se->set_user("system_u");
  se->set_role("system_r");
  se->set_type("container_t");
  se->set_level("s0:c1,c2");
  sc->mutable_apparmor()->set_profile_type(SecurityProfile::Unconfined);
  sc->mutable_seccomp()->set_profile_type(SecurityProfile::Unconfined);
  sc->set_no_new_privs(true);
  EXPECT_EQ(MustHost(c)["SecurityOpt"],
            json({"label=user:system_u", "label=role:system_r", "label=type:container_t", "label=level:s0:c1,c2",
                  "apparmor=unconfined", "seccomp=unconfined", "no-new-privileges"}));
}

struct ProfileCase {
  std::string name;
  SecurityProfile::ProfileType type;
  std::string ref;
  std::vector<std::string> want;  // SecurityOpt; empty: absent
  std::string error;
};

class ContainerConfigSeccomp : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(ContainerConfigSeccomp, Profiles) {
  const ProfileCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(tc.type);
  Sc(c)->mutable_seccomp()->set_localhost_ref(tc.ref);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "SecurityOpt", tc.want.empty() ? json() : json(tc.want));
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigSeccomp,
    ::testing::Values(ProfileCase{"runtime_default", SecurityProfile::RuntimeDefault, "", {}, ""},
                      ProfileCase{"unconfined", SecurityProfile::Unconfined, "", {"seccomp=unconfined"}, ""},
                      ProfileCase{"localhost_missing", SecurityProfile::Localhost, "/nonexistent/dir/p.json", {},
                                  "seccomp.localhost_ref: cannot read seccomp profile \"/nonexistent/dir/p.json\""},
                      ProfileCase{"localhost_empty", SecurityProfile::Localhost, "", {}, "localhost_ref"},
                      ProfileCase{"localhost_relative_no_root", SecurityProfile::Localhost, "p.json", {},
                                  "no seccomp profile root"},
                      ProfileCase{"unknown_type", static_cast<SecurityProfile::ProfileType>(5), "", {},
                                  "seccomp: unknown profile type 5"}),
    [](const auto& info) { return info.param.name; });

constexpr char kProfile[] = R"({"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]})";

TEST(ContainerConfigSeccomp, LocalhostSendsFileContent) {
  TempFile f("container_config_test_profile.json", kProfile);
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::Localhost);
  Sc(c)->mutable_seccomp()->set_localhost_ref("container_config_test_profile.json");
  ContainerCreateParams p = Params();
  p.seccomp_profile_root = f.dir();
  EXPECT_EQ(MustHost(c, p)["SecurityOpt"], json({std::string("seccomp=") + kProfile}));
}

TEST(ContainerConfigSeccomp, DeprecatedPathAndPrecedence) {
  TempFile f("container_config_test_dep.json", kProfile);
  ContainerConfig c = MinimalConfig();
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Sc(c)->set_seccomp_profile_path("localhost/" + f.path());
  EXPECT_EQ(MustHost(c)["SecurityOpt"], json({std::string("seccomp=") + kProfile}));
  Sc(c)->set_seccomp_profile_path("unconfined");
  EXPECT_EQ(MustHost(c)["SecurityOpt"], json({"seccomp=unconfined"}));
  Sc(c)->set_seccomp_profile_path("docker/default");
  EXPECT_FALSE(MustHost(c).contains("SecurityOpt"));
  Sc(c)->set_seccomp_profile_path("mine");
  ExpectInvalid(BodyStatus(c), "seccomp_profile_path: unsupported value \"mine\"");
  // The structured field wins.
  Sc(c)->set_seccomp_profile_path("unconfined");
#pragma GCC diagnostic pop
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::RuntimeDefault);
  EXPECT_FALSE(MustHost(c).contains("SecurityOpt"));
}

class ContainerConfigAppArmor : public ::testing::TestWithParam<ProfileCase> {};

TEST_P(ContainerConfigAppArmor, Profiles) {
  const ProfileCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::RuntimeDefault);  // no seccomp option
  Sc(c)->mutable_apparmor()->set_profile_type(tc.type);
  Sc(c)->mutable_apparmor()->set_localhost_ref(tc.ref);
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "SecurityOpt", tc.want.empty() ? json() : json(tc.want));
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigAppArmor,
    ::testing::Values(ProfileCase{"runtime_default", SecurityProfile::RuntimeDefault, "", {}, ""},
                      ProfileCase{"unconfined", SecurityProfile::Unconfined, "", {"apparmor=unconfined"}, ""},
                      ProfileCase{"localhost", SecurityProfile::Localhost, "k8s-deny-write",
                                  {"apparmor=k8s-deny-write"}, ""},
                      ProfileCase{"localhost_prefixed", SecurityProfile::Localhost, "localhost/k8s-deny-write",
                                  {"apparmor=k8s-deny-write"}, ""},
                      ProfileCase{"localhost_empty", SecurityProfile::Localhost, "", {},
                                  "apparmor: a Localhost AppArmor profile needs a profile name"}),
    [](const auto& info) { return info.param.name; });

struct DeprecatedAppArmorCase {
  std::string name;
  std::string profile;
  std::vector<std::string> want;
  std::string error;
};

class ContainerConfigAppArmorProfile : public ::testing::TestWithParam<DeprecatedAppArmorCase> {};

TEST_P(ContainerConfigAppArmorProfile, DeprecatedField) {
  const DeprecatedAppArmorCase& tc = GetParam();
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_seccomp()->set_profile_type(SecurityProfile::RuntimeDefault);  // no seccomp option
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Sc(c)->set_apparmor_profile(tc.profile);
#pragma GCC diagnostic pop
  absl::StatusOr<json> b = MakeContainerCreateBody(c, Sandbox(), Params());
  if (!tc.error.empty()) {
    ExpectInvalid(b.status(), tc.error);
    return;
  }
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectField((*b)["HostConfig"], "SecurityOpt", tc.want.empty() ? json() : json(tc.want));
}

INSTANTIATE_TEST_SUITE_P(
    ContainerConfig, ContainerConfigAppArmorProfile,
    ::testing::Values(DeprecatedAppArmorCase{"empty", "", {}, ""},
                      DeprecatedAppArmorCase{"runtime_default", "runtime/default", {}, ""},
                      DeprecatedAppArmorCase{"unconfined", "unconfined", {"apparmor=unconfined"}, ""},
                      DeprecatedAppArmorCase{"localhost", "localhost/k8s-apparmor-example",
                                             {"apparmor=k8s-apparmor-example"}, ""},
                      DeprecatedAppArmorCase{"localhost_empty", "localhost/", {},
                                             "apparmor_profile: unsupported value \"localhost/\""},
                      DeprecatedAppArmorCase{"bogus", "docker-default", {}, "apparmor_profile: unsupported value"}),
    [](const auto& info) { return info.param.name; });

TEST(ContainerConfigAppArmor, StructuredFieldWins) {
  ContainerConfig c = MinimalConfig();
  Sc(c)->mutable_apparmor()->set_profile_type(SecurityProfile::RuntimeDefault);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  Sc(c)->set_apparmor_profile("unconfined");
#pragma GCC diagnostic pop
  EXPECT_EQ(MustHost(c)["SecurityOpt"], json({"seccomp=unconfined"}));
}

TEST(ContainerConfigSecurity, WindowsSettingsIgnored) {
  ContainerConfig c = MinimalConfig();
  c.mutable_windows()->mutable_resources()->set_cpu_count(2);
  c.mutable_windows()->mutable_security_context()->set_run_as_username("ContainerUser");
  json b = MustBody(c);
  EXPECT_FALSE(b.contains("User"));
  EXPECT_FALSE(b["HostConfig"].contains("CpuCount"));
}

}  // namespace
}  // namespace shim

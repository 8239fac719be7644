#include "shim/container_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace shim {
namespace {

namespace v1 = ::runtime::v1;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kName[] = "/k8s_nginx_web-0_default_0b7e1f5c-8d7a-4c1e-9f3b-2a6d4e8c1b0f_2";
constexpr char kImageId[] = "sha256:605c77e624ddb75e6110f997c58876baa13f8754486b461117934b24a9dc3a85";
constexpr char kUnset[] = "0001-01-01T00:00:00Z";
// 2024-01-02T03:04:05Z and the following seconds, in Unix nanoseconds.
constexpr int64_t kT0 = 1704164645LL * 1000000000LL;
constexpr int64_t kSecond = 1000000000LL;

dockerclient::ContainerInspect Inspect() {
  dockerclient::ContainerInspect c;
  c.id = "5f1c3b";
  c.name = kName;
  c.created = "2024-01-02T03:04:05Z";
  c.image = kImageId;
  c.config_image = kImageId;
  c.state.started_at = kUnset;
  c.state.finished_at = kUnset;
  c.labels = {{"io.kubernetes.docker.type", "container"},
              {"io.kubernetes.sandbox.id", "a1b2"},
              {"io.kubernetes.container.logpath", "/var/log/pods/default_web-0_0b7e/nginx/2.log"},
              {"io.kubernetes.container.name", "nginx"},
              {"annotation.io.kubernetes.container.hash", "3e1f2a"},
              {"app", "web"}};
  return c;
}

dockerclient::ImageInspect Image() {
  dockerclient::ImageInspect i;
  i.id = kImageId;
  i.repo_tags = {"nginx:1.21.5", "nginx:stable"};
  i.repo_digests = {"nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31"};
  return i;
}

v1::ContainerStatus Status(const dockerclient::ContainerInspect& c, const std::string& image_ref = "",
                           const std::string& image_tag = "") {
  absl::StatusOr<v1::ContainerStatus> status = ToContainerStatus(c, image_ref, image_tag);
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : v1::ContainerStatus();
}

// --- Listed containers -----------------------------------------------------

struct StateCase {
  std::string docker;
  v1::ContainerState cri;
};

class ContainerConvertListStateTable : public ::testing::TestWithParam<StateCase> {};

TEST_P(ContainerConvertListStateTable, Maps) {
  EXPECT_EQ(ToContainerState(GetParam().docker), GetParam().cri) << GetParam().docker;
}

// cri-dockerd reads the Status text: "Up ..." (running, and paused as
// "Up ... (Paused)") is RUNNING, "Exited ..." EXITED, "Created" CREATED, the rest
// ("Restarting ...", "Removal In Progress", "Dead") UNKNOWN.
INSTANTIATE_TEST_SUITE_P(Table, ContainerConvertListStateTable,
                         ::testing::Values(StateCase{"created", v1::CONTAINER_CREATED},
                                           StateCase{"running", v1::CONTAINER_RUNNING},
                                           StateCase{"paused", v1::CONTAINER_RUNNING},
                                           StateCase{"restarting", v1::CONTAINER_UNKNOWN},
                                           StateCase{"removing", v1::CONTAINER_UNKNOWN},
                                           StateCase{"exited", v1::CONTAINER_EXITED},
                                           StateCase{"dead", v1::CONTAINER_UNKNOWN},
                                           StateCase{"", v1::CONTAINER_UNKNOWN},
                                           StateCase{"Up 5 minutes", v1::CONTAINER_UNKNOWN}));

dockerclient::ContainerSummary Summary() {
  dockerclient::ContainerSummary s;
  s.id = "5f1c3b";
  s.names = {kName};
  s.image = kImageId;
  s.image_id = kImageId;
  s.created = 1704164645;
  s.state = "exited";
  s.status = "Exited (0) 2 minutes ago";
  s.labels = Inspect().labels;
  return s;
}

TEST(ContainerConvert, ListedContainer) {
  absl::StatusOr<v1::Container> c = ToCriContainer(Summary());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->id(), "5f1c3b");
  EXPECT_EQ(c->pod_sandbox_id(), "a1b2");
  EXPECT_EQ(c->metadata().name(), "nginx");
  EXPECT_EQ(c->metadata().attempt(), 2u);
  EXPECT_EQ(c->image().image(), kImageId);
  // Raw image ID, not "docker://": kubelet's image GC compares it with image IDs.
  EXPECT_EQ(c->image_ref(), kImageId);
  EXPECT_EQ(c->image_id(), kImageId);
  EXPECT_EQ(c->state(), v1::CONTAINER_EXITED);
  EXPECT_EQ(c->created_at(), kT0);
  EXPECT_THAT(c->labels(), UnorderedElementsAre(Pair("io.kubernetes.container.name", "nginx"), Pair("app", "web")));
  EXPECT_THAT(c->annotations(), UnorderedElementsAre(Pair("io.kubernetes.container.hash", "3e1f2a")));
}

TEST(ContainerConvert, ListedContainerWithRandomSuffixAndNoSandboxLabel) {
  dockerclient::ContainerSummary s = Summary();
  s.names = {absl::StrCat(kName, "_0a1b2c3d")};
  s.labels.clear();
  s.state = "running";
  absl::StatusOr<v1::Container> c = ToCriContainer(s);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metadata().name(), "nginx");
  EXPECT_EQ(c->metadata().attempt(), 2u);
  EXPECT_EQ(c->pod_sandbox_id(), "");
  EXPECT_EQ(c->state(), v1::CONTAINER_RUNNING);
  EXPECT_THAT(c->labels(), IsEmpty());
}

class ContainerConvertBadNameTable : public ::testing::TestWithParam<std::string> {};

TEST_P(ContainerConvertBadNameTable, IsInvalidArgument) {
  dockerclient::ContainerSummary s = Summary();
  s.names = {GetParam()};
  EXPECT_EQ(ToCriContainer(s).status().code(), absl::StatusCode::kInvalidArgument) << GetParam();
  dockerclient::ContainerInspect c = Inspect();
  c.name = GetParam();
  EXPECT_EQ(ToContainerStatus(c, "").status().code(), absl::StatusCode::kInvalidArgument) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Table, ContainerConvertBadNameTable,
                         ::testing::Values("", "/", "/web", "/k8s_nginx_web-0_default_uid",
                                           "/k8s_nginx_web-0_default_uid_x", "/k8s_nginx_web-0_default_uid_-1",
                                           "/k8s_nginx_web-0_default_uid_4294967296",
                                           "/docker_nginx_web-0_default_uid_0",
                                           "/k8s_POD_web-0_default_uid_0",  // a sandbox
                                           "/k8s_nginx_web-0_default_uid_0_rand_extra"));

TEST(ContainerConvert, ListedContainerWithoutNames) {
  dockerclient::ContainerSummary s = Summary();
  s.names.clear();
  EXPECT_EQ(ToCriContainer(s).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Status: state, reason, message, times ------------------------------------

// Default member initializers let rows name only what they set.
struct StatusCase {
  std::string label{};
  bool running = false, paused = false, restarting = false, oom_killed = false;
  int exit_code = 0;
  std::string error{};
  std::string started_at = kUnset, finished_at = kUnset;
  v1::ContainerState state = v1::CONTAINER_UNKNOWN;
  std::string reason{}, message{};
  int64_t started = 0, finished = 0;
};

class ContainerConvertStatusTable : public ::testing::TestWithParam<StatusCase> {};

TEST_P(ContainerConvertStatusTable, Maps) {
  const StatusCase& tc = GetParam();
  dockerclient::ContainerInspect c = Inspect();
  c.state.running = tc.running;
  c.state.paused = tc.paused;
  c.state.restarting = tc.restarting;
  c.state.oom_killed = tc.oom_killed;
  c.state.exit_code = tc.exit_code;
  c.state.error = tc.error;
  c.state.started_at = tc.started_at;
  c.state.finished_at = tc.finished_at;
  v1::ContainerStatus s = Status(c);
  EXPECT_EQ(s.state(), tc.state);
  EXPECT_EQ(s.reason(), tc.reason);
  EXPECT_EQ(s.message(), tc.message);
  EXPECT_EQ(s.exit_code(), tc.exit_code);
  EXPECT_EQ(s.created_at(), kT0);
  EXPECT_EQ(s.started_at(), tc.started);
  EXPECT_EQ(s.finished_at(), tc.finished);
}

constexpr char kT1[] = "2024-01-02T03:04:06Z";
constexpr char kT2[] = "2024-01-02T03:04:07Z";
constexpr char kCannotRun[] =
    "OCI runtime create failed: container_linux.go:380: starting container process caused: exec: \"nginx\": "
    "executable file not found in $PATH: unknown";

INSTANTIATE_TEST_SUITE_P(
    Table, ContainerConvertStatusTable,
    ::testing::Values(
        StatusCase{.label = "created", .state = v1::CONTAINER_CREATED},
        StatusCase{.label = "running", .running = true, .started_at = kT1, .state = v1::CONTAINER_RUNNING,
                   .started = kT0 + kSecond},
        // Docker keeps Running set while paused or waiting to restart.
        StatusCase{.label = "paused", .running = true, .paused = true, .started_at = kT1,
                   .state = v1::CONTAINER_RUNNING, .started = kT0 + kSecond},
        StatusCase{.label = "restarting", .running = true, .restarting = true, .exit_code = 1, .started_at = kT1,
                   .finished_at = kT2, .state = v1::CONTAINER_RUNNING, .started = kT0 + kSecond,
                   .finished = kT0 + 2 * kSecond},
        StatusCase{.label = "completed", .started_at = kT1, .finished_at = kT2, .state = v1::CONTAINER_EXITED,
                   .reason = "Completed", .started = kT0 + kSecond, .finished = kT0 + 2 * kSecond},
        StatusCase{.label = "error", .exit_code = 2, .started_at = kT1, .finished_at = kT2,
                   .state = v1::CONTAINER_EXITED, .reason = "Error", .started = kT0 + kSecond,
                   .finished = kT0 + 2 * kSecond},
        StatusCase{.label = "oom", .oom_killed = true, .exit_code = 137, .started_at = kT1, .finished_at = kT2,
                   .state = v1::CONTAINER_EXITED, .reason = "OOMKilled", .started = kT0 + kSecond,
                   .finished = kT0 + 2 * kSecond},
        StatusCase{.label = "oom handled, exit 0", .oom_killed = true, .started_at = kT1, .finished_at = kT2,
                   .state = v1::CONTAINER_EXITED, .reason = "OOMKilled", .started = kT0 + kSecond,
                   .finished = kT0 + 2 * kSecond},
        StatusCase{.label = "killed by stop", .exit_code = 143, .error = "", .started_at = kT1, .finished_at = kT2,
                   .state = v1::CONTAINER_EXITED, .reason = "Error", .started = kT0 + kSecond,
                   .finished = kT0 + 2 * kSecond},
        // Start failed: exit code and error, no times; they become the creation time.
        StatusCase{.label = "cannot run", .exit_code = 127, .error = kCannotRun, .state = v1::CONTAINER_EXITED,
                   .reason = "ContainerCannotRun", .message = kCannotRun, .started = kT0, .finished = kT0},
        StatusCase{.label = "cannot run, exit 0", .error = "mount failed", .state = v1::CONTAINER_EXITED,
                   .reason = "ContainerCannotRun", .message = "mount failed", .started = kT0, .finished = kT0},
        // A failed restart keeps the error next to the earlier run's times.
        StatusCase{.label = "exited with error", .exit_code = 128, .error = "cgroup gone", .started_at = kT1,
                   .finished_at = kT2, .state = v1::CONTAINER_EXITED, .reason = "Error", .message = "cgroup gone",
                   .started = kT0 + kSecond, .finished = kT0 + 2 * kSecond}),
    [](const ::testing::TestParamInfo<StatusCase>& info) {
      std::string name;
      for (char ch : info.param.label) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

struct TimeCase {
  std::string docker;
  int64_t nanos;
};

class ContainerConvertTimeTable : public ::testing::TestWithParam<TimeCase> {};

TEST_P(ContainerConvertTimeTable, CreatedAt) {
  dockerclient::ContainerInspect c = Inspect();
  c.created = GetParam().docker;
  EXPECT_EQ(Status(c).created_at(), GetParam().nanos) << GetParam().docker;
}

INSTANTIATE_TEST_SUITE_P(Table, ContainerConvertTimeTable,
                         ::testing::Values(TimeCase{"2024-01-02T03:04:05Z", kT0},
                                           TimeCase{"2024-01-02T03:04:05.123456789Z", kT0 + 123456789},
                                           TimeCase{"2024-01-02T03:04:05.5Z", kT0 + 500000000},
                                           TimeCase{"2024-01-02T04:04:05.000000001+01:00", kT0 + 1},
                                           TimeCase{kUnset, 0}, TimeCase{"", 0}, TimeCase{"yesterday", 0},
                                           TimeCase{"1970-01-01T00:00:00Z", 0}));

TEST(ContainerConvert, StatusTimesWithNanoseconds) {
  dockerclient::ContainerInspect c = Inspect();
  c.created = "2024-01-02T03:04:05.123456789Z";
  c.state.started_at = "2024-01-02T03:04:06.987654321Z";
  c.state.finished_at = "2024-01-02T03:04:07.000000001Z";
  v1::ContainerStatus s = Status(c);
  EXPECT_EQ(s.created_at(), kT0 + 123456789);
  EXPECT_EQ(s.started_at(), kT0 + kSecond + 987654321);
  EXPECT_EQ(s.finished_at(), kT0 + 2 * kSecond + 1);
}

// --- Status: identity, labels, image ------------------------------------------

TEST(ContainerConvert, StatusIdentityAndLabels) {
  v1::ContainerStatus s = Status(Inspect());
  EXPECT_EQ(s.id(), "5f1c3b");
  EXPECT_EQ(s.metadata().name(), "nginx");
  EXPECT_EQ(s.metadata().attempt(), 2u);
  EXPECT_EQ(s.log_path(), "/var/log/pods/default_web-0_0b7e/nginx/2.log");
  // Internal labels (type, sandbox id, log path) are dropped; annotations split off.
  EXPECT_THAT(s.labels(), UnorderedElementsAre(Pair("io.kubernetes.container.name", "nginx"), Pair("app", "web")));
  EXPECT_THAT(s.annotations(), UnorderedElementsAre(Pair("io.kubernetes.container.hash", "3e1f2a")));
}

TEST(ContainerConvert, StatusWithoutLogPathLabel) {
  dockerclient::ContainerInspect c = Inspect();
  c.labels.erase("io.kubernetes.container.logpath");
  c.log_path = "/var/lib/docker/containers/5f1c3b/5f1c3b-json.log";
  EXPECT_EQ(Status(c).log_path(), "");  // Docker's own log file is not the CRI log path
}

constexpr char kDigest[] = "nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31";

struct ImageRefCase {
  std::string label{};
  std::vector<std::string> digests{};
  std::string ref{};
};

class ContainerConvertImageRefTable : public ::testing::TestWithParam<ImageRefCase> {};

TEST_P(ContainerConvertImageRefTable, Maps) {
  dockerclient::ImageInspect image = Image();
  image.repo_digests = GetParam().digests;
  EXPECT_EQ(ToImageRef(image), GetParam().ref);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ContainerConvertImageRefTable,
    ::testing::Values(ImageRefCase{.label = "digest", .digests = {kDigest},
                                   .ref = absl::StrCat("docker-pullable://", kDigest)},
                      ImageRefCase{.label = "first_digest", .digests = {kDigest, "nginx@sha256:ffff"},
                                   .ref = absl::StrCat("docker-pullable://", kDigest)},
                      ImageRefCase{.label = "local_build", .ref = absl::StrCat("docker://", kImageId)},
                      ImageRefCase{.label = "placeholder", .digests = {"<none>@<none>"},
                                   .ref = absl::StrCat("docker://", kImageId)}),
    [](const ::testing::TestParamInfo<ImageRefCase>& info) { return info.param.label; });

struct ImageCase {
  std::string label{};
  std::string config_image{};
  std::string image_ref{}, image_tag{};
  std::string name{}, ref{};
};

class ContainerConvertImageTable : public ::testing::TestWithParam<ImageCase> {};

TEST_P(ContainerConvertImageTable, Maps) {
  const ImageCase& tc = GetParam();
  dockerclient::ContainerInspect c = Inspect();
  c.config_image = tc.config_image;
  v1::ContainerStatus s = Status(c, tc.image_ref, tc.image_tag);
  EXPECT_EQ(s.image().image(), tc.name);
  EXPECT_EQ(s.image_ref(), tc.ref);
  EXPECT_EQ(s.image_id(), kImageId);  // what PullImage and ListImages report
}

const std::string kPullable = absl::StrCat("docker-pullable://", kDigest);

INSTANTIATE_TEST_SUITE_P(
    Table, ContainerConvertImageTable,
    ::testing::Values(
        // Kubelet creates from the image ID; the first tag names the image.
        ImageCase{.label = "by_id", .config_image = kImageId, .image_ref = kPullable, .image_tag = "nginx:1.21.5",
                  .name = "nginx:1.21.5", .ref = kPullable},
        ImageCase{.label = "by_bare_id", .config_image = std::string(kImageId).substr(7), .image_ref = kPullable,
                  .image_tag = "nginx:1.21.5", .name = "nginx:1.21.5", .ref = kPullable},
        ImageCase{.label = "by_id_untagged", .config_image = kImageId, .image_ref = kPullable, .name = kImageId,
                  .ref = kPullable},
        // Image gone: cri-dockerd's "docker://<image ID>".
        ImageCase{.label = "by_id_image_gone", .config_image = kImageId, .name = kImageId,
                  .ref = absl::StrCat("docker://", kImageId)},
        // A reference the container was created from says more than another tag.
        ImageCase{.label = "by_reference", .config_image = "nginx:stable", .image_ref = kPullable,
                  .image_tag = "nginx:1.21.5", .name = "nginx:stable", .ref = kPullable},
        ImageCase{.label = "by_digest_reference", .config_image = kDigest, .image_ref = kPullable,
                  .image_tag = "nginx:1.21.5", .name = kDigest, .ref = kPullable}),
    [](const ::testing::TestParamInfo<ImageCase>& info) { return info.param.label; });

// --- Status: mounts, resources, stop signal -------------------------------------

struct MountCase {
  std::string propagation, mode;
  bool rw;
  v1::MountPropagation cri;
  bool relabel;
};

class ContainerConvertMountTable : public ::testing::TestWithParam<MountCase> {};

TEST_P(ContainerConvertMountTable, Maps) {
  const MountCase& tc = GetParam();
  dockerclient::ContainerInspect c = Inspect();
  c.mounts = {{.type = "bind", .source = "/var/lib/kubelet/pods/0b7e/volumes/data", .destination = "/data",
               .mode = tc.mode, .propagation = tc.propagation, .rw = tc.rw}};
  v1::ContainerStatus s = Status(c);
  ASSERT_EQ(s.mounts_size(), 1);
  const v1::Mount& m = s.mounts(0);
  EXPECT_EQ(m.container_path(), "/data");
  EXPECT_EQ(m.host_path(), "/var/lib/kubelet/pods/0b7e/volumes/data");
  EXPECT_EQ(m.readonly(), !tc.rw);
  EXPECT_EQ(m.propagation(), tc.cri) << tc.propagation;
  EXPECT_EQ(m.selinux_relabel(), tc.relabel) << tc.mode;
}

INSTANTIATE_TEST_SUITE_P(Table, ContainerConvertMountTable,
                         ::testing::Values(MountCase{"rprivate", "", true, v1::PROPAGATION_PRIVATE, false},
                                           MountCase{"private", "ro", false, v1::PROPAGATION_PRIVATE, false},
                                           MountCase{"", "", true, v1::PROPAGATION_PRIVATE, false},
                                           MountCase{"rslave", "", true, v1::PROPAGATION_HOST_TO_CONTAINER, false},
                                           MountCase{"slave", "", true, v1::PROPAGATION_HOST_TO_CONTAINER, false},
                                           MountCase{"rshared", "", true, v1::PROPAGATION_BIDIRECTIONAL, false},
                                           MountCase{"shared", "", true, v1::PROPAGATION_BIDIRECTIONAL, false},
                                           MountCase{"rprivate", "ro,Z", false, v1::PROPAGATION_PRIVATE, true},
                                           MountCase{"rprivate", "z", true, v1::PROPAGATION_PRIVATE, true},
                                           MountCase{"rprivate", "rw,zz", true, v1::PROPAGATION_PRIVATE, false}));

TEST(ContainerConvert, StatusKeepsMountOrderIncludingVolumes) {
  dockerclient::ContainerInspect c = Inspect();
  c.mounts = {{"bind", "/etc-hosts", "/etc/hosts", "", "rprivate", true},
              {"volume", "/var/lib/docker/volumes/3f9a/_data", "/cache", "", "", true}};
  v1::ContainerStatus s = Status(c);
  ASSERT_EQ(s.mounts_size(), 2);
  EXPECT_EQ(s.mounts(0).container_path(), "/etc/hosts");
  EXPECT_EQ(s.mounts(1).host_path(), "/var/lib/docker/volumes/3f9a/_data");
  EXPECT_EQ(Status(Inspect()).mounts_size(), 0);
}

TEST(ContainerConvert, StatusResources) {
  dockerclient::ContainerInspect c = Inspect();
  c.resources = {.cpu_period = 100000, .cpu_quota = 50000, .cpu_shares = 102, .cpuset_cpus = "0-1",
                 .cpuset_mems = "0", .memory = 134217728, .memory_swap = 268435456, .oom_score_adj = 1000};
  v1::ContainerStatus s = Status(c);
  ASSERT_TRUE(s.resources().has_linux());
  const v1::LinuxContainerResources& r = s.resources().linux();
  EXPECT_EQ(r.cpu_period(), 100000);
  EXPECT_EQ(r.cpu_quota(), 50000);
  EXPECT_EQ(r.cpu_shares(), 102);
  EXPECT_EQ(r.cpuset_cpus(), "0-1");
  EXPECT_EQ(r.cpuset_mems(), "0");
  EXPECT_EQ(r.memory_limit_in_bytes(), 134217728);
  EXPECT_EQ(r.memory_swap_limit_in_bytes(), 268435456);
  EXPECT_EQ(r.oom_score_adj(), 1000);
  EXPECT_FALSE(s.resources().has_windows());
  EXPECT_FALSE(s.has_user());  // not derivable from Docker (see container_convert.cc)
}

TEST(ContainerConvert, StatusUnlimitedSwapIsNotSet) {
  dockerclient::ContainerInspect c = Inspect();
  c.resources.memory_swap = -1;
  EXPECT_EQ(Status(c).resources().linux().memory_swap_limit_in_bytes(), 0);
}

struct SignalCase {
  std::string docker;
  v1::Signal cri;
};

class ContainerConvertStopSignalTable : public ::testing::TestWithParam<SignalCase> {};

TEST_P(ContainerConvertStopSignalTable, Maps) {
  dockerclient::ContainerInspect c = Inspect();
  c.stop_signal = GetParam().docker;
  EXPECT_EQ(Status(c).stop_signal(), GetParam().cri) << GetParam().docker;
}

// By number: <signal.h> macros shadow the enum names (see api/cri.h).
INSTANTIATE_TEST_SUITE_P(
    Table, ContainerConvertStopSignalTable,
    ::testing::Values(SignalCase{"", v1::RUNTIME_DEFAULT}, SignalCase{"SIGTERM", static_cast<v1::Signal>(23)},
                      SignalCase{"TERM", static_cast<v1::Signal>(23)}, SignalCase{"sigquit", static_cast<v1::Signal>(18)},
                      SignalCase{"15", static_cast<v1::Signal>(23)}, SignalCase{"9", static_cast<v1::Signal>(13)},
                      SignalCase{"31", static_cast<v1::Signal>(22)}, SignalCase{"SIGWINCH", static_cast<v1::Signal>(32)},
                      SignalCase{"SIGRTMIN", static_cast<v1::Signal>(35)},
                      SignalCase{"SIGRTMIN+3", static_cast<v1::Signal>(38)},
                      SignalCase{"RTMAX-1", static_cast<v1::Signal>(64)}, SignalCase{"34", static_cast<v1::Signal>(35)},
                      SignalCase{"37", static_cast<v1::Signal>(38)}, SignalCase{"63", static_cast<v1::Signal>(64)},
                      SignalCase{"64", static_cast<v1::Signal>(65)}, SignalCase{"0", v1::RUNTIME_DEFAULT},
                      SignalCase{"32", v1::RUNTIME_DEFAULT}, SignalCase{"65", v1::RUNTIME_DEFAULT},
                      SignalCase{"SIG", v1::RUNTIME_DEFAULT}, SignalCase{"SIGBOGUS", v1::RUNTIME_DEFAULT},
                      SignalCase{"RUNTIME_DEFAULT", v1::RUNTIME_DEFAULT}));

// --- From Docker's JSON --------------------------------------------------------

TEST(ContainerConvert, StatusFromDockerJson) {
  // Trimmed from Docker 20.10 for a container whose command does not exist.
  const dockerclient::ContainerInspect c = dockerclient::ParseContainerInspect(nlohmann::json::parse(R"js({
    "Id": "9d2e", "Created": "2024-01-02T03:04:05.123456789Z", "Name": "/k8s_app_web-0_default_0b7e_0",
    "Image": "sha256:605c77e624ddb75e6110f997c58876baa13f8754486b461117934b24a9dc3a85",
    "State": {"Status": "created", "Running": false, "Paused": false, "Restarting": false, "OOMKilled": false,
              "Dead": false, "Pid": 0, "ExitCode": 127,
              "Error": "OCI runtime create failed: exec: \"app\": executable file not found in $PATH: unknown",
              "StartedAt": "0001-01-01T00:00:00Z", "FinishedAt": "0001-01-01T00:00:00Z"},
    "HostConfig": {"CpuShares": 2, "Memory": 0, "MemorySwap": 0, "OomScoreAdj": 1000},
    "Mounts": [{"Type": "bind", "Source": "/var/lib/kubelet/pods/0b7e/etc-hosts", "Destination": "/etc/hosts",
                "Mode": "", "RW": true, "Propagation": "rprivate"}],
    "Config": {"Image": "sha256:605c77e624ddb75e6110f997c58876baa13f8754486b461117934b24a9dc3a85",
               "Labels": {"io.kubernetes.docker.type": "container", "io.kubernetes.sandbox.id": "a1b2",
                          "io.kubernetes.container.logpath": "/var/log/pods/default_web-0_0b7e/app/0.log"}}})js"));
  v1::ContainerStatus s = Status(c);
  EXPECT_EQ(s.state(), v1::CONTAINER_EXITED);
  EXPECT_EQ(s.reason(), "ContainerCannotRun");
  EXPECT_EQ(s.message(), "OCI runtime create failed: exec: \"app\": executable file not found in $PATH: unknown");
  EXPECT_EQ(s.exit_code(), 127);
  EXPECT_EQ(s.created_at(), kT0 + 123456789);
  EXPECT_EQ(s.started_at(), kT0 + 123456789);
  EXPECT_EQ(s.finished_at(), kT0 + 123456789);
  EXPECT_EQ(s.log_path(), "/var/log/pods/default_web-0_0b7e/app/0.log");
  EXPECT_EQ(s.resources().linux().cpu_shares(), 2);
  EXPECT_EQ(s.resources().linux().oom_score_adj(), 1000);
  ASSERT_EQ(s.mounts_size(), 1);
  EXPECT_FALSE(s.mounts(0).readonly());
  EXPECT_EQ(s.image_ref(), absl::StrCat("docker://", kImageId));
  EXPECT_THAT(s.labels(), IsEmpty());
}

TEST(ContainerConvert, VerboseInfo) {
  dockerclient::ContainerInspect c = Inspect();
  c.state.pid = 31337;
  google::protobuf::Map<std::string, std::string> info = ContainerVerboseInfo(c);
  ASSERT_EQ(info.size(), 1u);
  ASSERT_TRUE(info.contains("info"));
  EXPECT_EQ(nlohmann::json::parse(info["info"]), nlohmann::json({{"sandboxID", "a1b2"}, {"pid", 31337}}));
  EXPECT_EQ(nlohmann::json::parse(ContainerVerboseInfo(dockerclient::ContainerInspect())["info"]),
            nlohmann::json({{"sandboxID", ""}, {"pid", 0}}));
}

}  // namespace
}  // namespace shim

// Mounts whose translation depends on the Docker Engine's API version, through
// CriService on a real dockerd (DOCKERSHIM_TEST_DOCKER picks the engine): recursive
// read-only mounts on API 1.44+ engines, and their refusal below.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers

class MountFeaturesIntegration : public PodIntegration {
 protected:
  MountFeaturesIntegration()
      : PodIntegration({"dstest-mnt-", "dstest-mntnet-", 170, 179, "mount_features_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    ASSERT_NO_FATAL_FAILURE(BuildService(Plugin::kCni, testenv::PauseImage()));
  }

  absl::StatusOr<std::string> CreateAndStart(const std::string& pod_id, const v1::PodSandboxConfig& pod,
                                             const v1::ContainerConfig& config) {
    ASSIGN_OR_RETURN(std::string id, Create(pod_id, pod, config));
    RETURN_IF_ERROR(Start(id));
    return id;
  }
  absl::StatusOr<v1::ExecSyncResponse> Exec(const std::string& id, const std::string& script) {
    v1::ExecSyncRequest req;
    req.set_container_id(id);
    for (const char* part : {"sh", "-c"}) req.add_cmd(part);
    req.add_cmd(script);
    req.set_timeout(10);
    return service_->ExecSync(ctx_, req);
  }
};

// A host directory with a bind submount at sub/ (another temp dir mounted there on the
// host), unmounted when it goes out of scope.
class DirWithSubmount {
 public:
  explicit DirWithSubmount(const std::string& base) : top_(base + "/rro-top"), other_(base + "/rro-other") {
    fs::create_directories(top_ + "/sub");
    fs::create_directories(other_);
    mounted_ = ShOk("mount --bind " + other_ + " " + top_ + "/sub");
  }
  ~DirWithSubmount() {
    if (mounted_) Sh("umount " + top_ + "/sub");
  }
  bool mounted() const { return mounted_; }
  const std::string& top() const { return top_; }
  const std::string& other() const { return other_; }

 private:
  std::string top_, other_;
  bool mounted_ = false;
};

v1::ContainerConfig WithReadOnlyMount(v1::ContainerConfig config, const std::string& host_path, bool recursive) {
  auto* mount = config.add_mounts();
  mount->set_host_path(host_path);
  mount->set_container_path("/data");
  mount->set_readonly(true);
  mount->set_recursive_read_only(recursive);
  return config;
}

TEST_F(MountFeaturesIntegration, RecursiveReadOnlyMountMakesSubmountsReadOnly) {
  auto features = service_->Features(ctx_);
  ASSERT_TRUE(features.ok()) << features.status();
  if (!features->recursive_read_only) GTEST_SKIP() << "API " << features->api_version << " has no rro (1.44+)";
  DirWithSubmount dir(dir_);
  ASSERT_TRUE(dir.mounted());
  const v1::PodSandboxConfig pod = BaseConfig("rro-sub");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();

  auto rro = CreateAndStart(*pod_id, pod, WithReadOnlyMount(Busybox("rro"), dir.top(), true));
  ASSERT_TRUE(rro.ok()) << rro.status();
  auto written = Exec(*rro, "touch /data/sub/by-rro; touch /data/top-by-rro");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_NE(written->exit_code(), 0);
  EXPECT_THAT(written->stderr(), AllOf(HasSubstr("/data/sub/by-rro: Read-only file system"),
                                       HasSubstr("/data/top-by-rro: Read-only file system")));
  EXPECT_FALSE(fs::exists(dir.other() + "/by-rro"));

  // Plain readonly, as Kubernetes means it: only the mount itself.
  auto plain = CreateAndStart(*pod_id, pod, WithReadOnlyMount(Busybox("plainro"), dir.top(), false));
  ASSERT_TRUE(plain.ok()) << plain.status();
  written = Exec(*plain, "touch /data/sub/by-plain && ! touch /data/top-by-plain");
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->exit_code(), 0) << written->stderr();
  EXPECT_TRUE(fs::exists(dir.other() + "/by-plain"));
}

TEST_F(MountFeaturesIntegration, RecursiveReadOnlyMountOnAnOldEngineIsInvalidAndLeavesNothing) {
  auto features = service_->Features(ctx_);
  ASSERT_TRUE(features.ok()) << features.status();
  if (features->recursive_read_only) GTEST_SKIP() << "API " << features->api_version << " has rro";
  DirWithSubmount dir(dir_);
  const v1::PodSandboxConfig pod = BaseConfig("rro-old");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  auto created = Create(*pod_id, pod, WithReadOnlyMount(Busybox("rro"), dir.top(), true));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(created.status().message(),
              AllOf(HasSubstr("mounts[0].recursive_read_only"), HasSubstr("(API " + features->api_version + ")"),
                    HasSubstr("API 1.44 (Docker 25) or later")));
  dockerclient::ListContainersOptions containers_of_the_pod;
  containers_of_the_pod.label_filter = {{kContainerTypeLabel, kContainerTypeContainer}, {kSandboxIdLabel, *pod_id}};
  auto left = docker_->ListContainers(ctx_, containers_of_the_pod);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_TRUE(left->empty()) << left->size() << " containers left";
}

// CDI devices where the engine has CDI on (Docker 28.2+ by default): a spec in the
// engine's first CDI directory, whose device sets an environment variable. Elsewhere a
// clear FAILED_PRECONDITION and nothing created.
TEST_F(MountFeaturesIntegration, CdiDevicesReachTheContainerOrAreRefusedClearly) {
  auto features = service_->Features(ctx_);
  ASSERT_TRUE(features.ok()) << features.status();
  const v1::PodSandboxConfig pod = BaseConfig("cdi");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  const std::string kind = "dockershim.test/dev" + RandomHex();
  v1::ContainerConfig config = Busybox("cdi", {"sh", "-c", "echo \"$DSTEST_CDI\" >/tmp/cdi; exec sleep 600"});
  config.add_cdi_devices()->set_name(kind + "=marker");

  if (!features->cdi) {
    auto created = Create(*pod_id, pod, config);
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().code(), absl::StatusCode::kFailedPrecondition) << created.status();
    EXPECT_THAT(created.status().message(), HasSubstr("CDI"));
    dockerclient::ListContainersOptions containers_of_the_pod;
    containers_of_the_pod.label_filter = {{kContainerTypeLabel, kContainerTypeContainer}, {kSandboxIdLabel, *pod_id}};
    auto left = docker_->ListContainers(ctx_, containers_of_the_pod);
    ASSERT_TRUE(left.ok()) << left.status();
    EXPECT_TRUE(left->empty()) << left->size() << " containers left";
    return;
  }
  auto info = docker_->Info(ctx_);
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string spec_dir = info->raw["CDISpecDirs"][0].get<std::string>();
  fs::create_directories(spec_dir);
  const std::string spec = spec_dir + "/" + kind.substr(kind.find('/') + 1) + ".json";
  {
    std::ofstream out(spec);
    out << nlohmann::json{{"cdiVersion", "0.6.0"},
                          {"kind", kind},
                          {"devices", {{{"name", "marker"}, {"containerEdits", {{"env", {"DSTEST_CDI=from-spec"}}}}}}}}
               .dump();
  }
  struct RemoveSpec {
    std::string path;
    ~RemoveSpec() { fs::remove(path); }
  } remove_spec{spec};
  auto id = CreateAndStart(*pod_id, pod, config);
  ASSERT_TRUE(id.ok()) << id.status();
  // The spec edits the container's own process (an exec gets Docker's environment).
  auto env = Exec(*id, "until [ -s /tmp/cdi ]; do sleep 0.05; done; cat /tmp/cdi");
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(env->stdout(), "from-spec\n");
}

}  // namespace
}  // namespace shim

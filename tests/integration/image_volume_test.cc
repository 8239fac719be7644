// Image volumes (CRI Mount.image) through CriService on a real dockerd: Docker's image
// mounts from API 1.48, elsewhere read-only binds of the image's unpacked tree under
// the shim's root, which must go with the last container that binds it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dockerclient/api_version.h"
#include "tests/integration/pod_fixture.h"

namespace shim {
namespace {

using namespace testpods;  // NOLINT: the fixture's helpers and matchers

class ImageVolumeIntegration : public PodIntegration {
 protected:
  ImageVolumeIntegration() : PodIntegration({"dstest-imgvol-", "dstest-imgvolnet-", 150, 159, "image_volume_test."}) {}

  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PodIntegration::SetUp());
    ASSERT_NO_FATAL_FAILURE(BuildService(Plugin::kCni, testenv::PauseImage()));
    auto api = docker_->Ping(ctx_);
    ASSERT_TRUE(api.ok()) << api.status();
    docker_mounts_ = dockerclient::ApiAtLeast(*api, 1, 48);
    auto image = docker_->InspectImage(ctx_, testenv::BusyboxImage());
    ASSERT_TRUE(image.ok()) << image.status();
    tree_ = root_ + "/image-volumes/" + image->id.substr(std::string("sha256:").size());
  }

  v1::PodSandboxConfig Pod(const std::string& name) {
    v1::PodSandboxConfig config = BaseConfig(name);
    config.set_log_directory(dir_ + "/pod-logs/" + name);
    return config;
  }
  // busybox sleeping, with the busybox image at `target` (its `sub_path`).
  v1::ContainerConfig WithImageVolume(const std::string& name, const std::string& target, const std::string& sub_path,
                                      const std::string& image = testenv::BusyboxImage()) {
    v1::ContainerConfig c = Busybox(name);
    v1::Mount* m = c.add_mounts();
    m->set_container_path(target);
    m->mutable_image()->set_image(image);
    m->set_image_sub_path(sub_path);
    m->set_readonly(true);
    return c;
  }
  absl::StatusOr<v1::ExecSyncResponse> Exec(const std::string& id, std::vector<std::string> cmd) {
    v1::ExecSyncRequest req;
    req.set_container_id(id);
    for (auto& part : cmd) req.add_cmd(part);
    req.set_timeout(10);
    return service_->ExecSync(ctx_, req);
  }

  bool docker_mounts_ = false;  // the engine mounts images itself (API 1.48+)
  std::string tree_;            // where the busybox image is unpacked otherwise
};

TEST_F(ImageVolumeIntegration, ContainerReadsTheImageButCannotWriteIt) {
  v1::PodSandboxConfig pod = Pod("iv-read");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  v1::ContainerConfig config = WithImageVolume("reader", "/iv", "");
  v1::Mount* bin = config.add_mounts();
  bin->set_container_path("/ivbin");
  bin->mutable_image()->set_image(testenv::BusyboxImage());
  bin->set_image_sub_path("bin");
  auto id = Create(*pod_id, pod, config);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(Start(*id).ok());
  // Docker 28 takes one image mount per image and container: the second binds the tree.
  auto inspect = Inspect(*id);
  ASSERT_TRUE(inspect.ok()) << inspect.status();
  const nlohmann::json& mounts = inspect->raw["HostConfig"]["Mounts"];
  ASSERT_EQ(mounts.size(), 2u) << mounts.dump();
  EXPECT_EQ(mounts[0]["Type"], docker_mounts_ ? "image" : "bind");
  EXPECT_EQ(mounts[1]["Type"], "bind");
  EXPECT_TRUE(fs::exists(tree_ + "/rootfs/bin/busybox"));

  auto passwd = Exec(*id, {"cat", "/iv/etc/passwd"});
  ASSERT_TRUE(passwd.ok()) << passwd.status();
  EXPECT_EQ(passwd->exit_code(), 0) << passwd->stderr();
  EXPECT_THAT(passwd->stdout(), HasSubstr("root:x:0:0"));
  auto listed = Exec(*id, {"ls", "/ivbin"});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(listed->stdout(), HasSubstr("busybox"));
  // The image's modes come through: its busybox runs from the volume.
  auto run = Exec(*id, {"/iv/bin/busybox", "echo", "ran from the image volume"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->stdout(), "ran from the image volume\n");

  for (const char* path : {"/iv/new-file", "/ivbin/new-file", "/iv/etc/passwd"}) {
    auto write = Exec(*id, {"sh", "-c", absl::StrCat("echo x >> ", path)});
    ASSERT_TRUE(write.ok()) << write.status();
    EXPECT_NE(write->exit_code(), 0) << path;
    EXPECT_THAT(write->stderr(), HasSubstr("Read-only file system")) << path;
  }

  ASSERT_TRUE(RemoveContainer(*id).ok());
  EXPECT_FALSE(fs::exists(tree_));
}

TEST_F(ImageVolumeIntegration, TreeStaysWhileAnotherContainerBindsIt) {
  v1::PodSandboxConfig pod = Pod("iv-share");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  auto first = Create(*pod_id, pod, WithImageVolume("first", "/iv", "etc"));
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Create(*pod_id, pod, WithImageVolume("second", "/iv", ""));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(Start(*second).ok());
  ASSERT_TRUE(RemoveContainer(*first).ok());
  EXPECT_EQ(fs::exists(tree_), !docker_mounts_);
  auto still = Exec(*second, {"ls", "/iv/bin/busybox"});
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->exit_code(), 0) << still->stderr();
  // RemovePodSandbox removes the last user, and with it the tree.
  ASSERT_TRUE(Remove(*pod_id).ok());
  EXPECT_FALSE(fs::exists(tree_));
}

TEST_F(ImageVolumeIntegration, MissingImageAndBadSubPathsAreRefused) {
  v1::PodSandboxConfig pod = Pod("iv-bad");
  auto pod_id = Run(pod);
  ASSERT_TRUE(pod_id.ok()) << pod_id.status();
  auto missing = Create(*pod_id, pod, WithImageVolume("missing", "/iv", "", "dockershim-test/absent:none"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("dockershim-test/absent:none"));
  auto escapes = Create(*pod_id, pod, WithImageVolume("escapes", "/iv", "bin/../../etc"));
  EXPECT_EQ(escapes.status().code(), absl::StatusCode::kInvalidArgument) << escapes.status();
  if (!docker_mounts_) {
    // Docker itself looks for the sub path only when it starts the container.
    auto absent = Create(*pod_id, pod, WithImageVolume("absent", "/iv", "no/such/dir"));
    EXPECT_EQ(absent.status().code(), absl::StatusCode::kNotFound) << absent.status();
  }
  EXPECT_FALSE(fs::exists(tree_));
}

}  // namespace
}  // namespace shim

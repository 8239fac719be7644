// ImageService logic on the fake Docker client.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/cleanup/cleanup.h"
#include "shim/cri_service.h"
#include "tests/unit/fake_containerd.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;

class ImagesTest : public ::testing::Test {
 protected:
  ImagesTest() : service_(MakeOptions(), docker_, network_) {}
  static Options MakeOptions() {
    Options o;
    o.pod_infra_image = "registry.k8s.io/pause:3.10";
    return o;
  }
  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(5));
  FakeDockerClient docker_;
  FakeNetwork network_;
  CriService service_;
};

// A layer store on a clock the test moves: the service's ImageFsInfo inodes, and a file
// added to the store.
class ClockedStoreTest : public ImagesTest {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("dsfs-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
             std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "overlay2" / "layer1");
    docker_.info.docker_root_dir = root_.string();
    Options o = MakeOptions();
    o.clock = [this] { return now_; };
    clocked_ = std::make_unique<CriService>(o, docker_, network_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  uint64_t Inodes() {
    auto resp = clocked_->ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->image_filesystems(0).inodes_used().value() : 0;
  }
  void AddFile() { std::ofstream(root_ / "overlay2" / "layer1" / ("f" + std::to_string(files_++))) << "x"; }

  std::filesystem::path root_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<CriService> clocked_;
  int files_ = 0;
};

v1::ImageStatusRequest StatusOf(const std::string& image) {
  v1::ImageStatusRequest req;
  req.mutable_image()->set_image(image);
  return req;
}

TEST_F(ImagesTest, StatusOfAbsentImageIsEmptyNotError) {
  auto resp = service_.ImageStatus(ctx_, StatusOf("busybox:nope"));
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_FALSE(resp->has_image());
}

TEST_F(ImagesTest, StatusRejectsEmptyAndMalformed) {
  EXPECT_EQ(service_.ImageStatus(ctx_, StatusOf("")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(service_.ImageStatus(ctx_, StatusOf("Not/Valid")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(docker_.CallCount("InspectImage"), 0);
}

TEST_F(ImagesTest, StatusByNameAndIdAgree) {
  std::string id = docker_.AddImage({"busybox:latest", "busybox:1.0"}, "www-data:www-data");
  auto by_name = service_.ImageStatus(ctx_, StatusOf("busybox"));
  auto by_id = service_.ImageStatus(ctx_, StatusOf(id));
  ASSERT_TRUE(by_name.ok() && by_id.ok());
  EXPECT_EQ(by_name->image().SerializeAsString(), by_id->image().SerializeAsString());
  EXPECT_EQ(by_name->image().username(), "www-data");
  EXPECT_FALSE(by_name->image().has_uid());
  EXPECT_EQ(by_name->image().repo_tags_size(), 2);
  EXPECT_TRUE(by_name->info().empty());
}

TEST_F(ImagesTest, VerboseStatusHasInfo) {
  docker_.AddImage({"busybox:latest"});
  auto req = StatusOf("busybox");
  req.set_verbose(true);
  auto resp = service_.ImageStatus(ctx_, req);
  ASSERT_TRUE(resp.ok());
  ASSERT_TRUE(resp->info().contains("info"));
  EXPECT_TRUE(nlohmann::json::accept(resp->info().at("info")));
}

TEST_F(ImagesTest, PauseImageIsPinned) {
  docker_.AddImage({"registry.k8s.io/pause:3.10"});
  docker_.AddImage({"busybox:latest"});
  auto list = service_.ListImages(ctx_, v1::ListImagesRequest());
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->images_size(), 2);
  for (const auto& image : list->images())
    EXPECT_EQ(image.pinned(), image.repo_tags(0) == "registry.k8s.io/pause:3.10");
}

TEST_F(ImagesTest, ListWithFilter) {
  docker_.AddImage({"busybox:latest"});
  docker_.AddImage({"busybox:1.0"});
  std::string other = docker_.AddImage({"127.0.0.1:5000/other:latest"});
  v1::ListImagesRequest req;
  req.mutable_filter()->mutable_image()->set_image("busybox");
  auto list = service_.ListImages(ctx_, req);
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->images_size(), 2) << "a filter without tag matches every tag";

  req.mutable_filter()->mutable_image()->set_image("busybox:1.0");
  EXPECT_EQ(service_.ListImages(ctx_, req)->images_size(), 1);

  req.mutable_filter()->mutable_image()->set_image(other);
  list = service_.ListImages(ctx_, req);
  ASSERT_EQ(list->images_size(), 1);
  EXPECT_EQ(list->images(0).id(), other);

  req.mutable_filter()->mutable_image()->set_image("absent");
  EXPECT_EQ(service_.ListImages(ctx_, req)->images_size(), 0);
}

TEST_F(ImagesTest, PullReturnsImageIdAndDefaultsToLatest) {
  docker_.AddPullableImage("docker.io/library/busybox:latest", "1002");
  v1::PullImageRequest req;
  req.mutable_image()->set_image("busybox");
  auto resp = service_.PullImage(ctx_, req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->image_ref().rfind("sha256:", 0), 0u);
  EXPECT_EQ(docker_.LastRegistryAuth(), "") << "no credentials, no header";
  auto status = service_.ImageStatus(ctx_, StatusOf(resp->image_ref()));
  ASSERT_TRUE(status.ok() && status->has_image());
  EXPECT_EQ(status->image().uid().value(), 1002);
}

TEST_F(ImagesTest, PullRejectsBadReferencesWithoutCallingDocker) {
  for (const std::string& bad : std::vector<std::string>{"", "busybox/UPPER", "busybox:", "sha256:" + std::string(64, 'a')}) {
    v1::PullImageRequest req;
    req.mutable_image()->set_image(bad);
    auto resp = service_.PullImage(ctx_, req);
    EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(docker_.CallCount("PullImage"), 0);
}

TEST_F(ImagesTest, PullSendsCredentialsAndKeepsThemOutOfErrors) {
  docker_.FailOperation("PullImage",
                        absl::PermissionDeniedError("pull image x: unauthorized: password hunter22 rejected"));
  v1::PullImageRequest req;
  req.mutable_image()->set_image("127.0.0.1:5001/private/busybox:latest");
  req.mutable_auth()->set_username("tester");
  req.mutable_auth()->set_password("hunter22");
  auto resp = service_.PullImage(ctx_, req);
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(docker_.LastRegistryAuth(), "");
  std::string message(resp.status().message());
  EXPECT_EQ(message.find("hunter22"), std::string::npos) << message;
  EXPECT_NE(message.find("registry 127.0.0.1:5001"), std::string::npos) << message;
}

TEST_F(ImagesTest, UnreachableRegistryStaysUnavailableWithoutTheCredentials) {
  docker_.FailOperation("PullImage", absl::UnavailableError("pull image 127.0.0.1:1/busybox:latest: registry "
                                                            "127.0.0.1:1 cannot be reached: dial tcp 127.0.0.1:1: "
                                                            "connect: connection refused (as hunter22)"));
  v1::PullImageRequest req;
  req.mutable_image()->set_image("127.0.0.1:1/busybox:latest");
  req.mutable_auth()->set_username("tester");
  req.mutable_auth()->set_password("hunter22");
  auto resp = service_.PullImage(ctx_, req);
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable) << resp.status();
  std::string message(resp.status().message());
  EXPECT_EQ(message.find("hunter22"), std::string::npos) << message;
  EXPECT_NE(message.find("registry 127.0.0.1:1 cannot be reached"), std::string::npos) << message;
}

TEST_F(ImagesTest, RemoveAbsentSucceeds) {
  v1::RemoveImageRequest req;
  req.mutable_image()->set_image("busybox:gone");
  EXPECT_TRUE(service_.RemoveImage(ctx_, req).ok());
}

TEST_F(ImagesTest, RemoveByNameKeepsOtherTags) {
  docker_.AddImage({"busybox:latest", "busybox:1.0"});
  v1::RemoveImageRequest req;
  req.mutable_image()->set_image("busybox:1.0");
  ASSERT_TRUE(service_.RemoveImage(ctx_, req).ok());
  EXPECT_FALSE(docker_.HasImage("busybox:1.0"));
  EXPECT_TRUE(docker_.HasImage("busybox:latest"));
}

TEST_F(ImagesTest, RemoveByIdRemovesEveryTag) {
  std::string id = docker_.AddImage({"busybox:latest", "busybox:1.0", "other:x"});
  v1::RemoveImageRequest req;
  req.mutable_image()->set_image(id);
  auto resp = service_.RemoveImage(ctx_, req);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_FALSE(docker_.HasImage(id));
  EXPECT_FALSE(docker_.HasImage("busybox:latest"));
  EXPECT_FALSE(docker_.HasImage("other:x"));
}

TEST_F(ImagesTest, DockerDownIsUnavailable) {
  docker_.FailOperation("InspectImage", absl::UnavailableError("cannot connect to the Docker daemon"));
  EXPECT_EQ(service_.ImageStatus(ctx_, StatusOf("busybox")).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ImagesTest, ImageFsInfoMeasuresDockerRoot) {
  auto root = std::filesystem::temp_directory_path() / ("dsfs-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "overlay2" / "layer1");
  std::filesystem::create_directories(root / "image");
  std::ofstream(root / "overlay2" / "layer1" / "file") << std::string(100000, 'x');
  docker_.info.docker_root_dir = root.string();
  auto resp = service_.ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  std::filesystem::remove_all(root);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->image_filesystems_size(), 1);
  const auto& fs = resp->image_filesystems(0);
  EXPECT_EQ(fs.fs_id().mountpoint(), root.string());
  EXPECT_GE(fs.used_bytes().value(), 100000u);
  EXPECT_GE(fs.inodes_used().value(), 4u);  // overlay2, layer1, file and image
  EXPECT_GT(fs.timestamp(), 0);
  ASSERT_EQ(resp->container_filesystems_size(), 1);
  EXPECT_EQ(resp->container_filesystems(0).fs_id().mountpoint(), root.string());
}

// The kubelet asks every 10 s; a walk of a big store is not free. A minute-old figure is
// answered, unless an image was pulled or removed through us meanwhile.
TEST_F(ClockedStoreTest, ImageFsInfoMeasuresAgainAfterAMinuteOrAPullOrARemoval) {
  const uint64_t first = Inodes();
  AddFile();
  now_ += absl::Seconds(50);
  EXPECT_EQ(Inodes(), first) << "measured again within the minute";
  now_ += absl::Seconds(11);
  EXPECT_EQ(Inodes(), first + 1) << "not measured again after a minute";

  AddFile();
  docker_.AddImage({"busybox:latest"});
  v1::RemoveImageRequest remove;
  remove.mutable_image()->set_image("busybox:latest");
  ASSERT_TRUE(clocked_->RemoveImage(ctx_, remove).ok());
  EXPECT_EQ(Inodes(), first + 2) << "not measured again after a removal";

  AddFile();
  docker_.AddPullableImage("registry.example/app:1", "0");
  v1::PullImageRequest pull;
  pull.mutable_image()->set_image("registry.example/app:1");
  ASSERT_TRUE(clocked_->PullImage(ctx_, pull).ok());
  EXPECT_EQ(Inodes(), first + 3) << "not measured again after a pull";
  EXPECT_EQ(Inodes(), first + 3);
}

// A store that stays the same is measured twice as long after each time, up to five
// minutes; a change brings the minute back.
TEST_F(ClockedStoreTest, ImageFsInfoOfAStoreThatStaysTheSameIsMeasuredLessOftenUpToFiveMinutes) {
  const uint64_t first = Inodes();  // kept a minute
  now_ += absl::Seconds(61);
  EXPECT_EQ(Inodes(), first);  // measured, the same: kept 2 minutes
  AddFile();
  now_ += absl::Seconds(119);
  EXPECT_EQ(Inodes(), first) << "measured again within 2 minutes";
  now_ += absl::Seconds(2);
  EXPECT_EQ(Inodes(), first + 1) << "kept longer than 2 minutes after one unchanged walk";
  AddFile();  // that walk found a change: kept a minute
  now_ += absl::Seconds(59);
  EXPECT_EQ(Inodes(), first + 1) << "measured again within the minute after a change";
  now_ += absl::Seconds(2);
  EXPECT_EQ(Inodes(), first + 2) << "kept longer than a minute after a change";
  now_ += absl::Seconds(61);
  EXPECT_EQ(Inodes(), first + 2);  // the same: 2 minutes
  now_ += absl::Seconds(121);
  EXPECT_EQ(Inodes(), first + 2);  // the same: 4 minutes
  now_ += absl::Seconds(241);
  EXPECT_EQ(Inodes(), first + 2);  // the same: 5 minutes, not 8
  AddFile();
  now_ += absl::Seconds(290);
  EXPECT_EQ(Inodes(), first + 2) << "measured again within 5 minutes";
  now_ += absl::Seconds(11);
  EXPECT_EQ(Inodes(), first + 3) << "kept longer than 5 minutes";
}

TEST_F(ImagesTest, ImageFsInfoCountsAHardLinkedFileOnce) {
  auto root = std::filesystem::temp_directory_path() / ("dsfs-links-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "overlay2" / "layer1");
  std::filesystem::create_directories(root / "overlay2" / "layer2");
  std::filesystem::create_directories(root / "image");
  std::ofstream(root / "overlay2" / "layer1" / "file") << std::string(100000, 'x');
  std::filesystem::create_hard_link(root / "overlay2" / "layer1" / "file", root / "overlay2" / "layer2" / "same");
  docker_.info.docker_root_dir = root.string();
  auto resp = service_.ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  std::filesystem::remove_all(root);
  ASSERT_TRUE(resp.ok()) << resp.status();
  const auto& fs = resp->image_filesystems(0);
  EXPECT_EQ(fs.inodes_used().value(), 5u);  // overlay2, layer1, layer2, the file once, image
  EXPECT_LT(fs.used_bytes().value(), 200000u);
}

TEST_F(ImagesTest, ImageFsInfoOnTheContainerdStoreMeasuresItsContentAndSnapshots) {
  const auto root = std::filesystem::temp_directory_path() / ("dsfs-c8d-" + std::to_string(::getpid()));
  absl::Cleanup remove_root = [&] { std::filesystem::remove_all(root); };
  const auto content = root / "containerd" / "io.containerd.content.v1.content";
  const auto snapshots = root / "containerd" / "io.containerd.snapshotter.v1.overlayfs";
  std::filesystem::create_directories(content / "blobs" / "sha256");
  std::filesystem::create_directories(snapshots / "snapshots" / "1" / "fs");
  std::ofstream(content / "blobs" / "sha256" / "abc") << std::string(100000, 'x');
  std::ofstream(snapshots / "snapshots" / "1" / "fs" / "file") << std::string(50000, 'y');
  // What Docker 29 says of its default store; DockerRootDir holds none of it.
  docker_.info.docker_root_dir = (root / "docker").string();
  docker_.info.driver = "overlayfs";
  docker_.info.driver_type = "io.containerd.snapshotter.v1";
  docker_.info.containerd_address = "/run/containerd/containerd.sock";
  testing_fakes::FakeContainerd::State containerd;
  containerd.roots[{"io.containerd.content.v1", "content"}] = content.string();
  containerd.roots[{"io.containerd.snapshotter.v1", "overlayfs"}] = snapshots.string();
  Options o = MakeOptions();
  std::vector<std::string> sockets;
  o.connect_containerd = [&](const std::string& address) {
    sockets.push_back(address);
    return std::make_unique<testing_fakes::FakeContainerd>(containerd);
  };
  CriService service(o, docker_, network_);
  auto resp = service.ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(sockets, std::vector<std::string>{"/run/containerd/containerd.sock"});
  const auto& fs = resp->image_filesystems(0);
  EXPECT_EQ(fs.fs_id().mountpoint(), snapshots.string());
  EXPECT_GE(fs.used_bytes().value(), 150000u);
  // content, blobs, sha256, abc; overlayfs, snapshots, 1, fs, file
  EXPECT_EQ(fs.inodes_used().value(), 9u);
  EXPECT_EQ(resp->container_filesystems(0).fs_id().mountpoint(), snapshots.string());

  // A containerd without any content yet has no content store directory.
  testing_fakes::FakeContainerd::State empty;
  empty.roots[{"io.containerd.content.v1", "content"}] = (root / "none" / "content").string();
  empty.roots[{"io.containerd.snapshotter.v1", "overlayfs"}] = (root / "none").string();
  std::filesystem::create_directories(root / "none");
  Options first_start = MakeOptions();
  first_start.connect_containerd = [&](const std::string&) {
    return std::make_unique<testing_fakes::FakeContainerd>(empty);
  };
  auto nothing = CriService(first_start, docker_, network_).ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(nothing->image_filesystems(0).inodes_used().value(), 1u) << "the snapshotter's directory";

  // containerd away, before its directories are known: the call fails, UNAVAILABLE.
  containerd.away = absl::UnavailableError("containerd at /run/containerd/containerd.sock did not answer within 5s");
  CriService fresh(o, docker_, network_);
  EXPECT_EQ(fresh.ImageFsInfo(ctx_, v1::ImageFsInfoRequest()).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(ImagesTest, ImageFsInfoOfAnUnknownStoreHasNoFigures) {
  docker_.info.driver = "overlayfs";
  docker_.info.driver_type = "io.containerd.someday.v1";
  ::testing::internal::CaptureStderr();
  auto resp = service_.ImageFsInfo(ctx_, v1::ImageFsInfoRequest());
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(resp.ok()) << resp.status();
  const auto& fs = resp->image_filesystems(0);
  EXPECT_EQ(fs.fs_id().mountpoint(), "/var/lib/docker");
  EXPECT_FALSE(fs.has_used_bytes()) << "unknown, not 0";
  EXPECT_FALSE(fs.has_inodes_used());
  EXPECT_GT(fs.timestamp(), 0);
  EXPECT_FALSE(resp->container_filesystems(0).has_used_bytes());
  EXPECT_NE(log.find("Docker Engine 20.10.24 keeps images with storage driver \"overlayfs\" "
                     "(io.containerd.someday.v1), an image store dockershim cannot measure"),
            std::string::npos)
      << log;
}

}  // namespace
}  // namespace shim

// EngineStorage: which directories hold an engine's images and writable layers, for a
// graph driver, for Docker's containerd image store (through a fake containerd), and
// for a store it does not know.
#include "shim/storage/engine_storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "tests/unit/fake_containerd.h"

namespace shim::storage {
namespace {

using containerdclient::Mount;
using testing_fakes::FakeContainerd;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kSocket[] = "/run/docker/containerd/containerd.sock";

class EngineStorageTest : public ::testing::Test {
 protected:
  EngineStorageTest()
      : storage_(
            [this](const std::string& address) {
              connected_.push_back(address);
              return std::make_unique<FakeContainerd>(containerd_);
            },
            [this] { return now_; }) {
    containerd_.roots[{"io.containerd.content.v1", "content"}] = "/var/lib/containerd/io.containerd.content.v1.content";
    containerd_.roots[{"io.containerd.snapshotter.v1", "overlayfs"}] =
        "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";
  }

  // /info of Docker 29 with its default store.
  static dockerclient::SystemInfo ContainerdStore() {
    dockerclient::SystemInfo info;
    info.server_version = "29.7.2";
    info.docker_root_dir = "/var/lib/docker";
    info.driver = "overlayfs";
    info.driver_type = kSnapshotterDriverType;
    info.containerd_address = kSocket;
    info.containerd_namespace = "moby";
    return info;
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(5));
  FakeContainerd::State containerd_;
  std::vector<std::string> connected_;
  absl::Time now_ = absl::FromUnixSeconds(1800000000);
  EngineStorage storage_;
};

class TempDir {
 public:
  TempDir() : path_(std::filesystem::temp_directory_path() / ("dsstore-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST_F(EngineStorageTest, GraphDriverIsItsDirectoryAndTheImageMetadata) {
  TempDir root;
  std::filesystem::create_directories(root / "overlay2");
  std::filesystem::create_directories(root / "image");
  dockerclient::SystemInfo info;
  info.docker_root_dir = root.str();
  info.driver = "overlay2";
  auto store = storage_.Store(ctx_, info);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->unknown, "");
  EXPECT_EQ(store->description, "graph driver overlay2");
  EXPECT_EQ(store->mountpoint, root.str());
  EXPECT_THAT(store->dirs, ElementsAre(root / "overlay2", root / "image"));
  EXPECT_TRUE(connected_.empty()) << "a graph driver needs no containerd";
}

TEST_F(EngineStorageTest, GraphDriverWithoutItsDirectoryIsUnknownAndLoggedOnce) {
  TempDir root;
  dockerclient::SystemInfo info;
  info.server_version = "28.5.2";
  info.docker_root_dir = root.str();
  info.driver = "vfs";
  ::testing::internal::CaptureStderr();
  auto first = storage_.Store(ctx_, info);
  auto second = storage_.Store(ctx_, info);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_THAT(first->unknown, HasSubstr(root / "vfs"));
  EXPECT_TRUE(first->dirs.empty());
  EXPECT_EQ(first->mountpoint, root.str());
  EXPECT_THAT(log, HasSubstr("Docker Engine 28.5.2 keeps images with storage driver \"vfs\""));
  EXPECT_THAT(log, HasSubstr("without used bytes or inodes (unknown, not 0)"));
  EXPECT_EQ(log.find("Docker Engine"), log.rfind("Docker Engine")) << "logged once: " << log;
}

TEST_F(EngineStorageTest, GraphDriversWithALayerPerFileSystemAreUnknown) {
  TempDir root;
  for (const char* driver : {"btrfs", "zfs"}) {
    std::filesystem::create_directories(root / driver);
    dockerclient::SystemInfo info;
    info.docker_root_dir = root.str();
    info.driver = driver;
    ::testing::internal::CaptureStderr();
    auto store = storage_.Store(ctx_, info);
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_THAT(store->unknown, HasSubstr("file systems of their own")) << driver;
    EXPECT_TRUE(store->dirs.empty()) << driver;
    EXPECT_THAT(log, HasSubstr(absl::StrCat("storage driver \"", driver, "\"")));
  }
}

TEST_F(EngineStorageTest, ContainerdStoreIsTheContentStoreAndTheSnapshotterAskedOnce) {
  auto store = storage_.Store(ctx_, ContainerdStore());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->unknown, "");
  EXPECT_EQ(store->description, "containerd snapshotter overlayfs");
  EXPECT_EQ(store->mountpoint, "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs");
  EXPECT_THAT(store->dirs, ElementsAre("/var/lib/containerd/io.containerd.content.v1.content",
                                       "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"));
  EXPECT_THAT(connected_, ElementsAre(kSocket));
  const int calls = containerd_.calls;
  ASSERT_TRUE(storage_.Store(ctx_, ContainerdStore()).ok());
  EXPECT_EQ(containerd_.calls, calls) << "the roots are kept";
  EXPECT_EQ(connected_.size(), 1u);
}

TEST_F(EngineStorageTest, AContainerdAwayIsUnavailableAndLeftAloneAWhile) {
  containerd_.away = absl::UnavailableError("containerd at /run/x.sock did not answer within 5s (list its plugins)");
  auto store = storage_.Store(ctx_, ContainerdStore());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(store.status().message(), HasSubstr("did not answer"));
  const int calls = containerd_.calls;
  EXPECT_EQ(storage_.Store(ctx_, ContainerdStore()).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(containerd_.calls, calls) << "not asked again at once";
  containerd_.away = absl::OkStatus();
  now_ += absl::Seconds(6);
  store = storage_.Store(ctx_, ContainerdStore());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(store->dirs.size(), 2u);
}

TEST_F(EngineStorageTest, TheCallersDeadlineSaysNothingOfContainerd) {
  containerd_.away = absl::DeadlineExceededError("deadline");
  EXPECT_EQ(storage_.Store(ctx_, ContainerdStore()).status().code(), absl::StatusCode::kDeadlineExceeded);
  containerd_.away = absl::OkStatus();
  EXPECT_TRUE(storage_.Store(ctx_, ContainerdStore()).ok()) << "asked again at once";
}

TEST_F(EngineStorageTest, StoresItCannotMeasureAreUnknown) {
  dockerclient::SystemInfo other = ContainerdStore();
  other.driver_type = "io.containerd.future.v1";
  dockerclient::SystemInfo no_address = ContainerdStore();
  no_address.containerd_address.clear();
  dockerclient::SystemInfo no_plugin = ContainerdStore();
  no_plugin.driver = "stargz";
  containerd_.roots[{"io.containerd.snapshotter.v1", "btrfs"}] =
      absl::FailedPreconditionError("plugin io.containerd.snapshotter.v1.btrfs did not load: not a btrfs");
  dockerclient::SystemInfo failed_plugin = ContainerdStore();
  failed_plugin.driver = "btrfs";
  for (const auto& [info, why] : {std::pair{other, "driver type is not io.containerd.snapshotter.v1"},
                                  std::pair{no_address, "which containerd it uses"},
                                  std::pair{no_plugin, "has no plugin"},
                                  std::pair{failed_plugin, "did not load"}}) {
    ::testing::internal::CaptureStderr();
    auto store = storage_.Store(ctx_, info);
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_THAT(store->unknown, HasSubstr(why));
    EXPECT_TRUE(store->dirs.empty()) << why;
    EXPECT_EQ(store->mountpoint, "/var/lib/docker");
    EXPECT_THAT(log, HasSubstr(absl::StrCat("Docker Engine 29.7.2 keeps images with storage driver \"", info.driver,
                                            "\" (", info.driver_type, ")")));
    EXPECT_THAT(log, HasSubstr(why));
  }
}

TEST_F(EngineStorageTest, WritableLayerOfAGraphDriverIsItsUpperDir) {
  dockerclient::SystemInfo info;
  info.driver = "overlay2";
  dockerclient::ContainerInspect c;
  c.id = "c1";
  c.upper_dir = "/var/lib/docker/overlay2/abc/diff";
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, info, c), "/var/lib/docker/overlay2/abc/diff");
  EXPECT_TRUE(connected_.empty());
}

TEST_F(EngineStorageTest, WritableLayerOnTheContainerdStoreIsItsSnapshotsUpperDir) {
  containerd_.snapshots[{"moby", "overlayfs", "c1"}] = {
      Mount{"overlay", "overlay",
            {"index=off", "workdir=/s/snapshots/4/work", "upperdir=/s/snapshots/4/fs",
             "lowerdir=/s/snapshots/3/fs:/s/snapshots/1/fs"}}};
  containerd_.snapshots[{"moby", "native", "c2"}] = {Mount{"bind", "/n/snapshots/7/fs", {"rbind", "rw"}}};
  dockerclient::ContainerInspect c1;
  c1.id = "c1";
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, ContainerdStore(), c1), "/s/snapshots/4/fs");
  // Docker 29 names the container's snapshotter (Storage.RootFS.Snapshot.Name).
  dockerclient::ContainerInspect c2;
  c2.id = "c2";
  c2.storage_driver = "native";
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, ContainerdStore(), c2), "/n/snapshots/7/fs");
  // No snapshot (yet, or any more): nothing to measure, not an error.
  dockerclient::ContainerInspect gone;
  gone.id = "gone";
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, ContainerdStore(), gone), "");
  // Docker names its namespace; "moby" when it does not.
  dockerclient::SystemInfo other_ns = ContainerdStore();
  other_ns.containerd_namespace = "elsewhere";
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, other_ns, c1), "");
  other_ns.containerd_namespace.clear();
  EXPECT_EQ(*storage_.WritableLayerDir(ctx_, other_ns, c1), "/s/snapshots/4/fs");

  containerd_.away = absl::UnavailableError("containerd at x is not there");
  EXPECT_EQ(storage_.WritableLayerDir(ctx_, ContainerdStore(), c1).status().code(), absl::StatusCode::kUnavailable);
}

TEST(UpperDirOfTest, TheWritableDirectoryOfSnapshotMounts) {
  EXPECT_EQ(containerdclient::UpperDirOf({Mount{"overlay", "overlay", {"upperdir=/u", "lowerdir=/l"}}}), "/u");
  EXPECT_EQ(containerdclient::UpperDirOf({Mount{"bind", "/fs", {"rbind", "rw"}}}), "/fs");
  EXPECT_EQ(containerdclient::UpperDirOf({Mount{"bind", "/fs", {"rbind", "ro"}}}), "") << "a view";
  EXPECT_EQ(containerdclient::UpperDirOf({Mount{"overlay", "overlay", {"lowerdir=/a:/b"}}}), "") << "a view";
  EXPECT_EQ(containerdclient::UpperDirOf({}), "");
}

}  // namespace
}  // namespace shim::storage

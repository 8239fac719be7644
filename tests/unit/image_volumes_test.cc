// imagevolumes::ImageVolumes on the fake Docker client, with the real tar.
#include "shim/imagevolumes/image_volumes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"

namespace shim::imagevolumes {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_fakes::FakeDockerClient;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class ImageVolumesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/image_volumes_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/image-volumes";
    image_ = docker_.AddImage({"registry.example/models:v1"});
    docker_.SetImageFiles(image_, {{"bin/", ""}, {"bin/hello", "hello\n"}, {"weights/v1/w.bin", "0123"}});
    volumes_ = std::make_unique<ImageVolumes>(docker_, dir_);
  }
  void TearDown() override {
    volumes_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  std::string Hex() const { return image_.substr(7); }
  // A container that binds the image's tree, as CreateContainer makes one.
  std::string AddUser(const std::string& name) {
    auto id = docker_.CreateContainer(ctx_, name, {{"Image", image_}, {"Labels", {{kImageVolumesLabel, image_}}}});
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or("");
  }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(30));
  FakeDockerClient docker_;
  std::string root_, dir_, image_;
  std::unique_ptr<ImageVolumes> volumes_;
};

TEST_F(ImageVolumesTest, UnpacksOnceAndLeavesNoContainer) {
  ImageVolumes::Hold hold;
  auto whole = volumes_->Prepare(ctx_, image_, "", hold);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, dir_ + "/" + Hex() + "/rootfs");
  EXPECT_EQ(Slurp(*whole + "/bin/hello"), "hello\n");
  EXPECT_EQ(fs::status(*whole + "/bin/hello").permissions(), fs::perms(0755));

  auto sub = volumes_->Prepare(ctx_, image_, "weights/v1", hold);
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_EQ(*sub, *whole + "/weights/v1");
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 1);
  EXPECT_THAT(docker_.Containers(), IsEmpty());  // the unpack container is gone
  EXPECT_THAT(Entries(dir_), ::testing::ElementsAre(Hex()));
}

TEST_F(ImageVolumesTest, ConcurrentPreparesUnpackOnce) {
  constexpr int kThreads = 8;
  ImageVolumes::Hold holds[kThreads];
  std::vector<absl::StatusOr<std::string>> paths(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { paths[i] = volumes_->Prepare(ctx_, image_, "bin", holds[i]); });
  }
  for (auto& t : threads) t.join();
  for (const auto& p : paths) {
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(*p, dir_ + "/" + Hex() + "/rootfs/bin");
  }
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 1);
  EXPECT_EQ(docker_.CallCount("CreateContainer"), 1);
}

TEST_F(ImageVolumesTest, RemovedWhenTheLastUserGoes) {
  ImageVolumes::Hold hold;
  ASSERT_TRUE(volumes_->Prepare(ctx_, image_, "", hold).ok());
  const std::string tree = dir_ + "/" + Hex();
  // A create under way keeps it although no container has the label yet.
  volumes_->RemoveUnused(ctx_, {image_});
  EXPECT_TRUE(fs::exists(tree));

  const std::string first = AddUser("first"), second = AddUser("second");
  hold.Release();
  volumes_->RemoveUnused(ctx_, {image_});
  EXPECT_TRUE(fs::exists(tree));
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, first, true).ok());
  volumes_->RemoveUnused(ctx_, {image_});
  EXPECT_TRUE(fs::exists(tree));  // the second still binds it
  ASSERT_TRUE(docker_.RemoveContainer(ctx_, second, true).ok());
  volumes_->RemoveUnused(ctx_, {image_});
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_THAT(Entries(dir_), IsEmpty());

  // A later create unpacks it anew.
  ImageVolumes::Hold again;
  ASSERT_TRUE(volumes_->Prepare(ctx_, image_, "bin", again).ok());
  EXPECT_EQ(docker_.CallCount("ExportContainer"), 2);
}

TEST_F(ImageVolumesTest, FailedExportLeavesNoTreeAndNoContainer) {
  docker_.FailOperation("ExportContainer", absl::UnavailableError("export container: connection reset"));
  ImageVolumes::Hold hold;
  auto path = volumes_->Prepare(ctx_, image_, "", hold);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kUnavailable) << path.status();
  EXPECT_THAT(std::string(path.status().message()), HasSubstr(image_));
  EXPECT_THAT(Entries(dir_), IsEmpty());
  EXPECT_THAT(docker_.Containers(), IsEmpty());
}

TEST_F(ImageVolumesTest, FailedExtractionLeavesNoTreeAndNoContainer) {
  // "a" is a file, so tar cannot create "a/b".
  docker_.SetImageFiles(image_, {{"a", "file"}, {"a/b", "under a file"}});
  ImageVolumes::Hold hold;
  auto path = volumes_->Prepare(ctx_, image_, "", hold);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kInternal) << path.status();
  EXPECT_THAT(std::string(path.status().message()), HasSubstr("tar failed"));
  EXPECT_THAT(Entries(dir_), IsEmpty());
  EXPECT_THAT(docker_.Containers(), IsEmpty());
}

TEST_F(ImageVolumesTest, SubPathOutsideOrMissing) {
  ImageVolumes::Hold hold;
  auto up = volumes_->Prepare(ctx_, image_, "bin/../../x", hold);
  EXPECT_EQ(up.status().code(), absl::StatusCode::kInvalidArgument) << up.status();
  auto missing = volumes_->Prepare(ctx_, image_, "no/such", hold);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("\"no/such\" is not in the image"));
  // Neither holds the tree: nothing binds it.
  volumes_->RemoveUnused(ctx_, {image_});
  EXPECT_THAT(Entries(dir_), IsEmpty());
}

TEST_F(ImageVolumesTest, SweepKeepsOnlyTreesInUse) {
  ImageVolumes::Hold hold;
  ASSERT_TRUE(volumes_->Prepare(ctx_, image_, "", hold).ok());
  AddUser("user");
  const std::string unused = std::string(64, 'e');
  fs::create_directories(dir_ + "/" + unused + "/rootfs");
  fs::create_directories(dir_ + "/" + Hex() + ".partial/rootfs");
  // An unpack container a crash left.
  ASSERT_TRUE(docker_.CreateContainer(ctx_, "", {{"Image", image_}, {"Labels", {{"io.dockershim.image-volume-unpack", image_}}}}).ok());

  ImageVolumes restarted(docker_, dir_);
  ASSERT_TRUE(restarted.Sweep(ctx_).ok());
  EXPECT_THAT(Entries(dir_), ::testing::ElementsAre(Hex()));
  EXPECT_EQ(docker_.Containers().size(), 1u);  // the user
}

TEST_F(ImageVolumesTest, SweepWithoutTreesCallsNoDocker) {
  ASSERT_TRUE(volumes_->Sweep(ctx_).ok());
  EXPECT_THAT(docker_.Calls(), IsEmpty());
}

TEST(ResolveInTree, FollowsSymlinksInsideTheTree) {
  std::string tmpl = ::testing::TempDir() + "/resolve_test.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::string root = tmpl;
  fs::create_directories(root + "/usr/lib");
  fs::create_symlink("/usr/lib", root + "/lib");        // absolute: from the tree's root
  fs::create_symlink("../../../..", root + "/usr/up");  // climbs no higher than the root
  fs::create_symlink("loop", root + "/loop");

  EXPECT_EQ(ResolveInTree(root, "").value_or("?"), root);
  EXPECT_EQ(ResolveInTree(root, "lib").value_or("?"), root + "/usr/lib");
  EXPECT_EQ(ResolveInTree(root, "./usr//lib/").value_or("?"), root + "/usr/lib");
  EXPECT_EQ(ResolveInTree(root, "usr/up/usr").value_or("?"), root + "/usr");
  EXPECT_EQ(ResolveInTree(root, "lib/none").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveInTree(root, "usr/../etc").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveInTree(root, "/usr").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolveInTree(root, "loop").status().code(), absl::StatusCode::kInvalidArgument);
  fs::remove_all(root);
}

}  // namespace
}  // namespace shim::imagevolumes

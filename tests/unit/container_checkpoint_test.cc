// CheckpointContainer on the fake Docker client (which plays CRIU by writing image
// files): request checks, what the engine must offer, and the archive's content,
// read back with GNU tar.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shim/cri_service.h"
#include "shim/imagevolumes/tar_extract.h"
#include "shim/naming.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/fake_network.h"

namespace shim {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing_fakes::FakeDockerClient;
using testing_fakes::FakeNetwork;
using json = nlohmann::json;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class CheckpointContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/container_checkpoint_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::create_directories(dir_ / "out");
    fs::create_directories(dir_ / "bin");
    // A criu for the lookup to find; the fake client does the dumping.
    std::ofstream(dir_ / "bin" / "criu") << "#!/bin/sh\n";
    fs::permissions(dir_ / "bin" / "criu", fs::perms::owner_all);
    const char* path = std::getenv("PATH");
    saved_path_ = path ? path : "";
    ::setenv("PATH", (dir_ / "bin").c_str(), 1);
    docker_.AddImage({"busybox:latest"});
    docker_.info.server_version = "26.1.5";
    docker_.info.raw["ExperimentalBuild"] = true;
    Options o;
    o.root_directory = (dir_ / "root").string();
    o.oom_score_adj_floor = -1000;
    service_ = std::make_unique<CriService>(o, docker_, network_);
    ASSERT_TRUE(service_->Init().ok());
    json body = {{"Image", "busybox:latest"},
                 {"Labels", {{kContainerTypeLabel, kContainerTypeContainer}, {kContainerNameLabel, "app"}}}};
    auto id = docker_.CreateContainer(ctx_, "k8s_app_pod_default_uid_0", body);
    ASSERT_TRUE(id.ok());
    id_ = *id;
    ASSERT_TRUE(docker_.StartContainer(ctx_, id_).ok());
  }
  void TearDown() override {
    ::setenv("PATH", saved_path_.c_str(), 1);
    service_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  absl::Status Checkpoint(const std::string& id, const std::string& location, int64_t timeout = 0) {
    v1::CheckpointContainerRequest req;
    req.set_container_id(id);
    req.set_location(location);
    req.set_timeout(timeout);
    return service_->CheckpointContainer(ctx_, req).status();
  }
  std::string Location() const { return (dir_ / "out" / "checkpoint-pod_default-app.tar").string(); }

  common::Context ctx_ = common::Context::WithTimeout(absl::Seconds(30));
  fs::path dir_;
  std::string saved_path_;
  FakeDockerClient docker_;
  FakeNetwork network_;
  std::unique_ptr<CriService> service_;
  std::string id_;
};

TEST_F(CheckpointContainerTest, WritesATarOfTheCriuImagesAndTheContainersConfig) {
  ASSERT_TRUE(Checkpoint(id_.substr(0, 12), Location()).ok());
  EXPECT_THAT(Names(dir_ / "out"), ElementsAre("checkpoint-pod_default-app.tar"));  // nothing else left
  EXPECT_EQ(docker_.last_checkpoint.exit, false);  // the container keeps running
  ::setenv("PATH", saved_path_.c_str(), 1);  // for tar
  fs::create_directories(dir_ / "x");
  auto tar = imagevolumes::TarExtractor::Start((dir_ / "x").string());
  ASSERT_TRUE(tar.ok()) << tar.status();
  ASSERT_TRUE(tar->Write(ReadFile(Location())).ok());
  ASSERT_TRUE(tar->Finish().ok());
  EXPECT_THAT(Names(dir_ / "x"), ElementsAre("checkpoint", "config.dump"));
  EXPECT_THAT(Names(dir_ / "x" / "checkpoint"), ElementsAre("inventory.img", "pages-1.img"));
  EXPECT_EQ(ReadFile(dir_ / "x" / "checkpoint" / "inventory.img"), "criu inventory of " + id_);
  EXPECT_EQ(ReadFile(dir_ / "x" / "checkpoint" / "pages-1.img"), std::string(3000, 'p'));
  const json config = json::parse(ReadFile(dir_ / "x" / "config.dump"));
  EXPECT_EQ(config["id"], id_);
  EXPECT_EQ(config["name"], "app");
  EXPECT_EQ(config["rootfsImageName"], "busybox:latest");
  EXPECT_TRUE(config["checkpointedTime"].is_string());
}

TEST_F(CheckpointContainerTest, TheRequestsTimeoutBoundsTheDockerCall) {
  ASSERT_TRUE(Checkpoint(id_, Location(), /*timeout=*/7).ok());
  const absl::Duration left = docker_.last_checkpoint_deadline - absl::Now();
  EXPECT_GT(left, absl::Seconds(4));
  EXPECT_LE(left, absl::Seconds(7));
}

TEST_F(CheckpointContainerTest, BadRequestsAreInvalidArgument) {
  std::ofstream(dir_ / "file") << "x";
  for (const auto& [id, location] : std::vector<std::pair<std::string, std::string>>{
           {"", Location()},
           {id_, ""},
           {id_, "relative/checkpoint.tar"},
           {id_, (dir_ / "missing" / "c.tar").string()},
           {id_, (dir_ / "file" / "c.tar").string()},
           {id_, (dir_ / "out").string()}}) {
    absl::Status s = Checkpoint(id, location);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << location << ": " << s;
  }
  EXPECT_TRUE(absl::IsInvalidArgument(Checkpoint(id_, Location(), -1)));
  EXPECT_EQ(docker_.CallCount("CreateCheckpoint"), 0);
  EXPECT_THAT(Names(dir_ / "out"), IsEmpty());
}

TEST_F(CheckpointContainerTest, UnknownContainerIsNotFoundAndAStoppedOneFailedPrecondition) {
  EXPECT_TRUE(absl::IsNotFound(Checkpoint(std::string(64, 'f'), Location())));
  ASSERT_TRUE(docker_.StopContainer(ctx_, id_, {0}).ok());
  absl::Status s = Checkpoint(id_, Location());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("not running"));
  EXPECT_EQ(docker_.CallCount("CreateCheckpoint"), 0);
  EXPECT_THAT(Names(dir_ / "out"), IsEmpty());
}

TEST_F(CheckpointContainerTest, WithoutExperimentalFeaturesItSaysHowToEnableThem) {
  docker_.info.raw["ExperimentalBuild"] = false;
  absl::Status s = Checkpoint(id_, Location());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("\"experimental\": true in /etc/docker/daemon.json"));
  EXPECT_THAT(s.message(), HasSubstr("26.1.5"));
  EXPECT_EQ(docker_.CallCount("CreateCheckpoint"), 0);
  EXPECT_THAT(Names(dir_ / "out"), IsEmpty());
}

TEST_F(CheckpointContainerTest, WithoutCriuItSaysCriuIsMissing) {
  fs::remove(dir_ / "bin" / "criu");
  absl::Status s = Checkpoint(id_, Location());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("criu was not found"));
  EXPECT_EQ(docker_.CallCount("CreateCheckpoint"), 0);
  EXPECT_THAT(Names(dir_ / "out"), IsEmpty());
}

TEST_F(CheckpointContainerTest, AFailedDumpLeavesNothingBehind) {
  docker_.FailOperation("CreateCheckpoint", absl::InternalError("criu failed: type NOTIFY errno 0"));
  absl::Status s = Checkpoint(id_, Location());
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("criu failed"));
  EXPECT_THAT(Names(dir_ / "out"), IsEmpty());
}

TEST_F(CheckpointContainerTest, AnExistingFileIsReplacedWhole) {
  std::ofstream(Location()) << "an older checkpoint";
  ASSERT_TRUE(Checkpoint(id_, Location()).ok());
  EXPECT_NE(ReadFile(Location()), "an older checkpoint");
  EXPECT_THAT(Names(dir_ / "out"), ElementsAre("checkpoint-pod_default-app.tar"));
}

}  // namespace
}  // namespace shim

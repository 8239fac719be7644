// The log copier on a real dockerd with json-file logs read from Docker's own files:
// Docker's rotation (max-size, max-file), lines longer than Docker's 16 KiB pieces,
// stdout and stderr in order, a restart in the middle, and the same CRI file byte
// for byte as the copy through Docker's logs API.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "dockerclient/docker_client_impl.h"
#include "shim/logs/log_copier.h"
#include "tests/integration/env.h"

namespace shim::logs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

// "" when `log` (CRI) holds exactly <prefix>0 … <prefix><lines-1> then "done", each
// once, in order, complete lines on `stream`; what is wrong otherwise.
std::string CheckNumbered(const std::string& log, int lines, const std::string& stream = "stdout") {
  std::istringstream in(log);
  std::string line;
  int next = 0;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.compare(space, 10, " " + stream + " F ") != 0) return "not a CRI line: " + line;
    const std::string text = line.substr(space + 10);
    const std::string want = next < lines ? "line-" + std::to_string(next) + "-padding-padding-padding" : "done";
    if (text != want) return "expected " + want + ", found " + text;
    ++next;
  }
  return next == lines + 1 ? "" : "only " + std::to_string(next) + " lines";
}

std::string NumberedScript(int lines) {
  return absl::StrCat("i=0; while [ $i -lt ", lines, " ]; do echo line-$i-padding-padding-padding; i=$((i+1)); done; echo done");
}

class LogFileIntegration : public ::testing::Test {
 protected:
  void SetUp() override {
    auto client = dockerclient::DockerClientImpl::Create(testenv::DockerEndpoint());
    ASSERT_TRUE(client.ok()) << client.status();
    docker_ = std::move(*client);
    ASSERT_TRUE(docker_->Ping(Ctx()).ok()) << "dockerd must run (scripts/test-env.sh)";
    char dir[] = "/tmp/log_file_test.XXXXXX";
    dir_ = ::mkdtemp(dir);
  }
  void TearDown() override {
    for (const auto& id : created_) (void)docker_->RemoveContainer(Ctx(), id, /*force=*/true);
    fs::remove_all(dir_);
  }
  static common::Context Ctx() { return common::Context::WithTimeout(absl::Seconds(60)); }

  std::unique_ptr<LogCopier> Copier(bool from_files) {
    CopierOptions options;
    options.docker_socket_path = std::string(absl::StripPrefix(testenv::DockerEndpoint(), "unix://"));
    options.read_json_files = from_files;
    return std::make_unique<LogCopier>(*docker_, options);
  }

  // Creates and starts a busybox container running `script` with json-file `opts`.
  absl::StatusOr<dockerclient::ContainerInspect> Run(const std::string& script, const json& opts) {
    const json body = {{"Image", testenv::BusyboxImage()},
                       {"Cmd", {"sh", "-c", script}},
                       {"HostConfig", {{"NetworkMode", "none"}, {"LogConfig", {{"Type", "json-file"}, {"Config", opts}}}}},
                       {"Labels", {{"io.dockershim.test", "log_file_test"}}}};
    static int serial = 0;
    auto id = docker_->CreateContainer(Ctx(), absl::StrCat("dockershim-logfile-", ::getpid(), "-", serial++), body);
    if (!id.ok()) return id.status();
    created_.push_back(*id);
    if (absl::Status s = docker_->StartContainer(Ctx(), *id); !s.ok()) return s;
    return docker_->InspectContainer(Ctx(), *id);
  }

  bool WaitExited(const std::string& id) {
    for (int i = 0; i < 1200; ++i) {
      auto inspect = docker_->InspectContainer(Ctx(), id);
      if (inspect.ok() && inspect->state.status == "exited") return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }

  std::unique_ptr<dockerclient::DockerClient> docker_;
  std::string dir_;
  std::vector<std::string> created_;
};

TEST_F(LogFileIntegration, DockersRotationLosesAndDoublesNoLineAndMatchesTheApiCopy) {
  constexpr int kLines = 20000;  // 40 bytes each, ~2.5 MB of json: ~25 rotations at 100k
  auto c = Run(NumberedScript(kLines), {{"max-size", "100k"}, {"max-file", "50"}});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->raw["HostConfig"]["LogConfig"]["Type"], "json-file");
  auto files = Copier(true);
  const std::string from_files = dir_ + "/files.log";
  files->Follow(c->id, from_files, false, c->log_path);
  ASSERT_TRUE(WaitExited(c->id));
  ASSERT_TRUE(files->AwaitFinished(c->id, absl::Seconds(10)));
  EXPECT_EQ(files->Stats().fallbacks, 0u);
  EXPECT_TRUE(fs::exists(c->log_path + ".1")) << "Docker did not rotate";
  EXPECT_EQ(CheckNumbered(ReadFile(from_files), kLines), "");

  auto api = Copier(false);
  const std::string from_api = dir_ + "/api.log";
  api->Follow(c->id, from_api, false, c->log_path);
  ASSERT_TRUE(api->AwaitFinished(c->id, absl::Seconds(30)));
  EXPECT_EQ(ReadFile(from_files), ReadFile(from_api)) << "both paths write the same CRI lines";
}

TEST_F(LogFileIntegration, LongLinesBecomePiecesAndStreamsStayInOrder) {
  // 40000 bytes without a newline, then a line on stderr, then a short stdout line (the
  // sleeps: Docker copies stdout and stderr on two goroutines, so their order in its log
  // is the order it read them in, not the container's).
  auto c = Run("head -c 40000 /dev/zero | tr '\\0' a; echo; sleep 1; echo err >&2; sleep 1; echo end", json::object());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(WaitExited(c->id));
  auto files = Copier(true);
  const std::string from_files = dir_ + "/files.log";
  files->Follow(c->id, from_files, false, c->log_path);
  ASSERT_TRUE(files->AwaitFinished(c->id, absl::Seconds(10)));
  const std::string log = ReadFile(from_files);
  std::istringstream in(log);
  std::string line, joined, tags;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    ASSERT_NE(space, std::string::npos);
    tags += line.substr(space + 1, 8) + ";";
    if (line.compare(space, 8, " stdout ") == 0 && joined.size() < 40000) joined += line.substr(space + 10);
  }
  EXPECT_EQ(joined, std::string(40000, 'a'));
  EXPECT_THAT(tags, ::testing::EndsWith("stdout F;stderr F;stdout F;")) << tags;
  EXPECT_THAT(tags, ::testing::StartsWith("stdout P;stdout P;")) << tags;
  EXPECT_THAT(log, ::testing::HasSubstr(" stderr F err\n"));

  auto api = Copier(false);
  const std::string from_api = dir_ + "/api.log";
  api->Follow(c->id, from_api, false, c->log_path);
  ASSERT_TRUE(api->AwaitFinished(c->id, absl::Seconds(30)));
  EXPECT_EQ(log, ReadFile(from_api));
}

TEST_F(LogFileIntegration, ARestartInTheMiddleResumesAcrossRotatedFiles) {
  constexpr int kLines = 3000;  // about 12 rotations at max-size 20k
  auto c = Run(absl::StrCat("sleep 0.5; i=0; while [ $i -lt ", kLines,
                            " ]; do echo line-$i-padding-padding-padding; i=$((i+1)); usleep 300; done; echo done"),
               {{"max-size", "20k"}, {"max-file", "100"}});
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string path = dir_ + "/0.log";
  auto first = Copier(true);
  first->Follow(c->id, path, false, c->log_path);
  const auto lines = [&] {
    const std::string text = ReadFile(path);
    return std::count(text.begin(), text.end(), '\n');
  };
  // The copy is in the middle (the container's pace depends on the machine's load).
  for (int i = 0; i < 3000 && lines() < 500; ++i) absl::SleepFor(absl::Milliseconds(10));
  ASSERT_GE(lines(), 500);
  first.reset();  // the shim is gone; the container writes and Docker rotates on
  std::ofstream(path, std::ios::app) << "2026-12-01T10:00:00.000000001Z stdout F li";  // a write cut short
  absl::SleepFor(absl::Milliseconds(500));
  auto second = Copier(true);
  second->Follow(c->id, path, false, c->log_path);
  ASSERT_TRUE(WaitExited(c->id));
  ASSERT_TRUE(second->AwaitFinished(c->id, absl::Seconds(10)));
  EXPECT_EQ(second->Stats().fallbacks, 0u);
  EXPECT_EQ(CheckNumbered(ReadFile(path), kLines), "");
}

}  // namespace
}  // namespace shim::logs

// The log copier against a scripted dockerd on a unix socket: Docker's chunked log
// stream (multiplexed frames, or raw with a TTY) becomes CRI lines in the file, and
// copying resumes without loss or duplicates after a restart or a broken stream.
#include "shim/logs/log_copier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/no_wait.h"
#include "shim/logs/cri_log.h"
#include "tests/unit/eventually.h"
#include "tests/unit/fake_docker_client.h"
#include "tests/unit/test_http_server.h"

namespace shim::logs {
namespace {

using testutil::Eventually;

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Frame(uint8_t stream, std::string_view payload) {
  std::string frame(8, '\0');
  frame[0] = static_cast<char>(stream);
  const auto size = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame[4 + i] = static_cast<char>(size >> (8 * (3 - i)));
  return frame + std::string(payload);
}


std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

class LogCopierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/log_copier_test.XXXXXX";
    root_ = ::mkdtemp(dir);
    path_ = root_ + "/pod/app/0.log";
    fs::create_directories(fs::path(path_).parent_path());
    docker_.version.api_version = "1.41";
  }
  void TearDown() override {
    release_ = true;  // a test that failed early must not leave a script waiting forever
    fs::remove_all(root_);
  }

  // Serves each logs request with `script(fd, index)`; records the request targets.
  void Serve(std::function<void(int fd, int index)> script) {
    server_ = std::make_unique<testhttp::UnixHttpServer>([this, script](int fd, int index) {
      std::string buffer;
      auto request = testhttp::ReadRequest(fd, buffer);
      if (!request) return;
      {
        std::lock_guard<std::mutex> lock(mu_);
        targets_.push_back(request->target);
      }
      script(fd, index);
    });
    CopierOptions options;
    options.docker_socket_path = server_->path();
    options.retry_delay = absl::Milliseconds(20);
    copier_ = std::make_unique<LogCopier>(docker_, options);
  }

  std::vector<std::string> Targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

  bool FileHolds(const std::string& want) {
    return Eventually([&] { return ReadFile(path_) == want; });
  }

  std::string root_, path_;
  testing_fakes::FakeDockerClient docker_;
  // What a test's script waits for. A member, not a test's local, because the script's
  // thread may still run after the test body returns, until server_ is destroyed.
  std::atomic<bool> release_{false};
  // Before server_: its thread records requests until server_ is destroyed (the copier's
  // last read of an ended stream may come while the fixture is torn down).
  std::mutex mu_;
  std::vector<std::string> targets_;
  std::unique_ptr<testhttp::UnixHttpServer> server_;
  std::unique_ptr<LogCopier> copier_;
};

constexpr char kT1[] = "2026-12-01T10:00:00.000000001Z";
constexpr char kT2[] = "2026-12-01T10:00:00.000000002Z";
constexpr char kT3[] = "2026-12-01T10:00:00.000000003Z";

TEST_F(LogCopierTest, WritesBothStreamsAsCriLines) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " hello\n")) + Frame(2, absl::StrCat(kT2, " oops\n"))));
    // A line longer than a read, and a partial message the next one ends.
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT3, " part"))));
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT3, " rest\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, /*tty=*/false);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F hello\n", kT2, " stderr F oops\n", kT3, " stdout P part\n", kT3,
                                     " stdout F rest\n")))
      << ReadFile(path_);
  EXPECT_THAT(Targets().at(0), HasSubstr("/v1.41/containers/c1/logs?stdout=1&stderr=1&timestamps=1&follow=1"));
  EXPECT_THAT(Targets().at(0), ::testing::Not(HasSubstr("since=")));
  EXPECT_TRUE(Eventually([&] { return copier_->Stats().containers == 0; }));  // the stream ended: the container stopped
  EXPECT_EQ(copier_->Stats().bytes_written, ReadFile(path_).size());
}

TEST_F(LogCopierTest, TtyOutputIsOneStreamOfLines) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(absl::StrCat(kT1, " $ ls\r\n", kT2, " a")));
    testhttp::WriteAll(fd, testhttp::Chunk(absl::StrCat("b\r\n")));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, /*tty=*/true);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F $ ls\r\n", kT2, " stdout F ab\r\n"))) << ReadFile(path_);
}

TEST_F(LogCopierTest, ResumesAfterWhatTheFileHoldsWithoutDuplicates) {
  // A previous shim wrote two lines at T2 (a cut message), then died in the middle of
  // a write: the partial line is cut, and the lines at T2 it holds are not written again.
  std::ofstream(path_) << kT1 << " stdout F one\n" << kT2 << " stdout P 1234\n" << kT2 << " stdout P 5678\n" << kT2
                       << " stdout F ab";
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT2, " 12345678ab\n")) + Frame(2, absl::StrCat(kT3, " two\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  // The encoder cuts at 16 KiB, so the resumed message gives a single F line here; the
  // two P lines at T2 are what the file already holds and are skipped from it.
  copier_->Follow("c1", path_, false);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n", kT2, " stdout P 1234\n", kT2, " stdout P 5678\n", kT3,
                                     " stderr F two\n")))
      << ReadFile(path_);
  EXPECT_THAT(Targets().at(0), HasSubstr("&since=1796119200.000000002"));
}

TEST_F(LogCopierTest, AfterARotationResumesAfterTheNewestRotatedFile) {
  // The kubelet rotated the log (an older rotation is gzipped), then the shim restarted
  // before the container wrote again: the fresh file gets only what is new.
  std::ofstream(path_ + ".20261201-100000.gz") << "compressed";
  std::ofstream(path_ + ".20261201-110000") << kT1 << " stdout F one\n" << kT2 << " stdout F two\n";
  std::ofstream(path_).close();
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT2, " two\n")) + Frame(1, absl::StrCat(kT3, " three\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT3, " stdout F three\n"))) << ReadFile(path_);
  EXPECT_THAT(Targets().at(0), HasSubstr("&since=1796119200.000000002"));
}

TEST_F(LogCopierTest, ABrokenStreamResumesWhereItStopped) {
  Serve([](int fd, int index) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    if (index == 0) {
      // dockerd restarting: the connection drops in the middle of the body.
      testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " one\n"))));
      return;
    }
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " one\n")) + Frame(1, absl::StrCat(kT2, " two\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n", kT2, " stdout F two\n"))) << ReadFile(path_);
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(5)));
  // The resumed follow, then the read without follow after its end (which adds nothing).
  ASSERT_EQ(Targets().size(), 3u);
  EXPECT_THAT(Targets()[1], HasSubstr("&follow=1&since=1796119200.000000001"));
  EXPECT_THAT(Targets()[2], HasSubstr("&follow=0&since=1796119200.000000002"));
  EXPECT_EQ(ReadFile(path_), absl::StrCat(kT1, " stdout F one\n", kT2, " stdout F two\n"));
}

TEST_F(LogCopierTest, AfterTheFollowedStreamEndsReadsWhatDockerStoredLast) {
  // dockerd ended the followed stream as the container stopped, before its follower
  // read the last message (output without a trailing newline, logged at the close of
  // the container's stdout); a read without follow has it.
  Serve([](int fd, int index) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " abc\n"))));
    if (index > 0) testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT2, " def"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false);
  ASSERT_TRUE(Eventually([&] { return Targets().size() == 2; }));
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(5)));
  EXPECT_EQ(ReadFile(path_), absl::StrCat(kT1, " stdout F abc\n", kT2, " stdout P def\n"));
  EXPECT_THAT(Targets()[0], HasSubstr("&follow=1"));
  EXPECT_THAT(Targets()[1], HasSubstr("&follow=0&since=1796119200.000000001"));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Targets().size(), 2u) << "one read after the followed stream, no more";
}

TEST_F(LogCopierTest, ReopenMovesTheCopyToANewFileAfterARename) {
  Serve([this](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " before\n"))));
    while (!release_) absl::SleepFor(absl::Milliseconds(2));
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT2, " after\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false);
  ASSERT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F before\n")));
  // What the kubelet's rotation does: rename, then ReopenContainerLog.
  fs::rename(path_, path_ + ".1");
  ASSERT_TRUE(copier_->Reopen("c1").ok());
  release_ = true;
  EXPECT_TRUE(FileHolds(absl::StrCat(kT2, " stdout F after\n"))) << ReadFile(path_);
  EXPECT_EQ(ReadFile(path_ + ".1"), absl::StrCat(kT1, " stdout F before\n"));
  EXPECT_EQ(copier_->Reopen("unknown").code(), absl::StatusCode::kNotFound);
}

TEST_F(LogCopierTest, AVanishedLogDirectoryBreaksOnlyItsOwnCopy) {
  const std::string other = root_ + "/pod/other/0.log";
  fs::create_directories(fs::path(other).parent_path());
  Serve([this](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    while (!release_) absl::SleepFor(absl::Milliseconds(2));
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " line\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("gone", path_, false);
  copier_->Follow("fine", other, false);
  ASSERT_TRUE(Eventually([&] { return Targets().size() == 2; }));
  fs::remove_all(fs::path(path_).parent_path());
  release_ = true;
  EXPECT_TRUE(Eventually([&] { return ReadFile(other) == absl::StrCat(kT1, " stdout F line\n"); }));
  EXPECT_FALSE(fs::exists(path_));
}

TEST_F(LogCopierTest, ARemovedContainerEndsItsCopyWithoutRetrying) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::Response(404, R"({"message":"No such container: c1"})"));
  });
  copier_->Follow("c1", path_, false);
  EXPECT_TRUE(Eventually([&] { return copier_->Stats().containers == 0 && Targets().size() == 1; }));
  absl::SleepFor(absl::Milliseconds(100));  // a retry would come after 20 ms
  EXPECT_EQ(Targets().size(), 1u);
}

TEST_F(LogCopierTest, AwaitFinishedWaitsForTheEndOfDockersStream) {
  Serve([this](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    while (!release_) absl::SleepFor(absl::Milliseconds(2));
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " last words\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(1))) << "a container not copied has nothing to wait for";
  copier_->Follow("c1", path_, false);
  ASSERT_TRUE(Eventually([&] { return Targets().size() == 1; }));
  EXPECT_FALSE(copier_->AwaitFinished("c1", absl::Milliseconds(50)));
  release_ = true;
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(5)));
  EXPECT_EQ(ReadFile(path_), absl::StrCat(kT1, " stdout F last words\n")) << "written before it returned";
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(1))) << "once finished";
}

TEST_F(LogCopierTest, AwaitFinishedDoesNotWaitOnAThreadThatMustNot) {
  Serve([this](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    while (!release_) absl::SleepFor(absl::Milliseconds(2));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false);
  ASSERT_TRUE(Eventually([&] { return Targets().size() == 1; }));
  {
    common::NoWaitScope no_wait;
    const absl::Time start = absl::Now();
    copier_->AwaitFinished("c1", absl::Seconds(5));  // the stream has not ended
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "it waited";
    EXPECT_TRUE(no_wait.wanted_to_wait());
  }
  release_ = true;
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(5)));
}

TEST_F(LogCopierTest, StopEndsFollowedStreams) {
  Serve([this](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    char byte;
    while (!release_ && ::recv(fd, &byte, 1, MSG_DONTWAIT) != 0) absl::SleepFor(absl::Milliseconds(2));
  });
  copier_->Follow("c1", path_, false);
  ASSERT_TRUE(Eventually([&] { return Targets().size() == 1; }));
  copier_->Stop();  // returns though the stream never ends
  EXPECT_EQ(copier_->Stats().containers, 0);
  release_ = true;
}

// --- Docker's json file, read directly (json-file driver). ---

std::string JsonEntry(const char* time, std::string_view log, const char* stream = "stdout") {
  std::string escaped;
  for (char c : log) {
    if (c == '\n') escaped += "\\n";
    else if (c == '"') escaped += "\\\"";
    else escaped.push_back(c);
  }
  return absl::StrCat(R"({"log":")", escaped, R"(","stream":")", stream, R"(","time":")", time, "\"}\n");
}

class LogCopierFileTest : public LogCopierTest {
 protected:
  void SetUp() override {
    LogCopierTest::SetUp();
    json_ = root_ + "/docker/c1/c1-json.log";
    fs::create_directories(fs::path(json_).parent_path());
  }
  void Docker(const std::string& text, const std::string& file = "") {
    std::ofstream(file.empty() ? json_ : file, std::ios::app) << text;
  }
  // A dockerd that must not be asked, unless a test falls back to it.
  void ServeNothing() {
    Serve([](int fd, int) { testhttp::WriteAll(fd, testhttp::Response(500, R"({"message":"not expected"})")); });
  }
  std::string json_;
};

TEST_F(LogCopierFileTest, CopiesTheJsonFileAcrossDockersRotationWithoutAskingDocker) {
  ServeNothing();
  const std::string piece(kMaxLineBytes, 'x');  // Docker's 16 KiB pieces of a longer line
  Docker(JsonEntry(kT1, "hello\n") + JsonEntry(kT2, "oops\n", "stderr"));
  copier_->Follow("c1", path_, false, json_);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F hello\n", kT2, " stderr F oops\n"))) << ReadFile(path_);
  EXPECT_EQ(copier_->Stats().from_files, 1);
  // Docker's rotation (max-file=2): the rest of the old file, then the new one.
  Docker(JsonEntry(kT3, piece));
  fs::rename(json_, json_ + ".1");
  Docker(JsonEntry(kT3, "end\n"));
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F hello\n", kT2, " stderr F oops\n", kT3, " stdout P ", piece, "\n",
                                     kT3, " stdout F end\n")));
  // The kubelet's rotation.
  fs::rename(path_, path_ + ".20261201-100000");
  ASSERT_TRUE(copier_->Reopen("c1").ok());
  Docker(JsonEntry("2026-12-01T10:00:01Z", "after\n"));
  EXPECT_TRUE(FileHolds("2026-12-01T10:00:01.000000000Z stdout F after\n")) << ReadFile(path_);
  // Exited: the file's end is the log's end.
  EXPECT_TRUE(copier_->AwaitFinished("c1", absl::Seconds(5)));
  EXPECT_EQ(copier_->Stats().containers, 0);
  EXPECT_EQ(copier_->Stats().from_files, 0);
  EXPECT_TRUE(Targets().empty()) << Targets().at(0);
  EXPECT_EQ(copier_->Stats().fallbacks, 0u);
}

int InotifyInstances() {
  int n = 0;
  std::error_code ec;
  for (const fs::directory_entry& fd : fs::directory_iterator("/proc/self/fd", ec)) {
    if (fs::read_symlink(fd.path(), ec).string() == "anon_inode:inotify") ++n;
  }
  return n;
}

// The kernel allows 128 inotify instances per user by default (for all of root's
// programs): one per followed container would run out far below a node's containers.
TEST_F(LogCopierFileTest, OneInotifyInstanceWatchesEveryContainersLog) {
  ServeNothing();
  const int before = InotifyInstances();
  constexpr int kContainers = 300;
  auto json = [&](int i) { return absl::StrCat(root_, "/docker/c", i, "/c", i, "-json.log"); };
  auto cri = [&](int i) { return absl::StrCat(root_, "/pod/c", i, ".log"); };
  for (int i = 0; i < kContainers; ++i) {
    fs::create_directories(fs::path(json(i)).parent_path());
    Docker(JsonEntry(kT1, "one\n"), json(i));
    copier_->Follow(absl::StrCat("c", i), cri(i), false, json(i));
  }
  ASSERT_TRUE(Eventually([&] { return copier_->Stats().from_files == kContainers; }));
  EXPECT_LE(InotifyInstances(), before + 1);
  for (int i = 0; i < kContainers; ++i) Docker(JsonEntry(kT2, "two\n"), json(i));
  const std::string both = absl::StrCat(kT1, " stdout F one\n", kT2, " stdout F two\n");
  for (int i = 0; i < kContainers; ++i) EXPECT_TRUE(Eventually([&] { return ReadFile(cri(i)) == both; })) << i;
  EXPECT_TRUE(Targets().empty());
}

TEST_F(LogCopierFileTest, ResumesAfterARestartFromTheLastLineAcrossRotatedFiles) {
  ServeNothing();
  // A previous shim copied up to T2's first piece, then died mid-write.
  std::ofstream(path_) << kT1 << " stdout F one\n" << kT2 << " stdout P ab\n" << kT2 << " stdout F c";
  Docker(JsonEntry(kT1, "one\n") + JsonEntry(kT2, "ab"), json_ + ".2");
  Docker(JsonEntry(kT2, "cd\n"), json_ + ".1");
  Docker(JsonEntry(kT3, "three\n"));
  copier_->Follow("c1", path_, false, json_);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n", kT2, " stdout P ab\n", kT2, " stdout F cd\n", kT3,
                                     " stdout F three\n")))
      << ReadFile(path_);
  EXPECT_TRUE(Targets().empty());
}

TEST_F(LogCopierFileTest, ATruncatedJsonFileFallsBackToTheApiAfterTheLastLine) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " one\n")) + Frame(1, absl::StrCat(kT2, " two\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  Docker(JsonEntry(kT1, "one\n"));
  copier_->Follow("c1", path_, false, json_);
  ASSERT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n")));
  ::truncate(json_.c_str(), 0);  // by hand
  std::ofstream(json_, std::ios::app).flush();
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n", kT2, " stdout F two\n"))) << ReadFile(path_);
  ASSERT_FALSE(Targets().empty());
  EXPECT_THAT(Targets()[0], HasSubstr("&follow=1&since=1796119200.000000001"));
  EXPECT_EQ(copier_->Stats().fallbacks, 1u);
}

TEST_F(LogCopierFileTest, AMissingJsonFileUsesTheApi) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " one\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  copier_->Follow("c1", path_, false, root_ + "/docker/none/none-json.log");
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F one\n"))) << ReadFile(path_);
  EXPECT_EQ(copier_->Stats().fallbacks, 1u);
}

TEST_F(LogCopierFileTest, TheApiOnlyWhenFilesAreNotToBeRead) {
  Serve([](int fd, int) {
    testhttp::WriteAll(fd, testhttp::kChunkedOk);
    testhttp::WriteAll(fd, testhttp::Chunk(Frame(1, absl::StrCat(kT1, " api\n"))));
    testhttp::WriteAll(fd, testhttp::kChunkedEnd);
  });
  CopierOptions options;
  options.docker_socket_path = server_->path();
  options.read_json_files = false;
  copier_ = std::make_unique<LogCopier>(docker_, options);
  Docker(JsonEntry(kT1, "file\n"));
  copier_->Follow("c1", path_, false, json_);
  EXPECT_TRUE(FileHolds(absl::StrCat(kT1, " stdout F api\n"))) << ReadFile(path_);
  EXPECT_EQ(copier_->Stats().fallbacks, 0u);
}

}  // namespace
}  // namespace shim::logs

// The log copier's one inotify instance for every json log directory.
#include "shim/logs/directory_watcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>

#include "absl/strings/str_cat.h"

namespace shim::logs {
namespace {

namespace fs = std::filesystem;

class DirectoryWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/directory_watcher_test.XXXXXX";
    root_ = ::mkdtemp(dir);
    for (const char* name : {"a", "b"}) fs::create_directory(root_ + "/" + name);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs the io_context until it has nothing ready for 50 ms: the callbacks of what
  // changed so far have run.
  void Settle() {
    for (int i = 0; i < 20; ++i) {
      ioc_.restart();
      if (ioc_.run_for(std::chrono::milliseconds(50)) == 0) return;
    }
  }
  void Write(const std::string& dir) { std::ofstream(root_ + "/" + dir + "/log", std::ios::app) << "x\n"; }

  boost::asio::io_context ioc_;
  std::string root_;
};

TEST_F(DirectoryWatcherTest, ChangesWakeTheirDirectorysWatchersOnly) {
  DirectoryWatcher watcher(ioc_);
  ASSERT_TRUE(watcher.available());
  int a_first = 0, a_second = 0, b = 0;
  auto watch_a1 = watcher.Add(root_ + "/a", [&] { ++a_first; });
  auto watch_a2 = watcher.Add(root_ + "/a", [&] { ++a_second; });
  auto watch_b = watcher.Add(root_ + "/b", [&] { ++b; });
  ASSERT_TRUE(watch_a1.ok() && watch_a2.ok() && watch_b.ok());
  EXPECT_EQ(watcher.watched_directories(), 2u);

  Write("a");
  Settle();
  EXPECT_GE(a_first, 1);
  EXPECT_EQ(a_first, a_second);
  EXPECT_EQ(b, 0);

  // One of two watches of a directory dropped: the other still wakes.
  watch_a1->reset();
  a_first = a_second = 0;
  Write("a");
  Write("b");
  Settle();
  EXPECT_EQ(a_first, 0);
  EXPECT_GE(a_second, 1);
  EXPECT_GE(b, 1);

  // All dropped: the directory is no longer watched.
  watch_a2->reset();
  EXPECT_EQ(watcher.watched_directories(), 1u);
  a_second = 0;
  Write("a");
  Settle();
  EXPECT_EQ(a_second, 0);
}

// Docker writes each log line with its own write(2): a watcher woken for each would
// spend a core on a chatty container. Woken at most once per kCoalesce instead.
TEST_F(DirectoryWatcherTest, AFloodOfWritesWakesOncePerCoalescingPause) {
  DirectoryWatcher watcher(ioc_);
  std::atomic<int> wakes{0};
  auto watch = watcher.Add(root_ + "/a", [&] { ++wakes; });
  ASSERT_TRUE(watch.ok());
  auto work = boost::asio::make_work_guard(ioc_);
  std::thread loop([&] { ioc_.run(); });
  const auto t0 = std::chrono::steady_clock::now();
  {
    FILE* log = std::fopen((root_ + "/a/log").c_str(), "a");
    ASSERT_NE(log, nullptr);
    std::setvbuf(log, nullptr, _IONBF, 0);  // one write(2) a line, as Docker
    for (int i = 0; i < 50000; ++i) std::fputs("a line of a chatty container\n", log);
    std::fclose(log);
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  work.reset();
  ioc_.stop();
  loop.join();
  const auto pauses = (elapsed + std::chrono::milliseconds(50)) / DirectoryWatcher::kCoalesce;
  EXPECT_GE(wakes.load(), 1);
  EXPECT_LE(wakes.load(), pauses + 2) << "over " << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                                      << " ms of writes";
}

TEST_F(DirectoryWatcherTest, ARemovedDirectoryAndAMissingOneAreNoTrouble) {
  DirectoryWatcher watcher(ioc_);
  int b = 0;
  auto watch_b = watcher.Add(root_ + "/b", [&] { ++b; });
  ASSERT_TRUE(watch_b.ok());
  fs::remove_all(root_ + "/b");  // the container was removed: the kernel drops the watch
  Settle();
  watch_b->reset();
  EXPECT_EQ(watcher.watched_directories(), 0u);

  auto missing = watcher.Add(root_ + "/none", [] {});
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find(root_ + "/none"), std::string::npos) << missing.status();
}

}  // namespace
}  // namespace shim::logs

// KeptKernelFiles: the stats' cgroup files kept open from one read to the next. The fake
// tree holds regular files, so a removed cgroup shows as unlinked files here (a real one
// reads ENODEV: tests/integration/stats_test.cc restarts a container under a kept reader).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "shim/stats/kernel_file.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::stats {
namespace {

using testutil::FakeTree;

int OpenDescriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(KeptKernelFilesTest, AFileIsOpenedOnceAndReadAgainFromItsStart) {
  FakeTree tree;
  tree.Write("cg/memory.usage_in_bytes", "4096\n");
  const int kept_before = KeptKernelFiles::KeptInProcess();
  const int open_before = OpenDescriptors();
  {
    KeptKernelFiles files;
    EXPECT_EQ(files.Read(tree.Path("cg/memory.usage_in_bytes")).value_or("?"), "4096\n");
    EXPECT_EQ(KeptKernelFiles::KeptInProcess(), kept_before + 1);
    EXPECT_EQ(OpenDescriptors(), open_before + 1);
    // Rewritten in place, as the kernel regenerates a cgroup file: the kept descriptor
    // reads the new text from its start, shorter or longer.
    tree.Write("cg/memory.usage_in_bytes", "12\n");
    EXPECT_EQ(files.Read(tree.Path("cg/memory.usage_in_bytes")).value_or("?"), "12\n");
    const std::string long_text(10000, '7');
    tree.Write("cg/memory.usage_in_bytes", long_text);
    EXPECT_EQ(files.Read(tree.Path("cg/memory.usage_in_bytes")).value_or("?"), long_text);
    EXPECT_EQ(OpenDescriptors(), open_before + 1) << "one descriptor, kept";
  }
  EXPECT_EQ(KeptKernelFiles::KeptInProcess(), kept_before);
  EXPECT_EQ(OpenDescriptors(), open_before) << "closed with the reader";
}

TEST(KeptKernelFilesTest, AFileRemovedAndMadeAgainIsOpenedAgain) {
  FakeTree tree;
  tree.Write("cg/cpuacct.usage", "100\n");
  KeptKernelFiles files;
  ASSERT_EQ(files.Read(tree.Path("cg/cpuacct.usage")).value_or("?"), "100\n");
  std::filesystem::remove_all(tree.Path("cg"));
  EXPECT_EQ(files.Read(tree.Path("cg/cpuacct.usage")).status().code(), absl::StatusCode::kNotFound);
  tree.Write("cg/cpuacct.usage", "5\n");  // a restarted container's new cgroup, same name
  EXPECT_EQ(files.Read(tree.Path("cg/cpuacct.usage")).value_or("?"), "5\n");
}

TEST(KeptKernelFilesTest, AFileMissingBesideAnOpenOneIsNotLookedForAgain) {
  FakeTree tree;
  tree.Write("cg/memory.usage_in_bytes", "1\n");
  KeptKernelFiles files;
  ASSERT_TRUE(files.Read(tree.Path("cg/memory.usage_in_bytes")).ok());
  // No swap accounting: the kernel made the cgroup without memsw files.
  EXPECT_EQ(files.Read(tree.Path("cg/memory.memsw.usage_in_bytes")).status().code(), absl::StatusCode::kNotFound);
  tree.Write("cg/memory.memsw.usage_in_bytes", "2\n");
  EXPECT_EQ(files.Read(tree.Path("cg/memory.memsw.usage_in_bytes")).status().code(), absl::StatusCode::kNotFound)
      << "remembered as missing";
  KeptKernelFiles fresh;
  EXPECT_EQ(fresh.Read(tree.Path("cg/memory.memsw.usage_in_bytes")).value_or("?"), "2\n");
}

TEST(KeptKernelFilesTest, AFileOfAMissingDirectoryIsLookedForAgain) {
  FakeTree tree;
  KeptKernelFiles files;
  EXPECT_EQ(files.Read(tree.Path("cg/pids.current")).status().code(), absl::StatusCode::kNotFound);
  tree.Write("cg/pids.current", "3\n");
  EXPECT_EQ(files.Read(tree.Path("cg/pids.current")).value_or("?"), "3\n") << "the cgroup was not made yet";
}

// Restores the soft RLIMIT_NOFILE it lowered.
class SoftFileLimit {
 public:
  explicit SoftFileLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  }
  ~SoftFileLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }

 private:
  rlimit saved_{};
};

TEST(KeptKernelFilesTest, KeepsAtMostHalfOfTheOpenFilesLimitAndReadsTheRestAnyway) {
  FakeTree tree;
  constexpr int kFiles = 60;
  for (int i = 0; i < kFiles; ++i) tree.Write(absl::StrCat("cg", i, "/pids.current"), absl::StrCat(i, "\n"));
  const int kept_before = KeptKernelFiles::KeptInProcess();
  const rlim_t limit = static_cast<rlim_t>(OpenDescriptors() + 40);
  const int may_keep = static_cast<int>(limit / 2) - kept_before;
  ASSERT_GT(may_keep, 0);
  ASSERT_LT(may_keep, kFiles);
  SoftFileLimit lowered(limit);
  KeptKernelFiles files;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kFiles; ++i)
      EXPECT_EQ(files.Read(tree.Path(absl::StrCat("cg", i, "/pids.current"))).value_or("?"), absl::StrCat(i, "\n"));
  }
  EXPECT_EQ(KeptKernelFiles::KeptInProcess(), kept_before + may_keep);
  EXPECT_LT(OpenDescriptors(), static_cast<int>(limit));
}

}  // namespace
}  // namespace shim::stats

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <thread>
#include <vector>

#include "shim/stats/disk_usage.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::stats {

void PrintTo(const DiskUsage& u, std::ostream* os) { *os << "{bytes=" << u.bytes << " inodes=" << u.inodes << "}"; }

namespace {

namespace fs = std::filesystem;
using testutil::FakeTree;

// What du counts of `paths` (each given once): allocated bytes and inodes.
DiskUsage Expected(const std::vector<std::string>& paths) {
  DiskUsage usage;
  for (const std::string& path : paths) {
    struct stat st;
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    usage.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    ++usage.inodes;
  }
  return usage;
}

DiskUsage Measure(const std::string& root) {
  absl::StatusOr<DiskUsage> usage = MeasureTree(root);
  EXPECT_TRUE(usage.ok()) << usage.status();
  return usage.value_or(DiskUsage{});
}

TEST(DiskUsageMeasure, CountsAllocatedBytesAndInodesAsDu) {
  FakeTree tree;
  tree.Write("a/f1", std::string(10000, 'x'));
  tree.Write("a/b/f2", "y");
  tree.Write("empty", "");
  // A sparse file: 1 GiB long, nothing allocated.
  { std::ofstream(tree.Path("sparse")); }
  fs::resize_file(tree.Path("sparse"), uint64_t{1} << 30);
  DiskUsage want = Expected({tree.root(), tree.Path("a"), tree.Path("a/f1"), tree.Path("a/b"), tree.Path("a/b/f2"),
                             tree.Path("empty"), tree.Path("sparse")});
  EXPECT_EQ(Measure(tree.root()), want);
  EXPECT_LT(want.bytes, uint64_t{1} << 20);
}

TEST(DiskUsageMeasure, HardLinkedFileCountsOnce) {
  FakeTree tree;
  tree.Write("x", std::string(20000, 'x'));
  tree.Write("b/keep", "");
  fs::create_directory(tree.Path("a"));
  fs::create_hard_link(tree.Path("x"), tree.Path("a/x2"));
  fs::create_hard_link(tree.Path("x"), tree.Path("b/x3"));
  DiskUsage want = Expected({tree.root(), tree.Path("x"), tree.Path("a"), tree.Path("b"), tree.Path("b/keep")});
  EXPECT_EQ(Measure(tree.root()), want);
}

TEST(DiskUsageMeasure, SymlinksAreNotFollowed) {
  FakeTree outside;
  outside.Write("big", std::string(1 << 20, 'z'));
  FakeTree tree;
  tree.Write("d/f", "f");
  fs::create_symlink("b", tree.Path("a"));  // a -> b -> a
  fs::create_symlink("a", tree.Path("b"));
  fs::create_symlink("..", tree.Path("d/up"));
  fs::create_directory_symlink(outside.root(), tree.Path("d/out"));
  fs::create_symlink(outside.Path("big"), tree.Path("big"));
  DiskUsage want = Expected({tree.root(), tree.Path("a"), tree.Path("b"), tree.Path("d"), tree.Path("d/f"),
                             tree.Path("d/up"), tree.Path("d/out"), tree.Path("big")});
  EXPECT_EQ(Measure(tree.root()), want);
  // And a symlink is not a tree to walk.
  EXPECT_FALSE(MeasureTree(tree.Path("d/out")).ok());
}

class ScopedMount {
 public:
  ScopedMount(const std::string& source, const std::string& target, const char* fstype, unsigned long flags)
      : target_(target), mounted_(::mount(source.c_str(), target.c_str(), fstype, flags, nullptr) == 0) {}
  ~ScopedMount() {
    if (mounted_) ::umount2(target_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string target_;
  bool mounted_;
};

TEST(DiskUsageMeasure, DoesNotEnterOtherFileSystems) {
  FakeTree tree;
  tree.Write("sub/f", "f");
  fs::create_directory(tree.Path("sub/mnt"));
  ScopedMount tmpfs("none", tree.Path("sub/mnt"), "tmpfs", 0);
  if (!tmpfs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  tree.Write("sub/mnt/big", std::string(1 << 20, 'z'));
  EXPECT_EQ(Measure(tree.root()), Expected({tree.root(), tree.Path("sub"), tree.Path("sub/f")}));
}

TEST(DiskUsageMeasure, BindMountCycleIsNotWalkedAgain) {
  FakeTree tree;
  tree.Write("sub/f", std::string(5000, 'f'));
  fs::create_directory(tree.Path("sub/loop"));
  ScopedMount bind(tree.root(), tree.Path("sub/loop"), nullptr, MS_BIND);
  if (!bind.mounted()) GTEST_SKIP() << "cannot bind-mount here: " << std::strerror(errno);
  // sub/loop shows the root (same file system): counted as an entry, not walked.
  EXPECT_EQ(Measure(tree.root()), Expected({tree.root(), tree.Path("sub"), tree.Path("sub/f"), tree.Path("sub/loop")}));
}

// Root reads every directory (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). Capabilities
// belong to a thread: this one leaves them out of its effective set while in scope.
class WithoutDacOverride {
 public:
  WithoutDacOverride() {
    if (::syscall(SYS_capget, &header_, saved_) != 0) return;
    __user_cap_data_struct dropped[2];
    std::memcpy(dropped, saved_, sizeof saved_);
    dropped[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
    dropped_ = ::syscall(SYS_capset, &header_, dropped) == 0;
  }
  ~WithoutDacOverride() {
    if (dropped_) ::syscall(SYS_capset, &header_, saved_);
  }

 private:
  __user_cap_header_struct header_{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct saved_[2]{};
  bool dropped_ = false;
};

TEST(DiskUsageMeasure, UnreadableDirectoryIsCountedButNotEntered) {
  FakeTree tree;
  tree.Write("locked/secret", std::string(100000, 's'));
  tree.Write("locked/sub/more", "m");
  tree.Write("open/f", "f");
  DiskUsage want = Expected({tree.root(), tree.Path("locked"), tree.Path("open"), tree.Path("open/f")});
  fs::permissions(tree.Path("locked"), fs::perms::none);
  absl::StatusOr<DiskUsage> usage;
  bool readable;
  {
    WithoutDacOverride unprivileged;
    int fd = ::open(tree.Path("locked").c_str(), O_RDONLY | O_DIRECTORY);
    readable = fd >= 0;
    if (fd >= 0) ::close(fd);
    usage = MeasureTree(tree.root());
  }
  fs::permissions(tree.Path("locked"), fs::perms::owner_all);
  if (readable) GTEST_SKIP() << "cannot make a directory unreadable here";
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(*usage, want);
}

// Runs `change` over and over on another thread while measuring `root` `rounds` times
// (and at least until `change` ran `min_changes` times); checks every result.
void MeasureWhile(const std::string& root, const std::function<void()>& change, int rounds, int min_changes,
                  const std::function<void(const DiskUsage&)>& check) {
  std::atomic<bool> stop = false;
  std::atomic<int> changes = 0;
  std::thread writer([&] {
    while (!stop) {
      change();
      ++changes;
    }
  });
  for (int round = 0; round < rounds || changes < min_changes; ++round) {
    absl::StatusOr<DiskUsage> usage = MeasureTree(root);
    if (!usage.ok()) {
      ADD_FAILURE() << "round " << round << ": " << usage.status();
      break;
    }
    check(*usage);
  }
  stop = true;
  writer.join();
}

TEST(DiskUsageMeasure, EntriesVanishingDuringTheWalkAreSkipped) {
  FakeTree tree;
  tree.Write("stable/f", std::string(5000, 'x'));
  fs::create_directory(tree.Path("churn"));
  DiskUsage stable = Expected({tree.root(), tree.Path("stable"), tree.Path("stable/f"), tree.Path("churn")});
  // A container at work: nested directories and files made and removed all the time.
  int i = 0;
  auto churn = [&] {
    std::string dir = tree.Path("churn/" + std::to_string(i++ % 4));
    fs::create_directories(dir + "/x/y");
    for (int j = 0; j < 8; ++j) std::ofstream(dir + "/x/y/" + std::to_string(j)) << "data";
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  };
  MeasureWhile(tree.root(), churn, 100, 100, [&](const DiskUsage& usage) {
    EXPECT_GE(usage.inodes, stable.inodes);
    EXPECT_GE(usage.bytes, stable.bytes);
  });
  EXPECT_EQ(Measure(tree.root()), stable) << "the writer leaves churn/ empty";
}

TEST(DiskUsageMeasure, DirectoryMovedDuringTheWalkIsCountedWholeOrNot) {
  FakeTree tree;
  for (int i = 0; i < 100; ++i) fs::create_directories(tree.Path("p/x/s" + std::to_string(i)));
  for (const char* name : {"p/a/f", "p/b/f", "p/y/f", "p/z/f", "q/in_q/g"}) tree.Write(name, "f");
  tree.Write("h", "h");
  const uint64_t moving = 101;  // x and its subdirectories
  const uint64_t stable = Measure(tree.root()).inodes - moving;
  // x moves between p and q, taking the walk's place along when it is inside: ".."
  // then leads elsewhere and the walk finds its way back from the root.
  const std::string p = tree.Path("p/x"), q = tree.Path("q/x");
  auto move = [&] {
    std::rename(p.c_str(), q.c_str());
    std::rename(q.c_str(), p.c_str());
  };
  // x is seen 0, 1 or 2 times (in p, then in q), each time whole or just its entry
  // (gone before it was entered); nothing else is missed or counted twice.
  MeasureWhile(tree.root(), move, 300, 0, [&](const DiskUsage& usage) {
    bool explained = false;
    for (uint64_t seen = 0; seen <= 2; ++seen)
      for (uint64_t entered = 0; entered <= seen; ++entered)
        explained |= usage.inodes == stable + seen + entered * (moving - 1);
    EXPECT_TRUE(explained) << usage.inodes << " inodes; " << stable << " stable";
  });
  EXPECT_EQ(Measure(tree.root()).inodes, stable + moving);
}

// The deepest directory of root/d/d/.../d (`depth` levels) through fds: its path would
// outgrow PATH_MAX. Adds what du counts of the levels to `usage`.
int OpenDeepest(const std::string& root, int depth, DiskUsage& usage) {
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < depth && fd >= 0; ++i) {
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    fd = next;
    struct stat st;
    if (fd >= 0 && ::fstat(fd, &st) == 0) {
      usage.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      ++usage.inodes;
    }
  }
  return fd;
}

TEST(DiskUsageMeasure, TenThousandLevelsDeep) {
  constexpr int kDepth = 10000;
  // On tmpfs when there is one: removing the chain from ext4 takes half a minute.
  FakeTree tree(fs::is_directory("/dev/shm") ? "/dev/shm" : ::testing::TempDir());
  int fd = ::open(tree.root().c_str(), O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < kDepth && fd >= 0; ++i) {
    ASSERT_EQ(::mkdirat(fd, "d", 0755), 0) << i;
    int next = ::openat(fd, "d", O_RDONLY | O_DIRECTORY);
    ::close(fd);
    fd = next;
  }
  ASSERT_GE(fd, 0);
  int leaf = ::openat(fd, "leaf", O_CREAT | O_WRONLY, 0644);
  ASSERT_EQ(::write(leaf, "leaf", 4), 4);
  ::close(leaf);
  ::close(fd);

  DiskUsage want = Expected({tree.root()});
  int deepest = OpenDeepest(tree.root(), kDepth, want);
  ASSERT_GE(deepest, 0);
  struct stat st;
  ASSERT_EQ(::fstatat(deepest, "leaf", &st, 0), 0);
  want.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  want.inodes += 1;
  EXPECT_EQ(Measure(tree.root()), want);

  // Remove the chain bottom up; FakeTree's remove_all would need the long paths.
  ::unlinkat(deepest, "leaf", 0);
  for (int i = 0; i < kDepth; ++i) {
    int parent = ::openat(deepest, "..", O_RDONLY | O_DIRECTORY);
    ::close(deepest);
    deepest = parent;
    ASSERT_EQ(::unlinkat(deepest, "d", AT_REMOVEDIR), 0) << i;
  }
  ::close(deepest);
}

TEST(DiskUsageMeasure, RootErrors) {
  FakeTree tree;
  EXPECT_EQ(MeasureTree(tree.Path("missing")).status().code(), absl::StatusCode::kNotFound);
  tree.Write("file", "x");
  EXPECT_FALSE(MeasureTree(tree.Path("file")).ok());
}

}  // namespace
}  // namespace shim::stats

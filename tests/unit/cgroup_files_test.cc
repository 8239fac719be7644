// shim/cgroup_files.h on fake cgroup v2 directories (plain files in a temporary tree:
// what the kernel would refuse of a value cannot happen here, WriteError's mapping of
// its errnos is checked by itself).
#include "shim/cgroup_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "tests/unit/stats_fake_tree.h"

namespace shim {
namespace {

using ::testing::HasSubstr;
using testutil::FakeTree;

class CgroupFileNames : public ::testing::TestWithParam<std::string> {};

TEST_P(CgroupFileNames, AreRefusedNamingTheKey) {
  absl::Status s = CheckCgroupFileName(GetParam(), "linux.resources.unified[\"k\"]");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << GetParam();
  EXPECT_THAT(std::string(s.message()), HasSubstr("linux.resources.unified[\"k\"]: \"" + GetParam() + "\""));
}

INSTANTIATE_TEST_SUITE_P(CgroupFiles, CgroupFileNames,
                         ::testing::Values("", "memory", "memory.", ".high", "memory..high", "../memory.high",
                                           "memory.high/x", "/sys/fs/cgroup/memory.high", "memory.hi gh",
                                           "memory.high\n", "cgroup.procs", "cgroup.subtree_control"));

TEST(CgroupFiles, ControllerFileNamesAreAccepted) {
  for (const char* name : {"memory.high", "memory.oom.group", "hugetlb.2MB.max", "hugetlb.1GB.rsvd.max",
                           "cpu.weight", "io.max", "misc.max", "rdma.max"}) {
    EXPECT_TRUE(CheckCgroupFileName(name, "k").ok()) << name;
  }
}

class CgroupFilesOnTree : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.Write("c/cgroup.controllers", "cpu memory pids hugetlb\n");
    for (const char* file : {"memory.high", "memory.min", "memory.oom.group", "cpu.weight", "hugetlb.2MB.max",
                             "hugetlb.2MB.rsvd.max", "hugetlb.1GB.max", "io.max"}) {
      tree_.Write(std::string("c/") + file, "max\n");
    }
  }
  std::string Dir() const { return tree_.Path("c"); }
  std::string Read(const std::string& file) const {
    CgroupFileValues v = ReadCgroupFiles(Dir(), {file});
    return v.contains(file) ? v[file] : "<unreadable>";
  }

  FakeTree tree_;
};

TEST_F(CgroupFilesOnTree, WritesEachValue) {
  ASSERT_TRUE(WriteCgroupFiles(Dir(), {{"memory.high", "67108864"}, {"memory.min", "1048576"}}).ok());
  EXPECT_EQ(Read("memory.high"), "67108864");
  EXPECT_EQ(Read("memory.min"), "1048576");
  EXPECT_EQ(Read("cpu.weight"), "max");  // untouched
}

TEST_F(CgroupFilesOnTree, HugetlbLimitSetsTheReservationLimitWhereTheKernelHasOne) {
  ASSERT_TRUE(WriteCgroupFiles(Dir(), {{"hugetlb.2MB.max", "0"}, {"hugetlb.1GB.max", "1073741824"}}).ok());
  EXPECT_EQ(Read("hugetlb.2MB.max"), "0");
  EXPECT_EQ(Read("hugetlb.2MB.rsvd.max"), "0");
  EXPECT_EQ(Read("hugetlb.1GB.max"), "1073741824");
  EXPECT_FALSE(std::filesystem::exists(tree_.Path("c/hugetlb.1GB.rsvd.max")));  // that kernel has none
}

TEST_F(CgroupFilesOnTree, ControllerNotEnabledIsInvalidArgumentAndWritesNothing) {
  absl::Status s = WriteCgroupFiles(Dir(), {{"cpu.weight", "50"}, {"io.max", "8:0 rbps=1"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("io.max: the io controller is not enabled in cgroup " + Dir()));
  EXPECT_EQ(Read("cpu.weight"), "max");  // checked before any write
}

TEST_F(CgroupFilesOnTree, MissingFileIsInvalidArgument) {
  absl::Status s = WriteCgroupFiles(Dir(), {{"memory.nosuch", "1"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("memory.nosuch = \"1\" in cgroup " + Dir() + ": no such cgroup file"));
  EXPECT_FALSE(std::filesystem::exists(tree_.Path("c/memory.nosuch")));  // never created
}

TEST_F(CgroupFilesOnTree, ReadOnlyFileIsInvalidArgument) {
  tree_.Write("c/memory.current", "4096\n");
  ASSERT_EQ(::chmod(tree_.Path("c/memory.current").c_str(), 0444), 0);
  absl::Status s = WriteCgroupFiles(Dir(), {{"memory.current", "0"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("memory.current = \"0\" in cgroup " + Dir() + ": the file is read-only"));
  EXPECT_EQ(Read("memory.current"), "4096");
}

TEST_F(CgroupFilesOnTree, NoCgroupIsFailedPrecondition) {
  absl::Status s = WriteCgroupFiles(tree_.Path("gone"), {{"memory.high", "1"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no cgroup v2 directory at " + tree_.Path("gone")));
  EXPECT_TRUE(WriteCgroupFiles(tree_.Path("gone"), {}).ok());  // nothing to write, nothing to find
}

TEST_F(CgroupFilesOnTree, ReadLeavesOutWhatCannotBeRead) {
  EXPECT_EQ(ReadCgroupFiles(Dir(), {"memory.high", "memory.low"}), (CgroupFileValues{{"memory.high", "max"}}));
}

TEST(CgroupFileWriteErrors, MapTheKernelsAnswers) {
  EXPECT_EQ(WriteError(EINVAL, "/c", "memory.high", "abc").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteError(ERANGE, "/c", "cpu.weight", "0").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteError(ENOENT, "/c", "memory.x", "1").code(), absl::StatusCode::kInvalidArgument);
  absl::Status busy = WriteError(EBUSY, "/c", "hugetlb.2MB.max", "0");
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(busy.message()), HasSubstr("hugetlb.2MB.max = \"0\" in cgroup /c: the kernel refuses it"));
  EXPECT_EQ(WriteError(EIO, "/c", "memory.high", "1").code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace shim

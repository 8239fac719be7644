#include "shim/oom/kernel_oom_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace shim::oom {
namespace {

const std::string kId = "4f3c2b1a00112233445566778899aabbccddeeff00112233445566778899aabb";

struct RecordCase {
  std::string label;
  std::string record;
  std::optional<std::string> id;
};

class OomKilledContainerTest : public ::testing::TestWithParam<RecordCase> {};

TEST_P(OomKilledContainerTest, NamesTheKilledTasksContainer) {
  EXPECT_EQ(OomKilledContainer(GetParam().record), GetParam().id);
}

INSTANTIATE_TEST_SUITE_P(
    Records, OomKilledContainerTest,
    ::testing::Values(
        // Read off the cgroup v2 VM (Linux 6.1, Docker 20.10, systemd driver, a pod slice).
        RecordCase{"systemd_scope_under_a_pod_slice",
                   absl::StrCat("6,1942,83021459,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=docker-",
                                kId, ".scope,mems_allowed=0,oom_memcg=/kubepods.slice/kubepods-pod1.slice/docker-",
                                kId, ".scope,task_memcg=/kubepods.slice/kubepods-pod1.slice/docker-", kId,
                                ".scope,task=dd,pid=2210,uid=0\n SUBSYSTEM=memory"),
                   kId},
        RecordCase{"cgroupfs_under_kubepods",
                   absl::StrCat("6,77,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=", kId,
                                ",mems_allowed=0,oom_memcg=/kubepods/burstable/podu1,task_memcg=/kubepods/burstable/podu1/",
                                kId, ",task=java,pid=9,uid=1000"),
                   kId},
        // A pod-level limit: the pod's cgroup ran out, the task was in one container.
        RecordCase{"pod_limit_kills_in_a_container",
                   absl::StrCat("6,78,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                                "oom_memcg=/kubepods.slice/p.slice,task_memcg=/kubepods.slice/p.slice/docker-",
                                kId, ".scope,task=sh,pid=9,uid=0"),
                   kId},
        RecordCase{"a_cgroup_the_container_made_below_its_own",
                   absl::StrCat("6,79,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/system.slice/docker-", kId,
                                ".scope/init.scope,task=x,pid=9,uid=0"),
                   kId},
        RecordCase{"before_linux_4_19",
                   absl::StrCat("6,80,5,-;Task in /docker/", kId, " killed as a result of limit of /docker/", kId),
                   kId},
        RecordCase{"a_host_process", "6,81,5,-;oom-kill:constraint=CONSTRAINT_NONE,task_memcg=/user.slice,task=x,pid=9",
                   std::nullopt},
        RecordCase{"another_runtimes_scope",
                   absl::StrCat("6,82,5,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/system.slice/cri-containerd-",
                                kId, ".scope,task=x"),
                   std::nullopt},
        RecordCase{"not_a_container_id", "6,83,5,-;oom-kill:task_memcg=/docker/4f3c2b1a,task=x", std::nullopt},
        RecordCase{"upper_case_is_not_docker", absl::StrCat("6,84,5,-;oom-kill:task_memcg=/docker/ABCDEF", kId.substr(6)),
                   std::nullopt},
        RecordCase{"other_kernel_news", "6,85,5,-;dsbr10: port 1(veth231b96a3) entered disabled state", std::nullopt},
        RecordCase{"the_id_only_in_the_message_text",
                   absl::StrCat("4,86,5,-;dd invoked oom-killer: docker-", kId, ".scope"), std::nullopt},
        RecordCase{"no_header", absl::StrCat("oom-kill:task_memcg=/docker/", kId), std::nullopt}),
    [](const auto& info) { return info.param.label; });

// The reader on a FIFO standing in for /dev/kmsg: records written now are seen by the
// next Saw, whether or not its thread got to them first.
class KernelOomLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/kmsg.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/kmsg";
    ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
    writer_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);  // RDWR: no reader needed yet
    ASSERT_GE(writer_, 0);
  }
  void TearDown() override {
    ::close(writer_);
    std::string rm = "rm -rf " + dir_;
    ASSERT_EQ(std::system(rm.c_str()), 0);
  }
  void Write(const std::string& record) {
    ASSERT_EQ(::write(writer_, record.data(), record.size()), static_cast<ssize_t>(record.size()));
  }
  std::string dir_, path_;
  int writer_ = -1;
};

std::string KillRecord(const std::string& id) {
  return absl::StrCat("6,1,2,-;oom-kill:constraint=CONSTRAINT_MEMCG,task_memcg=/system.slice/docker-", id,
                      ".scope,task=dd,pid=3,uid=0\n");
}

TEST_F(KernelOomLogTest, RecordsAlreadyThereCount) {
  Write("6,0,1,-;Linux version 6.1.0\n");
  Write(KillRecord(kId));
  KernelOomLog log(path_);
  EXPECT_TRUE(log.Saw(kId));
  EXPECT_FALSE(log.Saw(std::string(64, 'a')));
}

TEST_F(KernelOomLogTest, AKillAfterStartIsSeenAtTheNextQuestion) {
  KernelOomLog log(path_);
  EXPECT_FALSE(log.Saw(kId));
  Write(KillRecord(kId));
  EXPECT_TRUE(log.Saw(kId));
  log.Stop();
  EXPECT_TRUE(log.Saw(kId));  // what it read stays known after its thread ended
}

TEST_F(KernelOomLogTest, RemembersABoundedNumberOfContainers) {
  KernelOomLog log(path_);
  const auto id_of = [](int i) {
    std::string hex = absl::StrCat(absl::Hex(i, absl::kZeroPad8));
    return hex + std::string(56, '0');
  };
  // 5000 kills, read in batches of 20 (3.4 KB): /dev/kmsg gives one record per read,
  // a FIFO as much as the reader's 8 KiB buffer takes, which may end inside a record.
  for (int i = 0; i < 5000; ++i) {
    Write(KillRecord(id_of(i)));
    if (i % 20 == 19) {
      ASSERT_TRUE(log.Saw(id_of(i))) << i;
    }
  }
  EXPECT_FALSE(log.Saw(id_of(0)));  // the oldest went first
  EXPECT_TRUE(log.Saw(id_of(4999 - 4000)));
}

TEST(KernelOomLog, WithoutALogOnlyDockersFlagCounts) {
  KernelOomLog log(::testing::TempDir() + "/no-such-kmsg");
  EXPECT_FALSE(log.Saw(kId));
  log.Stop();
}

}  // namespace
}  // namespace shim::oom

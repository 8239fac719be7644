#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "shim/stats/cgroup.h"
#include "tests/unit/stats_fake_tree.h"

namespace shim::stats {

void PrintTo(const CgroupDirs& d, std::ostream* os) {
  *os << "{cpu=" << d.cpu << " memory=" << d.memory << " pids=" << d.pids << "}";
}

void PrintTo(const Pressure& p, std::ostream* os) {
  auto line = [&](const char* name, const std::optional<PressureLine>& l) {
    *os << " " << name;
    if (!l) {
      *os << "=unset";
      return;
    }
    *os << " avg10=" << l->avg10 << " avg60=" << l->avg60 << " avg300=" << l->avg300 << " total=" << l->total_us;
  };
  *os << "{";
  line("some", p.some);
  line("full", p.full);
  *os << " }";
}

void PrintTo(const CgroupFigures& f, std::ostream* os) {
  auto opt = [](const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : std::string("unset"); };
  *os << "{cpu_ns=" << opt(f.cpu_usage_ns) << " pids=" << opt(f.process_count);
  if (f.memory) {
    const MemoryFigures& m = *f.memory;
    *os << " usage=" << m.usage_bytes << " working_set=" << m.working_set_bytes << " rss=" << m.rss_bytes
        << " faults=" << m.page_faults << "/" << m.major_page_faults << " limit=" << opt(m.limit_bytes)
        << " swap=" << opt(m.swap_usage_bytes) << " swap_limit=" << opt(m.swap_limit_bytes);
  } else {
    *os << " memory=unset";
  }
  for (const auto& [name, pressure] : {std::pair{"cpu", &f.cpu_pressure}, std::pair{"memory", &f.memory_pressure},
                                       std::pair{"io", &f.io_pressure}}) {
    *os << " " << name << ".pressure=";
    if (*pressure) {
      PrintTo(**pressure, os);
    } else {
      *os << "unset";
    }
  }
  *os << "}";
}

namespace {

using testutil::FakeTree;

// --- host layouts, from real hosts ---------------------------------------------------

// This machine (/proc/self/mountinfo, some lines): v1, cgroupfs driver, cpu and cpuacct
// mounted apart, systemd's named hierarchy, an empty cgroup2 beside them.
constexpr char kThisHostMountinfo[] =
    "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
    "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw\n"
    "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// A v1 host with systemd (Ubuntu 20.04): cpu,cpuacct joined, cgroup2 at unified (hybrid).
constexpr char kJoinedV1Mountinfo[] =
    "24 29 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "30 24 0:25 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
    "32 30 0:27 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup "
    "rw,xattr,name=systemd\n"
    "34 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup "
    "rw,cpu,cpuacct\n"
    "35 30 0:30 / /sys/fs/cgroup/net_cls,net_prio rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup "
    "rw,net_cls,net_prio\n"
    "36 30 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,memory\n"
    "37 30 0:32 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:17 - cgroup cgroup rw,pids\n";

// A v2 host (Ubuntu 22.04, Fedora): one cgroup2 mount.
constexpr char kV2Mountinfo[] =
    "24 1 253:0 / / rw,relatime shared:1 - ext4 /dev/mapper/root rw\n"
    "25 24 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw\n"
    "35 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

// Inside a Docker container on this machine: each hierarchy is mounted from the
// container's own cgroup, so mountinfo's root is not "/".
constexpr char kNestedMountinfo[] =
    "80 79 0:46 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755\n"
    "81 80 0:29 /docker/df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd /sys/fs/cgroup/cpu "
    "ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpu\n"
    "82 80 0:30 /docker/df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd /sys/fs/cgroup/cpuacct "
    "ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,cpuacct\n"
    "84 80 0:32 /docker/df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd /sys/fs/cgroup/memory "
    "ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,memory\n"
    "88 80 0:36 /docker/df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd /sys/fs/cgroup/pids "
    "ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,pids\n"
    "89 80 0:37 /docker/df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd /sys/fs/cgroup/systemd "
    "ro,nosuid,nodev,noexec,relatime - cgroup cgroup rw,name=systemd\n";

constexpr char kDockerId[] = "df27d726856935a3155ef4a4dd47448171c74a81dfc982f545e2cf5af0aca1fd";
constexpr char kPodSlice[] = "kubepods-burstable-pod6b3f5c2e_9a1d_4e7b_8c2f_1d2e3f4a5b6c.slice";
constexpr char kPodSlicePath[] =
    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod6b3f5c2e_9a1d_4e7b_8c2f_1d2e3f4a5b6c.slice";
constexpr char kSystemdId[] = "57ba1991ab4ba50a9b2eaf5bf90e2c20073198d767653becf77d55ee25e1a6f9";

// --- cgroup files ---------------------------------------------------------------------

// A busybox container of this machine after writing 8 MiB to /tmp (its files under
// /sys/fs/cgroup/memory/docker/<id>/).
constexpr char kThisHostMemoryStat[] =
    "cache 8409088\nrss 110592\nrss_huge 0\nshmem 0\nmapped_file 16384\ndirty 8392704\nwriteback 0\n"
    "workingset_refault_anon 0\nworkingset_refault_file 5\nswap 0\nswapcached 0\npgpgin 1247\npgpgout 1207\n"
    "pgfault 1828\npgmajfault 2\ninactive_anon 102400\nactive_anon 8192\ninactive_file 8388608\n"
    "active_file 20480\nunevictable 0\nhierarchical_memory_limit 9223372036854771712\n"
    "hierarchical_memsw_limit 9223372036854771712\ntotal_cache 8409088\ntotal_rss 110592\ntotal_rss_huge 0\n"
    "total_shmem 0\ntotal_mapped_file 16384\ntotal_dirty 8392704\ntotal_writeback 0\n"
    "total_workingset_refault_anon 0\ntotal_workingset_refault_file 5\ntotal_swap 0\ntotal_swapcached 0\n"
    "total_pgpgin 1247\ntotal_pgpgout 1207\ntotal_pgfault 1828\ntotal_pgmajfault 2\ntotal_inactive_anon 102400\n"
    "total_active_anon 8192\ntotal_inactive_file 8388608\ntotal_active_file 20480\ntotal_unevictable 0\n";

// A v1 memory.stat of a pod cgroup: its own figures are small, the total_* ones hold
// its containers'.
std::string V1PodMemoryStat(uint64_t total_rss, uint64_t total_inactive_file, uint64_t total_pgfault,
                            uint64_t total_pgmajfault) {
  return absl::StrCat(
      "cache 0\nrss 0\nrss_huge 0\nshmem 0\nmapped_file 0\ndirty 0\nwriteback 0\nswap 0\npgpgin 0\npgpgout 0\n"
      "pgfault 0\npgmajfault 0\ninactive_anon 0\nactive_anon 0\ninactive_file 0\nactive_file 0\nunevictable 0\n"
      "hierarchical_memory_limit 134217728\nhierarchical_memsw_limit 268435456\ntotal_cache 4194304\n"
      "total_rss ",
      total_rss, "\ntotal_rss_huge 0\ntotal_shmem 0\ntotal_mapped_file 1048576\ntotal_dirty 0\n",
      "total_writeback 0\ntotal_swap 2097152\ntotal_pgpgin 30520\ntotal_pgpgout 17132\ntotal_pgfault ", total_pgfault,
      "\ntotal_pgmajfault ", total_pgmajfault, "\ntotal_inactive_anon 46137344\ntotal_active_anon 2097152\n",
      "total_inactive_file ", total_inactive_file, "\ntotal_active_file 1048576\ntotal_unevictable 0\n");
}

// A v2 memory.stat as a 6.x kernel writes it (cgroup-v2.rst's keys, in its order).
std::string V2MemoryStat(uint64_t anon, uint64_t inactive_file, uint64_t pgfault, uint64_t pgmajfault) {
  return absl::StrCat(
      "anon ", anon,
      "\nfile 5455872\nkernel 1306624\nkernel_stack 98304\npagetables 176128\nsec_pagetables 0\npercpu 2880\n"
      "sock 0\nvmalloc 0\nshmem 0\nzswap 0\nzswapped 0\nfile_mapped 4325376\nfile_dirty 0\nfile_writeback 0\n"
      "swapcached 0\nanon_thp 0\nfile_thp 0\nshmem_thp 0\ninactive_anon 10735616\nactive_anon 32768\n"
      "inactive_file ",
      inactive_file,
      "\nactive_file 659456\nunevictable 0\nslab_reclaimable 658888\nslab_unreclaimable 249384\nslab 908272\n"
      "workingset_refault_anon 0\nworkingset_refault_file 0\nworkingset_activate_anon 0\n"
      "workingset_activate_file 0\nworkingset_restore_anon 0\nworkingset_restore_file 0\n"
      "workingset_nodereclaim 0\npgscan 0\npgsteal 0\npgscan_kswapd 0\npgscan_direct 0\npgsteal_kswapd 0\n"
      "pgsteal_direct 0\npgfault ",
      pgfault, "\npgmajfault ", pgmajfault,
      "\npgrefill 0\npgactivate 161\npgdeactivate 0\npglazyfree 0\npglazyfreed 0\nzswpin 0\nzswpout 0\n"
      "thp_fault_alloc 0\nthp_collapse_alloc 0\n");
}

std::string V2CpuStat(uint64_t usage_usec) {
  return absl::StrCat("usage_usec ", usage_usec, "\nuser_usec ", usage_usec * 3 / 4, "\nsystem_usec ", usage_usec / 4,
                      "\ncore_sched.force_idle_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"
                      "nr_bursts 0\nburst_usec 0\n");
}

using Files = std::map<std::string, std::string>;

void WriteFiles(const FakeTree& tree, const std::string& dir, const Files& files) {
  for (const auto& [name, content] : files) tree.Write(dir + "/" + name, content);
}

absl::StatusOr<CgroupLayout> DiscoverFake(const FakeTree& tree, const std::string& mountinfo) {
  tree.Write("proc/self/mountinfo", mountinfo);
  return CgroupLayout::Discover(tree.Path("proc"), tree.root());
}

// Memory figures with nothing but these set.
MemoryFigures Usage(uint64_t usage, uint64_t working_set, uint64_t rss = 0) {
  MemoryFigures memory;
  memory.usage_bytes = usage;
  memory.working_set_bytes = working_set;
  memory.rss_bytes = rss;
  return memory;
}

CgroupDirs Dirs(const FakeTree& tree, const std::string& cpu, const std::string& memory, const std::string& pids) {
  auto at = [&](const std::string& dir) { return dir.empty() ? dir : tree.root() + dir; };
  return {at(cpu), at(memory), at(pids)};
}

// --- layout discovery ---------------------------------------------------------------

TEST(CgroupDiscover, FindsTheVersion) {
  struct Case {
    const char* mountinfo;
    CgroupVersion version;
  };
  for (const Case& c : {Case{kThisHostMountinfo, CgroupVersion::kV1}, Case{kJoinedV1Mountinfo, CgroupVersion::kV1},
                        Case{kV2Mountinfo, CgroupVersion::kV2}, Case{kNestedMountinfo, CgroupVersion::kV1}}) {
    FakeTree tree;
    auto layout = DiscoverFake(tree, c.mountinfo);
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(layout->version(), c.version) << c.mountinfo;
  }
}

TEST(CgroupDiscover, FailsWithoutCgroupMounts) {
  FakeTree tree;
  auto none = DiscoverFake(tree,
                           "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
                           "40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition) << none.status();

  FakeTree empty;
  auto missing = CgroupLayout::Discover(empty.Path("proc"), empty.root());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

// --- a process's cgroups ----------------------------------------------------------

struct ProcessCase {
  std::string name;
  std::string mountinfo;
  std::string proc_cgroup;
  CgroupDirs want;  // under the fake tree's root; "" = not visible
  friend void PrintTo(const ProcessCase& c, std::ostream* os) { *os << c.name; }
};

class CgroupDirsOfProcess : public ::testing::TestWithParam<ProcessCase> {};

TEST_P(CgroupDirsOfProcess, Table) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, GetParam().mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  tree.Write("proc/4242/cgroup", GetParam().proc_cgroup);
  auto dirs = layout->DirsOfProcess(4242);
  ASSERT_TRUE(dirs.ok()) << dirs.status();
  const CgroupDirs& w = GetParam().want;
  EXPECT_EQ(*dirs, Dirs(tree, w.cpu, w.memory, w.pids));
}

const std::string kDockerCgroup = absl::StrCat("/docker/", kDockerId);
const std::string kSystemdScope = absl::StrCat(kPodSlicePath, "/docker-", kSystemdId, ".scope");

INSTANTIATE_TEST_SUITE_P(
    CgroupHosts, CgroupDirsOfProcess,
    ::testing::Values(
        // This machine's /proc/<pid>/cgroup of a Docker container.
        ProcessCase{"ThisHost",
                    kThisHostMountinfo,
                    absl::StrReplaceAll("9:name=systemd:$c\n8:pids:$c\n7:blkio:$c\n6:freezer:$c\n5:devices:$c\n"
                                        "4:memory:$c\n3:cpuset:$c\n2:cpuacct:$c\n1:cpu:$c\n0::$c\n",
                                        {{"$c", kDockerCgroup}}),
                    {"/sys/fs/cgroup/cpuacct" + kDockerCgroup, "/sys/fs/cgroup/memory" + kDockerCgroup,
                     "/sys/fs/cgroup/pids" + kDockerCgroup}},
        ProcessCase{"JoinedCpuCpuacctSystemd",
                    kJoinedV1Mountinfo,
                    absl::StrReplaceAll("12:pids:$c\n8:memory:$c\n4:cpu,cpuacct:$c\n3:net_cls,net_prio:$c\n"
                                        "1:name=systemd:$c\n0::$c\n",
                                        {{"$c", kSystemdScope}}),
                    {"/sys/fs/cgroup/cpu,cpuacct" + kSystemdScope, "/sys/fs/cgroup/memory" + kSystemdScope,
                     "/sys/fs/cgroup/pids" + kSystemdScope}},
        ProcessCase{
            "V2Systemd",
            kV2Mountinfo,
            "0::" + kSystemdScope + "\n",
            {"/sys/fs/cgroup" + kSystemdScope, "/sys/fs/cgroup" + kSystemdScope, "/sys/fs/cgroup" + kSystemdScope}},
        // Inside the container: its own cgroup is the mounts' root...
        ProcessCase{"NestedOwnCgroup",
                    kNestedMountinfo,
                    absl::StrReplaceAll("9:name=systemd:$c\n8:pids:$c\n4:memory:$c\n2:cpuacct:$c\n1:cpu:$c\n0::$c\n",
                                        {{"$c", kDockerCgroup}}),
                    {"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids"}},
        // ... a container of a Docker running in it is below it ...
        ProcessCase{"NestedChild",
                    kNestedMountinfo,
                    absl::StrReplaceAll("8:pids:$c\n4:memory:$c\n2:cpuacct:$c\n",
                                        {{"$c", kDockerCgroup + "/kubepods/besteffort/pod1/c0ffee"}}),
                    {"/sys/fs/cgroup/cpuacct/kubepods/besteffort/pod1/c0ffee",
                     "/sys/fs/cgroup/memory/kubepods/besteffort/pod1/c0ffee",
                     "/sys/fs/cgroup/pids/kubepods/besteffort/pod1/c0ffee"}},
        // ... and the host's other cgroups are not visible (nor a look-alike prefix).
        ProcessCase{
            "NestedOutside",
            kNestedMountinfo,
            absl::StrCat("8:pids:/system.slice/containerd.service\n4:memory:", kDockerCgroup, "0\n2:cpuacct:/\n"),
            {"", "", ""}},
        ProcessCase{"V2NestedSubtree",
                    "1200 1100 0:30 /system.slice/docker-ab.scope /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n",
                    "0::/system.slice/docker-ab.scope/kubepods/pod9\n",
                    {"/sys/fs/cgroup/kubepods/pod9", "/sys/fs/cgroup/kubepods/pod9", "/sys/fs/cgroup/kubepods/pod9"}},
        // A hierarchy also bind-mounted from a subtree: the whole one is used.
        ProcessCase{"PrefersTheHierarchyRoot",
                    "50 31 0:32 /kubepods /var/lib/x/memory rw - cgroup cgroup rw,memory\n"
                    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n",
                    "4:memory:/kubepods/pod1\n",
                    {"", "/sys/fs/cgroup/memory/kubepods/pod1", ""}},
        ProcessCase{"EscapedMountPoint",
                    "35 31 0:32 / /mnt/cgroup\\040memory rw - cgroup cgroup rw,memory\n",
                    "4:memory:/a:b\n",
                    {"", "/mnt/cgroup memory/a:b", ""}},
        // Unknown and malformed lines, and a v2 host without the "0::" line.
        ProcessCase{
            "JunkLines", kThisHostMountinfo, "garbage\n\n4:memory\n7:memory:/x\n", {"", "/sys/fs/cgroup/memory/x", ""}},
        ProcessCase{"V2WithoutUnifiedLine", kV2Mountinfo, "1:name=systemd:/x\n", {"", "", ""}}),
    [](const auto& info) { return info.param.name; });

TEST(CgroupDirsOfProcess, GoneProcessIsNotFound) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->DirsOfProcess(99999).status().code(), absl::StatusCode::kNotFound);
}

// --- cgroups from Docker's cgroup parent --------------------------------------------

struct ParentCase {
  std::string name;
  std::string mountinfo;
  std::string parent;
  std::string container_id;  // empty: the pod's cgroup (DirsOfParent)
  bool systemd;
  std::string want_memory;
  friend void PrintTo(const ParentCase& c, std::ostream* os) { *os << c.name; }
};

class CgroupDirsOfParent : public ::testing::TestWithParam<ParentCase> {};

TEST_P(CgroupDirsOfParent, Table) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, GetParam().mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const ParentCase& c = GetParam();
  CgroupDirs dirs = c.container_id.empty() ? layout->DirsOfParent(c.parent, c.systemd)
                                           : layout->DirsOfContainer(c.parent, c.container_id, c.systemd);
  EXPECT_EQ(dirs.memory, tree.root() + c.want_memory);
}

INSTANTIATE_TEST_SUITE_P(
    CgroupDrivers, CgroupDirsOfParent,
    ::testing::Values(ParentCase{"CgroupfsPod", kThisHostMountinfo, "/kubepods/burstable/pod1234", "", false,
                                 "/sys/fs/cgroup/memory/kubepods/burstable/pod1234"},
                      ParentCase{"CgroupfsContainer", kThisHostMountinfo, "/kubepods/burstable/pod1234", "abc", false,
                                 "/sys/fs/cgroup/memory/kubepods/burstable/pod1234/abc"},
                      ParentCase{"CgroupfsDefaultParent", kThisHostMountinfo, "", kDockerId, false,
                                 "/sys/fs/cgroup/memory" + kDockerCgroup},
                      ParentCase{"CgroupfsRelativeParent", kThisHostMountinfo, "kubepods", "", false,
                                 "/sys/fs/cgroup/memory/kubepods"},
                      ParentCase{"SystemdPodV1", kJoinedV1Mountinfo, kPodSlice, "", true,
                                 "/sys/fs/cgroup/memory" + std::string(kPodSlicePath)},
                      ParentCase{"SystemdContainerV2", kV2Mountinfo, kPodSlice, kSystemdId, true,
                                 "/sys/fs/cgroup" + kSystemdScope},
                      ParentCase{"SystemdDefaultParent", kV2Mountinfo, "", "abc", true,
                                 "/sys/fs/cgroup/system.slice/docker-abc.scope"},
                      ParentCase{"SystemdRootSlice", kV2Mountinfo, "-.slice", "", true, "/sys/fs/cgroup"},
                      // A parent under a nested mount is where Docker (runc) put it: below the mount point.
                      ParentCase{"NestedCgroupfs", kNestedMountinfo, "/kubepods/pod1", "", false,
                                 "/sys/fs/cgroup/memory/kubepods/pod1"}),
    [](const auto& info) { return info.param.name; });

TEST(CgroupDirsOfParent, MatchesTheContainersOwnCgroup) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kJoinedV1Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  tree.Write("proc/77/cgroup",
             absl::StrReplaceAll("12:pids:$c\n8:memory:$c\n4:cpu,cpuacct:$c\n", {{"$c", kSystemdScope}}));
  auto own = layout->DirsOfProcess(77);
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(layout->DirsOfContainer(kPodSlice, kSystemdId, true), *own);
}

struct SliceCase {
  std::string slice, path;
  friend void PrintTo(const SliceCase& c, std::ostream* os) { *os << "\"" << c.slice << "\""; }
};

class CgroupExpandSystemdSlice : public ::testing::TestWithParam<SliceCase> {};

TEST_P(CgroupExpandSystemdSlice, Table) { EXPECT_EQ(ExpandSystemdSlice(GetParam().slice), GetParam().path); }

INSTANTIATE_TEST_SUITE_P(
    CgroupNames, CgroupExpandSystemdSlice,
    ::testing::Values(SliceCase{"kubepods-burstable-pod123.slice",
                                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod123.slice"},
                      SliceCase{kPodSlice, kPodSlicePath}, SliceCase{"kubepods.slice", "/kubepods.slice"},
                      SliceCase{"system.slice", "/system.slice"}, SliceCase{"-.slice", "/"},
                      // Not slice names: as they are.
                      SliceCase{"a--b.slice", "a--b.slice"}, SliceCase{"-a.slice", "-a.slice"},
                      SliceCase{"a-.slice", "a-.slice"}, SliceCase{".slice", ".slice"},
                      SliceCase{"a/b.slice", "a/b.slice"}, SliceCase{"/kubepods/burstable", "/kubepods/burstable"},
                      SliceCase{"docker-1.scope", "docker-1.scope"}, SliceCase{"", ""}));

// --- figures --------------------------------------------------------------------------

TEST(CgroupRead, ThisHostDockerContainer) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  WriteFiles(tree, "sys/fs/cgroup/cpuacct" + kDockerCgroup, {{"cpuacct.usage", "33083394\n"}});
  WriteFiles(tree, "sys/fs/cgroup/memory" + kDockerCgroup,
             {{"memory.usage_in_bytes", "9449472\n"},
              {"memory.limit_in_bytes", "9223372036854771712\n"},
              {"memory.memsw.usage_in_bytes", "9449472\n"},
              {"memory.memsw.limit_in_bytes", "9223372036854771712\n"},
              {"memory.stat", kThisHostMemoryStat}});
  WriteFiles(tree, "sys/fs/cgroup/pids" + kDockerCgroup, {{"pids.current", "2\n"}});

  CgroupFigures figures = layout->Read(layout->DirsOfContainer("", kDockerId, false));
  CgroupFigures want;
  want.cpu_usage_ns = 33083394;
  want.memory = MemoryFigures{.usage_bytes = 9449472,
                              .working_set_bytes = 9449472 - 8388608,
                              .rss_bytes = 110592,
                              .page_faults = 1828,
                              .major_page_faults = 2,
                              .limit_bytes = std::nullopt,
                              .swap_usage_bytes = 0,
                              .swap_limit_bytes = std::nullopt};
  want.process_count = 2;
  EXPECT_EQ(figures, want);
}

TEST(CgroupRead, V1SystemdPodWithMemoryAndSwapLimits) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kJoinedV1Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const std::string pod = kPodSlicePath;
  WriteFiles(tree, "sys/fs/cgroup/cpu,cpuacct" + pod, {{"cpuacct.usage", "5120333877\n"}});
  // docker run --memory 128m --memory-swap 256m: memsw counts memory and swap.
  WriteFiles(tree, "sys/fs/cgroup/memory" + pod,
             {{"memory.usage_in_bytes", "52428800\n"},
              {"memory.limit_in_bytes", "134217728\n"},
              {"memory.memsw.usage_in_bytes", "54525952\n"},
              {"memory.memsw.limit_in_bytes", "268435456\n"},
              {"memory.stat", V1PodMemoryStat(48234496, 3145728, 41733, 12)}});
  WriteFiles(tree, "sys/fs/cgroup/pids" + pod, {{"pids.current", "7\n"}});

  CgroupFigures figures = layout->Read(layout->DirsOfParent(kPodSlice, true));
  CgroupFigures want;
  want.cpu_usage_ns = 5120333877;
  want.memory = MemoryFigures{.usage_bytes = 52428800,
                              .working_set_bytes = 52428800 - 3145728,
                              .rss_bytes = 48234496,
                              .page_faults = 41733,
                              .major_page_faults = 12,
                              .limit_bytes = 134217728,
                              .swap_usage_bytes = 54525952 - 52428800,
                              .swap_limit_bytes = 268435456 - 134217728};
  want.process_count = 7;
  EXPECT_EQ(figures, want);
}

TEST(CgroupRead, V2SystemdPodAndContainer) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kV2Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const std::string pod = absl::StrCat("sys/fs/cgroup", kPodSlicePath);
  WriteFiles(tree, pod,
             {{"cpu.stat", V2CpuStat(1200937)},
              {"memory.current", "18067456\n"},
              {"memory.max", "268435456\n"},
              {"memory.stat", V2MemoryStat(10936320, 4833280, 5702, 71)},
              {"memory.swap.current", "4096\n"},
              {"memory.swap.max", "536870912\n"},
              {"pids.current", "4\n"},
              {"cpu.pressure",
               "some avg10=1.53 avg60=0.41 avg300=0.09 total=2219733\nfull avg10=0.76 avg60=0.20 avg300=0.04 "
               "total=1081244\n"},
              {"memory.pressure",
               "some avg10=8.44 avg60=2.87 avg300=0.66 total=914511\nfull avg10=8.10 avg60=2.71 avg300=0.62 "
               "total=873072\n"},
              {"io.pressure",
               "some avg10=0.00 avg60=0.00 avg300=0.00 total=35012\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
               "total=33398\n"}});
  WriteFiles(tree, absl::StrCat(pod, "/docker-", kSystemdId, ".scope"),
             {{"cpu.stat", V2CpuStat(1183242)},
              {"memory.current", "17530880\n"},
              {"memory.max", "max\n"},
              {"memory.stat", V2MemoryStat(10768384, 4796416, 5281, 68)},
              {"memory.swap.current", "0\n"},
              {"memory.swap.max", "max\n"},
              {"pids.current", "3\n"}});

  CgroupFigures pod_want;
  pod_want.cpu_usage_ns = uint64_t{1200937} * 1000;
  pod_want.memory = MemoryFigures{.usage_bytes = 18067456,
                                  .working_set_bytes = 18067456 - 4833280,
                                  .rss_bytes = 10936320,
                                  .page_faults = 5702,
                                  .major_page_faults = 71,
                                  .limit_bytes = 268435456,
                                  .swap_usage_bytes = 4096,
                                  .swap_limit_bytes = 536870912};
  pod_want.process_count = 4;
  pod_want.cpu_pressure = Pressure{PressureLine{1.53, 0.41, 0.09, 2219733}, PressureLine{0.76, 0.20, 0.04, 1081244}};
  pod_want.memory_pressure = Pressure{PressureLine{8.44, 2.87, 0.66, 914511}, PressureLine{8.10, 2.71, 0.62, 873072}};
  pod_want.io_pressure = Pressure{PressureLine{0, 0, 0, 35012}, PressureLine{0, 0, 0, 33398}};
  EXPECT_EQ(layout->Read(layout->DirsOfParent(kPodSlice, true)), pod_want);

  tree.Write(absl::StrCat("proc/31337/cgroup"), "0::" + kSystemdScope + "\n");
  auto dirs = layout->DirsOfProcess(31337);
  ASSERT_TRUE(dirs.ok()) << dirs.status();
  CgroupFigures container_want;
  container_want.cpu_usage_ns = uint64_t{1183242} * 1000;
  container_want.memory = MemoryFigures{.usage_bytes = 17530880,
                                        .working_set_bytes = 17530880 - 4796416,
                                        .rss_bytes = 10768384,
                                        .page_faults = 5281,
                                        .major_page_faults = 68,
                                        .limit_bytes = std::nullopt,
                                        .swap_usage_bytes = 0,
                                        .swap_limit_bytes = std::nullopt};
  container_want.process_count = 3;
  EXPECT_EQ(layout->Read(*dirs), container_want);
}

TEST(CgroupRead, NestedContainerReadsItsChildren) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kNestedMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  WriteFiles(
      tree, "sys/fs/cgroup/memory/kubepods/pod1",
      {{"memory.usage_in_bytes", "4096000\n"}, {"memory.stat", "total_inactive_file 96000\ntotal_rss 2000000\n"}});
  CgroupFigures figures = layout->Read(layout->DirsOfParent("/kubepods/pod1", false));
  ASSERT_TRUE(figures.memory.has_value());
  EXPECT_EQ(figures.memory->working_set_bytes, 4000000u);
  EXPECT_EQ(figures.memory->rss_bytes, 2000000u);
  EXPECT_FALSE(figures.cpu_usage_ns.has_value());
}

TEST(CgroupRead, MissingFilesLeaveFiguresUnset) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Nothing there at all (a container that just exited).
  EXPECT_EQ(layout->Read(layout->DirsOfContainer("", "gone", false)), CgroupFigures{});
  EXPECT_EQ(layout->Read(CgroupDirs{}), CgroupFigures{});

  // Only the usage (no memory.stat, no swap accounting, no limit file).
  WriteFiles(tree, "sys/fs/cgroup/memory/docker/lean", {{"memory.usage_in_bytes", "1000\n"}});
  CgroupFigures lean = layout->Read(layout->DirsOfContainer("", "lean", false));
  CgroupFigures want;
  want.memory = Usage(1000, 1000);
  EXPECT_EQ(lean, want);

  // Stat and limits without the usage file: no memory figures.
  WriteFiles(tree, "sys/fs/cgroup/memory/docker/nousage",
             {{"memory.stat", kThisHostMemoryStat}, {"memory.limit_in_bytes", "1024\n"}});
  EXPECT_FALSE(layout->Read(layout->DirsOfContainer("", "nousage", false)).memory.has_value());
}

TEST(CgroupRead, V2WithoutSwapAccountingOrCpuController) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kV2Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Without the cpu controller cpu.stat still has the three usage lines (cgroup-v2.rst).
  WriteFiles(tree, "sys/fs/cgroup/a",
             {{"cpu.stat", "usage_usec 7\nuser_usec 5\nsystem_usec 2\n"},
              {"memory.current", "8192\n"},
              {"memory.max", "max\n"},
              {"memory.stat", V2MemoryStat(4096, 0, 10, 0)}});
  CgroupFigures figures = layout->Read(layout->DirsOfParent("/a", false));
  EXPECT_EQ(figures.cpu_usage_ns, 7000u);
  ASSERT_TRUE(figures.memory.has_value());
  EXPECT_FALSE(figures.memory->swap_usage_bytes.has_value());
  EXPECT_FALSE(figures.memory->swap_limit_bytes.has_value());
  EXPECT_FALSE(figures.process_count.has_value());
  // No pressure files (a kernel without PSI, or booted with psi=0).
  EXPECT_FALSE(figures.cpu_pressure.has_value());
  EXPECT_FALSE(figures.memory_pressure.has_value());
  EXPECT_FALSE(figures.io_pressure.has_value());
}

TEST(CgroupRead, V2PressureFilesAreReadEachOnItsOwn) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kV2Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Linux before 5.13: cpu.pressure has no "full" line; io.pressure is not there.
  WriteFiles(tree, "sys/fs/cgroup/a",
             {{"cpu.stat", V2CpuStat(10)},
              {"cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"},
              {"memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"}});
  CgroupFigures figures = layout->Read(layout->DirsOfParent("/a", false));
  EXPECT_EQ(figures.cpu_pressure, (Pressure{PressureLine{0, 0, 0, 12}, std::nullopt}));
  EXPECT_EQ(figures.memory_pressure, (Pressure{PressureLine{}, PressureLine{}})) << "zeros that are there are kept";
  EXPECT_FALSE(figures.io_pressure.has_value());
  EXPECT_FALSE(figures.memory.has_value()) << "memory.pressure is the core's, not the memory controller's";
}

TEST(CgroupRead, V1HasNoPressure) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // cgroup v1 has pressure files only with psi=1 and the cgroup1 PSI option: not read.
  WriteFiles(tree, "sys/fs/cgroup/cpuacct/a",
             {{"cpuacct.usage", "5\n"}, {"cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"}});
  CgroupFigures figures = layout->Read(layout->DirsOfParent("/a", false));
  EXPECT_EQ(figures.cpu_usage_ns, 5u);
  EXPECT_FALSE(figures.cpu_pressure.has_value());
}

struct PressureCase {
  std::string name;
  std::string text;
  std::optional<Pressure> want;
  friend void PrintTo(const PressureCase& c, std::ostream* os) { *os << c.name; }
};

class CgroupParsePressure : public ::testing::TestWithParam<PressureCase> {};

TEST_P(CgroupParsePressure, Table) { EXPECT_EQ(ParsePressure(GetParam().text), GetParam().want); }

INSTANTIATE_TEST_SUITE_P(
    PressureFiles, CgroupParsePressure,
    ::testing::Values(
        PressureCase{"SomeAndFull",
                     "some avg10=0.31 avg60=0.12 avg300=0.03 total=4412873\n"
                     "full avg10=0.10 avg60=0.05 avg300=0.01 total=1830222\n",
                     Pressure{PressureLine{0.31, 0.12, 0.03, 4412873}, PressureLine{0.10, 0.05, 0.01, 1830222}}},
        PressureCase{"Idle",
                     "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                     Pressure{PressureLine{}, PressureLine{}}},
        PressureCase{"SomeOnly", "some avg10=100.00 avg60=99.50 avg300=80.25 total=18446744073709551615\n",
                     Pressure{PressureLine{100, 99.5, 80.25, std::numeric_limits<uint64_t>::max()}, std::nullopt}},
        PressureCase{"NoTrailingNewline", "full avg10=1.00 avg60=2.00 avg300=3.00 total=4",
                     Pressure{std::nullopt, PressureLine{1, 2, 3, 4}}},
        // Keys are looked up by name; one the kernel may add later is skipped.
        PressureCase{"KeysInAnyOrderAndNewOnes", "some total=9 avg300=0.03 new=1 avg60=0.02 avg10=0.01\n",
                     Pressure{PressureLine{0.01, 0.02, 0.03, 9}, std::nullopt}},
        // A malformed line is as if missing; the other one still counts.
        PressureCase{"FullWithoutTotal",
                     "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00\n",
                     Pressure{PressureLine{0, 0, 0, 5}, std::nullopt}},
        PressureCase{"NegativeTotal", "some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\n", std::nullopt},
        PressureCase{"FractionalTotal", "some avg10=0.00 avg60=0.00 avg300=0.00 total=5.5\n", std::nullopt},
        PressureCase{"NotANumber", "some avg10=nan avg60=0.00 avg300=0.00 total=5\n", std::nullopt},
        PressureCase{"NegativeAverage", "some avg10=-1.00 avg60=0.00 avg300=0.00 total=5\n", std::nullopt},
        PressureCase{"NoValue", "some avg10= avg60=0.00 avg300=0.00 total=5\n", std::nullopt},
        PressureCase{"OtherPrefix", "any avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", std::nullopt},
        PressureCase{"Empty", "", std::nullopt}, PressureCase{"Garbage", "garbage\n", std::nullopt}),
    [](const auto& info) { return info.param.name; });

TEST(CgroupRead, WorkingSetIsFlooredAtZero) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kV2Mountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Usage and memory.stat are not read atomically: inactive_file can exceed usage.
  WriteFiles(tree, "sys/fs/cgroup/a", {{"memory.current", "4096\n"}, {"memory.stat", V2MemoryStat(0, 8192, 0, 0)}});
  CgroupFigures figures = layout->Read(layout->DirsOfParent("/a", false));
  ASSERT_TRUE(figures.memory.has_value());
  EXPECT_EQ(figures.memory->working_set_bytes, 0u);
}

TEST(CgroupRead, CountersThatGoBackAreReportedAsRead) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  CgroupDirs dirs = layout->DirsOfContainer("", kDockerId, false);
  tree.Write("sys/fs/cgroup/cpuacct" + kDockerCgroup + "/cpuacct.usage", "900000000\n");
  EXPECT_EQ(layout->Read(dirs).cpu_usage_ns, 900000000u);
  // A container restarted into a fresh cgroup of the same name: rates are not ours.
  tree.Write("sys/fs/cgroup/cpuacct" + kDockerCgroup + "/cpuacct.usage", "1200\n");
  EXPECT_EQ(layout->Read(dirs).cpu_usage_ns, 1200u);
}

struct LimitCase {
  std::string content;
  std::optional<uint64_t> want;
  friend void PrintTo(const LimitCase& c, std::ostream* os) { *os << "\"" << c.content << "\""; }
};

class CgroupReadLimit : public ::testing::TestWithParam<LimitCase> {};

TEST_P(CgroupReadLimit, V1AndV2) {
  for (const char* mountinfo : {kThisHostMountinfo, kV2Mountinfo}) {
    FakeTree tree;
    auto layout = DiscoverFake(tree, mountinfo);
    ASSERT_TRUE(layout.ok()) << layout.status();
    CgroupDirs dirs = layout->DirsOfParent("/a", false);
    bool v1 = layout->version() == CgroupVersion::kV1;
    tree.Write(dirs.memory.substr(tree.root().size() + 1) + (v1 ? "/memory.usage_in_bytes" : "/memory.current"),
               "100\n");
    tree.Write(dirs.memory.substr(tree.root().size() + 1) + (v1 ? "/memory.limit_in_bytes" : "/memory.max"),
               GetParam().content);
    CgroupFigures figures = layout->Read(dirs);
    ASSERT_TRUE(figures.memory.has_value());
    EXPECT_EQ(figures.memory->limit_bytes, GetParam().want) << "\"" << GetParam().content << "\" " << mountinfo;
  }
}

INSTANTIATE_TEST_SUITE_P(CgroupContents, CgroupReadLimit,
                         ::testing::Values(LimitCase{"268435456\n", 268435456}, LimitCase{"0\n", 0},
                                           LimitCase{"max\n", std::nullopt},
                                           // PAGE_COUNTER_MAX pages of 4 KiB, and of 64 KiB (arm64): no limit.
                                           LimitCase{"9223372036854771712\n", std::nullopt},
                                           LimitCase{"9223372036854710272\n", std::nullopt},
                                           LimitCase{"4611686018427387904\n", uint64_t{1} << 62},
                                           LimitCase{"4611686018427387905\n", std::nullopt},
                                           // Malformed: as if missing.
                                           LimitCase{"", std::nullopt}, LimitCase{"-1\n", std::nullopt},
                                           LimitCase{"12k\n", std::nullopt},
                                           LimitCase{"18446744073709551616\n", std::nullopt}));

struct MalformedCase {
  std::string name;
  Files files;
  CgroupFigures want;
  friend void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }
};

class CgroupReadMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(CgroupReadMalformed, Table) {
  FakeTree tree;
  auto layout = DiscoverFake(tree, kThisHostMountinfo);
  ASSERT_TRUE(layout.ok()) << layout.status();
  for (const auto& [path, content] : GetParam().files) tree.Write("sys/fs/cgroup/" + path, content);
  EXPECT_EQ(layout->Read(layout->DirsOfParent("/x", false)), GetParam().want);
}

CgroupFigures CpuOnly(std::optional<uint64_t> ns) {
  CgroupFigures f;
  f.cpu_usage_ns = ns;
  return f;
}

CgroupFigures MemoryOnly(MemoryFigures m) {
  CgroupFigures f;
  f.memory = m;
  return f;
}

INSTANTIATE_TEST_SUITE_P(
    CgroupFiles, CgroupReadMalformed,
    ::testing::Values(MalformedCase{"CpuGarbage", {{"cpuacct/x/cpuacct.usage", "garbage\n"}}, CpuOnly(std::nullopt)},
                      MalformedCase{"CpuEmpty", {{"cpuacct/x/cpuacct.usage", ""}}, CpuOnly(std::nullopt)},
                      MalformedCase{"CpuTwoNumbers", {{"cpuacct/x/cpuacct.usage", "12 13\n"}}, CpuOnly(std::nullopt)},
                      MalformedCase{"CpuNoNewline", {{"cpuacct/x/cpuacct.usage", "12"}}, CpuOnly(12)},
                      MalformedCase{"UsageGarbage", {{"memory/x/memory.usage_in_bytes", "12x\n"}}, CgroupFigures{}},
                      MalformedCase{"PidsGarbage", {{"pids/x/pids.current", "max\n"}}, CgroupFigures{}},
                      // memory.stat: junk lines and values are skipped, good ones still count; look-alike
                      // keys (total_rss_huge) are not total_rss.
                      MalformedCase{
                          "StatJunk",
                          {{"memory/x/memory.usage_in_bytes", "5000\n"},
                           {"memory/x/memory.stat",
                            "junk\ntotal_rss_huge 7\ntotal_inactive_file lots\ntotal_rss 300\n total_pgfault 9\n"
                            "total_pgmajfault 4 extra\ntotal_pgfault\t8\n\n"}},
                          MemoryOnly(Usage(5000, 5000, 300))},
                      MalformedCase{"StatOwnKeysAreNotTotals",
                                    {{"memory/x/memory.usage_in_bytes", "5000\n"},
                                     {"memory/x/memory.stat", "rss 300\ninactive_file 1000\npgfault 9\n"}},
                                    MemoryOnly(Usage(5000, 5000))}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace shim::stats

#pragma once
// The node's cgroup setup as integration tests see it, so that a test that reads cgroup
// files learns both layouts: cgroup v1 with Docker's cgroupfs driver (the development
// machines and CI's host), and cgroup v2 with the systemd driver (every Kubernetes 1.35+
// node; scripts/vm.sh boots one). scripts/vm-integration.sh exports
// DOCKERSHIM_TEST_CGROUP=v2: there a test that needs cgroup v2 fails instead of skipping.
#include <sys/statfs.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/integration/shell.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace testenv {

inline bool CgroupV2() {
  struct statfs fs {};
  return ::statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

// True where the test run demands cgroup v2 (in the VM).
inline bool CgroupV2Required() { return Get("DOCKERSHIM_TEST_CGROUP", "") == "v2"; }

// Docker's cgroup driver, "systemd" or "cgroupfs", as the engine under test reports it.
inline std::string DockerCgroupDriver() {
  static const std::string driver = [] {
    std::string d = Sh("docker info -f '{{.CgroupDriver}}'");
    absl::StripAsciiWhitespace(&d);
    return d.empty() ? std::string("cgroupfs") : d;
  }();
  return driver;
}

inline bool SystemdDriver() { return DockerCgroupDriver() == "systemd"; }

// A pod's cgroup parent as a kubelet passes it with Docker's driver: the pod's slice name
// (systemd: "kubepods-burstable-pod<uid>.slice"; the slice unit's name is the cgroup path
// with '-' for '/'), or a cgroupfs path ("/<prefix>/pod<uid>"). `prefix` is a test's own
// top level, free of '-' and '_', so that TearDown can find and remove what it made.
inline std::string PodCgroupParent(const std::string& prefix, const std::string& uid) {
  if (SystemdDriver()) return absl::StrCat(prefix, "-pod", uid, ".slice");
  return absl::StrCat("/", prefix, "/pod", uid);
}

// The cgroup path (from the hierarchy's root) that a cgroup parent names: a slice name
// expands as systemd expands it ("a-b-c.slice" → "/a.slice/a-b.slice/a-b-c.slice").
inline std::string CgroupParentPath(const std::string& parent) {
  if (!absl::EndsWith(parent, ".slice")) return parent;
  std::string path, unit;
  for (absl::string_view part : absl::StrSplit(absl::StripSuffix(parent, ".slice"), '-')) {
    unit = unit.empty() ? std::string(part) : absl::StrCat(unit, "-", part);
    absl::StrAppend(&path, "/", unit, ".slice");
  }
  return path;
}

// The directory of a cgroup path; `controller` picks the v1 hierarchy (ignored on v2).
inline std::string CgroupDir(const std::string& path, const std::string& controller) {
  if (CgroupV2()) return absl::StrCat("/sys/fs/cgroup", path);
  return absl::StrCat("/sys/fs/cgroup/", controller, path);
}

// A container's cgroup directory under its pod's parent, as Docker's driver names it.
inline std::string ContainerCgroupDir(const std::string& parent, const std::string& id,
                                      const std::string& controller) {
  const std::string leaf = SystemdDriver() ? absl::StrCat("docker-", id, ".scope") : id;
  return absl::StrCat(CgroupDir(CgroupParentPath(parent), controller), "/", leaf);
}

// Removes the cgroups a test's pods left under `prefix` once Docker has removed their
// containers: slices are systemd units (stop them), cgroupfs directories are removed
// deepest first.
inline void RemoveTestCgroups(const std::string& prefix) {
  if (SystemdDriver()) {
    Sh(absl::StrCat("systemctl stop '", prefix, "*.slice'"));
    return;
  }
  Sh(absl::StrCat("find /sys/fs/cgroup -maxdepth 3 -depth -type d -path '*/", prefix,
                  "*' -exec rmdir {} +"));
}

}  // namespace testenv

// In a test body: skip on cgroup v1, fail where the run demands v2.
#define DOCKERSHIM_REQUIRE_CGROUP_V2()                                                              \
  do {                                                                                              \
    if (!testenv::CgroupV2()) {                                                                     \
      if (testenv::CgroupV2Required()) FAIL() << "DOCKERSHIM_TEST_CGROUP=v2 but this is cgroup v1"; \
      GTEST_SKIP() << "needs cgroup v2 (scripts/vm.sh runs it on a cgroup v2 node)";               \
    }                                                                                               \
  } while (0)

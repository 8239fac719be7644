#pragma once
// What a process holds, read from /proc/<pid>: open fds, threads, resident memory
// (VmRSS with smaps_rollup's anonymous/file split) and, for finding where memory
// goes, the resident kilobytes of each kind of mapping in /proc/<pid>/smaps. Used by
// the load bench and its reduced integration test to see leaks after each round.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace testsupport {

struct Footprint {
  int fds = 0;
  int threads = 0;
  int64_t rss_kb = 0;        // VmRSS (/proc/<pid>/status)
  int64_t anon_kb = 0;       // smaps_rollup Anonymous: heap, arenas, stacks
  int64_t file_kb = 0;       // smaps_rollup Rss - Anonymous: pages of the binary and libraries
  int64_t private_kb = 0;    // smaps_rollup Private_Clean + Private_Dirty: what this process alone costs
};

absl::StatusOr<Footprint> ReadFootprint(pid_t pid);

// What each open fd of the process is (the targets of /proc/<pid>/fd/*): a path, with
// " (deleted)" after a removed file's, "socket:[inode]", "net:[inode]", "anon_inode:...".
absl::StatusOr<std::vector<std::string>> OpenFiles(pid_t pid);

// Resident kB by kind of mapping: "[heap]", "[stack]", "thread stacks" (anonymous
// mappings right after a one-page no-access guard, as glibc lays out pthread stacks),
// "malloc arenas" (anonymous mappings of a 64 MiB aligned heap of glibc), "other anon",
// and each file by its base name (text and data of the binary and each library).
absl::StatusOr<std::map<std::string, int64_t>> ReadMappingKinds(pid_t pid);

}  // namespace testsupport

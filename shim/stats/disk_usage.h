#pragma once
// The size of a container's writable layer (an overlay2 upper directory), counted as du
// counts it. It reads every inode of the tree: run it in the background, never on a
// request path.
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace shim::stats {

struct DiskUsage {
  uint64_t bytes = 0;   // allocated (st_blocks * 512), a hard-linked inode once
  uint64_t inodes = 0;  // distinct inodes, directories and `root` included
  bool operator==(const DiskUsage&) const = default;
};

// Walks the directory `root` without following symlinks or entering other file
// systems (or a directory that is its own ancestor through a bind mount). Entries that
// vanish or move during the walk (the container keeps writing) and directories that
// cannot be read are skipped, not errors: the figure is a snapshot of a moving tree.
// Iterative with one directory open at a time, so neither the stack nor the fd limit
// bounds the depth. Errors are `root`'s own: NOT_FOUND when missing, or not a
// directory.
absl::StatusOr<DiskUsage> MeasureTree(const std::string& root);

}  // namespace shim::stats

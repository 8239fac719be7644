#pragma once
// Switching back, cri-dockerd owns every pod again, and it reads only its own
// checkpoints (<cri-dockerd root>/sandbox/<id>): the port mappings it tears a pod's
// hostPorts down with at StopPodSandbox come from there, and it removes only that file
// with a pod. So each of dockershim's checkpoints (<dockershim root>/sandbox/<id>) is
// handed over:
//   - a pod that cri-dockerd has no checkpoint of (one dockershim started, or adopted
//     from the infra container's labels): cri-dockerd's checkpoint is written, as
//     cri-dockerd writes its own, then ours is removed;
//   - a pod that cri-dockerd has a checkpoint of (adopted from it, or handed over by a
//     run interrupted after the write): ours is removed.
// Nothing of dockershim's is left for cri-dockerd to outlive, and a later switch to
// dockershim adopts every pod from cri-dockerd's checkpoint and libcni's cache.
#include <string>
#include <vector>

#include "shim/checkpoint_store.h"

namespace shim::migrate {

struct CheckpointHandover {
  struct Write {
    SandboxCheckpoint pod;  // ours
    std::string ours;       // its path
    std::string theirs;     // cri-dockerd's checkpoint to write
    std::string content;    // in cri-dockerd's format
  };
  std::vector<Write> writes;
  std::vector<std::string> removals;  // ours, whose pod cri-dockerd has a checkpoint of
  // Files left as they are, with why: cri-dockerd's file of a pod of ours that is not a
  // checkpoint it can read (cri-dockerd deletes such files itself).
  std::vector<std::string> left;
};

// What is to be done with the checkpoints in `dockershim_root`/sandbox (sorted by
// sandbox ID). Files that are not dockershim's checkpoints (corrupt, temporary, another
// format) are not looked at. Nothing when both roots are one directory.
CheckpointHandover PlanCheckpointHandover(const std::string& dockershim_root, const std::string& cri_dockerd_root);

}  // namespace shim::migrate

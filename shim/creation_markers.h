#pragma once
// Names of the infra containers RunPodSandbox is creating, one empty file each under
// <root>/creating, from before the Docker create until the call returns. Only a crash,
// or a rollback that could not remove the container (Docker went away), leaves one: the
// next start then knows that a container of that name is this shim's and half-created,
// even when its checkpoint was never written or is gone. (Docker may be shared
// with other shims, whose containers are in the same "created" state for a moment.)
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shim {

class CreationMarkers {
 public:
  explicit CreationMarkers(const std::string& root_directory);

  absl::Status Mark(const std::string& name);
  void Unmark(const std::string& name);
  std::vector<std::string> List() const;

 private:
  std::string dir_;
};

}  // namespace shim

#include "shim/migrate/adopted_checkpoints.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/files.h"
#include "shim/checkpoint_store.h"

namespace shim::migrate {

namespace fs = std::filesystem;

std::vector<std::string> AdoptedCheckpoints(const std::string& dockershim_root, const std::string& cri_dockerd_root) {
  std::vector<std::string> paths;
  const fs::path ours = fs::path(dockershim_root) / "sandbox";
  const fs::path theirs = fs::path(cri_dockerd_root) / "sandbox";
  std::error_code ec;
  if (fs::equivalent(ours, theirs, ec)) return paths;
  for (const fs::directory_entry& entry : fs::directory_iterator(ours, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::optional<std::string> text = common::ReadWholeFile(entry.path().string());
    if (!text) continue;
    // Another format (cri-dockerd's, a corrupt file) is not ours to remove here.
    const absl::StatusOr<SandboxCheckpoint> checkpoint = DecodeCheckpoint(*text);
    if (!checkpoint.ok() || checkpoint->adopted_from != kAdoptedFromCriDockerd) continue;
    if (checkpoint->sandbox_id != entry.path().filename().string()) continue;
    if (fs::is_regular_file(theirs / checkpoint->sandbox_id, ec)) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace shim::migrate

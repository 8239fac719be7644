#include "shim/migrate/checkpoint_handover.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace shim::migrate {

namespace fs = std::filesystem;

CheckpointHandover PlanCheckpointHandover(const std::string& dockershim_root, const std::string& cri_dockerd_root) {
  CheckpointHandover plan;
  const fs::path ours_dir = SandboxDirectoryOf(dockershim_root);
  const fs::path theirs_dir = SandboxDirectoryOf(cri_dockerd_root);
  std::error_code ec;
  if (fs::equivalent(ours_dir, theirs_dir, ec)) return plan;
  std::vector<fs::path> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(ours_dir, ec))
    if (entry.is_regular_file(ec)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    const std::string id = path.filename().string();
    const std::optional<std::string> text = common::ReadWholeFile(path.string());
    if (!text) continue;
    absl::StatusOr<SandboxCheckpoint> ours = DecodeCheckpoint(*text);
    if (!ours.ok() || ours->sandbox_id != id) continue;
    const fs::path theirs = theirs_dir / id;
    const std::optional<std::string> their_text = common::ReadWholeFile(theirs.string());
    if (!their_text) {
      const std::string content = EncodeCriDockerdCheckpoint(*ours);
      plan.writes.push_back({*std::move(ours), path.string(), theirs.string(), content});
    } else if (DecodeCriDockerdCheckpoint(*their_text, id).ok()) {
      plan.removals.push_back(path.string());
    } else {
      plan.left.push_back(absl::StrCat(path.string(), " and ", theirs.string(),
                                       " stay: the latter is not a checkpoint cri-dockerd can read"));
    }
  }
  return plan;
}

}  // namespace shim::migrate

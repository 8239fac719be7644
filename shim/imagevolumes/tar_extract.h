#pragma once
// Unpacks a tar stream into a directory with GNU tar in a child process rather than an
// extractor of our own: tar keeps modes, owners (numerically: the image's IDs, not the
// host's names), times, hard links and devices, strips leading '/' and refuses '..'
// members, and creates a symlink that points outside the tree (absolute, or with '..')
// only after every other member, so no member can be written through one.
#include <string>
#include <string_view>
#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shim::imagevolumes {

class TarExtractor {
 public:
  // Runs `tar -x` into `directory`, which must exist.
  static absl::StatusOr<TarExtractor> Start(const std::string& directory);
  TarExtractor(TarExtractor&& other) noexcept;
  TarExtractor& operator=(TarExtractor&&) = delete;
  // Kills and reaps a tar that was not finished.
  ~TarExtractor();

  // Feeds archive bytes; INTERNAL once tar has stopped reading (it failed: Finish says why).
  absl::Status Write(std::string_view data);
  // Ends the archive and waits for tar; INTERNAL with tar's message unless it succeeded.
  absl::Status Finish();

 private:
  TarExtractor(pid_t pid, common::UniqueFd input, common::UniqueFd errors);
  absl::Status Wait();

  pid_t pid_;
  common::UniqueFd input_;   // tar's stdin (a socket: a write after tar exits fails, raises no SIGPIPE)
  common::UniqueFd errors_;  // tar's stderr (a memfd: read once tar has exited, never blocks it)
};

}  // namespace shim::imagevolumes

#pragma once
// Writes a ustar archive (POSIX.1-1988, what GNU tar and Go's archive/tar read) of a
// directory tree and of files given in memory: what CheckpointContainer hands the
// kubelet. Regular files and directories only (a CRIU dump has nothing else); names
// longer than ustar's prefix/name fields are refused rather than cut.
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/unique_fd.h"

namespace shim::checkpointing {

class TarWriter {
 public:
  // Creates `path`, which must not exist.
  static absl::StatusOr<TarWriter> Create(const std::string& path);

  absl::Status AddFile(const std::string& name, const std::string& content, unsigned mode = 0644);
  // `dir`'s tree under `name`/ (its subdirectories, then their files), file contents
  // streamed from disk.
  absl::Status AddTree(const std::string& name, const std::string& dir);
  // Writes the end-of-archive blocks and fsyncs.
  absl::Status Finish();

 private:
  TarWriter(std::string path, common::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  absl::Status Header(const std::string& name, char type, uint64_t size, unsigned mode, int64_t mtime);
  absl::Status Write(const char* data, size_t size);
  absl::Status Pad(uint64_t size);

  std::string path_;
  common::UniqueFd fd_;
};

}  // namespace shim::checkpointing

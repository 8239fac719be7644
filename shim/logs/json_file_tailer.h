#pragma once
// Follows a container's json-file log (json_file.h) on disk: the entries Docker
// wrote, in the order it wrote them, across its rotations, from a resume time on.
// No thread, no event loop and no inotify of its own: the owner watches the log's
// directory (directory_watcher.h, from before Open) or polls, and calls Read().
//
// Where the entries cannot be followed for sure, Open and Read answer an error and the
// owner falls back to Docker's logs API (which reads the same files, compressed ones
// included): the file is missing or unreadable, was truncated, a rotated file that is
// needed is already compressed, or Docker rotated past the file being read before its
// successor could be told (rotated faster than it was read).
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/unique_fd.h"
#include "shim/logs/json_file.h"

namespace shim::logs {

class JsonFileTailer {
 public:
  // `path`: Docker's LogPath (<id>-json.log). Entries before `since_nanos` are skipped
  // (0: everything Docker holds, rotated files included); the reading starts in the
  // newest file that can hold entries at `since_nanos`.
  static absl::StatusOr<std::unique_ptr<JsonFileTailer>> Open(const std::string& path, int64_t since_nanos);
  ~JsonFileTailer();
  JsonFileTailer(const JsonFileTailer&) = delete;
  JsonFileTailer& operator=(const JsonFileTailer&) = delete;

  enum class Progress { kIdle, kMore };
  // Hands the complete entries written so far to `on_entry`, in file order, reading
  // about `budget` bytes at most (kMore: call again). An entry being written (no '\n'
  // yet) waits for the next call. FAILED_PRECONDITION: cannot go on, fall back.
  using EntryFn = std::function<void(const JsonLogEntry&)>;
  absl::StatusOr<Progress> Read(const EntryFn& on_entry, std::size_t budget);

  const std::string& path() const { return path_; }
  uint64_t rotations() const { return rotations_; }  // followed since Open
  uint64_t skipped_lines() const { return bad_lines_; }  // not json-file entries

 private:
  explicit JsonFileTailer(std::string path) : path_(std::move(path)) {}
  absl::Status Start(int64_t since_nanos);
  // One look each (true: opened; false: Docker is moving files, look again; error: fall back).
  absl::StatusOr<bool> OpenOldestNeeded(int64_t since_nanos);
  absl::StatusOr<bool> OpenSuccessor();
  // At the end of the file being read: the next file when Docker rotated it, the same
  // one when not (false), or an error (truncated, rotated too fast).
  absl::StatusOr<bool> FollowRotation();
  // Hands out the complete entries of pending_ followed by `fresh` (read after it) and
  // keeps what follows the last '\n' in pending_.
  void Consume(std::string_view fresh, const EntryFn& on_entry);
  // Hands out `data`'s complete lines; answers how many bytes they took.
  std::size_t HandOut(std::string_view data, const EntryFn& on_entry);

  const std::string path_;
  common::UniqueFd fd_;  // the file being read
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint64_t offset_ = 0;   // of pending_'s first byte in fd_
  std::string pending_;   // read, not yet handed out (the start of an entry being written)
  int64_t since_nanos_ = 0;
  int64_t last_nanos_ = 0;  // of the last entry read (a compressed file's LastTime names it)
  uint64_t rotations_ = 0, bad_lines_ = 0;
  JsonLogEntry entry_;  // reused
};

}  // namespace shim::logs

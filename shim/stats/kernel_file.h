#pragma once
// The one way the stats readers read a file. /proc and cgroupfs files report a size of
// 0 and are generated on read, so they are read to end of file with plain pread(2) (no
// stream machinery: a container's figures take several of these per request).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace shim::stats {

// The text from `offset` 0 of the open file `fd` (named `path` in errors), read to its end.
absl::StatusOr<std::string> ReadOpenKernelFile(int fd, const std::string& path);

// NOT_FOUND when the file (or the process it belongs to) is gone; the errno's code
// otherwise.
inline absl::StatusOr<std::string> ReadKernelFile(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  return ReadOpenKernelFile(fd.get(), path);
}

// Where the cgroup readers get a file's text.
class KernelFileSource {
 public:
  virtual ~KernelFileSource() = default;
  virtual absl::StatusOr<std::string> Read(const std::string& path) = 0;
};

// Opens the file at every read (ReadKernelFile).
class FreshKernelFiles final : public KernelFileSource {
 public:
  absl::StatusOr<std::string> Read(const std::string& path) override { return ReadKernelFile(path); }
};

// Keeps each file open from one read to the next and reads it again from its start:
// opening a cgroup file walks its path through kernfs, which costs more than the read
// (under a kubelet with 100 pods, a third of the shim's CPU went to ListContainerStats,
// half of that to open(2) and close(2)). A kept cgroup file whose cgroup was removed
// reads ENODEV and is opened again by its path once (a restarted container's cgroup has
// the same name); a kept file of another file system (a test's fake tree) is opened
// again once unlinked. A file missing beside one that is open stays missing (a cgroup's
// files are fixed when it is made) and is not looked for again. Descriptors are kept
// while the process holds fewer than half of its RLIMIT_NOFILE; past that, files are
// opened at every read. Not thread-safe.
class KeptKernelFiles final : public KernelFileSource {
 public:
  KeptKernelFiles() = default;
  KeptKernelFiles(const KeptKernelFiles&) = delete;
  KeptKernelFiles& operator=(const KeptKernelFiles&) = delete;
  ~KeptKernelFiles() override;

  absl::StatusOr<std::string> Read(const std::string& path) override;

  // Descriptors all instances keep open now.
  static int KeptInProcess();

 private:
  struct Kept {
    common::UniqueFd fd;
    bool on_cgroupfs = false;
  };
  // Opens `path` and keeps it, budget allowing; the text of its first read.
  absl::StatusOr<std::string> OpenAndRead(const std::string& path);
  void Drop(std::map<std::string, Kept>::iterator it);

  std::map<std::string, Kept> open_;
  std::set<std::string> missing_;
};

}  // namespace shim::stats

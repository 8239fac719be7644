#pragma once
// The one way the stats readers read a file. /proc and cgroupfs files report a size of
// 0 and are generated on read, so this reads to end of file with plain read(2) (no
// stream machinery: a container's figures take several of these per request).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace shim::stats {

// NOT_FOUND when the file (or the process it belongs to) is gone; the errno's code
// otherwise.
inline absl::StatusOr<std::string> ReadKernelFile(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
    text.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace shim::stats

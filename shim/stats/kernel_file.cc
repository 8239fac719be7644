#include "shim/stats/kernel_file.h"

#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <atomic>

namespace shim::stats {
namespace {

std::atomic<int> kept_in_process{0};

// Whether one more descriptor may be kept: the process keeps at most half of its limit,
// so that sockets and files the rest of the shim opens never run short.
bool MayKeepOneMore() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  return static_cast<rlim_t>(kept_in_process.load(std::memory_order_relaxed)) < limit.rlim_cur / 2;
}

bool OnCgroupFs(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  return fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC;
}

std::string DirOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

absl::StatusOr<std::string> ReadOpenKernelFile(int fd, const std::string& path) {
  std::string text;
  char buf[4096];
  for (off_t offset = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n == 0) return text;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
    text.append(buf, static_cast<size_t>(n));
    offset += n;
  }
}

KeptKernelFiles::~KeptKernelFiles() { kept_in_process.fetch_sub(static_cast<int>(open_.size())); }

int KeptKernelFiles::KeptInProcess() { return kept_in_process.load(); }

void KeptKernelFiles::Drop(std::map<std::string, Kept>::iterator it) {
  open_.erase(it);
  kept_in_process.fetch_sub(1);
}

absl::StatusOr<std::string> KeptKernelFiles::Read(const std::string& path) {
  if (missing_.contains(path)) return absl::NotFoundError(absl::StrCat("open ", path, ": no such file"));
  auto it = open_.find(path);
  if (it == open_.end()) return OpenAndRead(path);
  if (!it->second.on_cgroupfs) {
    struct stat st {};
    if (::fstat(it->second.fd.get(), &st) != 0 || st.st_nlink == 0) {
      Drop(it);
      return OpenAndRead(path);
    }
  }
  absl::StatusOr<std::string> text = ReadOpenKernelFile(it->second.fd.get(), path);
  if (text.ok()) return text;
  Drop(it);
  return OpenAndRead(path);
}

absl::StatusOr<std::string> KeptKernelFiles::OpenAndRead(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) {
      const std::string dir = DirOf(path);
      for (const auto& [open_path, kept] : open_) {
        if (DirOf(open_path) == dir) {
          missing_.insert(path);
          break;
        }
      }
    }
    return absl::ErrnoToStatus(err, absl::StrCat("open ", path));
  }
  absl::StatusOr<std::string> text = ReadOpenKernelFile(fd.get(), path);
  if (text.ok() && MayKeepOneMore()) {
    const bool on_cgroupfs = OnCgroupFs(fd.get());
    kept_in_process.fetch_add(1);
    open_.emplace(path, Kept{std::move(fd), on_cgroupfs});
  }
  return text;
}

}  // namespace shim::stats

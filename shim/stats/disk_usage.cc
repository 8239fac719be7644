#include "shim/stats/disk_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/unique_fd.h"

namespace shim::stats {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId&) const = default;
};

std::optional<DirId> IdOf(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return std::nullopt;
  return DirId{st.st_dev, st.st_ino};
}

// A directory on the walk's path (one without subdirectories gets no frame).
struct Frame {
  DirId id;
  std::string name;  // in its parent
  std::vector<std::string> subdirs;
};

class Tally {
 public:
  explicit Tally(dev_t dev) : dev_(dev) {}

  void Count(const struct stat& st) {
    // du counts a file with several links once; directories cannot have extra links.
    if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && !linked_.insert(st.st_ino).second) return;
    usage_.bytes += static_cast<uint64_t>(st.st_blocks) * 512;
    ++usage_.inodes;
  }

  // Counts the entries of the open directory `dir_fd`; returns its subdirectories on
  // the tree's file system.
  std::vector<std::string> CountEntries(int dir_fd) {
    std::vector<std::string> subdirs;
    // fdopendir owns the fd it is given; a duplicate keeps `dir_fd` for fstatat.
    int list_fd = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    DIR* dir = list_fd < 0 ? nullptr : ::fdopendir(list_fd);
    if (dir == nullptr) {
      if (list_fd >= 0) ::close(list_fd);
      return subdirs;
    }
    while (const dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone since readdir
      if (st.st_dev != dev_) continue;  // a mount point: another file system's
      Count(st);
      if (S_ISDIR(st.st_mode)) subdirs.emplace_back(name);
    }
    ::closedir(dir);
    return subdirs;
  }

  const DiskUsage& usage() const { return usage_; }
  dev_t dev() const { return dev_; }

 private:
  dev_t dev_;
  DiskUsage usage_;
  std::unordered_set<ino_t> linked_;  // files with several links, counted already
};

// A depth-first walk holding one directory open: the stack's top. No path to it (a
// deep tree outgrows PATH_MAX) and no fd kept per level (it would outgrow
// RLIMIT_NOFILE): back up through "..".
class TreeWalk {
 public:
  TreeWalk(common::UniqueFd root, dev_t dev) : root_(std::move(root)), tally_(dev) {}

  DiskUsage Run(const struct stat& root) {
    tally_.Count(root);
    Push({root.st_dev, root.st_ino}, "", tally_.CountEntries(root_.get()), Dup(root_.get()));
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.subdirs.empty()) {
        Leave();
        continue;
      }
      std::string name = std::move(top.subdirs.back());
      top.subdirs.pop_back();
      Enter(std::move(name));
    }
    return tally_.usage();
  }

 private:
  static common::UniqueFd Dup(int fd) { return common::UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

  void Enter(std::string name) {
    common::UniqueFd child(::openat(top_fd_.get(), name.c_str(), kDirFlags));
    if (!child) return;  // gone, no longer a directory, or unreadable
    std::optional<DirId> id = IdOf(child.get());
    // Mounted over since it was listed, or its own ancestor through a bind mount.
    if (!id || id->dev != tally_.dev() || ancestors_.count(id->ino)) return;
    std::vector<std::string> subdirs = tally_.CountEntries(child.get());
    if (!subdirs.empty()) Push(*id, std::move(name), std::move(subdirs), std::move(child));
  }

  void Leave() {
    Pop();
    if (stack_.empty()) return;
    common::UniqueFd parent(::openat(top_fd_.get(), "..", kDirFlags));
    if (parent && IdOf(parent.get()) == stack_.back().id) {
      top_fd_ = std::move(parent);
    } else {
      Reopen();
    }
  }

  // By name from the root, when ".." no longer leads to the top because the directory
  // just left was removed or moved. Directories on the way that are gone or moved
  // took what they still held out of the tree: their frames go.
  void Reopen() {
    common::UniqueFd fd = Dup(root_.get());
    size_t depth = 1;
    for (; depth < stack_.size(); ++depth) {
      common::UniqueFd next(::openat(fd.get(), stack_[depth].name.c_str(), kDirFlags));
      if (!next || IdOf(next.get()) != stack_[depth].id) break;
      fd = std::move(next);
    }
    while (stack_.size() > depth) Pop();
    top_fd_ = std::move(fd);
  }

  void Push(DirId id, std::string name, std::vector<std::string> subdirs, common::UniqueFd fd) {
    ancestors_.insert(id.ino);
    stack_.push_back({id, std::move(name), std::move(subdirs)});
    top_fd_ = std::move(fd);
  }

  void Pop() {
    ancestors_.erase(stack_.back().id.ino);
    stack_.pop_back();
  }

  common::UniqueFd root_;
  common::UniqueFd top_fd_;
  Tally tally_;
  std::vector<Frame> stack_;
  std::unordered_set<ino_t> ancestors_;  // of the stack: a bind mount may show one again
};

}  // namespace

absl::StatusOr<DiskUsage> MeasureTree(const std::string& root) {
  common::UniqueFd fd(::open(root.c_str(), kDirFlags));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", root));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("stat ", root));
  return TreeWalk(std::move(fd), st.st_dev).Run(st);
}

}  // namespace shim::stats

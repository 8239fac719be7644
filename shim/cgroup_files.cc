#include "shim/cgroup_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/unique_fd.h"
#include "shim/stats/kernel_file.h"

namespace shim {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::string Quote(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

absl::string_view ControllerOf(absl::string_view name) { return name.substr(0, name.find('.')); }

// write(2) of the whole value in one call: cgroup files take a value per write.
absl::Status WriteOne(const std::string& dir, absl::string_view name, absl::string_view value) {
  const std::string path = absl::StrCat(dir, "/", name);
  // O_TRUNC as a shell's redirection: kernfs ignores it, a fake tree's plain file needs it.
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd) return WriteError(errno, dir, name, value);
  ssize_t n;
  do {
    n = ::write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return WriteError(errno, dir, name, value);
  if (static_cast<size_t>(n) != value.size())
    return absl::InternalError(absl::StrCat(path, ": wrote ", n, " of ", value.size(), " bytes"));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCgroupFileName(absl::string_view name, absl::string_view what) {
  std::vector<absl::string_view> parts = absl::StrSplit(name, '.');
  bool valid = parts.size() >= 2;
  for (absl::string_view part : parts) {
    valid = valid && !part.empty();
    for (char c : part) valid = valid && IsNameChar(c);
  }
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", Quote(name),
                     " is not a cgroup v2 interface file name (<controller>.<name>, e.g. memory.high)"));
  }
  if (parts[0] == "cgroup") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", Quote(name), " is a core cgroup file, not a resource of a controller"));
  }
  return absl::OkStatus();
}

absl::Status CheckCgroupFiles(const std::string& dir, const CgroupFileValues& values) {
  if (values.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> controllers = stats::ReadKernelFile(absl::StrCat(dir, "/cgroup.controllers"));
  if (!controllers.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("no cgroup v2 directory at ", dir, " to write ",
                                                      values.begin()->first, " into (",
                                                      controllers.status().message(), ")"));
  }
  const std::set<absl::string_view> enabled = absl::StrSplit(*controllers, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  for (const auto& [name, value] : values) {
    if (!enabled.contains(ControllerOf(name))) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": the ", ControllerOf(name),
                                                     " controller is not enabled in cgroup ", dir, " (it has: ",
                                                     absl::StripAsciiWhitespace(*controllers), ")"));
    }
    struct stat st {};
    if (::stat(absl::StrCat(dir, "/", name).c_str(), &st) != 0) return WriteError(errno, dir, name, value);
    // Root may open a read-only cgroup file for writing; the write fails with EINVAL.
    if ((st.st_mode & 0222) == 0) return WriteError(EACCES, dir, name, value);
  }
  return absl::OkStatus();
}

absl::Status WriteCgroupFiles(const std::string& dir, const CgroupFileValues& values) {
  if (absl::Status s = CheckCgroupFiles(dir, values); !s.ok()) return s;
  for (const auto& [name, value] : values) {
    if (absl::Status s = WriteOne(dir, name, value); !s.ok()) return s;
    // The reservation limit goes with the fault limit, where the kernel (5.7+) has one.
    absl::string_view size = name;
    if (absl::ConsumePrefix(&size, "hugetlb.") && absl::ConsumeSuffix(&size, ".max") &&
        !absl::EndsWith(size, ".rsvd")) {
      const std::string rsvd = absl::StrCat("hugetlb.", size, ".rsvd.max");
      if (values.contains(rsvd) || ::access(absl::StrCat(dir, "/", rsvd).c_str(), F_OK) != 0) continue;
      if (absl::Status s = WriteOne(dir, rsvd, value); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

CgroupFileValues ReadCgroupFiles(const std::string& dir, const std::vector<std::string>& names) {
  CgroupFileValues out;
  for (const std::string& name : names) {
    absl::StatusOr<std::string> text = stats::ReadKernelFile(absl::StrCat(dir, "/", name));
    if (text.ok()) out[name] = std::string(absl::StripSuffix(*text, "\n"));
  }
  return out;
}

absl::Status WriteError(int err, const std::string& dir, absl::string_view name, absl::string_view value) {
  const std::string what = absl::StrCat(name, " = ", Quote(value), " in cgroup ", dir);
  switch (err) {
    case ENOENT:
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": no such cgroup file (not an interface file of the ", ControllerOf(name),
                       " controller on this kernel)"));
    case EACCES:
    case EPERM:
      return absl::InvalidArgumentError(absl::StrCat(what, ": the file is read-only"));
    case EINVAL:
    case ERANGE:
    case EOVERFLOW:
      return absl::InvalidArgumentError(absl::StrCat(what, ": the kernel rejects the value (", std::strerror(err), ")"));
    case EBUSY:
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": the kernel refuses it in the cgroup's present state, e.g. a limit below what it uses now (",
          std::strerror(err), ")"));
    default:
      return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
  }
}

}  // namespace shim

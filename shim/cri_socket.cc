#include "shim/cri_socket.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shim {

absl::StatusOr<gid_t> ResolveSocketGroup(const std::string& group) {
  if (group.empty()) return getegid();
  std::vector<char> buffer(16384);
  struct group entry, *found = nullptr;
  int err;
  while ((err = getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found)) == ERANGE)
    buffer.resize(buffer.size() * 2);
  if (found) return found->gr_gid;
  // A gid needs no entry in /etc/group (as chgrp accepts one).
  if (uint32_t gid; absl::SimpleAtoi(group, &gid) && gid != static_cast<uint32_t>(-1)) return static_cast<gid_t>(gid);
  if (err != 0) return absl::UnavailableError(absl::StrCat("cannot look up group \"", group, "\": ", std::strerror(err)));
  return absl::NotFoundError(absl::StrCat("no group named \"", group, "\" (give a group name or a numeric gid)"));
}

PrivateUmask::PrivateUmask() : previous_(::umask(0177)) {}
PrivateUmask::~PrivateUmask() { ::umask(previous_); }

absl::Status RestrictSocket(const std::string& path, gid_t gid) {
  if (::chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0)
    return absl::PermissionDeniedError(
        absl::StrCat("cannot give ", path, " to group ", gid, ": ", std::strerror(errno)));
  if (::chmod(path.c_str(), 0660) != 0)
    return absl::PermissionDeniedError(absl::StrCat("cannot chmod 0660 ", path, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace shim

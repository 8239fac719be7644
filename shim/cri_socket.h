#pragma once
// Who may connect to the CRI socket: its owner (root) and one group, mode 0660, as
// dockerd's own socket. The kubelet runs as root; a group lets tools such as crictl
// run without it.
#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace shim {

// A group name or a numeric gid; "" is the shim's own group (root's, as the shim runs
// as root). NOT_FOUND for a name no group has.
absl::StatusOr<gid_t> ResolveSocketGroup(const std::string& group);

// Keeps files created while it lives private to their owner (umask 0177), so that a
// socket never exists with wider permissions than RestrictSocket gives it.
class PrivateUmask {
 public:
  PrivateUmask();
  ~PrivateUmask();
  PrivateUmask(const PrivateUmask&) = delete;
  PrivateUmask& operator=(const PrivateUmask&) = delete;

 private:
  mode_t previous_;
};

// Gives the socket at `path` to group `gid` and mode 0660.
absl::Status RestrictSocket(const std::string& path, gid_t gid);

}  // namespace shim

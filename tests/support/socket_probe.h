#pragma once
// Whether a daemon serves on a unix socket yet. Its file appears at bind(), a moment
// before listen(): a gRPC call in between fails at once with UNAVAILABLE, so only an
// accepted connection shows that it serves (a stale file of a killed daemon refuses).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace testsupport {

inline bool AcceptsConnections(const std::string& socket_path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool accepted = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return accepted;
}

}  // namespace testsupport

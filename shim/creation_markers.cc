#include "shim/creation_markers.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace shim {

CreationMarkers::CreationMarkers(const std::string& root_directory) : dir_(root_directory + "/creating") {}

absl::Status CreationMarkers::Mark(const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const std::string path = absl::StrCat(dir_, "/", name);
  // No fsync: it only has to outlive the process, not the machine.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  ::close(fd);
  return absl::OkStatus();
}

void CreationMarkers::Unmark(const std::string& name) { ::unlink(absl::StrCat(dir_, "/", name).c_str()); }

std::vector<std::string> CreationMarkers::List() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) names.push_back(e.path().filename().string());
  return names;
}

}  // namespace shim

#include "shim/checkpointing/tar_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace shim::checkpointing {

namespace {

constexpr size_t kBlock = 512;

absl::Status Errno(int err, const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

// An octal field of `width` bytes: digits, then NUL.
void PutOctal(char* field, size_t width, uint64_t value) {
  const std::string digits = absl::StrFormat("%0*o", static_cast<int>(width - 1), value);
  std::memcpy(field, digits.data(), std::min(digits.size(), width - 1));
}

}  // namespace

absl::StatusOr<TarWriter> TarWriter::Create(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return Errno(errno, absl::StrCat("create ", path));
  return TarWriter(path, std::move(fd));
}

absl::Status TarWriter::Write(const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_.get(), data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(errno, absl::StrCat("write ", path_));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status TarWriter::Pad(uint64_t size) {
  static const char kZeros[kBlock] = {};
  const size_t rest = size % kBlock;
  return rest == 0 ? absl::OkStatus() : Write(kZeros, kBlock - rest);
}

absl::Status TarWriter::Header(const std::string& name, char type, uint64_t size, unsigned mode, int64_t mtime) {
  // ustar splits a long name at a '/' into prefix (155) and name (100).
  std::string prefix, base = name;
  if (base.size() > 100) {
    const size_t cut = name.find('/', name.size() - 101);
    if (cut == std::string::npos || cut > 155)
      return absl::InternalError(absl::StrCat("tar: name too long for ustar: ", name));
    prefix = name.substr(0, cut);
    base = name.substr(cut + 1);
  }
  char h[kBlock] = {};
  std::memcpy(h, base.data(), base.size());
  PutOctal(h + 100, 8, mode & 07777);
  PutOctal(h + 108, 8, 0);  // uid: root
  PutOctal(h + 116, 8, 0);
  PutOctal(h + 124, 12, size);
  PutOctal(h + 136, 12, static_cast<uint64_t>(std::max<int64_t>(0, mtime)));
  h[156] = type;
  std::memcpy(h + 257, "ustar\0" "00", 8);
  std::memcpy(h + 345, prefix.data(), prefix.size());
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (const char c : h) sum += static_cast<unsigned char>(c);
  PutOctal(h + 148, 7, sum);
  return Write(h, kBlock);
}

absl::Status TarWriter::AddFile(const std::string& name, const std::string& content, unsigned mode) {
  if (absl::Status s = Header(name, '0', content.size(), mode, absl::ToUnixSeconds(absl::Now())); !s.ok()) return s;
  if (absl::Status s = Write(content.data(), content.size()); !s.ok()) return s;
  return Pad(content.size());
}

absl::Status TarWriter::AddTree(const std::string& name, const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return Errno(errno, absl::StrCat("stat ", dir));
  if (!S_ISDIR(st.st_mode)) return absl::InternalError(absl::StrCat(dir, " is not a directory"));
  if (absl::Status s = Header(name, '5', 0, st.st_mode, st.st_mtim.tv_sec); !s.ok()) return s;
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) entries.push_back(e.path());
  if (ec) return absl::InternalError(absl::StrCat("list ", dir, ": ", ec.message()));
  std::sort(entries.begin(), entries.end());  // the same tree always gives the same archive
  std::vector<char> buf(1 << 20);
  for (const auto& path : entries) {
    const std::string member = absl::StrCat(name, "/", path.filename().string());
    if (::lstat(path.c_str(), &st) != 0) return Errno(errno, absl::StrCat("stat ", path.string()));
    if (S_ISDIR(st.st_mode)) {
      if (absl::Status s = AddTree(member, path.string()); !s.ok()) return s;
      continue;
    }
    if (!S_ISREG(st.st_mode))
      return absl::InternalError(absl::StrCat("tar: ", path.string(), " is neither a file nor a directory"));
    common::UniqueFd in(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in) return Errno(errno, absl::StrCat("open ", path.string()));
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (absl::Status s = Header(member, '0', size, st.st_mode, st.st_mtim.tv_sec); !s.ok()) return s;
    uint64_t left = size;
    while (left > 0) {
      const ssize_t n = ::read(in.get(), buf.data(), std::min<uint64_t>(buf.size(), left));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno(errno, absl::StrCat("read ", path.string()));
      if (n == 0) return absl::InternalError(absl::StrCat(path.string(), " shrank while being archived"));
      if (absl::Status s = Write(buf.data(), static_cast<size_t>(n)); !s.ok()) return s;
      left -= static_cast<uint64_t>(n);
    }
    if (absl::Status s = Pad(size); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status TarWriter::Finish() {
  static const char kEnd[2 * kBlock] = {};
  if (absl::Status s = Write(kEnd, sizeof kEnd); !s.ok()) return s;
  if (::fsync(fd_.get()) != 0) return Errno(errno, absl::StrCat("fsync ", path_));
  fd_.Reset();
  return absl::OkStatus();
}

}  // namespace shim::checkpointing

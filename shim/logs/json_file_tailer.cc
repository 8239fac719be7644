#include "shim/logs/json_file_tailer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status.h"
#include "common/strings.h"

namespace shim::logs {
namespace {

constexpr std::size_t kReadBytes = 256 << 10;
// An unfinished entry's buffer keeps at most this much memory once the entry is out.
constexpr std::size_t kKeptPendingBytes = 64 << 10;
// An entry is at most 16 KiB of content, escaped (up to 6 bytes a byte) plus attrs.
constexpr std::size_t kMaxEntryBytes = 4 << 20;
// Docker's max-file has no limit; past this many rotated files the search stops.
constexpr int kMaxRotatedFiles = 10000;
// Docker rotates by renaming <log>.k-1 to <log>.k from the oldest down, so while it
// rotates one name in the chain is missing and the files above it have moved. A look
// that meets such a gap (or a file that moved between the look and the open) looks
// again, a millisecond later, for this long before it gives up.
constexpr absl::Duration kRotationSettle = absl::Milliseconds(250);

// Read's buffer: one per reading thread (the log copier's), filled by pread without being
// cleared first, so that a followed container holds no read buffer of its own (only the
// entry Docker is writing) and a read that finds nothing costs no memset.
char* ReadBuffer() {
  thread_local const std::unique_ptr<char[]> buf = std::make_unique_for_overwrite<char[]>(kReadBytes);
  return buf.get();
}

absl::Status FallBack(std::string_view why) { return absl::FailedPreconditionError(common::Av(why)); }

std::string Rotated(const std::string& path, int k) { return absl::StrCat(path, ".", k); }

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<struct stat> Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

bool SameFile(const struct stat& a, dev_t dev, ino_t ino) { return a.st_dev == dev && a.st_ino == ino; }

bool RotatedExists(const std::string& path, int k) { return Exists(Rotated(path, k)) || Exists(Rotated(path, k) + ".gz"); }

// Calls `look` (true: done; false: look again; an error: give up) until it is done,
// fails, or kRotationSettle has passed (then `too_fast`).
absl::Status LookUntilSettled(const std::function<absl::StatusOr<bool>()>& look, std::string_view too_fast) {
  const absl::Time give_up = absl::Now() + kRotationSettle;
  for (;;) {
    absl::StatusOr<bool> done = look();
    if (!done.ok()) return done.status();
    if (*done) return absl::OkStatus();
    if (absl::Now() >= give_up) return FallBack(too_fast);
    absl::SleepFor(absl::Milliseconds(1));
  }
}

absl::StatusOr<int64_t> CompressedLastTime(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  char header[512];
  const ssize_t n = ::pread(fd.get(), header, sizeof header, 0);
  if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path));
  return GzipLastTime(std::string_view(header, static_cast<std::size_t>(n)));
}

// The time of the first complete entry of an open file; nullopt when it has none yet.
std::optional<int64_t> FirstNanos(int fd) {
  std::string head(64 << 10, '\0');
  std::size_t have = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, head.data() + have, head.size() - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    have += static_cast<std::size_t>(n);
    const std::size_t nl = std::string_view(head.data(), have).find('\n');
    if (nl != std::string_view::npos) {
      absl::StatusOr<int64_t> nanos = JsonLogLineNanos(std::string_view(head.data(), nl));
      return nanos.ok() ? std::optional<int64_t>(*nanos) : std::nullopt;
    }
    if (have == head.size()) {
      if (head.size() >= kMaxEntryBytes) return std::nullopt;
      head.resize(head.size() * 2);
    }
  }
}

}  // namespace

JsonFileTailer::~JsonFileTailer() = default;

absl::StatusOr<std::unique_ptr<JsonFileTailer>> JsonFileTailer::Open(const std::string& path, int64_t since_nanos) {
  std::unique_ptr<JsonFileTailer> tailer(new JsonFileTailer(path));
  if (absl::Status s = tailer->Start(since_nanos); !s.ok()) return s;
  return tailer;
}

absl::Status JsonFileTailer::Start(int64_t since_nanos) {
  since_nanos_ = since_nanos;
  return LookUntilSettled([&] { return OpenOldestNeeded(since_nanos); },
                          absl::StrCat(path_, " rotates faster than it can be opened"));
}

absl::StatusOr<bool> JsonFileTailer::OpenOldestNeeded(int64_t since_nanos) {
  // The current file, then back through the rotated ones (newest first) while the
  // file at hand starts at or after `since` (a file that starts before it holds it).
  common::UniqueFd current(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!current && errno == ENOENT && RotatedExists(path_, 1)) return false;  // between rotation and new file
  if (!current) return FallBack(absl::StrCat("cannot open ", path_, ": ", std::strerror(errno)));
  struct stat current_st;
  if (::fstat(current.get(), &current_st) != 0) return FallBack(absl::StrCat("stat ", path_, ": ", std::strerror(errno)));
  common::UniqueFd chosen = std::move(current);
  std::string chosen_name = path_;
  bool need_older = since_nanos == 0;
  if (!need_older) {
    std::optional<int64_t> first = FirstNanos(chosen.get());
    need_older = !first || *first >= since_nanos;
  }
  for (int k = 1; need_older && k <= kMaxRotatedFiles; ++k) {
    const std::string name = Rotated(path_, k);
    common::UniqueFd older(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
    if (!older && errno == ENOENT) {
      const std::string gz = name + ".gz";
      if (!Exists(gz)) {
        if (RotatedExists(path_, k + 1)) return false;  // a gap: Docker is rotating
        break;                                          // the oldest file is the one chosen
      }
      absl::StatusOr<int64_t> last = CompressedLastTime(gz);
      if (since_nanos > 0 && last.ok() && *last < since_nanos) break;  // all before `since`
      return FallBack(absl::StrCat("the entries wanted are in ", gz, ", compressed"));
    }
    if (!older) return FallBack(absl::StrCat("cannot open ", name, ": ", std::strerror(errno)));
    chosen = std::move(older);
    chosen_name = name;
    if (since_nanos > 0) {
      std::optional<int64_t> first = FirstNanos(chosen.get());
      need_older = !first || *first >= since_nanos;
    }
  }
  // A rotation while looking may have moved the files under the names: look again.
  const std::optional<struct stat> now = Stat(path_);
  if (!now || !SameFile(*now, current_st.st_dev, current_st.st_ino)) return false;
  struct stat st;
  if (::fstat(chosen.get(), &st) != 0) return FallBack(absl::StrCat("stat ", chosen_name, ": ", std::strerror(errno)));
  fd_ = std::move(chosen);
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  offset_ = 0;
  return true;
}

absl::StatusOr<JsonFileTailer::Progress> JsonFileTailer::Read(const EntryFn& on_entry, std::size_t budget) {
  char* const buf = ReadBuffer();
  std::size_t used = 0;
  while (used < budget) {
    if (pending_.size() >= kMaxEntryBytes) {
      return FallBack(absl::StrCat(path_, ": an entry longer than ", kMaxEntryBytes, " bytes"));
    }
    ssize_t n;
    do {
      n = ::pread(fd_.get(), buf, kReadBytes, static_cast<off_t>(offset_ + pending_.size()));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return FallBack(absl::StrCat("read ", path_, ": ", std::strerror(errno)));
    if (n > 0) {
      used += static_cast<std::size_t>(n);
      Consume(std::string_view(buf, static_cast<std::size_t>(n)), on_entry);
      continue;
    }
    absl::StatusOr<bool> next = FollowRotation();
    if (!next.ok()) return next.status();
    if (!*next) return Progress::kIdle;
  }
  return Progress::kMore;
}

void JsonFileTailer::Consume(std::string_view fresh, const EntryFn& on_entry) {
  if (!pending_.empty()) {
    const void* nl = std::memchr(fresh.data(), '\n', fresh.size());
    if (!nl) {
      pending_.append(fresh);
      return;
    }
    const std::size_t end = static_cast<std::size_t>(static_cast<const char*>(nl) - fresh.data()) + 1;
    pending_.append(fresh.substr(0, end));
    fresh.remove_prefix(end);
    HandOut(pending_, on_entry);
    offset_ += pending_.size();
  }
  const std::size_t handed_out = HandOut(fresh, on_entry);
  offset_ += handed_out;
  pending_.assign(fresh.substr(handed_out));
  // A long entry grew it: give the memory back once it is handed out.
  if (pending_.capacity() > kKeptPendingBytes && pending_.size() <= kKeptPendingBytes / 2) pending_.shrink_to_fit();
}

std::size_t JsonFileTailer::HandOut(std::string_view data, const EntryFn& on_entry) {
  std::size_t consumed = 0;
  for (;;) {
    const void* found = std::memchr(data.data() + consumed, '\n', data.size() - consumed);
    if (!found) break;
    const std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(found) - data.data());
    const std::string_view line = data.substr(consumed, nl - consumed);
    consumed = nl + 1;
    if (since_nanos_ > 0) {
      absl::StatusOr<int64_t> nanos = JsonLogLineNanos(line);
      if (!nanos.ok()) {
        ++bad_lines_;
        continue;
      }
      last_nanos_ = *nanos;
      if (*nanos < since_nanos_) continue;
      since_nanos_ = 0;  // from here on, everything (as the copier's own skip does)
    }
    if (absl::Status s = ParseJsonLogLine(line, entry_); !s.ok()) {
      if (bad_lines_++ == 0) LOG_WARN << path_ << ": skipping what is not a json-file entry: " << s.message();
      continue;
    }
    last_nanos_ = entry_.nanos;
    on_entry(entry_);
  }
  return consumed;
}

absl::StatusOr<bool> JsonFileTailer::FollowRotation() {
  struct stat own;
  if (::fstat(fd_.get(), &own) != 0) return FallBack(absl::StrCat("stat ", path_, ": ", std::strerror(errno)));
  if (static_cast<uint64_t>(own.st_size) < offset_ + pending_.size())
    return FallBack(absl::StrCat(path_, " was truncated (from ", offset_ + pending_.size(), " to ", own.st_size, " bytes)"));
  const std::optional<struct stat> at_path = Stat(path_);
  // Not there: between Docker's rename (or unlink) and its new file. Soon back.
  if (!at_path || SameFile(*at_path, dev_, ino_)) return false;
  // Docker closes the file before it renames it: once more to its end, then this file is done.
  if (static_cast<uint64_t>(own.st_size) > offset_ + pending_.size()) return true;  // Read reads the rest first
  if (!pending_.empty()) {
    LOG_WARN << path_ << ": the rotated file ends in an unfinished entry (" << pending_.size() << " bytes); skipped";
    ++bad_lines_;
    pending_.clear();
  }
  RETURN_IF_ERROR(LookUntilSettled([&] { return OpenSuccessor(); },
                                   absl::StrCat(path_, " rotates faster than it can be followed")));
  ++rotations_;
  return true;
}

absl::StatusOr<bool> JsonFileTailer::OpenSuccessor() {
  // Where this file is now: <path>.k (by inode), or <path>.k.gz (by its last entry's
  // time in the gzip header), or gone. A missing name with a file above it is the gap
  // of a rotation in progress: the search goes on past it.
  int position = 0;
  bool compressed = false, any_rotated = false;
  for (int k = 1; k <= kMaxRotatedFiles && position == 0; ++k) {
    const std::optional<struct stat> st = Stat(Rotated(path_, k));
    const bool gz = Exists(Rotated(path_, k) + ".gz");
    if (!st && !gz) {
      if (RotatedExists(path_, k + 1)) continue;
      break;
    }
    any_rotated = true;
    if (st && SameFile(*st, dev_, ino_)) {
      position = k;
    } else if (gz && last_nanos_ > 0) {
      absl::StatusOr<int64_t> last = CompressedLastTime(Rotated(path_, k) + ".gz");
      if (last.ok() && *last == last_nanos_) {
        position = k;
        compressed = true;
      }
    }
  }
  if (position == 0 && any_rotated)
    return FallBack(absl::StrCat(path_, " was rotated more than once while its older file was being read"));
  // max-file=1: the file was unlinked, the next one is at the path (one that came
  // and went in between is gone from Docker too).
  const std::string next_name = position <= 1 ? path_ : Rotated(path_, position - 1);
  common::UniqueFd next(::open(next_name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!next) {
    if (errno == ENOENT && position > 1 && Exists(next_name + ".gz"))
      return FallBack(absl::StrCat(next_name, " was compressed before it was read"));
    if (errno == ENOENT) return false;  // not there yet, or moved meanwhile: look again
    return FallBack(absl::StrCat("cannot open ", next_name, ": ", std::strerror(errno)));
  }
  struct stat next_st;
  if (::fstat(next.get(), &next_st) != 0) return FallBack(absl::StrCat("stat ", next_name, ": ", std::strerror(errno)));
  // Still where it was found: no rotation came between the look and the open.
  bool stayed = true;
  if (position > 0 && !compressed) {
    const std::optional<struct stat> again = Stat(Rotated(path_, position));
    stayed = again && SameFile(*again, dev_, ino_);
  } else {
    const std::optional<struct stat> again = Stat(next_name);
    stayed = again && SameFile(*again, next_st.st_dev, next_st.st_ino);
  }
  if (!stayed) return false;
  fd_ = std::move(next);
  dev_ = next_st.st_dev;
  ino_ = next_st.st_ino;
  offset_ = 0;
  return true;
}

}  // namespace shim::logs

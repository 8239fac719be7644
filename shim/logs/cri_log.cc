#include "shim/logs/cri_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/strings.h"
#include "common/unique_fd.h"

namespace shim::logs {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
// The longest timestamp accepted: "2026-12-01T11:22:30.123456789+01:00".
constexpr std::size_t kMaxTimestampBytes = 35;
// What the resume point reads of a line: "<timestamp> stderr F ".
constexpr std::size_t kMaxLineHeadBytes = kMaxTimestampBytes + 10;
constexpr std::size_t kBlockBytes = 64 * 1024;

// The value of the `n` decimal digits at text[pos], or -1.
int Digits(std::string_view text, std::size_t pos, std::size_t n) {
  if (text.size() < pos + n) return -1;
  int value = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    const unsigned digit = static_cast<unsigned char>(text[i]) - unsigned{'0'};
    if (digit > 9) return -1;
    value = value * 10 + static_cast<int>(digit);
  }
  return value;
}

bool CharAt(std::string_view text, std::size_t pos, char c) { return pos < text.size() && text[pos] == c; }

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

// Days since 1970-01-01 (H. Hinnant's days_from_civil, for years >= 1).
int64_t DaysFromCivil(int year, int month, int day) {
  year -= month <= 2;
  const int era = year / 400;
  const int year_of_era = year - era * 400;
  const int day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const int day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return int64_t{era} * 146097 + day_of_era - 719468;
}

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS" at the start of `text`.
std::optional<int64_t> ParseDateTime(std::string_view text) {
  const int year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  const int hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  if (!CharAt(text, 4, '-') || !CharAt(text, 7, '-') || !CharAt(text, 10, 'T') || !CharAt(text, 13, ':') ||
      !CharAt(text, 16, ':'))
    return std::nullopt;
  // Before 1969 is before the epoch whatever the offset. Like Go's time.Parse, no leap second.
  if (year < 1969 || month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month) || hour < 0 || hour > 23 ||
      minute < 0 || minute > 59 || second < 0 || second > 59)
    return std::nullopt;
  return DaysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second;
}

struct Timestamp {
  int64_t nanos;
  std::size_t length;
};

// The RFC 3339 timestamp at the start of `text` in the forms that Go's time.Parse with
// time.RFC3339Nano (the kubelet's parse) accepts and Docker writes: a fraction of 1 to
// 9 digits or none, then "Z" or "±hh:mm". nullopt also when the instant is before the
// epoch or past int64 nanoseconds (2262-04-11T23:47:16.854775807Z).
std::optional<Timestamp> ParseTimestampPrefix(std::string_view text) {
  const std::optional<int64_t> local_seconds = ParseDateTime(text);
  if (!local_seconds) return std::nullopt;
  std::size_t pos = 19;
  int64_t fraction = 0;
  if (CharAt(text, pos, '.')) {
    const std::size_t first = ++pos;
    for (int digit; pos - first < 9 && (digit = Digits(text, pos, 1)) >= 0; ++pos) fraction = fraction * 10 + digit;
    if (pos == first || Digits(text, pos, 1) >= 0) return std::nullopt;  // no digit, or a 10th
    for (std::size_t i = pos - first; i < 9; ++i) fraction *= 10;
  }
  int64_t offset_seconds = 0;
  if (CharAt(text, pos, 'Z')) {
    pos += 1;
  } else if (CharAt(text, pos, '+') || CharAt(text, pos, '-')) {
    const int hours = Digits(text, pos + 1, 2), minutes = Digits(text, pos + 4, 2);
    if (hours < 0 || hours > 23 || !CharAt(text, pos + 3, ':') || minutes < 0 || minutes > 59) return std::nullopt;
    offset_seconds = (text[pos] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
    pos += 6;
  } else {
    return std::nullopt;
  }
  const int64_t seconds = *local_seconds - offset_seconds;
  if (seconds < 0 || seconds > (std::numeric_limits<int64_t>::max() - fraction) / kNanosPerSecond) return std::nullopt;
  return Timestamp{seconds * kNanosPerSecond + fraction, pos};
}

absl::Status Invalid(std::string_view what, std::string_view text, std::string_view why) {
  constexpr std::size_t kQuoted = 64;
  return absl::InvalidArgumentError(absl::StrCat("invalid ", common::Av(what), " \"",
                                                 absl::CHexEscape(common::Av(text.substr(0, kQuoted))),
                                                 text.size() > kQuoted ? "..." : "", "\": ", common::Av(why)));
}

// " stdout P ": what follows the timestamp on a CRI line, by stream and tag.
std::string_view LineHead(LogStream stream, bool full) {
  if (stream == LogStream::kStdout) return full ? " stdout F " : " stdout P ";
  return full ? " stderr F " : " stderr P ";
}

void AppendLine(std::string_view timestamp, std::string_view head, std::string_view piece, std::string& out) {
  out.append(timestamp).append(head).append(piece).push_back('\n');
}

// The timestamp of a CRI line from its first bytes, or nullopt when they are not
// "<timestamp> <stdout|stderr> <F|P> ".
std::optional<int64_t> CriLineTimestamp(std::string_view head) {
  const std::optional<Timestamp> timestamp = ParseTimestampPrefix(head);
  if (!timestamp) return std::nullopt;
  const std::string_view rest = head.substr(timestamp->length, LineHead(LogStream::kStdout, true).size());
  for (LogStream stream : {LogStream::kStdout, LogStream::kStderr})
    for (bool full : {true, false})
      if (rest == LineHead(stream, full)) return timestamp->nanos;
  return std::nullopt;
}

// A file's bytes read backwards one block at a time. The block read last is kept:
// consecutive lines are usually in it.
class BackwardReader {
 public:
  BackwardReader(int fd, const std::string& path) : fd_(fd), path_(path) {}

  // The offset of the last '\n' before `end`, or -1 when there is none.
  absl::StatusOr<int64_t> LastNewlineBefore(uint64_t end) {
    while (end > 0) {
      if (!(block_start_ < end && end <= block_start_ + block_.size())) {
        const uint64_t start = end > kBlockBytes ? end - kBlockBytes : 0;
        RETURN_IF_ERROR(Read(start, end - start, block_));
        block_start_ = start;
      }
      const std::size_t searched = end - block_start_;
      if (const void* nl = ::memrchr(block_.data(), '\n', searched); nl != nullptr)
        return block_start_ + (static_cast<const char*>(nl) - block_.data());
      end = block_start_;
    }
    return -1;
  }

  // The bytes [offset, offset + n), from the kept block when it holds them.
  absl::StatusOr<std::string_view> Bytes(uint64_t offset, std::size_t n) {
    if (block_start_ <= offset && offset + n <= block_start_ + block_.size())
      return std::string_view(block_).substr(offset - block_start_, n);
    RETURN_IF_ERROR(Read(offset, n, scratch_));
    return std::string_view(scratch_);
  }

 private:
  absl::Status Read(uint64_t offset, std::size_t n, std::string& into) {
    into.resize(n);
    for (std::size_t done = 0; done < n;) {
      const ssize_t got = ::pread(fd_, into.data() + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return absl::ErrnoToStatus(errno, absl::StrCat("read ", path_));
      if (got == 0) return absl::AbortedError(absl::StrCat(path_, " was truncated while being read"));
      done += static_cast<std::size_t>(got);
    }
    return absl::OkStatus();
  }

  const int fd_;
  const std::string& path_;
  std::string block_, scratch_;
  uint64_t block_start_ = 0;
};

}  // namespace

absl::StatusOr<DockerLogMessage> ParseDockerLogMessage(std::string_view message) {
  const std::optional<Timestamp> timestamp = ParseTimestampPrefix(message);
  if (!timestamp || !CharAt(message, timestamp->length, ' '))
    return Invalid("Docker log message", message, "want an RFC 3339 timestamp and a space first");
  return DockerLogMessage{message.substr(0, timestamp->length), message.substr(timestamp->length + 1)};
}

// Cut as containerd's CRI logger cuts (internal/cri/io/logger.go, redirectLogs): at
// maxLen bytes with no regard to UTF-8, since readers join P pieces before decoding;
// 0 is no limit there too. Docker sends at most one '\n', at the end, but any '\n'
// ends a line here so that every line written parses. '\r' is kept as Docker's
// json-file (daemon/logger/copier.go splits on '\n' only) and CRI-O's conmon keep it;
// containerd alone drops the '\r' of a final "\r\n". The timestamp is not rewritten:
// Docker writes RFC3339NanoFixed (api/server/httputils/write_log_stream.go), which
// the kubelet's time.RFC3339Nano parse accepts like any fraction width.
void AppendCriLines(LogStream stream, std::string_view timestamp, std::string_view content, std::string& out,
                    std::size_t max_line) {
  if (max_line == 0) max_line = std::numeric_limits<std::size_t>::max();
  while (!content.empty()) {
    const std::size_t newline = content.find('\n');
    std::string_view line = content.substr(0, newline);
    content.remove_prefix(newline == std::string_view::npos ? content.size() : newline + 1);
    for (; line.size() > max_line; line.remove_prefix(max_line))
      AppendLine(timestamp, LineHead(stream, false), line.substr(0, max_line), out);
    AppendLine(timestamp, LineHead(stream, newline != std::string_view::npos), line, out);
  }
}

absl::StatusOr<int64_t> TimestampNanos(std::string_view timestamp) {
  const std::optional<Timestamp> parsed = ParseTimestampPrefix(timestamp);
  if (!parsed || parsed->length != timestamp.size())
    return Invalid("timestamp", timestamp, "want RFC 3339 between 1970 and 2262, e.g. 2026-12-01T11:22:30.5Z");
  return parsed->nanos;
}

// Docker reads "<seconds>.<fraction>" as time.Unix(seconds, fraction scaled to 9
// digits) (api/types/time ParseTimestamps), so the seconds are floored.
std::string SinceParameter(int64_t nanos) {
  int64_t seconds = nanos / kNanosPerSecond, fraction = nanos % kNanosPerSecond;
  if (fraction < 0) {
    seconds -= 1;
    fraction += kNanosPerSecond;
  }
  return absl::StrCat(seconds, ".", absl::Dec(fraction, absl::kZeroPad9));
}

absl::StatusOr<ResumePoint> FindResumePoint(const std::string& path) {
  common::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd && errno == ENOENT) return ResumePoint{};
  if (!fd) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("stat ", path));

  BackwardReader reader(fd.get(), path);
  ASSIGN_OR_RETURN(int64_t newline, reader.LastNewlineBefore(static_cast<uint64_t>(st.st_size)));
  ResumePoint point;
  point.valid_length = static_cast<uint64_t>(newline + 1);
  // Walk the complete lines from the last one back while they carry its timestamp; an
  // unreadable earlier line ends the run like a different timestamp.
  while (newline >= 0) {
    ASSIGN_OR_RETURN(const int64_t previous, reader.LastNewlineBefore(static_cast<uint64_t>(newline)));
    const uint64_t start = static_cast<uint64_t>(previous + 1);
    const std::size_t head_bytes = std::min<uint64_t>(static_cast<uint64_t>(newline) - start, kMaxLineHeadBytes);
    ASSIGN_OR_RETURN(const std::string_view head, reader.Bytes(start, head_bytes));
    const std::optional<int64_t> nanos = CriLineTimestamp(head);
    if (point.lines_at_last == 0) {
      if (!nanos)
        return Invalid(absl::StrCat("CRI log line at offset ", start, " of ", path), head, "no CRI line head");
      point.last_nanos = *nanos;
    } else if (nanos != point.last_nanos) {
      break;
    }
    ++point.lines_at_last;
    newline = previous;
  }
  return point;
}

}  // namespace shim::logs

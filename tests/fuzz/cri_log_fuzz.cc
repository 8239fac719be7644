// The CRI log codec on arbitrary bytes. The input's first byte is the max_line (0: no
// limit), the next 8 an int64 for SinceParameter, then either raw text or (the next
// byte even) timestamp fields for a Docker log message, so that an empty corpus
// reaches valid timestamps at once.
// - SinceParameter reads back, as Docker reads `since`, to the same instant.
// - TimestampNanos of a timestamp built from fields (some out of range) accepts it
//   exactly when absl's civil time says it is valid and in range, at the same
//   instant; of raw text, it accepts only what absl's RFC 3339 parser reads the same.
// - ParseDockerLogMessage accepts only such a timestamp and a space, and splits there.
// - AppendCriLines of the content: every line parses the way the kubelet parses CRI
//   lines, carries the timestamp, holds at most max_line bytes of content, and the
//   contents join back to the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/strings.h"
#include "shim/logs/cri_log.h"

namespace {

namespace logs = shim::logs;

void Check(bool condition) {
  if (!condition) std::abort();
}

// The input's bytes from the front, 0 once it is used up.
struct Input {
  std::string_view rest;
  uint8_t Next() {
    if (rest.empty()) return 0;
    const auto byte = static_cast<uint8_t>(rest.front());
    rest.remove_prefix(1);
    return byte;
  }
};

// Docker's reading of `since` (api/types/time ParseTimestamps), in 128 bits.
__int128 DockerSinceNanos(std::string_view since) {
  const std::size_t dot = since.find('.');
  Check(dot != std::string_view::npos && since.size() - dot - 1 == 9);
  const bool negative = since.front() == '-';
  __int128 seconds = 0, fraction = 0;
  for (char c : since.substr(negative ? 1 : 0, dot - (negative ? 1 : 0))) seconds = seconds * 10 + (c - '0');
  for (char c : since.substr(dot + 1)) fraction = fraction * 10 + (c - '0');
  return (negative ? -seconds : seconds) * 1'000'000'000 + fraction;
}

struct Built {
  std::string text;
  bool valid;
  int64_t nanos;
};

// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±hh:mm|)" from fields the input picks, some out of
// range, with its validity and instant worked out by absl's civil time.
Built BuildTimestamp(Input& in) {
  const int year_byte = in.Next();
  const int year = 1969 + (year_byte | in.Next() << 8) % 300;
  const int month = in.Next() % 14, day = in.Next() % 33, hour = in.Next() % 25, minute = in.Next() % 61,
            second = in.Next() % 61, digits = in.Next() % 11, zone = in.Next() % 4;
  const int offset_hours = in.Next() % 25, offset_minutes = in.Next() % 61;
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, hour, minute, second);
  Built built{text, true, 0};
  int64_t fraction = 0;
  if (digits > 0) built.text += '.';
  for (int i = 0; i < 10; ++i) {
    const int digit = i < digits ? in.Next() % 10 : 0;
    if (i < digits) built.text += static_cast<char>('0' + digit);
    if (i < 9) fraction = fraction * 10 + digit;
  }
  int offset_seconds = 0;
  if (zone == 0) built.text += 'Z';
  if (zone == 1 || zone == 2) {
    std::snprintf(text, sizeof text, "%c%02d:%02d", zone == 1 ? '+' : '-', offset_hours, offset_minutes);
    built.text += text;
    offset_seconds = (zone == 1 ? 1 : -1) * (offset_hours * 3600 + offset_minutes * 60);
  }
  const absl::CivilDay civil_day(year, month, day);
  const bool zone_valid = zone == 0 || (zone != 3 && offset_hours <= 23 && offset_minutes <= 59);
  built.valid = month >= 1 && month <= 12 && civil_day.month() == month && civil_day.day() == day && hour <= 23 &&
                minute <= 59 && second <= 59 && digits <= 9 && zone_valid;
  const absl::Time time =
      absl::FromCivil(absl::CivilSecond(year, month, day, hour, minute, second), absl::UTCTimeZone()) +
      absl::Nanoseconds(fraction) - absl::Seconds(offset_seconds);
  built.valid =
      built.valid && time >= absl::UnixEpoch() && time <= absl::FromUnixNanos(std::numeric_limits<int64_t>::max());
  if (built.valid) built.nanos = absl::ToUnixNanos(time);
  return built;
}

void CheckBuiltTimestamp(const Built& built) {
  const absl::StatusOr<int64_t> nanos = logs::TimestampNanos(built.text);
  Check(nanos.ok() == built.valid);
  if (nanos.ok()) Check(*nanos == built.nanos && DockerSinceNanos(logs::SinceParameter(*nanos)) == *nanos);
}

void CheckRawTimestamp(std::string_view text) {
  const absl::StatusOr<int64_t> nanos = logs::TimestampNanos(text);
  if (!nanos.ok()) return Check(nanos.status().code() == absl::StatusCode::kInvalidArgument);
  absl::Time time;
  std::string error;
  Check(absl::ParseTime(absl::RFC3339_full, common::Av(text), &time, &error));
  Check(absl::ToUnixNanos(time) == *nanos);
}

// The kubelet's parseCRILog: three space-delimited fields, then the content, whose
// '\n' a P line loses.
std::string_view KubeletContent(std::string_view line, std::string_view timestamp, logs::LogStream stream) {
  std::string_view fields[3];
  for (std::string_view& field : fields) {
    const std::size_t space = line.find(' ');
    Check(space != std::string_view::npos);
    field = line.substr(0, space);
    line.remove_prefix(space + 1);
  }
  Check(fields[0] == timestamp);
  Check(fields[1] == (stream == logs::LogStream::kStdout ? "stdout" : "stderr"));
  Check(fields[2] == "F" || fields[2] == "P");
  if (fields[2] == "P") line.remove_suffix(1);
  return line;
}

void CheckAppend(logs::LogStream stream, std::string_view timestamp, std::string_view content, std::size_t max_line) {
  std::string out;
  logs::AppendCriLines(stream, timestamp, content, out, max_line);
  std::string joined;
  for (std::string_view rest = out; !rest.empty();) {
    const std::size_t newline = rest.find('\n');
    Check(newline != std::string_view::npos);
    const std::string_view piece = KubeletContent(rest.substr(0, newline + 1), timestamp, stream);
    Check(max_line == 0 || piece.size() <= max_line + (piece.ends_with('\n') ? 1 : 0));
    joined.append(piece);
    rest.remove_prefix(newline + 1);
  }
  Check(joined == content);
}

void CheckMessage(std::string_view message, bool must_parse, std::size_t max_line) {
  const absl::StatusOr<logs::DockerLogMessage> parsed = logs::ParseDockerLogMessage(message);
  if (!parsed.ok()) {
    Check(!must_parse && parsed.status().code() == absl::StatusCode::kInvalidArgument);
    return CheckAppend(logs::LogStream::kStderr, "2026-12-01T11:22:30.123456789Z", message, max_line);
  }
  Check(logs::TimestampNanos(parsed->timestamp).ok());
  Check(parsed->timestamp.data() == message.data() &&
        parsed->timestamp.size() + 1 + parsed->content.size() == message.size());
  Check(message[parsed->timestamp.size()] == ' ');
  CheckAppend(logs::LogStream::kStdout, parsed->timestamp, parsed->content, max_line);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 10) return 0;
  const std::size_t max_line = data[0];
  int64_t since_nanos;
  std::memcpy(&since_nanos, data + 1, sizeof since_nanos);
  Check(DockerSinceNanos(logs::SinceParameter(since_nanos)) == since_nanos);

  Input in{std::string_view(reinterpret_cast<const char*>(data) + 10, size - 10)};
  if (data[9] % 2 == 1) {
    CheckRawTimestamp(in.rest);
    CheckMessage(in.rest, false, max_line);
    return 0;
  }
  const Built built = BuildTimestamp(in);
  CheckBuiltTimestamp(built);
  const bool space = in.Next() % 2 == 0;
  CheckMessage(built.text + (space ? " " : "") + std::string(in.rest), built.valid && space, max_line);
  return 0;
}

#pragma once
// Docker's json-file log driver, read from its files (the copier's fast path, without
// the HTTP logs API). Facts from moby (daemon/logger/jsonfilelog, loggerutils, copier.go;
// the same in 20.10 and 28.5):
//   - one entry a line: {"log":"<content>","stream":"stdout|stderr","attrs":{...},"time":"<RFC3339Nano>"}\n
//     "log" is omitted when empty, "attrs" only with --log-opt labels/env/tag; the
//     content is escaped as Go's encoding/json does (\" \\ \n \r \u00XX, also < > &
//     as \u003c \u003e \u0026, \u2028 \u2029, and invalid UTF-8 as \ufffd);
//   - the time is time.Now().UTC() in RFC3339Nano (trailing zeros of the fraction cut);
//   - a line longer than 16 KiB comes as several entries: all but the last have no
//     '\n' at the end of "log" (no partial metadata is stored) and all share the first
//     piece's timestamp;
//   - rotation (max-size): the file is closed, <log>.N-1 … <log>.1 shift up (the oldest
//     removed), <log> is renamed to <log>.1 and a new <log> created; with compress=true,
//     <log>.1 is then gzipped to <log>.1.gz (its gzip header's Extra holds
//     {"LastTime":"<RFC3339Nano>"}, the last entry's time) and removed; with max-file=1
//     the file is unlinked (28.5) or truncated in place (20.10) instead.
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shim/logs/cri_log.h"

namespace shim::logs {

struct JsonLogEntry {
  LogStream stream = LogStream::kStdout;
  int64_t nanos = 0;
  // As Docker's logs API writes it (RFC3339NanoFixed: 9 fraction digits), so both
  // paths write the same CRI lines.
  std::string timestamp;
  std::string content;  // unescaped; ends in '\n' unless it is a piece of a longer line
};

// Parses one line of a json-file log (without its '\n') into `entry` (its strings
// reused). INVALID_ARGUMENT when it is not such an entry.
absl::Status ParseJsonLogLine(std::string_view line, JsonLogEntry& entry);

// The time of a json-file line (without its '\n') from its last field, without
// decoding the rest: to skip what was copied already. INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> JsonLogLineNanos(std::string_view line);

// The "LastTime" Docker stores in the Extra field of a rotated, compressed log's
// gzip header (`header`: the file's first bytes, 512 are plenty). NOT_FOUND when the
// header has none, INVALID_ARGUMENT when it is not a gzip header.
absl::StatusOr<int64_t> GzipLastTime(std::string_view header);

}  // namespace shim::logs

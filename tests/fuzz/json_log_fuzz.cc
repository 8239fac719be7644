// Docker's json-file log lines (shim/logs/json_file.h) on arbitrary bytes.
// - ParseJsonLogLine, JsonLogLineNanos and GzipLastTime of the raw input: no crash, and
//   what ParseJsonLogLine accepts has a 9-digit timestamp that reads back to its nanos.
// - A line written as an encoder writes it (nlohmann's escaping, which differs from
//   Go's in what it leaves unescaped) around the input as "log" (when it is valid
//   UTF-8): parses back to the same content, stream and time, and its time reads the
//   same without decoding the rest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "shim/logs/cri_log.h"
#include "shim/logs/json_file.h"

namespace {

namespace logs = shim::logs;

void Check(bool condition) {
  if (!condition) std::abort();
}

constexpr char kTime[] = "2026-12-01T10:00:00.5Z";
constexpr int64_t kTimeNanos = 1'796'119'200'500'000'000;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  logs::JsonLogEntry entry;
  if (logs::ParseJsonLogLine(input, entry).ok()) {
    Check(entry.timestamp.size() >= 30 && entry.timestamp[19] == '.');
    const absl::StatusOr<int64_t> nanos = logs::TimestampNanos(entry.timestamp);
    Check(nanos.ok() && *nanos == entry.nanos);
  }
  logs::JsonLogLineNanos(input).IgnoreError();
  logs::GzipLastTime(input).IgnoreError();

  std::string line;
  try {
    line = nlohmann::json{{"log", input}, {"stream", "stderr"}, {"time", kTime}}.dump();
  } catch (const nlohmann::json::exception&) {
    return 0;  // not valid UTF-8: Docker would have written \ufffd
  }
  Check(logs::ParseJsonLogLine(line, entry).ok());
  Check(entry.content == input && entry.stream == logs::LogStream::kStderr && entry.nanos == kTimeNanos);
  Check(entry.timestamp == "2026-12-01T10:00:00.500000000Z");
  const absl::StatusOr<int64_t> nanos = logs::JsonLogLineNanos(line);
  Check(nanos.ok() && *nanos == kTimeNanos);
  return 0;
}

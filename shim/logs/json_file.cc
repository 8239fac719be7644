#include "shim/logs/json_file.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/strings.h"

namespace shim::logs {
namespace {

absl::Status Invalid(std::string_view line, std::string_view why) {
  constexpr std::size_t kQuoted = 64;
  return absl::InvalidArgumentError(absl::StrCat("invalid json-file log line \"",
                                                 absl::CHexEscape(common::Av(line.substr(0, kQuoted))),
                                                 line.size() > kQuoted ? "..." : "", "\": ", common::Av(why)));
}

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int Hex4(std::string_view s, std::size_t pos) {
  if (s.size() < pos + 4) return -1;
  int v = 0;
  for (std::size_t i = pos; i < pos + 4; ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

// The JSON string at s[pos] (its opening quote), decoded into `out` (when not null);
// pos ends after the closing quote. False when it is not a valid string.
bool ReadString(std::string_view s, std::size_t& pos, std::string* out) {
  if (pos >= s.size() || s[pos] != '"') return false;
  ++pos;
  for (;;) {
    std::size_t run = pos;
    while (run < s.size() && s[run] != '"' && s[run] != '\\') ++run;
    if (out) out->append(s.data() + pos, run - pos);
    pos = run;
    if (pos >= s.size()) return false;
    if (s[pos] == '"') {
      ++pos;
      return true;
    }
    // An escape.
    if (pos + 1 >= s.size()) return false;
    const char e = s[pos + 1];
    pos += 2;
    char simple = 0;
    switch (e) {
      case '"': simple = '"'; break;
      case '\\': simple = '\\'; break;
      case '/': simple = '/'; break;
      case 'b': simple = '\b'; break;
      case 'f': simple = '\f'; break;
      case 'n': simple = '\n'; break;
      case 'r': simple = '\r'; break;
      case 't': simple = '\t'; break;
      case 'u': break;
      default: return false;
    }
    if (simple) {
      if (out) out->push_back(simple);
      continue;
    }
    int cp = Hex4(s, pos);
    if (cp < 0) return false;
    pos += 4;
    uint32_t code = static_cast<uint32_t>(cp);
    if (code >= 0xD800 && code < 0xDC00) {  // a high surrogate: a low one must follow
      const int low = s.size() >= pos + 6 && s[pos] == '\\' && s[pos + 1] == 'u' ? Hex4(s, pos + 2) : -1;
      if (low >= 0xDC00 && low < 0xE000) {
        code = 0x10000 + ((code - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
        pos += 6;
      } else {
        code = 0xFFFD;  // as Go's decoder
      }
    } else if (code >= 0xDC00 && code < 0xE000) {
      code = 0xFFFD;
    }
    if (out) AppendUtf8(code, *out);
  }
}

void SkipSpace(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\r' || s[pos] == '\n')) ++pos;
}

// Skips any JSON value (attrs is an object of strings; anything else is tolerated).
bool SkipValue(std::string_view s, std::size_t& pos) {
  int depth = 0;
  do {
    SkipSpace(s, pos);
    if (pos >= s.size()) return false;
    const char c = s[pos];
    if (c == '"') {
      if (!ReadString(s, pos, nullptr)) return false;
    } else if (c == '{' || c == '[') {
      ++depth;
      ++pos;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return false;
      ++pos;
    } else {
      ++pos;  // a scalar's byte, ':' or ','
      if (depth == 0)
        while (pos < s.size() && s[pos] != ',' && s[pos] != '}' && s[pos] != ']' && s[pos] != ' ') ++pos;
    }
  } while (depth > 0);
  return true;
}

// In place: the fraction of a valid RFC 3339 timestamp padded to 9 digits.
void PadFraction(std::string& timestamp) {
  constexpr std::size_t kSeconds = 19;  // "2026-12-01T10:00:00"
  std::size_t pos = kSeconds;
  if (pos < timestamp.size() && timestamp[pos] == '.') {
    const std::size_t first = ++pos;
    while (pos < timestamp.size() && timestamp[pos] >= '0' && timestamp[pos] <= '9') ++pos;
    if (pos - first < 9) timestamp.insert(pos, 9 - (pos - first), '0');
  } else {
    timestamp.insert(pos, ".000000000");
  }
}

}  // namespace

absl::Status ParseJsonLogLine(std::string_view line, JsonLogEntry& entry) {
  entry.content.clear();
  entry.timestamp.clear();
  std::size_t pos = 0;
  SkipSpace(line, pos);
  if (pos >= line.size() || line[pos] != '{') return Invalid(line, "not a JSON object");
  ++pos;
  bool have_stream = false, have_time = false;
  std::string key;
  SkipSpace(line, pos);
  if (pos < line.size() && line[pos] == '}') return Invalid(line, "no time");
  for (;;) {
    SkipSpace(line, pos);
    key.clear();
    if (!ReadString(line, pos, &key)) return Invalid(line, "a key is not a string");
    SkipSpace(line, pos);
    if (pos >= line.size() || line[pos] != ':') return Invalid(line, "no ':' after a key");
    ++pos;
    SkipSpace(line, pos);
    if (key == "log") {
      if (!ReadString(line, pos, &entry.content)) return Invalid(line, "\"log\" is not a string");
    } else if (key == "stream") {
      if (line.substr(pos, 8) == "\"stdout\"") {
        entry.stream = LogStream::kStdout;
        pos += 8;
      } else if (line.substr(pos, 8) == "\"stderr\"") {
        entry.stream = LogStream::kStderr;
        pos += 8;
      } else {
        return Invalid(line, "\"stream\" is neither stdout nor stderr");
      }
      have_stream = true;
    } else if (key == "time") {
      if (!ReadString(line, pos, &entry.timestamp)) return Invalid(line, "\"time\" is not a string");
      absl::StatusOr<int64_t> nanos = TimestampNanos(entry.timestamp);
      if (!nanos.ok()) return Invalid(line, common::Sv(nanos.status().message()));
      entry.nanos = *nanos;
      PadFraction(entry.timestamp);
      have_time = true;
    } else if (!SkipValue(line, pos)) {
      return Invalid(line, absl::StrCat("the value of \"", key, "\" is not JSON"));
    }
    SkipSpace(line, pos);
    if (pos < line.size() && line[pos] == ',') {
      ++pos;
      continue;
    }
    if (pos < line.size() && line[pos] == '}') {
      ++pos;
      break;
    }
    return Invalid(line, "no ',' or '}' after a value");
  }
  SkipSpace(line, pos);
  if (pos != line.size()) return Invalid(line, "bytes after the object");
  if (!have_time) return Invalid(line, "no time");
  if (!have_stream) return Invalid(line, "no stream");
  return absl::OkStatus();
}

absl::StatusOr<int64_t> JsonLogLineNanos(std::string_view line) {
  constexpr std::string_view kTime = "\"time\":\"";
  if (line.size() >= 2 && line.substr(line.size() - 2) == "\"}") {
    const std::size_t at = line.rfind(kTime);
    if (at != std::string_view::npos) {
      const std::size_t start = at + kTime.size();
      absl::StatusOr<int64_t> nanos = TimestampNanos(line.substr(start, line.size() - 2 - start));
      if (nanos.ok()) return nanos;
    }
  }
  JsonLogEntry entry;  // not in Docker's order: the whole parse
  if (absl::Status s = ParseJsonLogLine(line, entry); !s.ok()) return s;
  return entry.nanos;
}

absl::StatusOr<int64_t> GzipLastTime(std::string_view header) {
  if (header.size() < 10 || static_cast<unsigned char>(header[0]) != 0x1f ||
      static_cast<unsigned char>(header[1]) != 0x8b)
    return absl::InvalidArgumentError("not a gzip file");
  if ((static_cast<unsigned char>(header[3]) & 0x04) == 0) return absl::NotFoundError("no Extra in the gzip header");
  if (header.size() < 12) return absl::InvalidArgumentError("a gzip header cut short");
  const std::size_t xlen = static_cast<unsigned char>(header[10]) | (static_cast<unsigned char>(header[11]) << 8);
  if (header.size() < 12 + xlen) return absl::InvalidArgumentError("a gzip Extra cut short");
  const std::string_view extra = header.substr(12, xlen);
  constexpr std::string_view kKey = "\"LastTime\":";
  std::size_t pos = extra.find(kKey);
  if (pos == std::string_view::npos) return absl::NotFoundError("no LastTime in the gzip Extra");
  pos += kKey.size();
  SkipSpace(extra, pos);
  std::string value;
  if (!ReadString(extra, pos, &value)) return absl::InvalidArgumentError("LastTime is not a string");
  return TimestampNanos(value);
}

}  // namespace shim::logs

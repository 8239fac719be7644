#include "tests/support/footprint.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace testsupport {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<int> CountEntries(const std::string& dir) {
  std::error_code ec;
  int n = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) ++n;
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": ", ec.message()));
  return n;
}

// "VmRSS:     1234 kB" -> 1234 for `key` "VmRSS"; -1 when absent.
int64_t KbField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, key) || !absl::ConsumePrefix(&line, ":")) continue;
    line = absl::StripAsciiWhitespace(absl::StripSuffix(absl::StripAsciiWhitespace(line), "kB"));
    int64_t kb = 0;
    return absl::SimpleAtoi(line, &kb) ? kb : -1;
  }
  return -1;
}

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Mapping {
  uint64_t start = 0, end = 0;
  std::string perms, path;
  int64_t rss_kb = 0;
};

}  // namespace

absl::StatusOr<Footprint> ReadFootprint(pid_t pid) {
  const std::string proc = absl::StrCat("/proc/", pid);
  Footprint f;
  absl::StatusOr<int> fds = CountEntries(proc + "/fd");
  if (!fds.ok()) return fds.status();
  absl::StatusOr<int> threads = CountEntries(proc + "/task");
  if (!threads.ok()) return threads.status();
  absl::StatusOr<std::string> status = ReadAll(proc + "/status");
  if (!status.ok()) return status.status();
  absl::StatusOr<std::string> rollup = ReadAll(proc + "/smaps_rollup");
  if (!rollup.ok()) return rollup.status();
  f.fds = *fds;
  f.threads = *threads;
  f.rss_kb = KbField(*status, "VmRSS");
  f.anon_kb = KbField(*rollup, "Anonymous");
  f.file_kb = KbField(*rollup, "Rss") - f.anon_kb;
  f.private_kb = KbField(*rollup, "Private_Clean") + KbField(*rollup, "Private_Dirty");
  if (f.rss_kb < 0 || f.anon_kb < 0) return absl::InternalError(absl::StrCat(proc, ": no VmRSS or Anonymous"));
  return f;
}

absl::StatusOr<std::vector<std::string>> OpenFiles(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/fd");
  std::error_code ec;
  std::vector<std::string> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    const fs::path target = fs::read_symlink(it->path(), link_ec);
    if (!link_ec) files.push_back(target.string());  // an fd closed meanwhile has none
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": ", ec.message()));
  return files;
}

absl::StatusOr<std::map<std::string, int64_t>> ReadMappingKinds(pid_t pid) {
  absl::StatusOr<std::string> smaps = ReadAll(absl::StrCat("/proc/", pid, "/smaps"));
  if (!smaps.ok()) return smaps.status();
  // A header line is "start-end perms offset dev inode [path]"; "Rss:" follows it.
  std::vector<Mapping> maps;
  for (absl::string_view line : absl::StrSplit(*smaps, '\n')) {
    if (line.empty()) continue;
    if (absl::StartsWith(line, "Rss:")) {
      if (!maps.empty()) maps.back().rss_kb = KbField(line, "Rss");
      continue;
    }
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash == absl::string_view::npos || space == absl::string_view::npos || dash > space) continue;
    Mapping m;
    if (!absl::SimpleHexAtoi(line.substr(0, dash), &m.start) ||
        !absl::SimpleHexAtoi(line.substr(dash + 1, space - dash - 1), &m.end))
      continue;  // a "Key: value" line
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (fields.size() < 5) continue;
    m.perms = std::string(fields[1]);
    if (fields.size() >= 6) m.path = std::string(fields[5]);
    maps.push_back(std::move(m));
  }
  constexpr uint64_t kHeapMax = 64ull << 20;  // glibc's HEAP_MAX_SIZE on 64-bit
  std::map<std::string, int64_t> kinds;
  for (size_t i = 0; i < maps.size(); ++i) {
    const Mapping& m = maps[i];
    std::string kind;
    if (!m.path.empty() && m.path.front() == '/') {
      kind = fs::path(m.path).filename().string();
    } else if (!m.path.empty()) {
      kind = m.path;  // [heap], [stack], [vdso], ...
    } else if (i > 0 && maps[i - 1].end == m.start && maps[i - 1].perms == "---p" && maps[i - 1].path.empty() &&
               maps[i - 1].end - maps[i - 1].start <= (64 << 10) && m.perms == "rw-p") {
      kind = "thread stacks";
    } else if (m.perms == "rw-p" && m.start % kHeapMax == 0 && i + 1 < maps.size() && maps[i + 1].start == m.end &&
               maps[i + 1].perms == "---p") {
      kind = "malloc arenas";
    } else {
      kind = "other anon";
    }
    kinds[kind] += m.rss_kb;
  }
  return kinds;
}

}  // namespace testsupport

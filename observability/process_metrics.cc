#include "observability/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace observability {

namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double BootTime() {
  std::istringstream in(ReadAll("/proc/stat"));
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

int64_t OpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the directory's own fd
}

}  // namespace

std::optional<ProcessStats> ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                                          double boot_time) {
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  const std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(stat.data() + paren + 1, stat.size() - paren - 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state): field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  uint64_t utime, stime, start_ticks, vsize, rss_pages;
  int64_t threads;
  if (!absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime) || !absl::SimpleAtoi(f[17], &threads) ||
      !absl::SimpleAtoi(f[19], &start_ticks) || !absl::SimpleAtoi(f[20], &vsize) ||
      !absl::SimpleAtoi(f[21], &rss_pages)) {
    return std::nullopt;
  }
  ProcessStats s;
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
  s.threads = threads;
  s.start_time_seconds = boot_time + static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
  s.virtual_bytes = vsize;
  s.resident_bytes = rss_pages * static_cast<uint64_t>(page_size);
  return s;
}

void WriteProcessMetrics(TextWriter& out) {
  static const double boot_time = BootTime();
  const std::optional<ProcessStats> s =
      ParseProcStat(ReadAll("/proc/self/stat"), ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE), boot_time);
  if (s) {
    out.Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter");
    out.Sample("process_cpu_seconds_total", {}, s->cpu_seconds);
    out.Family("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge");
    out.Sample("process_resident_memory_bytes", {}, static_cast<double>(s->resident_bytes));
    out.Family("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge");
    out.Sample("process_virtual_memory_bytes", {}, static_cast<double>(s->virtual_bytes));
    out.Family("process_threads", "Number of OS threads in the process.", "gauge");
    out.Sample("process_threads", {}, static_cast<double>(s->threads));
    out.Family("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge");
    out.Sample("process_start_time_seconds", {}, s->start_time_seconds);
  }
  if (const int64_t fds = OpenFds(); fds >= 0) {
    out.Family("process_open_fds", "Number of open file descriptors.", "gauge");
    out.Sample("process_open_fds", {}, static_cast<double>(fds));
  }
  if (rlimit limit; ::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.Family("process_max_fds", "Maximum number of open file descriptors.", "gauge");
    out.Sample("process_max_fds", {}, static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace observability

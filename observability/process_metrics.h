#pragma once
// The standard process_* families (as Prometheus' client libraries name them), read
// from /proc/self at scrape time.
#include <cstdint>
#include <optional>
#include <string_view>

#include "observability/exposition.h"

namespace observability {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  uint64_t resident_bytes = 0, virtual_bytes = 0;
  int64_t threads = 0;
  double start_time_seconds = 0;  // since the epoch
};

// Parses the text of /proc/<pid>/stat; `boot_time` is btime of /proc/stat.
std::optional<ProcessStats> ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                                          double boot_time);

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_threads, process_open_fds, process_max_fds, process_start_time_seconds.
void WriteProcessMetrics(TextWriter& out);

}  // namespace observability
